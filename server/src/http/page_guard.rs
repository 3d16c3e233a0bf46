//! Who may load which dashboard page, decided before the page is rendered: a signed-out visitor
//! asking for any page but sign-in or sign-up gets a real `302` to `/signin?next=<that page>`, so
//! that signing in comes back to the link they followed; a signed-in one asking for those two gets a
//! `302` to that `next` page (one of this site's) or to `/`. The views redirect too (for client-side
//! navigation), but a redirect from inside a streamed page comes too late once nested routes have
//! started streaming their shell, and scripts and curl deserve a status code rather than a page.

use std::collections::HashMap;

use axum::extract::{Query, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use domain::{auth, AppState};

/// Pages a signed-out visitor may see; every other page the Leptos router serves needs an account.
pub const PUBLIC_PAGES: &[&str] = &["/signin", "/signup"];

/// Middleware for the Leptos routes. Those include the server functions under `/rpc/`, which
/// answer for themselves (a 401 the page can show), so only page loads are judged here.
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let page_load = matches!(*req.method(), Method::GET | Method::HEAD)
        && !req.uri().path().starts_with("/rpc/");
    if !page_load {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // A bad or revoked bearer token on a page request counts as signed out, like a missing cookie.
    let signed_in = matches!(auth::caller(&state, &parts).await, Ok(Some(_)));
    let path = parts.uri.path();
    let public = PUBLIC_PAGES.contains(&path)
        || PUBLIC_PAGES
            .iter()
            .any(|p| path.strip_suffix('/') == Some(*p));
    match (public, signed_in) {
        (true, true) => {
            // Straight on to the page the sign-in was for, when it is one of this site's.
            let asked = Query::<HashMap<String, String>>::try_from_uri(&parts.uri).ok();
            let next = asked
                .as_ref()
                .and_then(|q| q.get("next"))
                .map(String::as_str);
            Redirect::to(&app::components::auth::next_path(next)).into_response()
        }
        (false, false) => {
            let search = parts.uri.query().unwrap_or_default();
            Redirect::to(&app::components::auth::signin_url(path, search)).into_response()
        }
        _ => next.run(Request::from_parts(parts, body)).await,
    }
}

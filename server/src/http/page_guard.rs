//! Who may load which dashboard page, decided before the page is rendered: a signed-out visitor
//! asking for any page but sign-in or sign-up gets a real `302` to `/signin?next=<that page>`, so
//! that signing in comes back to the link they followed; a signed-in one asking for those two gets a
//! `302` to that `next` page (one of this site's) or to `/`; a signed-in one who is not an instance
//! admin asking for an admin page gets a `403` page that holds nothing of it
//! (`app::pages::forbidden`). The views redirect too (for client-side
//! navigation), but a redirect from inside a streamed page comes too late once nested routes have
//! started streaming their shell, and scripts and curl deserve a status code rather than a page.

use std::collections::HashMap;

use axum::extract::{Query, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};

use domain::{auth, AppState};

/// Pages a signed-out visitor may see; every other page the Leptos router serves needs an account.
pub const PUBLIC_PAGES: &[&str] = &["/signin", "/signup"];

/// The instance admins' pages: `/admin` and everything under it.
fn is_admin_page(path: &str) -> bool {
    path.strip_prefix("/admin")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

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
    let caller = auth::caller(&state, &parts).await.ok().flatten();
    let signed_in = caller.is_some();
    let path = parts.uri.path();
    if caller.is_some_and(|c| !c.is_admin) && is_admin_page(path) {
        let cookies = parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok());
        let locale = app::pages::forbidden::locale_of(cookies);
        return (
            StatusCode::FORBIDDEN,
            Html(app::pages::forbidden::forbidden_document(locale)),
        )
            .into_response();
    }
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

#[cfg(test)]
mod tests {
    use super::is_admin_page;

    #[test]
    fn admin_pages_are_admin_and_everything_under_it() {
        for page in ["/admin", "/admin/", "/admin/clusters"] {
            assert!(is_admin_page(page), "{page}");
        }
        for page in ["/", "/administer", "/w/1/admin", "/adminx/1"] {
            assert!(!is_admin_page(page), "{page}");
        }
    }
}

//! Helpers for server functions (`crate::api`): the [`AppState`] and the caller from Leptos context,
//! [`respond`], which gives a failed server-function call the same HTTP status a REST call would get
//! (via `contracts::error::http::status_of`), and [`as_caller`], the two together, which is what
//! almost every server function is.

use contracts::error::http::{extra_headers, status_of};
use contracts::error::{internal, AppError};
use domain::auth::{self, Actor};
use domain::sessions::Session;
use domain::AppState;
use http::request::Parts;
use leptos::prelude::*;
use leptos_axum::ResponseOptions;
use std::future::Future;

pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>()
        .ok_or_else(|| internal("server function", "AppState missing from context"))
}

fn parts() -> Result<Parts, AppError> {
    use_context::<Parts>()
        .ok_or_else(|| internal("server function", "request parts missing from context"))
}

/// The signed-in caller, or `Unauthenticated`.
pub async fn actor() -> Result<Actor, AppError> {
    auth::require(&state()?, &parts()?).await
}

/// The signed-in caller, if any.
pub async fn maybe_actor() -> Result<Option<Actor>, AppError> {
    auth::caller(&state()?, &parts()?).await
}

/// The request's session (present on every route: the session layer wraps the whole router).
pub fn session() -> Result<Session, AppError> {
    parts()?
        .extensions
        .get::<Session>()
        .cloned()
        .ok_or_else(|| internal("server function", "no session layer"))
}

pub fn client_ip() -> Option<String> {
    use_context::<Parts>().as_ref().and_then(auth::client_ip)
}

/// Sets the HTTP status (and `Retry-After`) of a failed server-function call. Only for calls to
/// `/rpc/...`: during page rendering the status belongs to the page, not to one of its data loads.
pub fn respond<T>(result: Result<T, AppError>) -> Result<T, AppError> {
    if let Err(err) = &result {
        let is_rpc = use_context::<Parts>().is_some_and(|p| p.uri.path().starts_with("/rpc/"));
        if let (true, Some(res)) = (is_rpc, use_context::<ResponseOptions>()) {
            res.set_status(status_of(err));
            for (name, value) in extra_headers(err) {
                res.insert_header(name, value);
            }
        }
    }
    result
}

/// Runs a server function's body for the signed-in caller (`Unauthenticated` without one) with the
/// server's state, and answers as [`respond`] does: the body is then only the domain call, the same
/// one the REST handler makes.
pub async fn as_caller<T, F>(body: impl FnOnce(AppState, Actor) -> F) -> Result<T, AppError>
where
    F: Future<Output = Result<T, AppError>>,
{
    let result = async {
        let state = state()?;
        let actor = actor().await?;
        body(state, actor).await
    }
    .await;
    respond(result)
}

//! Statuses of failed server-function calls the framework answers itself. The error's HTTP mapping is
//! `contracts::error::http` (the one place); this applies it to `/rpc/*` answers that no handler made.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use contracts::error::http::{extra_headers, status_of};
use contracts::error::AppError;

/// The most of a failed server function's answer read back to find its error (it is a small JSON body).
const MAX_SERVER_FN_ERROR: usize = 64 * 1024;

/// Gives a failed `/rpc/*` call the status of its error. Server functions set it themselves
/// (`app::context::respond`), but the framework answers errors it raises before any handler runs — arguments
/// that do not decode, an unknown function, a wrong method — with a 500 whatever the error; their body
/// is the [`AppError`] (see its `FromServerFnError`), so the status is read from it here.
pub async fn server_fn_status(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let is_rpc = request.uri().path().starts_with("/rpc/");
    let response = next.run(request).await;
    let framework_error = response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && response
            .headers()
            .contains_key(leptos::server_fn::error::SERVER_FN_ERROR_HEADER);
    if !is_rpc || !framework_error {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SERVER_FN_ERROR).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if let Ok(err) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status = status_of(&err);
        for (name, value) in extra_headers(&err) {
            parts.headers.insert(name, value);
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

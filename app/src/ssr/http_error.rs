//! The only place where an [`AppError`] becomes HTTP: its status code, the `Retry-After` header and the
//! JSON error body. REST handlers return it through `IntoResponse`; server functions call
//! [`status_of`] through `context::respond`; internal causes are logged where they happen
//! ([`internal`]) and never reach the client.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::AppError;

/// What every error response of the REST API looks like.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Stable identifier (`password_too_short`, `not_found`, ...).
    pub code: String,
    /// English explanation.
    pub message: String,
    /// The request field the error is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// For `too_many_requests`: seconds to wait (also in the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

pub fn status_of(err: &AppError) -> StatusCode {
    match err {
        AppError::Malformed { .. } => StatusCode::BAD_REQUEST,
        AppError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        AppError::Unauthenticated | AppError::InvalidCredentials => StatusCode::UNAUTHORIZED,
        AppError::Forbidden | AppError::Denied { .. } => StatusCode::FORBIDDEN,
        AppError::NotFound => StatusCode::NOT_FOUND,
        AppError::Conflict { .. } => StatusCode::CONFLICT,
        AppError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        AppError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
        AppError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        AppError::Internal | AppError::Transport { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Headers that go with the status: `Retry-After` for throttling, `WWW-Authenticate` for 401.
pub fn extra_headers(err: &AppError) -> Vec<(header::HeaderName, HeaderValue)> {
    match err {
        AppError::TooManyRequests { retry_after_secs } => {
            vec![(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs))]
        }
        AppError::Unauthenticated => {
            vec![(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"paddock\""),
            )]
        }
        _ => Vec::new(),
    }
}

/// The most of a failed server function's answer read back to find its error (it is a small JSON body).
const MAX_SERVER_FN_ERROR: usize = 64 * 1024;

/// Gives a failed `/rpc/*` call the status of its error. Server functions set it themselves
/// (`context::respond`), but the framework answers errors it raises before any handler runs — arguments
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

pub fn body_of(err: &AppError) -> ErrorBody {
    ErrorBody {
        code: err.code().to_string(),
        message: err.to_string(),
        field: err.field().map(str::to_string),
        retry_after_secs: match err {
            AppError::TooManyRequests { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        },
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut res = (status_of(&self), axum::Json(body_of(&self))).into_response();
        for (name, value) in extra_headers(&self) {
            res.headers_mut().insert(name, value);
        }
        res
    }
}

/// Logs an internal failure with its context and returns the opaque `Internal` error.
pub fn internal(context: &str, cause: impl std::fmt::Display) -> AppError {
    tracing::error!(context, %cause, "internal error");
    AppError::Internal
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        internal("database", e)
    }
}

impl From<tower_sessions::session::Error> for AppError {
    fn from(e: tower_sessions::session::Error) -> Self {
        internal("session store", e)
    }
}

/// True when `e` is a violation of a UNIQUE constraint (turned into a 409 by the caller, which knows
/// which field was duplicated).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

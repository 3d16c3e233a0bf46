//! The only place where an [`AppError`] becomes HTTP: its status code, the `Retry-After` and
//! `WWW-Authenticate` headers, and the JSON error body. REST handlers return it through `IntoResponse`;
//! server functions set the same status through [`status_of`]; internal causes are logged where they
//! happen ([`super::internal`]) and never reach the client.

use super::{AppError, ErrorBody, ErrorCode};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub fn status_of(err: &AppError) -> StatusCode {
    match err {
        AppError::Malformed { .. } => StatusCode::BAD_REQUEST,
        AppError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        AppError::Unauthenticated | AppError::InvalidCredentials | AppError::KeyRefused { .. } => {
            StatusCode::UNAUTHORIZED
        }
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
        AppError::TooManyRequests { retry_after_secs }
        | AppError::Unavailable {
            retry_after_secs: Some(retry_after_secs),
            ..
        } => {
            vec![(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs))]
        }
        AppError::Unauthenticated | AppError::KeyRefused { .. } => {
            vec![(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"paddock\""),
            )]
        }
        _ => Vec::new(),
    }
}

pub fn body_of(err: &AppError) -> ErrorBody {
    ErrorBody {
        code: err.code(),
        message: err.to_string(),
        field: err.field().map(str::to_string),
        retry_after_secs: match err {
            AppError::TooManyRequests { retry_after_secs } => Some(*retry_after_secs),
            AppError::Unavailable {
                retry_after_secs, ..
            } => *retry_after_secs,
            _ => None,
        },
        problems: err.problems().to_vec(),
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

/// A path that does not parse (`/workspaces/abc`) is the caller's mistake, in the common shape.
impl From<axum::extract::rejection::PathRejection> for AppError {
    fn from(r: axum::extract::rejection::PathRejection) -> Self {
        AppError::Invalid {
            field: None,
            code: ErrorCode::InvalidBody,
            message: format!("invalid path: {}", r.body_text()),
            problems: Vec::new(),
        }
    }
}

/// A query string that does not parse, likewise.
impl From<axum::extract::rejection::QueryRejection> for AppError {
    fn from(r: axum::extract::rejection::QueryRejection) -> Self {
        AppError::Invalid {
            field: None,
            code: ErrorCode::InvalidBody,
            message: format!("invalid query: {}", r.body_text()),
            problems: Vec::new(),
        }
    }
}

//! The one error type a client of Paddock sees. The domain returns it, server functions and REST
//! handlers pass it on; it becomes an HTTP response in exactly one place ([`http`], feature `axum`), a
//! server-function error body through `FromServerFnError` (feature `server-fn`), and a message in the
//! user's language in the UI from its `code`. The adapters sit here, behind features, because Rust lets
//! a trait be implemented only beside the type or the trait: the wasm bundle enables none of the
//! server's.
//!
//! Stable codes (what [`AppError::code`] returns): `username_invalid`, `username_taken`,
//! `password_too_short`, `password_too_long`, `invalid_credentials`, `signup_disabled`,
//! `account_disabled`, `workspace_name_invalid`, `role_invalid`, `user_not_found`, `already_member`,
//! `last_owner`, `token_name_invalid`, `cannot_disable_self`, `body_too_large`, `invalid_body`,
//! `csrf_rejected`, `environment_name_taken`, `spec_invalid`, `image_unavailable`, `preflight_failed`,
//! `not_built`, `not_running`, `build_in_progress`, `gpus_busy`, `gpu_quota_exceeded`, `host_not_allowed`,
//! `pickled_weights_refused`, `token_read_only`, `token_expiry_invalid`,
//! `docker_unavailable`, `docker_error`, `limit_reached`, `cap_invalid`, `volume_timeout`,
//! `volume_file_refused`,
//! `unauthenticated`, `forbidden`, `not_found`, `too_many_requests`, `internal`,
//! `transport` (client side only).

use serde::{Deserialize, Serialize};

#[cfg(feature = "axum")]
pub mod http;

/// Errors a client may see. Internal causes are logged on the server and reach the client only as
/// `Internal`, without detail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppError {
    /// The input is wrong. `field` names the form field or JSON field; `code` is a stable,
    /// translatable identifier (`password_too_short`, `username_taken`, ...); `message` is an
    /// English explanation for API users.
    #[error("{message}")]
    Invalid {
        field: Option<String>,
        code: String,
        message: String,
    },
    /// No valid session or token.
    #[error("sign in required")]
    Unauthenticated,
    /// Signed in, but the role does not allow this.
    #[error("you do not have permission to do this")]
    Forbidden,
    /// Does not exist, or exists where the caller is not a member (the two are indistinguishable on purpose).
    #[error("not found")]
    NotFound,
    /// Conflicts with existing state (a duplicate name, a last owner leaving, ...).
    #[error("{message}")]
    Conflict {
        field: Option<String>,
        code: String,
        message: String,
    },
    /// Too many attempts; try again after the given number of seconds.
    #[error("too many attempts, try again in {retry_after_secs} s")]
    TooManyRequests { retry_after_secs: u64 },
    /// The username or password is wrong (deliberately not saying which). HTTP 401.
    #[error("wrong username or password")]
    InvalidCredentials,
    /// Refused for a reason the caller can read in `code` (`signup_disabled`, `account_disabled`,
    /// `csrf_rejected`, `cannot_disable_self`). HTTP 403.
    #[error("{message}")]
    Denied { code: String, message: String },
    /// The request body is larger than the server accepts. HTTP 413.
    #[error("request body is larger than {limit_bytes} bytes")]
    TooLarge { limit_bytes: u64 },
    /// The request body could not be read at all (not JSON, not UTF-8, wrong content type). HTTP 400.
    /// Well-formed JSON with wrong fields or types is `Invalid` with code `invalid_body` instead.
    #[error("{message}")]
    Malformed { message: String },
    /// A service Paddock depends on is not there right now (`docker_unavailable`: no Docker engine
    /// answers). HTTP 503; the rest of Paddock keeps working.
    #[error("{message}")]
    Unavailable { code: String, message: String },
    /// Something failed on the server; the cause is in the server log.
    #[error("internal error")]
    Internal,
    /// The request never reached the handler (network, encoding); raised by the server-function layer.
    /// A struct variant like the others, so it serializes in the internally tagged body (a newtype
    /// variant of a string cannot, and the server-function layer panics on an error it cannot encode).
    #[error("request failed: {message}")]
    Transport { message: String },
}

impl AppError {
    pub fn invalid(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        AppError::Invalid {
            field: Some(field.into()),
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn denied(code: &str, message: impl Into<String>) -> Self {
        AppError::Denied {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn unavailable(code: &str, message: impl Into<String>) -> Self {
        AppError::Unavailable {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn transport(message: impl Into<String>) -> Self {
        AppError::Transport {
            message: message.into(),
        }
    }

    pub fn conflict(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        AppError::Conflict {
            field: Some(field.into()),
            code: code.into(),
            message: message.into(),
        }
    }

    /// A stable identifier for the UI to translate.
    pub fn code(&self) -> &str {
        match self {
            AppError::Invalid { code, .. }
            | AppError::Conflict { code, .. }
            | AppError::Denied { code, .. }
            | AppError::Unavailable { code, .. } => code,
            AppError::InvalidCredentials => "invalid_credentials",
            AppError::TooLarge { .. } => "body_too_large",
            AppError::Malformed { .. } => "invalid_body",
            AppError::Unauthenticated => "unauthenticated",
            AppError::Forbidden => "forbidden",
            AppError::NotFound => "not_found",
            AppError::TooManyRequests { .. } => "too_many_requests",
            AppError::Internal => "internal",
            AppError::Transport { .. } => "transport",
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            AppError::Invalid { field, .. } | AppError::Conflict { field, .. } => field.as_deref(),
            _ => None,
        }
    }
}

#[cfg(feature = "server-fn")]
impl server_fn::error::FromServerFnError for AppError {
    type Encoder = server_fn::codec::JsonEncoding;

    /// On the server, the layer's own errors are the caller's: arguments that do not decode are a
    /// malformed request (400), an unknown server function is not found (404). In the browser they are
    /// transport failures.
    fn from_server_fn_error(value: server_fn::error::ServerFnErrorErr) -> Self {
        use server_fn::error::ServerFnErrorErr as E;
        match value {
            E::Args(why) | E::MissingArg(why) | E::UnsupportedRequestMethod(why) if SERVER_SIDE => {
                AppError::Malformed {
                    message: format!("the server function's arguments do not decode: {why}"),
                }
            }
            E::Registration(_) if SERVER_SIDE => AppError::NotFound,
            other => AppError::transport(other.to_string()),
        }
    }
}

/// Whether this is the server's build (the browser's is wasm): the server-function layer's own errors
/// mean different things on each side.
#[cfg(feature = "server-fn")]
const SERVER_SIDE: bool = !cfg!(target_arch = "wasm32");

/// Logs an internal failure with its context and returns the opaque `Internal` error: the cause stays
/// in the server log and never reaches the client.
#[cfg(feature = "tracing")]
pub fn internal(context: &str, cause: impl std::fmt::Display) -> AppError {
    tracing::error!(context, %cause, "internal error");
    AppError::Internal
}

#[cfg(feature = "sqlx")]
impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        internal("database", e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server-function layer panics on an error it cannot encode, so every kind must round-trip.
    #[test]
    fn every_kind_of_error_round_trips_through_its_json_body() {
        let all = [
            AppError::invalid("name", "spec_invalid", "bad"),
            AppError::Unauthenticated,
            AppError::Forbidden,
            AppError::NotFound,
            AppError::conflict("name", "username_taken", "taken"),
            AppError::TooManyRequests {
                retry_after_secs: 3,
            },
            AppError::InvalidCredentials,
            AppError::denied("csrf_rejected", "no"),
            AppError::TooLarge { limit_bytes: 1 },
            AppError::Malformed {
                message: "m".into(),
            },
            AppError::unavailable("docker_unavailable", "down"),
            AppError::Internal,
            AppError::transport("no answer"),
        ];
        for err in all {
            let json = serde_json::to_string(&err).unwrap_or_else(|e| panic!("{err:?}: {e}"));
            assert_eq!(serde_json::from_str::<AppError>(&json).unwrap(), err);
        }
    }
}

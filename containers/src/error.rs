//! The crate's one error type. Every public function returns [`Result`]; bollard's errors are classified
//! once, here, into what the app needs to decide on: Docker missing (show "no Docker", keep working), bad
//! input (show the field), not found / conflict (404 / 409), a failed build (show the log tail), a preflight
//! refusal (show why the host cannot run the image), or anything else from Docker (log it, show a plain message).

use crate::spec::FieldError;

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No daemon answered (socket missing, connection refused, ping timed out). The app shows "no Docker"
    /// and disables environment actions; everything else keeps working.
    #[error("Docker is unreachable: {0}")]
    DockerUnreachable(String),

    /// The spec (or a request built from it) broke one or more rules; every broken field is listed.
    #[error("invalid environment spec: {}", FieldError::join(.0))]
    InvalidSpec(Vec<FieldError>),

    /// A container, image, volume or exec session does not exist.
    #[error("{kind} not found: {name}")]
    NotFound { kind: &'static str, name: String },

    /// Docker refused because of the current state (name in use, container not running, …).
    #[error("conflict: {0}")]
    Conflict(String),

    /// The image build failed; `log_tail` holds the last lines of the build output for the UI.
    #[error("image build failed: {message}")]
    BuildFailed {
        message: String,
        log_tail: Vec<String>,
    },

    /// Pulling a remote image failed (no registry reachable, unknown image, auth). Reported quickly and
    /// plainly because on Paddock's machines no registry is reachable at all.
    #[error("pulling image {image} failed: {message}")]
    PullFailed { image: String, message: String },

    /// The host cannot run the environment (no GPUs, driver too old for the image's CUDA, …). Each entry is
    /// one complete sentence for the user.
    #[error("preflight refused: {}", .0.join("; "))]
    Preflight(Vec<String>),

    /// Something on the Paddock host itself failed: reading a file for the build context, running `ldd`,
    /// a missing busybox.
    #[error("{context}: {message}")]
    Host { context: String, message: String },

    /// Any other error from the Docker API, with what we were doing.
    #[error("Docker error while {context}: {source}")]
    Docker {
        context: String,
        #[source]
        source: bollard::errors::Error,
    },
}

impl Error {
    /// Classifies a bollard error. `kind`/`name` say what a 404 refers to, `context` what we were doing.
    pub(crate) fn docker(
        context: impl Into<String>,
        kind: &'static str,
        name: &str,
        err: bollard::errors::Error,
    ) -> Self {
        use bollard::errors::Error as B;
        match &err {
            B::DockerResponseServerError {
                status_code: 404, ..
            } => Error::NotFound {
                kind,
                name: name.to_string(),
            },
            B::DockerResponseServerError {
                status_code: 409,
                message,
            } => Error::Conflict(message.clone()),
            // The transport could not reach the daemon at all.
            B::HyperLegacyError { .. }
            | B::IOError { .. }
            | B::SocketNotFoundError(_)
            | B::RequestTimeoutError => Error::DockerUnreachable(err.to_string()),
            _ => Error::Docker {
                context: context.into(),
                source: err,
            },
        }
    }

    pub(crate) fn host(context: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::Host {
            context: context.into(),
            message: message.to_string(),
        }
    }

    /// True when the daemon is missing: the app keeps running with environment actions disabled.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Error::DockerUnreachable(_))
    }
}

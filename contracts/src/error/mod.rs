//! The one error type a client of Paddock sees. The domain returns it, server functions and REST
//! handlers pass it on; it becomes an HTTP response in exactly one place ([`http`], feature `axum`), a
//! server-function error body through `FromServerFnError` (feature `server-fn`), and a message in the
//! user's language in the UI from its `code`. The adapters sit here, behind features, because Rust lets
//! a trait be implemented only beside the type or the trait: the wasm bundle enables none of the
//! server's.
//!
//! The stable codes are [`ErrorCode`] (what [`AppError::code`] returns).

use serde::{Deserialize, Serialize};

mod code;
#[cfg(feature = "axum")]
pub mod http;

pub use code::ErrorCode;

/// Errors a client may see. Internal causes are logged on the server and reach the client only as
/// `Internal`, without detail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppError {
    /// The input is wrong. `field` names the form field or JSON field; `code` is a stable,
    /// translatable identifier (`password_too_short`, `username_taken`, ...); `message` is an
    /// English explanation for API users. When several fields are wrong at once, `problems` has one
    /// entry per broken rule (and `field` names the first), so a form shows each under its field.
    #[error("{message}")]
    Invalid {
        field: Option<String>,
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<FieldProblem>,
    },
    /// No valid session or token.
    #[error("sign in required")]
    Unauthenticated,
    /// An endpoint's gateway refused the call's key (`key_missing`: no `Authorization: Bearer`;
    /// `key_refused`: revoked, mistyped or another endpoint's). HTTP 401. Not `Unauthenticated`:
    /// an application calling a model has no one to sign in.
    #[error("{message}")]
    KeyRefused { code: ErrorCode, message: String },
    /// Signed in, but the role does not allow this.
    #[error("you do not have permission to do this")]
    Forbidden,
    /// Does not exist, or exists where the caller is not a member (the two are indistinguishable on purpose).
    #[error("not found")]
    NotFound,
    /// Conflicts with existing state (a duplicate name, a last owner leaving, a cap reached, ...).
    /// `problems` names the rule when one says it in any language (a cap and its value).
    #[error("{message}")]
    Conflict {
        field: Option<String>,
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<FieldProblem>,
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
    Denied { code: ErrorCode, message: String },
    /// The request body is larger than the server accepts. HTTP 413.
    #[error("request body is larger than {limit_bytes} bytes")]
    TooLarge { limit_bytes: u64 },
    /// The request body could not be read at all (not JSON, not UTF-8, wrong content type). HTTP 400.
    /// Well-formed JSON with wrong fields or types is `Invalid` with code `invalid_body` instead.
    #[error("{message}")]
    Malformed { message: String },
    /// A service Paddock depends on is not there right now (`docker_unavailable`: no Docker engine
    /// answers). HTTP 503; the rest of Paddock keeps working.
    /// `retry_after_secs`: when trying again makes sense (an endpoint waking from zero replicas), also
    /// sent as `Retry-After`.
    #[error("{message}")]
    Unavailable {
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_secs: Option<u64>,
    },
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
    pub fn invalid(field: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        AppError::Invalid {
            field: Some(field.into()),
            code,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    /// Every broken rule of a request at once; `None` when there is none. The message lists them for
    /// API users (`learning_rate: must be …; batch_size: must be …`).
    pub fn invalid_fields(code: ErrorCode, problems: Vec<FieldProblem>) -> Option<Self> {
        let first = problems.first()?.field.clone();
        Some(AppError::Invalid {
            field: Some(first),
            code,
            message: problems
                .iter()
                .map(|p| format!("{}: {}", p.field, p.message))
                .collect::<Vec<_>>()
                .join("; "),
            problems,
        })
    }

    /// The broken rules at `field` (or beneath it: `env.HOME`, `os_packages[1]`), when the error lists
    /// them.
    pub fn problems_at<'a>(&'a self, field: &'a str) -> impl Iterator<Item = &'a FieldProblem> {
        self.problems().iter().filter(move |p| p.is_at(field))
    }

    /// The broken rules the error lists (an `Invalid`, or a `Conflict` with a named rule).
    pub fn problems(&self) -> &[FieldProblem] {
        match self {
            AppError::Invalid { problems, .. } | AppError::Conflict { problems, .. } => problems,
            _ => &[],
        }
    }

    /// Whether the error lists its problems field by field.
    pub fn has_problems(&self) -> bool {
        !self.problems().is_empty()
    }

    pub fn denied(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError::Denied {
            code,
            message: message.into(),
        }
    }

    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError::Unavailable {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// Unavailable now, worth trying again after `retry_after_secs`.
    pub fn unavailable_for(
        code: ErrorCode,
        message: impl Into<String>,
        retry_after_secs: u64,
    ) -> Self {
        AppError::Unavailable {
            code,
            message: message.into(),
            retry_after_secs: Some(retry_after_secs),
        }
    }

    pub fn transport(message: impl Into<String>) -> Self {
        AppError::Transport {
            message: message.into(),
        }
    }

    pub fn conflict(field: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        AppError::Conflict {
            field: Some(field.into()),
            code,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    /// A conflict whose reason is a named rule (`problem`), so that it reads whole in any language.
    pub fn conflict_with(code: ErrorCode, problem: FieldProblem) -> Self {
        AppError::Conflict {
            field: Some(problem.field.clone()),
            code,
            message: problem.message.clone(),
            problems: vec![problem],
        }
    }

    /// A stable identifier for the UI to translate.
    pub fn code(&self) -> ErrorCode {
        match self {
            AppError::Invalid { code, .. }
            | AppError::Conflict { code, .. }
            | AppError::Denied { code, .. }
            | AppError::KeyRefused { code, .. }
            | AppError::Unavailable { code, .. } => *code,
            AppError::InvalidCredentials => ErrorCode::InvalidCredentials,
            AppError::TooLarge { .. } => ErrorCode::BodyTooLarge,
            AppError::Malformed { .. } => ErrorCode::InvalidBody,
            AppError::Unauthenticated => ErrorCode::Unauthenticated,
            AppError::Forbidden => ErrorCode::Forbidden,
            AppError::NotFound => ErrorCode::NotFound,
            AppError::TooManyRequests { .. } => ErrorCode::TooManyRequests,
            AppError::Internal => ErrorCode::Internal,
            AppError::Transport { .. } => ErrorCode::Transport,
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            AppError::Invalid { field, .. } | AppError::Conflict { field, .. } => field.as_deref(),
            _ => None,
        }
    }
}

/// One broken rule of a request, at its field: what the rule is (when it has a name the UI words in the
/// user's language) and an English sentence for API users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldProblem {
    /// The field as the request names it (`memory`, `env.HF_HOME`, `os_packages[2]`).
    pub field: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
}

impl FieldProblem {
    pub fn new(field: impl Into<String>, rule: Rule, message: impl Into<String>) -> Self {
        FieldProblem {
            field: field.into(),
            message: message.into(),
            rule: Some(rule),
        }
    }

    /// A problem with no named rule: its message is all there is.
    pub fn said(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldProblem {
            field: field.into(),
            message: message.into(),
            rule: None,
        }
    }

    /// Whether it is about `field`, or something beneath it (`env.HOME` is beneath `env`).
    pub fn is_at(&self, field: &str) -> bool {
        self.field == field
            || self
                .field
                .strip_prefix(field)
                .is_some_and(|rest| rest.starts_with('[') || rest.starts_with('.'))
    }
}

/// The caps an admin sets on what a workspace or a user holds at once (`domain::caps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// Environments running at once, per workspace.
    RunningEnvironments,
    /// Endpoint replicas, per workspace.
    Replicas,
    /// Uploads in progress, per user.
    Uploads,
    /// Open live streams (log views, terminals), per user.
    Streams,
}

/// The rules a value can break, with what is needed to say them in any language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rule {
    /// A name people give a thing: 1–64 characters without control characters.
    Name,
    /// A whole number from `min` to `max`.
    Between { min: i64, max: i64 },
    /// A whole number of at least `min`.
    AtLeast { min: i64 },
    /// A whole number of at least `min`, or nothing.
    AtLeastOrEmpty { min: i64 },
    /// A whole number of at most `max`.
    AtMost { max: i64 },
    /// A number above `min` (or at least, when `min_included`) and below `max` (or at most).
    Interval {
        min: f64,
        min_included: bool,
        max: f64,
        max_included: bool,
    },
    /// One of these words.
    OneOf { values: Vec<String> },
    /// A number above `min`.
    Above { min: f64 },
    /// At least one entry.
    NotEmpty,
    /// A grid sweep takes lists of values, not ranges to draw from.
    GridNeedsValues,
    /// Half precision needs a GPU.
    Fp16NeedsGpu,
    /// bfloat16 on the CPU needs AVX512-BF16, which this server's CPU lacks.
    Bf16NeedsCpuSupport,
    /// bfloat16 on GPUs needs compute capability 8.0 (Ampere) or newer; `ampere` GPUs of this host
    /// have it, fewer than the job asks for (before Ampere bf16 is emulated, and the trainer refuses it).
    Bf16NeedsAmpere { ampere: i64 },
    /// More GPUs than this host has: it would never start.
    MoreGpusThanHost { host: i64 },
    /// More GPUs than this host can use, some of its GPUs being left out (each reason in the words of
    /// nvidia-smi and Paddock's CUDA runtime: versions and device names).
    MoreGpusThanUsable { host: i64, left_out: Vec<String> },
    /// More GPUs than the workspace's quota, which counts this server's and a cluster's alike: it would
    /// never start.
    MoreGpusThanQuota { quota: i64 },
    /// Data parallelism gives each GPU a rank of its own: as many ranks as GPUs.
    RanksPerGpu { gpus: i64 },
    /// A run spans several machines only on a cluster, whose scheduler gives it the nodes.
    NodesNeedCluster,
    /// A run across nodes runs natively on them, not in an environment's image.
    NodesNotInImage,
    /// The dataset's rows are for another task (`data`) than the job's: a job learns its data's task.
    DataForTask { data: crate::task::Task },
    /// Only one of this field and `other`.
    NotWith { other: String },
    /// A name a cluster scheduler takes (a Slurm account, QoS): 1–64 letters, digits, `_`, `-`, `.`.
    SchedulerName,
    /// A cluster's name in Paddock: 1–32 of a-z, 0-9 and `-`, starting with a letter.
    ClusterName,
    /// An absolute path to a file this server can read.
    ReadableFile,
    /// An SSH destination: `user@host`, plain words.
    SshDestination,
    /// Host keys as `ssh-keyscan` prints them; `line`: the first line that is not one (`None`: there is
    /// no key at all).
    KnownHosts { line: Option<u64> },
    /// A data file's problem, located in the file (what the dataset validator found).
    Data { issue: Box<crate::data::Issue> },
    /// `more` problems beyond those listed.
    AndMore { more: usize },
    /// The server's check of the input needed more memory than its limit (`paddock serve
    /// --child-memory-mib`, growing with the input's size).
    MemoryLimit { mib: u64 },
    /// The check used more CPU time than its limit.
    CpuLimit { secs: u64 },
    /// The check took longer than its deadline.
    TimeLimit { secs: u64 },
    /// The check ended without saying why; what it printed is in the server log under `incident`.
    Crashed { incident: String },
    /// One more than an admin's cap allows (`max`); `used`: what the workspace's others already hold,
    /// where that is the reason.
    CapReached {
        cap: Cap,
        max: i64,
        used: Option<i64>,
    },
}

/// What every error response of the REST API looks like (the browser reads it back as an [`AppError`]
/// through [`ErrorBody::into_error`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Stable identifier (`password_too_short`, `not_found`, ...).
    pub code: ErrorCode,
    /// English explanation.
    pub message: String,
    /// The request field the error is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// For `too_many_requests` and some 503s: seconds to wait (also in the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
    /// Every broken rule, when several fields are wrong (an `Invalid` error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<FieldProblem>,
}

impl ErrorBody {
    /// The error a REST answer with this body and `status` stands for, as the UI shows it (translated
    /// by code, under the field it names).
    pub fn into_error(self, status: u16) -> AppError {
        if status == 409 {
            AppError::Conflict {
                field: self.field,
                code: self.code,
                message: self.message,
                problems: self.problems,
            }
        } else {
            AppError::Invalid {
                field: self.field,
                code: self.code,
                message: self.message,
                problems: self.problems,
            }
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
            // The JSON codec reports arguments that do not decode as a deserialization error.
            E::Args(why)
            | E::MissingArg(why)
            | E::Deserialization(why)
            | E::UnsupportedRequestMethod(why)
                if SERVER_SIDE =>
            {
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
            AppError::invalid("name", ErrorCode::SpecInvalid, "bad"),
            AppError::Unauthenticated,
            AppError::KeyRefused {
                code: ErrorCode::KeyMissing,
                message: "m".into(),
            },
            AppError::Forbidden,
            AppError::NotFound,
            AppError::conflict("name", ErrorCode::UsernameTaken, "taken"),
            AppError::TooManyRequests {
                retry_after_secs: 3,
            },
            AppError::InvalidCredentials,
            AppError::denied(ErrorCode::CsrfRejected, "no"),
            AppError::TooLarge { limit_bytes: 1 },
            AppError::Malformed {
                message: "m".into(),
            },
            AppError::unavailable(ErrorCode::DockerUnavailable, "down"),
            AppError::unavailable_for(ErrorCode::EndpointWaking, "waking", 5),
            AppError::Internal,
            AppError::transport("no answer"),
        ];
        for err in all {
            let json = serde_json::to_string(&err).unwrap_or_else(|e| panic!("{err:?}: {e}"));
            assert_eq!(serde_json::from_str::<AppError>(&json).unwrap(), err);
        }
    }
}

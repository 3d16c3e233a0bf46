//! One type per kind of id. Every row is numbered by SQLite, so every id is an `i64` underneath —
//! which is exactly why they get types: `cancel(db, actor, job_id, workspace_id)` with the two swapped
//! compiled, and read or changed the wrong row (or, worse, a row of another workspace with the same
//! number). With a type per kind the swap is a compile error, on the server, in the CLI and in the
//! browser alike.
//!
//! On the wire and in the database an id stays a plain integer (`serde(transparent)`, and
//! `sqlx(transparent)` behind the `sqlx` feature), so no URL, JSON body or column changes. In the
//! OpenAPI document each kind is a named integer schema that says what it numbers.
//!
//! The swap this prevents, as the compiler sees it:
//!
//! ```compile_fail,E0308
//! use contracts::ids::{JobId, WorkspaceId};
//! fn cancel(_workspace: WorkspaceId, _job: JobId) {}
//! cancel(JobId::new(7), WorkspaceId::new(1)); // expected `WorkspaceId`, found `JobId`
//! ```
//!
//! ```
//! # use contracts::ids::{JobId, WorkspaceId};
//! # fn cancel(_workspace: WorkspaceId, _job: JobId) {}
//! cancel(WorkspaceId::new(1), JobId::new(7));
//! ```

use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What every id type is, for code that works with any of them (a page reading the id in its URL).
pub trait Id: Copy + Eq + fmt::Display + FromStr + Send + Sync + 'static {
    /// The id numbered `raw`.
    fn from_raw(raw: i64) -> Self;
}

/// Declares each id type with what it numbers (its doc comment, also its OpenAPI description).
macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        #[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub struct $name(i64);

        impl $name {
            /// The id numbered `raw` — for numbers read where no type can reach: a command-line
            /// argument, a route parameter, a row read without the query macros.
            pub const fn new(raw: i64) -> Self {
                Self(raw)
            }

            /// The number underneath, for a URL, a file name or a log line.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl Id for $name {
            fn from_raw(raw: i64) -> Self {
                Self(raw)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIntError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map(Self)
            }
        }
    )+};
}

ids! {
    /// An account's id.
    UserId;
    /// A workspace's id.
    WorkspaceId;
    /// A personal API token's id.
    TokenId;
    /// A dataset's id.
    DatasetId;
    /// An environment's id.
    EnvironmentId;
    /// A training job's id.
    JobId;
    /// A checkpoint's id.
    CheckpointId;
    /// A pretrained model's id (uploaded or imported weights to fine-tune from).
    PretrainedId;
    /// An evaluation's id.
    EvaluationId;
    /// An inference endpoint's id.
    EndpointId;
    /// An endpoint API key's id.
    KeyId;
    /// A sweep's id (a search over a job's settings).
    SweepId;
    /// A company identity provider's id (OpenID Connect, LDAP).
    ProviderId;
    /// A provider's group mapping's id.
    MappingId;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_a_plain_integer_on_the_wire_and_in_text() {
        let id = JobId::new(42);
        assert_eq!(serde_json::to_string(&id).unwrap(), "42");
        assert_eq!(serde_json::from_str::<JobId>("42").unwrap(), id);
        assert!(serde_json::from_str::<JobId>("\"42\"").is_err());
        assert_eq!(id.to_string(), "42");
        assert_eq!("42".parse::<JobId>().unwrap(), id);
        assert!("4x".parse::<JobId>().is_err());
        assert_eq!(id.get(), 42);
    }
}

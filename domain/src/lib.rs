//! Paddock's domain: everything that decides, stores or runs — accounts, workspaces and their members,
//! tokens, the audit log, datasets, environments, jobs, checkpoints, evaluations, endpoints and the
//! scheduler. It knows no web framework: the dashboard's server functions (`app`) and the REST API
//! (`server`) are thin transports over the same functions here, so each rule lives in one place. What
//! goes in and out is typed in `contracts`; errors are [`contracts::error::AppError`].
//!
//! # Layout
//! - [`state`]: [`AppState`], what every request handler and server function is given.
//! - [`db`]: the SQLite pool (WAL, foreign keys) and embedded migrations.
//! - [`transitions`]: the one writer of long-running things' statuses (each kind's state machine:
//!   `jobs::status`, `evaluations::status`, `endpoints::status` for endpoints and replicas,
//!   `environments::status` for environments, `environments::builds` for image builds).
//! - [`auth`]: who is calling (session or token), resolved from a request's parts; [`access`] is the
//!   one authorisation check every workspace-scoped query goes through.
//! - People and teams: [`accounts`], [`admin`], [`sessions`], [`tokens`], [`workspaces`] (with their
//!   purge), [`members`], [`audit`], [`caps`] (per-user limits), [`throttle`] (sign-in budgets).
//! - Work: [`environments`] (with [`engine`], the optional Docker connection, [`gpus`], the GPU
//!   inventory, and [`image_archives`], the caps on an image archive counted before Docker unpacks it), [`datasets`] and [`pretrained`] models (files kept as [`storage`] lays out, migrated by
//!   [`layout`]), [`jobs`] (queue, scheduler, checkpoints), [`evaluations`] (checkpoints measured on
//!   datasets), [`endpoints`] (replicas, parity gate, gateway, keys); [`names`] checks the names people
//!   give things.
//! - [`executor`]: the one seam through which jobs, evaluations and replicas are started, followed,
//!   stopped and found again (a local process, a Docker container; a cluster next).
//! - [`sealing`]: values the database keeps encrypted (secret variables), with a key outside it.
//! - [`precision`]: the forms' precision default, bf16 against float32 measured at first use.
//! - [`children`]: the limits of every process the server starts on a team's input (memory, CPU time,
//!   deadline), and what their failures say.

pub mod access;
pub mod accounts;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod caps;
pub mod children;
pub mod datasets;
pub mod db;
pub mod endpoints;
pub mod engine;
pub mod environments;
pub mod evaluations;
pub mod executor;
pub mod gpus;
pub mod identity;
pub mod image_archives;
pub mod jobs;
pub mod layout;
pub mod members;
pub mod names;
pub mod precision;
pub mod pretrained;
pub mod sealing;
pub mod sessions;
pub mod state;
pub mod storage;
pub mod sweeps;
pub mod throttle;
pub mod tokens;
pub mod transitions;
pub mod workspaces;

pub use auth::Actor;
pub use state::{AppState, SecurityConfig};

/// The current time as the RFC 3339 string stored in the database and returned by the API.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Logs a failure whose words must not reach a client — another service's answer (the Docker engine,
/// a registry mirror), a process's panic, host paths — under a new incident id, and returns the id for
/// the answer to name instead.
pub(crate) fn incident(context: &str, cause: impl std::fmt::Display) -> String {
    let incident = hex::encode(rand::random::<[u8; 4]>());
    tracing::warn!(context, incident, %cause, "failure kept from the client");
    incident
}

#[cfg(test)]
pub(crate) mod testing;

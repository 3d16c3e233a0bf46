//! Server-only domain code: everything that touches the database, sessions or HTTP lives here, behind the
//! `ssr` feature, so none of it reaches the wasm bundle.
//!
//! # Layout
//! - [`state`]: [`AppState`], shared by REST handlers and server functions.
//! - [`db`]: the SQLite pool (WAL, foreign keys) and embedded migrations.
//! - Domain modules, named after the domain: [`accounts`], [`admin`], [`sessions`], [`tokens`],
//!   [`workspaces`], [`members`], [`audit`], [`environments`] (with [`engine`], the optional Docker
//!   connection, and [`gpus`], the GPU inventory), [`datasets`] (files kept as [`storage`] lays out), [`jobs`] (queue,
//!   scheduler, executors, checkpoints), [`evaluations`] (checkpoints measured on datasets), [`endpoints`] (replicas, parity gate, gateway); [`access`] is the one authorisation check every
//!   workspace-scoped query goes through; [`auth`] finds out who is calling (session or token).
//! - HTTP boundary: [`http_error`] (the only `AppError` → response conversion), [`csrf`] (with the
//!   `Host` allow-list), [`headers`] (security headers, CSP), [`limits`],
//!   [`page_guard`] (which pages need an account),
//!   [`observability`] (`/metrics`, `/healthz`), [`rest`] (`/api/v1` and its OpenAPI document) and
//!   [`context`] (helpers for server functions).

pub mod access;
pub mod accounts;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod caps;
pub mod context;
pub mod csrf;
pub mod datasets;
pub mod db;
pub mod endpoints;
pub mod engine;
pub mod environments;
pub mod evaluations;
pub mod gpus;
pub mod headers;
pub mod http_error;
pub mod jobs;
pub mod layout;
pub mod limits;
pub mod members;
pub mod names;
pub mod observability;
pub mod page_guard;
pub mod pretrained;
pub mod rest;
pub mod sessions;
pub mod state;
pub mod storage;
pub mod throttle;
pub mod tokens;
pub mod workspaces;

pub use auth::Actor;
pub use state::{AppState, SecurityConfig};

/// The current time as the RFC 3339 string stored in the database and returned by the API.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
pub(crate) mod testing;

//! The `paddock` binary's library: command-line configuration, the HTTP server and the headless
//! admin commands. `main.rs` only parses the command line and dispatches here.
//!
//! # Layout
//! - [`config`]: the clap structs — every flag documented, every server flag also a `PADDOCK_*`
//!   environment variable.
//! - [`serve`]: [`serve::run`] opens the database, starts the domain's machinery and serves the router
//!   until the shutdown future resolves.
//! - [`http`]: the router — REST API (`/api/v1`, OpenAPI), Leptos pages and server functions, static
//!   files, `/healthz`, `/metrics` — and its middleware (CSRF, security headers, body limits).
//! - [`admin`]: `paddock admin create-user`, `reset-password` and `rotate-secrets-key`.
//! - [`logging`]: the process's own log: stderr or a size-capped file, warnings limited per cause.
//! - [`client`]: the REST client the commands below share (token, errors, names, SSE).
//! - [`environments`]: `paddock env list|show|create|up|down|rm|exec`.
//! - [`jobs`]: `paddock job submit|list|show|logs|cancel` and `paddock ckpt list|download|eval`.
//! - [`log_sink`]: `paddock log-sink`, the size limit on a job's raw `train.log`.
//! - [`model_server`]: `paddock serve-model`, one checkpoint behind HTTP with dynamic batching.

pub mod admin;
pub mod client;
pub mod config;
pub mod endpoints;
pub mod environments;
pub mod http;
pub mod jobs;
pub mod log_sink;
pub mod logging;
pub mod model_server;
pub mod pretrained;
pub mod serve;
pub mod sweeps;

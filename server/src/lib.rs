//! The `paddock` binary's library: command-line configuration, the HTTP server and the headless
//! admin commands. `main.rs` only parses the command line and dispatches here.
//!
//! # Layout
//! - [`config`]: the clap structs — every flag documented, every server flag also a `PADDOCK_*`
//!   environment variable.
//! - [`serve`]: [`serve::run`] builds the router (REST API, Leptos pages and server functions, static
//!   files, `/healthz`, `/metrics`) and serves it until the shutdown future resolves.
//! - [`admin`]: `paddock admin create-user` and `reset-password`.
//! - [`environments`]: `paddock env list|show|create|up|down|rm|exec`, a client of the REST API.

pub mod admin;
pub mod config;
pub mod environments;
pub mod serve;

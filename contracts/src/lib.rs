//! What crosses Paddock's boundaries, typed once for both sides. The trainer (`paddock train`,
//! `paddock eval`) and the model server (`paddock serve-model`) write these; the web side starts them and
//! reads back what they wrote. With one definition a field renamed on one side fails to compile on the
//! other, instead of reading as 0 at run time. Serde only — no libtorch — so the web side, the CLI and
//! the browser can use it without linking the trainer.
//!
//! # Layout
//! - [`job`]: the trainer's job file, `job.toml` (written by the web side with `toml`, never by hand).
//! - [`data`]: the data file layouts and columns a job file names.
//! - [`events`]: the JSON lines a training run writes on stdout (schema in `trainer/EVENTS.md`).
//! - [`metrics`]: classification metrics, in `eval` events, in checkpoints and from `paddock eval --json`.
//! - [`precision`]: what `auto` precision chose and the measurement that decided it.
//! - [`scaling`]: an endpoint's autoscaling policy and the history of what its scaler decided.
//! - [`serving`]: the model server's HTTP API: `/predict` and its reply, `/health`, errors.
//! - [`sweeps`]: searches over a job's settings: what a sweep asks, its trials, their decisions.
//! - [`task`]: what a fine-tuned model does (classification, …): its head, its data, its metrics.
//! - [`types`]: what the dashboard's server functions and the REST API take and return, shared by the
//!   UI (wasm), the domain and the CLI.
//! - [`ids`]: one type per kind of id (`JobId`, `WorkspaceId`, …), a plain integer on the wire.
//! - [`error`]: [`error::AppError`], the one error a client sees, with its HTTP mapping behind the `axum`
//!   feature.

pub mod data;
pub mod error;
pub mod events;
pub mod identity;
pub mod ids;
pub mod job;
pub mod metrics;
pub mod precision;
pub mod runs;
pub mod scaling;
pub mod serving;
pub mod sweeps;
pub mod task;
pub mod types;

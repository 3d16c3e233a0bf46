//! Fine-tuning (and training from scratch) of a sequence classifier from a `job.toml`.
//!
//! # Layout
//! - `config`: the job file and its validation.
//! - `prepare`: data loading and checks before anything is written.
//! - `model_init`: the starting model — pretrained, resumed or a preset from scratch.
//! - `optimizer`: AdamW with saveable state, clipping, fp16 loss scaling.
//! - `parallel`: data parallelism, several ranks training one run.
//! - `schedule`: linear warm-up and decay.
//! - `state` / `checkpoints`: resumable state, atomic checkpoints, best-k retention.
//! - `signal`: graceful stop on SIGTERM.
//! - `run`: the loop.

pub mod checkpoints;
pub mod config;
pub mod model_init;
pub mod optimizer;
pub mod parallel;
pub mod prepare;
pub mod run;
pub mod schedule;
pub mod signal;
pub mod state;

pub use config::{JobConfig, JobFile};
pub use run::{train, EndStatus, RunControl, TrainOutcome};
pub use signal::StopFlag;

//! ERNIE 3.0 / BERT fine-tuning for Chinese text classification on libtorch (tch), with Hugging
//! Face-compatible checkpoints and tokenization.
//!
//! # Layout
//! - [`error`]: the crate's `Error` / `Result`.
//! - [`config`]: `config.json` (`ErnieConfig`) and the ERNIE 3.0 presets.
//! - [`model`]: encoder, pooler, classification and masked-LM heads, named like transformers' state dicts.
//! - [`checkpoint`]: load / save Hugging Face model directories (safetensors, `pytorch_model.bin`).
//! - [`tokenizer`]: BERT WordPiece exactly as transformers' `BertTokenizer`.
//! - [`device`]: device and precision selection; [`precision`]: `auto` precision, measured at start.
//! - [`data`]: reading, validating and batching data files.
//! - [`train`]: fine-tuning (or training from scratch) a classifier from a job file.
//! - [`pretrain`]: masked-LM pretraining with whole-word masking.
//! - [`collectives`]: all-reduce, broadcast and barrier across ranks (libtorch's c10d, Gloo).
//! - [`launch`]: one run as several ranks on this machine, as torchrun starts them.
//! - [`events`]: the JSON-lines event stream, [`progress`] its human-readable account on stderr;
//!   [`cli`]: the command-line front ends.

pub mod checkpoint;
pub mod cli;
pub mod collectives;
pub mod config;
pub mod data;
pub mod device;
pub mod error;
pub mod events;
pub mod launch;
pub mod model;
pub mod paddle;
pub mod precision;
pub mod predict;
pub mod pretrain;
pub mod progress;
pub mod tokenizer;
pub mod train;

/// Classification metrics: the contract crate's, computed here and read by the platform.
pub use contracts::metrics;
/// What a fine-tuned model does: the contract crate's, asked by every part of the trainer that differs
/// by task.
pub use contracts::task;

pub use checkpoint::{LoadReport, LoadedModel, SavedCheckpoint};
pub use config::ErnieConfig;
pub use device::{pick_device, Precision};
pub use error::{Error, Result};
pub use model::{
    ErnieForMaskedLM, ErnieForSequenceClassification, ErnieForTokenClassification, ErnieModel,
    Inputs, TaskModel,
};
pub use tokenizer::{Encoded, Tokenizer};

//! `paddock pretrain`: in-domain masked-LM pretraining with whole-word masking, the lever for accuracy
//! where no pretrained Chinese weights are available. Its checkpoint is what `paddock train` then starts
//! from (`[model] pretrained`).
//!
//! # Layout
//! - `config`: the command's options (`PretrainArgs`) and their checks.
//! - `corpus`: reading plain-text or CSV/TSV/JSONL corpora.
//! - `words`: jieba word segmentation aligned with the WordPiece tokens.
//! - `masking`: choosing whole words and replacing their tokens (80/10/10), seeded per row and epoch.
//! - `run`: the loop, events and checkpoints.

pub mod config;
pub mod corpus;
pub mod masking;
pub mod run;
pub mod words;

pub use config::PretrainArgs;
pub use run::{pretrain, PretrainOutcome};

//! Paddle models (PaddleNLP ERNIE directories, issue 17), in and out: their weights file,
//! `model_state.pdparams`, is a pickle, read and written here without running Python ([`pickle`]);
//! their parameter names and Linear layouts map onto the Hugging Face ones Paddock's model uses
//! ([`names`]), their `config.json` onto Hugging Face's ([`config`]). An import ([`import`]) or export
//! ([`export`]) is kept only when Paddock's model answers as PaddleNLP's would ([`parity`], against the
//! Paddle-layout forward pass of [`reference`]).

pub mod config;
pub mod export;
pub mod import;
pub mod names;
pub mod parity;
pub mod pickle;
pub mod reference;

pub use export::{export, ExportReport};
pub use import::{import, MappedTensor, PaddleImport};
pub use parity::ParityReport;

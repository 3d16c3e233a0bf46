//! The crate's single error type. Every fallible public function returns [`Result`]; messages name the file,
//! line or field at fault so that a user can fix their input without reading code.

use std::path::PathBuf;

/// Everything that can go wrong while loading, tokenizing, training or saving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written; `path` says which.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An invalid model or job configuration (unknown preset, inconsistent sizes, bad `config.json`).
    #[error("config: {0}")]
    Config(String),
    /// A checkpoint directory is incomplete or its tensors do not fit the configuration.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The vocabulary or tokenizer file is unusable, or encoding failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Bad training or evaluation data; `line` is 1-based, `field` the column at fault.
    #[error("{}", fmt_data(.line, .field, .message))]
    Data {
        line: Option<usize>,
        field: Option<String>,
        message: String,
    },
    /// An error raised inside libtorch.
    #[error("torch: {0}")]
    Torch(#[from] tch::TchError),
    /// A collective across the run's ranks failed: a rank died, never came, or timed out.
    #[error("ranks: {0}")]
    Collective(String),
    /// The run was stopped on request (SIGTERM, cancel button) before it finished.
    #[error("cancelled")]
    Cancelled,
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

fn fmt_data(line: &Option<usize>, field: &Option<String>, message: &str) -> String {
    match (line, field) {
        (Some(l), Some(f)) => format!("line {l}, field `{f}`: {message}"),
        (Some(l), None) => format!("line {l}: {message}"),
        (None, Some(f)) => format!("field `{f}`: {message}"),
        (None, None) => message.to_string(),
    }
}

//! How a job's data files are laid out: the format and which columns hold what.

use serde::{Deserialize, Serialize};

/// The three accepted layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DataFormat {
    /// Decide from the file extension: `.csv`, `.tsv`/`.txt`, `.jsonl`/`.ndjson`/`.json`.
    #[default]
    Auto,
    /// RFC 4180: comma-separated, double-quote quoting, header row.
    Csv,
    /// Tab-separated with a header row and no quoting (quotes are ordinary characters), as most
    /// tools write it and as Chinese review text needs (it is full of `"`).
    Tsv,
    /// One JSON object per line.
    Jsonl,
}

impl DataFormat {
    /// Resolves `Auto` from the path's extension.
    pub fn resolve(self, path: &std::path::Path) -> Option<DataFormat> {
        if self != DataFormat::Auto {
            return Some(self);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(DataFormat::Csv),
            "tsv" | "txt" | "tab" => Some(DataFormat::Tsv),
            "jsonl" | "ndjson" | "json" => Some(DataFormat::Jsonl),
            _ => None,
        }
    }
}

/// Which columns (or JSON keys) hold what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Columns {
    pub text: String,
    /// Read when present in the header / object; a missing pair column is not an error.
    pub text_pair: String,
    pub label: String,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            text: "text".into(),
            text_pair: "text_pair".into(),
            label: "label".into(),
        }
    }
}

//! Data files: how they are laid out (the format and which columns hold what), and the validation
//! report the trainer writes about one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The three accepted layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// The validation report of a data file, as `paddock validate` prints it and the server stores it with
/// the dataset: every problem with its 1-based line and field, split into errors (the file cannot be
/// used) and warnings (it can, but look), and statistics — row count, label distribution, and lengths in
/// characters and, when they could be counted, in tokens. Written by the trainer, read by the server and
/// drawn by the dashboard: one declaration for the three. A missing field reads as its default, so
/// reports stored by an earlier version still read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ValidationReport {
    pub path: String,
    pub format: Option<DataFormat>,
    pub encoding: Option<TextEncoding>,
    /// Data records read (the header excluded), good or bad.
    pub rows: usize,
    /// Records that passed every error check and are used.
    pub valid_rows: usize,
    /// Count per label string, over valid rows.
    pub label_distribution: BTreeMap<String, usize>,
    /// Text lengths in characters.
    pub lengths: Option<LengthStats>,
    /// Text lengths in tokens, when the validator was given a way to count them.
    pub tokens: Option<TokenLengths>,
    /// True when there are no errors.
    pub ok: bool,
    pub error_count: usize,
    pub warning_count: usize,
    /// The first [`MAX_ISSUES_KEPT`] errors, in line order.
    pub errors: Vec<Issue>,
    /// The first [`MAX_ISSUES_KEPT`] warnings, in line order.
    pub warnings: Vec<Issue>,
}

impl ValidationReport {
    /// A report on `path` with nothing found yet.
    pub fn new(path: &std::path::Path) -> Self {
        ValidationReport {
            path: path.display().to_string(),
            format: None,
            encoding: None,
            rows: 0,
            valid_rows: 0,
            label_distribution: BTreeMap::new(),
            lengths: None,
            tokens: None,
            ok: true,
            error_count: 0,
            warning_count: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Counts `issue` and keeps it while its list has room.
    pub fn push(&mut self, issue: Issue) {
        let (list, count) = match issue.severity {
            Severity::Error => (&mut self.errors, &mut self.error_count),
            Severity::Warning => (&mut self.warnings, &mut self.warning_count),
        };
        *count += 1;
        if list.len() < MAX_ISSUES_KEPT {
            list.push(issue);
        }
        self.ok = self.error_count == 0;
    }

    /// Puts the kept issues in line order.
    pub fn sort(&mut self) {
        self.errors.sort_by_key(|i| i.line.unwrap_or(0));
        self.warnings.sort_by_key(|i| i.line.unwrap_or(0));
    }
}

/// At most this many issues of each severity are kept; the totals still count every one. A file with
/// 100k bad rows should give a readable report, not a 20 MB one.
pub const MAX_ISSUES_KEPT: usize = 200;

/// The encoding a file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TextEncoding {
    Utf8,
    /// UTF-8 with a byte-order mark (Excel's "CSV UTF-8"); the mark is dropped.
    Utf8Bom,
    /// GBK or GB18030 (GB18030 is a superset of GBK, so one decoder serves both).
    Gb18030,
}

/// Whether an issue blocks using the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// A stable machine-readable code per kind of problem, for the UI to group and translate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    Encoding,
    EmptyFile,
    UnknownFormat,
    MissingColumn,
    Malformed,
    EmptyText,
    MissingLabel,
    UnknownLabel,
    Duplicate,
    ConflictingDuplicate,
    Truncated,
    SingleLabel,
}

impl IssueKind {
    /// The stored word (`missing_label`).
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::Encoding => "encoding",
            IssueKind::EmptyFile => "empty_file",
            IssueKind::UnknownFormat => "unknown_format",
            IssueKind::MissingColumn => "missing_column",
            IssueKind::Malformed => "malformed",
            IssueKind::EmptyText => "empty_text",
            IssueKind::MissingLabel => "missing_label",
            IssueKind::UnknownLabel => "unknown_label",
            IssueKind::Duplicate => "duplicate",
            IssueKind::ConflictingDuplicate => "conflicting_duplicate",
            IssueKind::Truncated => "truncated",
            IssueKind::SingleLabel => "single_label",
        }
    }
}

/// One problem, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Issue {
    pub severity: Severity,
    pub kind: IssueKind,
    /// 1-based line in the file, when the problem has one.
    pub line: Option<usize>,
    /// Column or JSON key at fault, when there is one.
    pub field: Option<String>,
    pub message: String,
}

impl Issue {
    /// An error in one record's column: most of what a data file can get wrong.
    pub fn in_cell(kind: IssueKind, line: usize, column: &str, message: impl Into<String>) -> Self {
        Issue::error(kind, Some(line), Some(column.to_string()), message.into())
    }

    pub fn error(
        kind: IssueKind,
        line: Option<usize>,
        field: Option<String>,
        message: String,
    ) -> Self {
        Issue {
            severity: Severity::Error,
            kind,
            line,
            field,
            message,
        }
    }

    /// Like [`Issue::error`], for what is kept but worth a look.
    pub fn warning(
        kind: IssueKind,
        line: Option<usize>,
        field: Option<String>,
        message: String,
    ) -> Self {
        let error = Issue::error(kind, line, field, message);
        Issue {
            severity: Severity::Warning,
            ..error
        }
    }

    /// `line 5, text: the text is empty`: where, then what.
    pub fn located(&self) -> String {
        match (self.line, &self.field) {
            (Some(line), Some(field)) => format!("line {line}, {field}: {}", self.message),
            (Some(line), None) => format!("line {line}: {}", self.message),
            (None, Some(field)) => format!("{field}: {}", self.message),
            (None, None) => self.message.clone(),
        }
    }
}

/// What lengths are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    Chars,
    /// Tokens as the model sees them, `[CLS]`/`[SEP]` included.
    Tokens,
}

/// A length distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LengthStats {
    pub unit: LengthUnit,
    pub p50: usize,
    pub p95: usize,
    pub max: usize,
    pub mean: f64,
    /// Rows longer than `max_seq_len` (they will be truncated), when a limit was given.
    pub over_limit: Option<usize>,
    pub histogram: Vec<HistogramBin>,
}

/// How tokens were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Tokenization {
    /// With the model's vocabulary: exact.
    Wordpiece,
    /// Without one, BERT's basic split (a token per CJK character, words split at spaces and
    /// punctuation): a lower bound, since WordPiece only cuts words further.
    Basic,
}

/// Lengths in tokens, with the rows each usual sequence limit would cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenLengths {
    pub tokenizer: Tokenization,
    #[serde(flatten)]
    pub stats: LengthStats,
    /// Rows longer than each of the common limits (128, 256, 512).
    pub over: Vec<OverLength>,
}

/// How many rows are longer than `max_len` tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OverLength {
    pub max_len: usize,
    pub rows: usize,
}

/// Rows whose length is in `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistogramBin {
    pub from: usize,
    pub to: usize,
    pub count: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_kinds_are_stored_by_their_word() {
        for kind in [
            IssueKind::MissingLabel,
            IssueKind::ConflictingDuplicate,
            IssueKind::Encoding,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
    }
}

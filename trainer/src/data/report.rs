//! The validation report the platform shows for a data file: every problem with its 1-based line and
//! field, split into errors (the file cannot be used) and warnings (it can, but look), plus statistics —
//! row count, label distribution, and length percentiles with a histogram in characters and, when the
//! caller can count them, in tokens (with the rows longer than the usual sequence limits). Serialisable
//! as JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use super::encoding::TextEncoding;
use super::reader::DataFormat;

/// At most this many issues of each severity are kept; the totals still count every one. A file with
/// 100k bad rows should give a readable report, not a 20 MB one.
pub const MAX_ISSUES_KEPT: usize = 200;

/// Whether an issue blocks using the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// A stable machine-readable code per kind of problem, for the UI to group and translate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// One problem, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    pub fn warning(
        kind: IssueKind,
        line: Option<usize>,
        field: Option<String>,
        message: String,
    ) -> Self {
        Issue {
            severity: Severity::Warning,
            kind,
            line,
            field,
            message,
        }
    }
}

/// The sequence limits people pick most (`max_seq_len`): the token report says how many rows each cuts.
pub const COMMON_MAX_LENGTHS: [usize; 3] = [128, 256, 512];

/// Length distribution in characters, or in tokens ([`TokenLengths`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LengthStats {
    /// "chars", or "tokens" (including [CLS]/[SEP]).
    pub unit: &'static str,
    pub p50: usize,
    pub p95: usize,
    pub max: usize,
    pub mean: f64,
    /// Rows longer than `max_seq_len` (they will be truncated), when a limit was given.
    pub over_limit: Option<usize>,
    pub histogram: Vec<HistogramBin>,
}

/// Lengths in tokens, as the model will see them (`[CLS]`/`[SEP]` included).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenLengths {
    /// `wordpiece`: counted with the given vocabulary, exactly. `basic`: without one, BERT's basic split
    /// (a token per CJK character, words split at spaces and punctuation) — a lower bound, since WordPiece
    /// only cuts words further.
    pub tokenizer: &'static str,
    #[serde(flatten)]
    pub stats: LengthStats,
    /// Rows longer than each of [`COMMON_MAX_LENGTHS`]: what truncation at that limit would cut.
    pub over: Vec<OverLength>,
}

/// How many rows are longer than `max_len` tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverLength {
    pub max_len: usize,
    pub rows: usize,
}

/// Rows whose length is in `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistogramBin {
    pub from: usize,
    pub to: usize,
    pub count: usize,
}

/// Everything known about one data file after validation.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub(crate) fn new(path: &std::path::Path) -> Self {
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

    pub(crate) fn push(&mut self, issue: Issue) {
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

    pub(crate) fn sort(&mut self) {
        self.errors.sort_by_key(|i| i.line.unwrap_or(0));
        self.warnings.sort_by_key(|i| i.line.unwrap_or(0));
    }

    /// A one-paragraph summary of the errors for an [`crate::Error::Data`]: the file and the first few
    /// located problems.
    pub fn error_summary(&self) -> String {
        const SHOWN: usize = 5;
        let mut s = format!("{}: {} error(s)", self.path, self.error_count);
        for issue in self.errors.iter().take(SHOWN) {
            s.push_str("\n  ");
            if let Some(l) = issue.line {
                s.push_str(&format!("line {l}: "));
            }
            if let Some(f) = &issue.field {
                s.push_str(&format!("`{f}`: "));
            }
            s.push_str(&issue.message);
        }
        if self.error_count > SHOWN {
            s.push_str(&format!("\n  … and {} more", self.error_count - SHOWN));
        }
        s
    }

    /// `Ok(())` when the report has no errors, else an [`crate::Error::Data`] naming the first bad line.
    pub fn to_result(&self) -> crate::Result<()> {
        if self.ok {
            return Ok(());
        }
        let first = self.errors.first();
        Err(crate::Error::Data {
            line: first.and_then(|i| i.line),
            field: first.and_then(|i| i.field.clone()),
            message: self.error_summary(),
        })
    }
}

/// Percentiles (nearest rank), mean and a histogram of `lengths`; `None` for no rows.
pub fn length_stats(
    lengths: &[usize],
    unit: &'static str,
    limit: Option<usize>,
) -> Option<LengthStats> {
    if lengths.is_empty() {
        return None;
    }
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable();
    let rank =
        |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    let max = *sorted.last().unwrap();
    Some(LengthStats {
        unit,
        p50: rank(0.5),
        p95: rank(0.95),
        max,
        mean: sorted.iter().sum::<usize>() as f64 / sorted.len() as f64,
        over_limit: limit.map(|l| sorted.iter().filter(|&&x| x > l).count()),
        histogram: histogram(&sorted, max),
    })
}

/// [`TokenLengths`] of `lengths` counted by `tokenizer`; `limit` (the job's `max_seq_len`) fills
/// `over_limit`.
pub fn token_lengths(
    lengths: &[usize],
    tokenizer: &'static str,
    limit: Option<usize>,
) -> Option<TokenLengths> {
    let stats = length_stats(lengths, "tokens", limit)?;
    let over = COMMON_MAX_LENGTHS
        .iter()
        .map(|&max_len| OverLength {
            max_len,
            rows: lengths.iter().filter(|&&l| l > max_len).count(),
        })
        .collect();
    Some(TokenLengths {
        tokenizer,
        stats,
        over,
    })
}

/// About 16 equal bins with a round width (1, 2, 4, 8, …) from zero to past the maximum.
fn histogram(sorted: &[usize], max: usize) -> Vec<HistogramBin> {
    let width = (max / 16 + 1).next_power_of_two();
    let bins = max / width + 1;
    let mut out: Vec<HistogramBin> = (0..bins)
        .map(|i| HistogramBin {
            from: i * width,
            to: (i + 1) * width,
            count: 0,
        })
        .collect();
    for &x in sorted {
        out[x / width].count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_histogram() {
        let lens: Vec<usize> = (1..=100).collect();
        let s = length_stats(&lens, "chars", Some(90)).unwrap();
        assert_eq!((s.p50, s.p95, s.max), (50, 95, 100));
        assert_eq!(s.over_limit, Some(10));
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<usize>(), 100);
        assert!(s.histogram.iter().all(|b| b.to - b.from == 8));
        assert!((s.mean - 50.5).abs() < 1e-9);
        assert!(length_stats(&[], "chars", None).is_none());
    }

    #[test]
    fn token_lengths_count_the_rows_over_each_common_limit() {
        let lens = [3, 128, 129, 200, 256, 300, 512, 513, 2000];
        let t = token_lengths(&lens, "basic", Some(256)).unwrap();
        assert_eq!(t.tokenizer, "basic");
        assert_eq!(t.stats.unit, "tokens");
        assert_eq!(t.stats.max, 2000);
        assert_eq!(t.stats.over_limit, Some(4));
        let over: Vec<(usize, usize)> = t.over.iter().map(|o| (o.max_len, o.rows)).collect();
        assert_eq!(over, [(128, 7), (256, 4), (512, 2)]);
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(
            json["p50"], 256,
            "the statistics sit beside the tokenizer's name: {json}"
        );
        assert_eq!(json["over"][2]["rows"], 2);
        assert!(token_lengths(&[], "basic", None).is_none());
    }

    #[test]
    fn issue_lists_are_capped_but_counted() {
        let mut r = ValidationReport::new(std::path::Path::new("x.tsv"));
        for i in 0..(MAX_ISSUES_KEPT + 5) {
            r.push(Issue::error(
                IssueKind::EmptyText,
                Some(i + 2),
                None,
                "empty".into(),
            ));
        }
        assert_eq!(r.errors.len(), MAX_ISSUES_KEPT);
        assert_eq!(r.error_count, MAX_ISSUES_KEPT + 5);
        assert!(!r.ok);
        let err = r.to_result().unwrap_err().to_string();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(err.contains("x.tsv"), "{err}");
    }
}

//! Reads one data file and checks it end to end: encoding, format, required values, labels and
//! duplicates, then measures lengths (characters, and tokens when the caller says how to count them).
//! Produces the [`ValidationReport`] and the rows that passed. It never writes anything, so a bad file
//! leaves no trace behind.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::encoding;
use super::entities::EntitySpan;
use super::labels::LabelMap;
use super::reader::{self, Columns, DataFormat};
use super::report::{
    length_stats, token_lengths, Issue, IssueDetail, IssueKind, LengthUnit, Tokenization,
    ValidationReport,
};
use crate::{Error, Result};
use contracts::task::Task;

/// How to read a data file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataOptions {
    pub format: DataFormat,
    pub columns: Columns,
    /// Convert GBK/GB18030 files to UTF-8 on reading instead of refusing them.
    pub convert_encoding: bool,
    /// Whether every row needs a label (training and evaluation: yes; prediction: no).
    pub require_labels: bool,
    /// What the rows are for: a matching task needs both texts of every row.
    pub task: Task,
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions {
            format: DataFormat::Auto,
            columns: Columns::default(),
            convert_encoding: false,
            require_labels: true,
            task: Task::default(),
        }
    }
}

/// How to count a row's tokens (`[CLS]`/`[SEP]` included), and which tokenizer that is (`wordpiece` with
/// a vocabulary, `basic` without: see [`super::report::TokenLengths`]).
#[derive(Clone, Copy)]
pub struct Measure<'a> {
    pub tokenizer: Tokenization,
    pub count: &'a dyn Fn(&str, Option<&str>) -> usize,
}

/// A row that passed the checks, label still a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub text: String,
    pub text_pair: Option<String>,
    pub label: Option<String>,
    /// An entity file's spans of `text` (empty for other tasks).
    pub entities: Vec<EntitySpan>,
}

/// A row ready for training: label mapped to its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// 1-based line in the source file, kept so that predictions and errors can point back at it.
    pub line: usize,
    pub text: String,
    pub text_pair: Option<String>,
    pub label: Option<usize>,
    /// An entity file's spans of `text`, sorted (empty for other tasks).
    pub entities: Vec<EntitySpan>,
}

/// The outcome of validating a file.
#[derive(Debug, Clone)]
pub struct Validated {
    pub report: ValidationReport,
    /// The rows that passed; empty when the file could not be parsed at all.
    pub rows: Vec<Row>,
}

impl Validated {
    /// The rows as examples, with labels mapped through `labels`. Fails when the report has errors.
    pub fn into_examples(self, labels: Option<&LabelMap>) -> Result<Vec<Example>> {
        super::report::to_result(&self.report)?;
        Ok(self
            .rows
            .into_iter()
            .map(|r| Example {
                line: r.line,
                label: r
                    .label
                    .as_deref()
                    .and_then(|l| labels.and_then(|m| m.id(l))),
                text: r.text,
                text_pair: r.text_pair,
                entities: r.entities,
            })
            .collect())
    }
}

/// The spans of an entity row at `line`, sorted, or what is wrong with them: every row must give its
/// entities (an empty list when it has none), each within the text, non-empty, of a named type the
/// model knows, and no two overlapping.
fn check_entities(
    line: usize,
    text: &str,
    given: Option<Vec<EntitySpan>>,
    opts: &DataOptions,
    labels: Option<&LabelMap>,
) -> std::result::Result<Vec<EntitySpan>, Box<Issue>> {
    let field = &opts.columns.entities;
    let at = |kind, message: String| Box::new(Issue::in_cell(kind, line, field, message));
    let Some(mut spans) = given else {
        if opts.require_labels {
            return Err(at(
                IssueKind::MissingLabel,
                format!("no `{field}`: give the text's entities, or [] when it has none"),
            ));
        }
        return Ok(Vec::new());
    };
    let chars = text.chars().count();
    spans.sort();
    for (i, s) in spans.iter().enumerate() {
        if s.label.is_empty() {
            return Err(at(
                IssueKind::MissingLabel,
                format!("entity {}–{} has no label", s.start, s.end),
            ));
        }
        if s.start >= s.end || s.end > chars {
            return Err(at(
                IssueKind::Malformed,
                format!(
                    "entity `{}` at {}–{} is not within the text's {chars} characters (start < end <= {chars})",
                    s.label, s.start, s.end
                ),
            ));
        }
        if let Some(next) = spans.get(i + 1).filter(|n| n.start < s.end) {
            return Err(at(
                IssueKind::Malformed,
                format!(
                    "entities `{}` at {}–{} and `{}` at {}–{} overlap: a character belongs to one entity",
                    s.label, s.start, s.end, next.label, next.start, next.end
                ),
            ));
        }
        if let Some(map) = labels.filter(|m| m.id(&format!("B-{}", s.label)).is_none()) {
            let known = super::entities::types_of_labels(map.names());
            let unknown = at(
                IssueKind::UnknownLabel,
                format!(
                    "unknown entity type `{}` (known: {})",
                    s.label,
                    known.join(", ")
                ),
            );
            return Err(Box::new(unknown.with(IssueDetail::UnknownLabel {
                label: s.label.clone(),
                known,
            })));
        }
    }
    Ok(spans)
}

/// The spans of a row as one string, to compare rows' answers.
fn entity_signature(spans: &[EntitySpan]) -> String {
    spans
        .iter()
        .map(|s| format!("{}-{}:{}", s.start, s.end, s.label))
        .collect::<Vec<_>>()
        .join(",")
}

/// Validates `path`. `labels` (when known) turns labels outside it into errors; `measure` adds token
/// lengths to the character lengths, and `max_len` the token length beyond which rows are truncated.
/// Only an unreadable file is an `Err`; every problem with the content is in the report.
pub fn validate_file(
    path: &Path,
    opts: &DataOptions,
    labels: Option<&LabelMap>,
    measure: Option<Measure<'_>>,
    max_len: Option<usize>,
) -> Result<Validated> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(validate_bytes(path, &bytes, opts, labels, measure, max_len))
}

/// [`validate_file`] on bytes already read; `path` is only used in messages.
pub fn validate_bytes(
    path: &Path,
    bytes: &[u8],
    opts: &DataOptions,
    labels: Option<&LabelMap>,
    measure: Option<Measure<'_>>,
    max_len: Option<usize>,
) -> Validated {
    let mut report = ValidationReport::new(path);
    let mut rows = Vec::new();
    let done = |mut report: ValidationReport, rows| {
        report.sort();
        Validated { report, rows }
    };

    let Some(format) = opts.format.resolve(path) else {
        report.push(Issue::error(
            IssueKind::UnknownFormat,
            None,
            None,
            "cannot tell the format from the file name: use .csv, .tsv, .jsonl or .conll, or set `format`"
                .into(),
        ));
        return done(report, rows);
    };
    report.format = Some(format);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        report.push(Issue::error(
            IssueKind::EmptyFile,
            None,
            None,
            "the file is empty".into(),
        ));
        return done(report, rows);
    }
    let text = match encoding::decode(bytes, opts.convert_encoding) {
        Ok((text, enc)) => {
            if enc == encoding::TextEncoding::Gb18030 {
                report.push(
                    Issue::warning(
                        IssueKind::Encoding,
                        None,
                        None,
                        "the file is GBK/GB18030; it was converted to UTF-8 on reading".into(),
                    )
                    .with(IssueDetail::ConvertedFromGb18030),
                );
            }
            report.encoding = Some(enc);
            text
        }
        Err(p) => {
            report.push(
                Issue::error(IssueKind::Encoding, Some(p.line), None, p.message).with(p.detail),
            );
            return done(report, rows);
        }
    };

    let parsed = reader::parse(&text, format, &opts.columns);
    report.rows = parsed.records;
    for issue in parsed.issues {
        report.push(issue);
    }
    if parsed.records == 0 && report.ok {
        let msg = match format {
            DataFormat::Jsonl => "the file has no data rows",
            _ => "the file has a header (line 1) but no data rows",
        };
        report.push(Issue::error(IssueKind::EmptyFile, None, None, msg.into()));
    }
    if opts.require_labels && !parsed.has_label_column && !parsed.rows.is_empty() {
        report.push(Issue::in_cell(
            IssueKind::MissingColumn,
            1,
            &opts.columns.label,
            format!(
                "there is no `{}` column, and this data needs labels",
                opts.columns.label
            ),
        ));
    }

    let needs_pair = opts.task.pairs();
    if needs_pair && !parsed.has_pair_column && !parsed.rows.is_empty() {
        report.push(Issue::in_cell(
            IssueKind::MissingColumn,
            1,
            &opts.columns.text_pair,
            format!(
                "there is no `{}` column, and a {} task needs the second text of every pair",
                opts.columns.text_pair, opts.task
            ),
        ));
    }

    let cols = &opts.columns;
    // (text, pair) -> (first line, label): duplicates are reported against their first occurrence.
    let mut seen: HashMap<(String, Option<String>), (usize, Option<String>)> = HashMap::new();
    for row in parsed.rows {
        let text = row.text.unwrap_or_default();
        if text.trim().is_empty() {
            report.push(Issue::in_cell(
                IssueKind::EmptyText,
                row.line,
                &cols.text,
                "empty text",
            ));
            continue;
        }
        if needs_pair
            && parsed.has_pair_column
            && row.text_pair.as_deref().is_none_or(|p| p.trim().is_empty())
        {
            report.push(Issue::in_cell(
                IssueKind::EmptyText,
                row.line,
                &cols.text_pair,
                "empty second text of the pair",
            ));
            continue;
        }
        let entities = match opts.task {
            Task::Ner => match check_entities(row.line, &text, row.entities, opts, labels) {
                Ok(spans) => spans,
                Err(issue) => {
                    report.push(*issue);
                    continue;
                }
            },
            _ => Vec::new(),
        };
        // An entity row's spans stand for its label where duplicates are compared.
        let label = match opts.task {
            Task::Ner => Some(entity_signature(&entities)),
            _ => row.label.filter(|l| !l.is_empty()),
        };
        if opts.require_labels && parsed.has_label_column && opts.task != Task::Ner {
            match (&label, labels) {
                (None, _) => {
                    report.push(Issue::in_cell(
                        IssueKind::MissingLabel,
                        row.line,
                        &cols.label,
                        "missing label",
                    ));
                    continue;
                }
                (Some(l), Some(map)) if map.id(l).is_none() => {
                    report.push(
                        Issue::in_cell(
                            IssueKind::UnknownLabel,
                            row.line,
                            &cols.label,
                            format!("unknown label `{l}` (known: {})", map.names().join(", ")),
                        )
                        .with(IssueDetail::UnknownLabel {
                            label: l.clone(),
                            known: map.names().to_vec(),
                        }),
                    );
                    continue;
                }
                _ => {}
            }
        }
        let key = (text.clone(), row.text_pair.clone());
        if let Some((first, first_label)) = seen.get(&key) {
            if *first_label == label {
                report.push(
                    Issue::warning(
                        IssueKind::Duplicate,
                        Some(row.line),
                        Some(cols.text.clone()),
                        format!("duplicate of line {first}"),
                    )
                    .with(IssueDetail::DuplicateOf { line: *first }),
                );
            } else {
                report.push(
                    Issue::warning(
                        IssueKind::ConflictingDuplicate,
                        Some(row.line),
                        Some(cols.label.clone()),
                        format!(
                        "same text as line {first} but a different label (`{}` there, `{}` here)",
                        first_label.as_deref().unwrap_or(""),
                        label.as_deref().unwrap_or("")
                    ),
                    )
                    .with(IssueDetail::ConflictsWith {
                        line: *first,
                        there: first_label.clone().unwrap_or_default(),
                        here: label.clone().unwrap_or_default(),
                    }),
                );
            }
        } else {
            seen.insert(key, (row.line, label.clone()));
        }
        rows.push(Row {
            line: row.line,
            text,
            text_pair: row.text_pair,
            label: label.filter(|_| opts.task != Task::Ner),
            entities,
        });
    }

    report.valid_rows = rows.len();
    for r in &rows {
        // An entity file's distribution counts entities by type.
        let labels = r.label.iter().chain(r.entities.iter().map(|e| &e.label));
        for l in labels {
            *report.label_distribution.entry(l.clone()).or_default() += 1;
        }
    }
    if opts.require_labels && opts.task == Task::Ner && report.label_distribution.is_empty() {
        report.push(Issue::error(
            IssueKind::MissingLabel,
            None,
            Some(opts.columns.entities.clone()),
            "no text has an entity: there is nothing to learn".into(),
        ));
    }
    if opts.require_labels && opts.task != Task::Ner && report.label_distribution.len() == 1 {
        let only = report
            .label_distribution
            .keys()
            .next()
            .cloned()
            .unwrap_or_default();
        report.push(
            Issue::warning(
                IssueKind::SingleLabel,
                None,
                Some(cols.label.clone()),
                format!("every row has the same label `{only}`"),
            )
            .with(IssueDetail::OnlyLabel { label: only }),
        );
    }
    let chars: Vec<usize> = rows
        .iter()
        .map(|r| r.text.chars().count() + r.text_pair.as_ref().map_or(0, |p| p.chars().count()))
        .collect();
    report.lengths = length_stats(&chars, LengthUnit::Chars, None);
    if let Some(m) = measure {
        let tokens: Vec<usize> = rows
            .iter()
            .map(|r| (m.count)(&r.text, r.text_pair.as_deref()))
            .collect();
        report.tokens = token_lengths(&tokens, m.tokenizer, max_len);
    }
    if let (Some(t), Some(limit)) = (&report.tokens, max_len) {
        if let Some(n) = t.stats.over_limit.filter(|&n| n > 0) {
            report.push(
                Issue::warning(
                    IssueKind::Truncated,
                    None,
                    None,
                    format!(
                    "{n} row(s) are longer than max_seq_len = {limit} tokens and will be truncated"
                ),
                )
                .with(IssueDetail::OverLength { rows: n, limit }),
            );
        }
    }
    done(report, rows)
}

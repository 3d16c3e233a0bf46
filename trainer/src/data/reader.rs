//! Parses decoded CSV, TSV, JSONL and CoNLL text into raw rows, one per record (a CoNLL text is the
//! tokens up to a blank line), each with the 1-based line it starts on. Structural problems (wrong column count, bad JSON, a missing column in the header) become
//! [`Issue`]s rather than errors so that one pass reports every bad line; value checks (empty text,
//! labels) happen later in `validate`.

use super::entities::{spans_of_tags, EntitySpan, Tag};
use super::report::{Issue, IssueDetail, IssueKind};

pub use contracts::data::{Columns, DataFormat};

/// One record as read, before value checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRow {
    /// 1-based line the record starts on, as an editor shows it.
    pub line: usize,
    pub text: Option<String>,
    pub text_pair: Option<String>,
    pub label: Option<String>,
    /// An entity file's spans of `text` (CoNLL's tags read into spans, or a JSON line's `entities`);
    /// `None` where the record gives none.
    pub entities: Option<Vec<EntitySpan>>,
}

/// Result of parsing: the well-formed rows, the structural issues, and whether a label column exists.
#[derive(Debug, Default)]
pub struct Parsed {
    pub rows: Vec<RawRow>,
    pub issues: Vec<Issue>,
    pub has_label_column: bool,
    /// Whether a pair column exists (in the header, or in any JSON object).
    pub has_pair_column: bool,
    /// Data records seen, well-formed or not (the header is not a record).
    pub records: usize,
}

/// Parses `text` in `format` (already resolved, not `Auto`), each label read through
/// `columns.label_names` (a value named there becomes its name; trimmed as labels are compared).
pub fn parse(text: &str, format: DataFormat, columns: &Columns) -> Parsed {
    let mut parsed = match format {
        DataFormat::Jsonl => parse_jsonl(text, columns),
        DataFormat::Conll => parse_conll(text),
        DataFormat::Csv => parse_delimited(text, b',', true, columns),
        DataFormat::Tsv | DataFormat::Auto => parse_delimited(text, b'\t', false, columns),
    };
    if !columns.label_names.is_empty() {
        for label in parsed.rows.iter_mut().filter_map(|r| r.label.as_mut()) {
            if let Some(name) = columns.label_names.get(label.trim()) {
                *label = name.clone();
            }
        }
    }
    parsed
}

fn parse_delimited(text: &str, delimiter: u8, quoting: bool, columns: &Columns) -> Parsed {
    let mut out = Parsed::default();
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .quoting(quoting)
        .has_headers(false)
        // Rows with the wrong number of fields are reported by us with their line, not by csv as a
        // fatal error that would hide the rest of the file.
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header = match records.next() {
        None => return out,
        Some(Err(e)) => {
            out.issues.push(Issue::error(
                IssueKind::Malformed,
                csv_line(&e).or(Some(1)),
                None,
                e.to_string(),
            ));
            return out;
        }
        Some(Ok(h)) => h,
    };
    let names: Vec<String> = header.iter().map(|h| h.trim().to_string()).collect();
    let find = |name: &str| names.iter().position(|n| n == name);
    let Some(text_idx) = find(&columns.text) else {
        out.issues.push(
            Issue::in_cell(
                IssueKind::MissingColumn,
                1,
                &columns.text,
                format!(
                    "the header has no `{}` column (columns: {})",
                    columns.text,
                    names.join(", ")
                ),
            )
            .with(IssueDetail::HeaderColumns {
                columns: names.clone(),
            }),
        );
        return out;
    };
    let pair_idx = find(&columns.text_pair);
    let label_idx = find(&columns.label);
    out.has_label_column = label_idx.is_some();
    out.has_pair_column = pair_idx.is_some();
    for record in records {
        match record {
            Err(e) => {
                out.records += 1;
                out.issues.push(Issue::error(
                    IssueKind::Malformed,
                    csv_line(&e),
                    None,
                    e.to_string(),
                ));
            }
            Ok(rec) => {
                let line = rec.position().map(|p| p.line() as usize).unwrap_or(0);
                // A line holding only whitespace is not a record; editors leave them at the end.
                if rec.len() == 1 && rec[0].trim().is_empty() && names.len() > 1 {
                    continue;
                }
                out.records += 1;
                if rec.len() != names.len() {
                    out.issues.push(
                        Issue::error(
                            IssueKind::Malformed,
                            Some(line),
                            None,
                            format!(
                                "expected {} fields as in the header, found {}",
                                names.len(),
                                rec.len()
                            ),
                        )
                        .with(IssueDetail::FieldCount {
                            expected: names.len(),
                            found: rec.len(),
                        }),
                    );
                    continue;
                }
                out.rows.push(RawRow {
                    line,
                    text: Some(rec[text_idx].to_string()),
                    text_pair: pair_idx
                        .map(|i| rec[i].to_string())
                        .filter(|s| !s.is_empty()),
                    label: label_idx.map(|i| rec[i].trim().to_string()),
                    entities: None,
                });
            }
        }
    }
    out
}

fn csv_line(e: &csv::Error) -> Option<usize> {
    e.position().map(|p| p.line() as usize)
}

fn parse_jsonl(text: &str, columns: &Columns) -> Parsed {
    let mut out = Parsed::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        out.records += 1;
        let value: serde_json::Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                out.issues.push(
                    Issue::error(
                        IssueKind::Malformed,
                        Some(line),
                        None,
                        format!("bad JSON: {e}"),
                    )
                    .with(IssueDetail::NotJson),
                );
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            out.issues.push(
                Issue::error(
                    IssueKind::Malformed,
                    Some(line),
                    None,
                    "expected a JSON object per line".into(),
                )
                .with(IssueDetail::NotObject),
            );
            continue;
        };
        let text = match obj.get(&columns.text) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(other) => {
                out.issues
                    .push(wrong_type(line, &columns.text, false, other));
                continue;
            }
        };
        let text_pair = match obj.get(&columns.text_pair) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            None | Some(serde_json::Value::Null) | Some(serde_json::Value::String(_)) => None,
            Some(other) => {
                out.issues
                    .push(wrong_type(line, &columns.text_pair, false, other));
                continue;
            }
        };
        let label = match obj.get(&columns.label) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.trim().to_string()),
            Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            Some(other) => {
                out.issues
                    .push(wrong_type(line, &columns.label, true, other));
                continue;
            }
        };
        let entities = match obj.get(&columns.entities) {
            None | Some(serde_json::Value::Null) => None,
            Some(value) => match json_entities(value) {
                Ok(spans) => Some(spans),
                Err(why) => {
                    out.issues.push(
                        Issue::in_cell(IssueKind::Malformed, line, &columns.entities, why).with(
                            IssueDetail::WrongType {
                                integer_allowed: false,
                            },
                        ),
                    );
                    continue;
                }
            },
        };
        out.has_label_column |=
            obj.contains_key(&columns.label) || obj.contains_key(&columns.entities);
        out.has_pair_column |= obj.contains_key(&columns.text_pair);
        out.rows.push(RawRow {
            line,
            text,
            text_pair,
            label,
            entities,
        });
    }
    out
}

/// A JSON line's `entities`: `[{"start": 0, "end": 2, "label": "PER"}, …]` with character offsets;
/// says what is wrong with the first entity that is not one (the values are checked later).
fn json_entities(value: &serde_json::Value) -> Result<Vec<EntitySpan>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| format!("expected a list of entities, found {}", json_kind(value)))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let offset = |key: &str| item.get(key).and_then(serde_json::Value::as_u64);
            match (offset("start"), offset("end"), item.get("label").and_then(|l| l.as_str())) {
                (Some(start), Some(end), Some(label)) => Ok(EntitySpan {
                    start: start as usize,
                    end: end as usize,
                    label: label.trim().to_string(),
                }),
                _ => Err(format!(
                    "entity {} must be {{\"start\": n, \"end\": n, \"label\": \"…\"}} with whole numbers, found {item}",
                    i + 1
                )),
            }
        })
        .collect()
}

/// CoNLL text: one token and its tag per line (the token first, the tag last, separated by a tab or
/// spaces), texts separated by blank lines, `-DOCSTART-` lines skipped. A text is its tokens joined,
/// with a space only between two tokens that are both Latin letters or digits at the join (`iPhone 15`,
/// `张三`); its entities are the tags read as spans of it. A bad tag is an error at its line.
fn parse_conll(text: &str) -> Parsed {
    let mut out = Parsed {
        has_label_column: true,
        ..Parsed::default()
    };
    // The text being read: its first line, its tokens and their tags, and whether a line of it was bad.
    let mut tokens: Vec<(String, Tag)> = Vec::new();
    let (mut first_line, mut bad) = (0, false);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() {
            finish(&mut out, &mut tokens, first_line, bad);
            bad = false;
            continue;
        }
        if raw.starts_with("-DOCSTART-") {
            continue;
        }
        if tokens.is_empty() && !bad {
            first_line = line;
        }
        let fields: Vec<&str> = raw.split(['\t', ' ']).filter(|f| !f.is_empty()).collect();
        let (token, tag) = match fields.as_slice() {
            [token, .., tag] => (*token, *tag),
            _ => {
                out.issues.push(Issue::error(
                    IssueKind::Malformed,
                    Some(line),
                    None,
                    format!("expected a token and its tag, found `{raw}`"),
                ));
                bad = true;
                continue;
            }
        };
        match Tag::parse(tag) {
            Some(tag) => tokens.push((token.to_string(), tag)),
            None => {
                out.issues.push(
                    Issue::in_cell(
                        IssueKind::UnknownLabel,
                        line,
                        "tag",
                        format!(
                            "`{tag}` is not a tag: use O, or B-, I-, E-, S- and a type (B-PER)"
                        ),
                    )
                    .with(IssueDetail::UnknownLabel {
                        label: tag.to_string(),
                        known: Vec::new(),
                    }),
                );
                bad = true;
            }
        }
    }
    finish(&mut out, &mut tokens, first_line, bad);
    out
}

/// Ends the CoNLL text being read: a record, and a row unless one of its lines was bad.
fn finish(out: &mut Parsed, tokens: &mut Vec<(String, Tag)>, first_line: usize, bad: bool) {
    if tokens.is_empty() && !bad {
        return;
    }
    out.records += 1;
    if !bad {
        let (row, unopened) = conll_row(first_line, tokens);
        out.rows.push(row);
        // Each token is on its own line from the text's first (a bad line would have dropped the text).
        for i in unopened {
            let (token, tag) = &tokens[i];
            out.issues.push(Issue::warning(
                IssueKind::UnopenedEntity,
                Some(first_line + i),
                Some("tag".into()),
                format!(
                    "`{token}` continues a {kind} entity that no B-{kind} began: read as its start, as seqeval does",
                    kind = tag.kind
                ),
            ));
        }
    }
    tokens.clear();
}

/// One CoNLL text's row (the tokens joined and their tags as character spans), and the tokens where an
/// entity starts without its `B-`/`S-`.
fn conll_row(line: usize, tokens: &[(String, Tag)]) -> (RawRow, Vec<usize>) {
    let mut text = String::new();
    let mut starts = Vec::with_capacity(tokens.len() + 1);
    let latin = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    for (token, _) in tokens {
        if latin(text.chars().last()) && latin(token.chars().next()) {
            text.push(' ');
        }
        starts.push(text.chars().count());
        text.push_str(token);
    }
    let ends: Vec<usize> = tokens
        .iter()
        .zip(&starts)
        .map(|((t, _), s)| s + t.chars().count())
        .collect();
    let tags: Vec<Tag> = tokens.iter().map(|(_, t)| t.clone()).collect();
    let (spans, unopened) = spans_of_tags(&tags);
    let entities = spans
        .into_iter()
        .map(|(first, last, label)| EntitySpan {
            start: starts[first],
            end: ends[last - 1],
            label,
        })
        .collect();
    let row = RawRow {
        line,
        text: Some(text),
        text_pair: None,
        label: None,
        entities: Some(entities),
    };
    (row, unopened)
}

/// A cell of the wrong JSON type, named by line and column; the row is skipped.
fn wrong_type(
    line: usize,
    column: &str,
    integer_allowed: bool,
    found: &serde_json::Value,
) -> Issue {
    let want = if integer_allowed {
        "a string or an integer"
    } else {
        "a string"
    };
    let message = format!("expected {want}, found {}", json_kind(found));
    Issue::in_cell(IssueKind::Malformed, line, column, message)
        .with(IssueDetail::WrongType { integer_allowed })
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::report::Severity;

    fn parsed(text: &str, format: DataFormat) -> Parsed {
        parse(text, format, &Columns::default())
    }

    #[test]
    fn labels_are_read_through_their_names_in_every_format() {
        let columns = Columns {
            label_names: contracts::data::parse_label_names("0=负面,1=正面").unwrap(),
            ..Columns::default()
        };
        for (text, format) in [
            ("text\tlabel\n好\t1\n差\t 0\n中\t2\n", DataFormat::Tsv),
            ("text,label\n好,1\n差,0\n中,2\n", DataFormat::Csv),
            (
                "{\"text\":\"好\",\"label\":1}\n{\"text\":\"差\",\"label\":\"0\"}\n{\"text\":\"中\",\"label\":2}\n",
                DataFormat::Jsonl,
            ),
        ] {
            let labels: Vec<Option<String>> = parse(text, format, &columns)
                .rows
                .into_iter()
                .map(|r| r.label)
                .collect();
            let want = [Some("正面"), Some("负面"), Some("2")].map(|l| l.map(String::from));
            assert_eq!(labels, want, "{format:?}");
        }
    }

    #[test]
    fn csv_quoting_and_line_numbers() {
        let p = parsed(
            "text,label\n\"a,\"\"b\"\"\nc\",x\nd,y,z\ne,f\n",
            DataFormat::Csv,
        );
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.rows[0].text.as_deref(), Some("a,\"b\"\nc"));
        assert_eq!(p.rows[0].line, 2);
        assert_eq!(p.rows[1].line, 5);
        assert_eq!(p.issues.len(), 1);
        assert_eq!(p.issues[0].line, Some(4));
        assert_eq!(p.records, 3);
    }

    #[test]
    fn tsv_keeps_quotes_and_reads_pairs() {
        let p = parsed("label\ttext\ttext_pair\n1\t\"好\"\t对\n", DataFormat::Tsv);
        assert_eq!(p.rows[0].text.as_deref(), Some("\"好\""));
        assert_eq!(p.rows[0].text_pair.as_deref(), Some("对"));
        assert_eq!(p.rows[0].label.as_deref(), Some("1"));
    }

    #[test]
    fn missing_text_column_names_the_columns() {
        let p = parsed("sentence\tlabel\nx\ty\n", DataFormat::Tsv);
        assert!(p.rows.is_empty());
        assert_eq!(p.issues[0].kind, IssueKind::MissingColumn);
        assert!(p.issues[0].message.contains("sentence"));
    }

    #[test]
    fn conll_texts_become_rows_with_their_entities_and_bad_tags_their_lines() {
        let p = parsed(
            "-DOCSTART- O\n\n张 B-PER\n三 I-PER\n在 O\niPhone B-PRODUCT\n15 I-PRODUCT\n上 O\n\n北 B-LOC\n京 E-LOC\n\n好 X-1\n的 O\n\n",
            DataFormat::Conll,
        );
        assert_eq!(p.records, 3);
        assert_eq!(p.rows.len(), 2);
        let first = &p.rows[0];
        assert_eq!(
            (first.line, first.text.as_deref()),
            (3, Some("张三在iPhone 15上"))
        );
        let spans = first.entities.as_ref().unwrap();
        assert_eq!(
            spans,
            &[
                EntitySpan {
                    start: 0,
                    end: 2,
                    label: "PER".into()
                },
                EntitySpan {
                    start: 3,
                    end: 12,
                    label: "PRODUCT".into()
                },
            ]
        );
        assert_eq!(p.rows[1].line, 10);
        assert_eq!(p.rows[1].entities.as_ref().unwrap()[0].end, 2);
        assert_eq!(p.issues.len(), 1);
        assert_eq!(
            (p.issues[0].line, p.issues[0].field.as_deref()),
            (Some(13), Some("tag"))
        );

        // An I- with no B- before it starts its entity (seqeval's reading), with a warning at its line.
        let p = parsed("在 O\n上 I-LOC\n海 I-LOC\n", DataFormat::Conll);
        assert_eq!(p.rows[0].entities.as_ref().unwrap()[0].start, 1);
        assert_eq!(p.issues.len(), 1);
        let warning = &p.issues[0];
        assert_eq!(
            (warning.severity, warning.kind, warning.line),
            (Severity::Warning, IssueKind::UnopenedEntity, Some(2))
        );
        assert!(warning.message.contains("`上`"), "{}", warning.message);
    }

    #[test]
    fn jsonl_entities_are_read_and_bad_ones_named() {
        let p = parsed(
            "{\"text\":\"张三\",\"entities\":[{\"start\":0,\"end\":2,\"label\":\"PER\"}]}\n{\"text\":\"x\",\"entities\":[{\"start\":-1}]}\n{\"text\":\"y\",\"entities\":\"PER\"}\n",
            DataFormat::Jsonl,
        );
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].entities.as_ref().unwrap()[0].label, "PER");
        assert!(p.has_label_column);
        let lines: Vec<_> = p.issues.iter().map(|i| (i.line, i.field.clone())).collect();
        assert_eq!(
            lines,
            [
                (Some(2), Some("entities".into())),
                (Some(3), Some("entities".into()))
            ]
        );
    }

    #[test]
    fn jsonl_integer_labels_and_bad_lines() {
        let p = parsed(
            "{\"text\":\"a\",\"label\":1}\n\n{bad\n[1]\n",
            DataFormat::Jsonl,
        );
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].label.as_deref(), Some("1"));
        let lines: Vec<_> = p.issues.iter().map(|i| i.line).collect();
        assert_eq!(lines, vec![Some(3), Some(4)]);
    }
}

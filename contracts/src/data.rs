//! Data files: how they are laid out (the format and which columns hold what), and the validation
//! report the trainer writes about one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The three accepted layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DataFormat {
    /// Decide from the file extension: `.csv`, `.tsv`/`.txt`, `.jsonl`/`.ndjson`/`.json`,
    /// `.conll`/`.bio`/`.bioes`/`.bmes`.
    #[default]
    Auto,
    /// RFC 4180: comma-separated, double-quote quoting, header row.
    Csv,
    /// Tab-separated with a header row and no quoting (quotes are ordinary characters), as most
    /// tools write it and as Chinese review text needs (it is full of `"`).
    Tsv,
    /// One JSON object per line.
    Jsonl,
    /// Entity data as CoNLL writes it: a token and its tag per line (`张 B-PER`, tab- or
    /// space-separated), a blank line after each text.
    Conll,
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
            "conll" | "bio" | "bioes" | "bmes" => Some(DataFormat::Conll),
            _ => None,
        }
    }
}

/// Which columns (or JSON keys) hold what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Columns {
    pub text: String,
    /// The JSON key of a JSON-lines entity file's spans (`[{"start", "end", "label"}]`).
    pub entities: String,
    /// Read when present in the header / object; a missing pair column is not an error.
    pub text_pair: String,
    pub label: String,
    /// Names for the label column's values (`"0"` → `"负面"`), applied as rows are read: the model,
    /// its metrics and its answers then speak in the names. Values not named are read as they are.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub label_names: BTreeMap<String, String>,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            text: "text".into(),
            entities: "entities".into(),
            text_pair: "text_pair".into(),
            label: "label".into(),
            label_names: BTreeMap::new(),
        }
    }
}

/// An entity in a text: characters `start..end` (Unicode scalar values, end exclusive: what Python's
/// `text[start:end]` gives) of type `label`. Entity data files give them so (JSONL `entities`), CoNLL
/// files give tags that are read into them, and an entity model answers with them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntitySpan {
    pub start: usize,
    pub end: usize,
    pub label: String,
}

/// The label names an entity model learns for entity `types` (sorted, distinct): `O`, then `B-T` and
/// `I-T` for each type — BIO, the names transformers' token classifiers use.
pub fn bio_labels(types: &[String]) -> Vec<String> {
    std::iter::once("O".to_string())
        .chain(
            types
                .iter()
                .flat_map(|t| [format!("B-{t}"), format!("I-{t}")]),
        )
        .collect()
}

/// The longest label name.
pub const MAX_LABEL_NAME_CHARS: usize = 64;

/// Reads label names as people write them: `0=负面,1=正面` (pairs separated by commas, semicolons or
/// new lines, full-width ones too; `＝` for `=`). Says what is wrong with the first bad pair: no `=`, an
/// empty value or name, a name too long or with control characters, a value named twice, two values
/// given one name (which would make them one label).
pub fn parse_label_names(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut names = BTreeMap::new();
    let pairs = text
        .split([',', '，', ';', '；', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty());
    for pair in pairs {
        let Some((value, name)) = pair.split_once(['=', '＝']) else {
            return Err(format!("`{pair}` is not value=name"));
        };
        let (value, name) = (value.trim(), name.trim());
        if value.is_empty() || name.is_empty() {
            return Err(format!("`{pair}` needs a value and a name"));
        }
        if name.chars().count() > MAX_LABEL_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(format!(
                "the name of `{value}` must be at most {MAX_LABEL_NAME_CHARS} characters, none of them control characters"
            ));
        }
        if names.contains_key(value) {
            return Err(format!("`{value}` is named twice"));
        }
        if let Some((other, _)) = names.iter().find(|(_, n)| *n == name) {
            return Err(format!("`{other}` and `{value}` are both named `{name}`"));
        }
        names.insert(value.to_string(), name.to_string());
    }
    Ok(names)
}

/// Label names written the way [`parse_label_names`] reads them (`0=负面,1=正面`).
pub fn format_label_names(names: &BTreeMap<String, String>) -> String {
    names
        .iter()
        .map(|(value, name)| format!("{value}={name}"))
        .collect::<Vec<_>>()
        .join(",")
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
    /// Big5 (Traditional Chinese): an upload converted from it to UTF-8.
    Big5,
}

/// What an upload's bytes are to be read as (`?encoding=`). Chinese Excel and Windows tools write
/// GBK (GB18030 is its superset) and, in Taiwan and Hong Kong, Big5; the store keeps UTF-8 only, so
/// an upload in either is converted on arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UploadEncoding {
    /// UTF-8 when it is; otherwise the legacy encoding [`UploadEncoding::guess`] finds, converted.
    #[default]
    Auto,
    /// As is: anything but UTF-8 is refused with the first bad line.
    #[serde(rename = "utf-8")]
    Utf8,
    Gb18030,
    Big5,
}

impl UploadEncoding {
    pub const ALL: [UploadEncoding; 4] = [Self::Auto, Self::Utf8, Self::Gb18030, Self::Big5];

    /// The query value, which is also the WHATWG label a browser's `TextDecoder` knows.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Utf8 => "utf-8",
            Self::Gb18030 => "gb18030",
            Self::Big5 => "big5",
        }
    }

    /// Which legacy encoding a file that is not UTF-8 is most likely in, from its first bytes (a cut
    /// multi-byte character at the end is fine); `None` for UTF-8 and for bytes that are neither.
    ///
    /// Both are double-byte: a lead byte 0x81–0xFE and a trail byte. Big5's trail bytes are
    /// 0x40–0x7E or 0xA1–0xFE, and its common characters use the low range about as often as the
    /// high one; GBK text is mostly GB2312 characters, whose trail bytes are all 0xA1 or above, and
    /// GB18030 alone has four-byte sequences (a digit second) and trails 0x80–0xA0. So: any of
    /// those means GB18030, a quarter or more of low trails means Big5.
    pub fn guess(head: &[u8]) -> Option<UploadEncoding> {
        let body = head.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(head);
        match std::str::from_utf8(body) {
            Ok(_) => return None,
            // Cut off inside a character at the end of the head: still UTF-8.
            Err(e) if e.error_len().is_none() => return None,
            Err(_) => {}
        }
        let (mut pairs, mut low, mut gb_only) = (0usize, 0usize, false);
        let mut i = 0;
        while i < body.len() {
            let lead = body[i];
            if lead < 0x80 {
                i += 1;
                continue;
            }
            let Some(&trail) = body.get(i + 1) else { break };
            match (lead, trail) {
                (0x80 | 0xFF, _) => return None,
                (_, 0x30..=0x39) => {
                    gb_only = true;
                    i += 4;
                    continue;
                }
                (_, 0x40..=0x7E) => low += 1,
                (_, 0x80..=0xA0) => gb_only = true,
                (_, 0xA1..=0xFE) => {}
                _ => return None,
            }
            pairs += 1;
            i += 2;
        }
        match (pairs, gb_only) {
            (0, false) => None,
            (_, true) => Some(Self::Gb18030),
            _ if low * 4 >= pairs => Some(Self::Big5),
            _ => Some(Self::Gb18030),
        }
    }
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
    /// An entity tagged `I-`/`E-` with no `B-` before it (kept, read as its start).
    UnopenedEntity,
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
            IssueKind::UnopenedEntity => "unopened_entity",
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
    /// The English sentence, for the command line and logs.
    pub message: String,
    /// The names and figures `message` was made from, for pages that say it in another language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<IssueDetail>,
}

/// What an [`Issue`] is about beyond its kind and place: what a translation needs to word it, so that
/// no page has to take the English `message` apart. Kinds whose word says it all (an empty text, a
/// missing label) have none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum IssueDetail {
    /// The file starts with a UTF-16 byte-order mark.
    Utf16,
    /// The file reads as GBK/GB18030 and was not asked to be converted.
    LooksGb18030,
    /// The first byte that is not UTF-8, and where it is.
    BadByte { byte: u8, offset: usize },
    /// GBK/GB18030, converted to UTF-8 on reading.
    ConvertedFromGb18030,
    /// The header lacks the column in `field`; these are the ones it has.
    HeaderColumns { columns: Vec<String> },
    /// A row with another number of fields than the header.
    FieldCount { expected: usize, found: usize },
    /// A line that is not JSON.
    NotJson,
    /// A JSON line that is not an object.
    NotObject,
    /// A JSON cell that is not a string (nor an integer, where `integer_allowed`).
    WrongType { integer_allowed: bool },
    /// The same text (and label) as an earlier line.
    DuplicateOf { line: usize },
    /// The same text as an earlier line, with another label.
    ConflictsWith {
        line: usize,
        there: String,
        here: String,
    },
    /// A label the dataset's label list lacks.
    UnknownLabel { label: String, known: Vec<String> },
    /// The one label every row has.
    OnlyLabel { label: String },
    /// How many rows are longer than the model takes.
    OverLength { rows: usize, limit: usize },
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
            detail: None,
        }
    }

    /// This issue with what a translation needs to word it.
    pub fn with(self, detail: IssueDetail) -> Self {
        Issue {
            detail: Some(detail),
            ..self
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

    #[test]
    fn label_names_are_read_as_people_write_them() {
        let names = parse_label_names(" 0=负面，1 = 正面;\n2＝中性 ,").unwrap();
        assert_eq!(
            names
                .iter()
                .map(|(v, n)| (v.as_str(), n.as_str()))
                .collect::<Vec<_>>(),
            [("0", "负面"), ("1", "正面"), ("2", "中性")]
        );
        assert_eq!(format_label_names(&names), "0=负面,1=正面,2=中性");
        assert_eq!(
            parse_label_names(&format_label_names(&names)).unwrap(),
            names
        );
        assert!(parse_label_names("").unwrap().is_empty());
        for (text, why) in [
            ("0负面", "is not value=name"),
            ("0=", "needs a value and a name"),
            ("=负面", "needs a value and a name"),
            ("0=负面,0=正面", "named twice"),
            ("0=好,1=好", "both named"),
            ("0=a\tb", "control characters"),
        ] {
            let e = parse_label_names(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        let long = format!("0={}", "长".repeat(MAX_LABEL_NAME_CHARS + 1));
        assert!(parse_label_names(&long).unwrap_err().contains("at most"));
    }

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

    const SIMPLIFIED: &str =
        "text\tlabel\n这家酒店的服务态度很好，房间也很干净，下次还会再来。\tpositive\n\
        前台接待很冷淡，等了半个小时才办好入住手续，不推荐。\tnegative\n";
    const TRADITIONAL: &str =
        "text\tlabel\n這家飯店的服務態度很好，房間也很乾淨，下次還會再來。\tpositive\n\
        櫃檯接待很冷淡，等了半個小時才辦好入住手續，不推薦。\tnegative\n";

    #[test]
    fn the_guess_tells_gbk_from_big5_and_leaves_utf8_alone() {
        let gbk = encoding_rs::GBK.encode(SIMPLIFIED).0;
        let big5 = encoding_rs::BIG5.encode(TRADITIONAL).0;
        assert_eq!(UploadEncoding::guess(&gbk), Some(UploadEncoding::Gb18030));
        assert_eq!(UploadEncoding::guess(&big5), Some(UploadEncoding::Big5));
        // A head cut inside a character is still what it was.
        assert_eq!(
            UploadEncoding::guess(&gbk[..gbk.len() - 3]),
            Some(UploadEncoding::Gb18030)
        );
        let utf8 = SIMPLIFIED.as_bytes();
        assert_eq!(UploadEncoding::guess(utf8), None);
        assert_eq!(
            UploadEncoding::guess(&utf8[..utf8.len() - 5]),
            None,
            "cut mid-character"
        );
        let bom = [&[0xEF, 0xBB, 0xBF][..], utf8].concat();
        assert_eq!(UploadEncoding::guess(&bom), None);
    }

    #[test]
    fn four_byte_sequences_are_gb18030_and_binary_is_nothing() {
        // U+20000 (𠀀) has no GBK code: GB18030 writes it in four bytes.
        let rare = encoding_rs::GB18030.encode("甲𠀀乙").0;
        assert_eq!(rare.len(), 8);
        assert_eq!(UploadEncoding::guess(&rare), Some(UploadEncoding::Gb18030));
        assert_eq!(UploadEncoding::guess(b"PK\x03\x04\xFF\xFF\x00\x01"), None);
        assert_eq!(UploadEncoding::guess(b"\x80\x80"), None);
        assert_eq!(
            serde_json::to_value(UploadEncoding::Utf8).unwrap(),
            serde_json::json!("utf-8")
        );
        for e in UploadEncoding::ALL {
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::json!(e.as_str())
            );
        }
    }
}

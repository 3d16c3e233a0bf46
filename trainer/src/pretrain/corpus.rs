//! Reading a pretraining corpus: plain text with one sentence (or document) per line, or the text
//! column(s) of a CSV/TSV/JSONL data file read and validated exactly as for training, labels not
//! required. Blank lines of a plain-text corpus are separators, not errors; any other problem is an
//! error naming the file and line.

use std::path::{Path, PathBuf};

use crate::data::{validate_file, Columns, DataFormat, DataOptions};
use crate::{Error, Result};

/// How a corpus file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorpusFormat {
    /// `.txt` (and `.text`) as plain lines, other extensions as data files.
    Auto,
    /// One text per line, no header.
    Lines,
    /// A CSV, TSV or JSONL data file.
    Data(DataFormat),
}

impl CorpusFormat {
    /// Parses `auto`, `lines`, `csv`, `tsv` or `jsonl`; the error names `field`.
    pub fn parse(s: &str, field: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "auto" => CorpusFormat::Auto,
            "lines" | "text" => CorpusFormat::Lines,
            "csv" => CorpusFormat::Data(DataFormat::Csv),
            "tsv" => CorpusFormat::Data(DataFormat::Tsv),
            "jsonl" => CorpusFormat::Data(DataFormat::Jsonl),
            other => {
                return Err(Error::Config(format!(
                    "{field} `{other}` is not one of auto, lines, csv, tsv, jsonl"
                )))
            }
        })
    }

    fn resolve(self, path: &Path) -> CorpusFormat {
        match self {
            CorpusFormat::Auto => {
                let ext = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .map(str::to_ascii_lowercase);
                match ext.as_deref() {
                    Some("txt" | "text") => CorpusFormat::Lines,
                    _ => CorpusFormat::Data(DataFormat::Auto),
                }
            }
            other => other,
        }
    }
}

/// Where the texts come from.
#[derive(Debug, Clone)]
pub struct CorpusSource {
    pub files: Vec<PathBuf>,
    pub format: CorpusFormat,
    /// The column (or JSON key) holding the text of a data file; a `text_pair` column, when present, is
    /// read as further texts.
    pub text_column: String,
    /// Convert GBK/GB18030 files to UTF-8 instead of refusing them.
    pub convert_encoding: bool,
}

/// Every text of every file, in file order.
pub fn read_corpus(source: &CorpusSource) -> Result<Vec<String>> {
    let mut texts = Vec::new();
    for path in &source.files {
        let before = texts.len();
        match source.format.resolve(path) {
            CorpusFormat::Lines => texts.extend(read_lines(path, source.convert_encoding)?),
            CorpusFormat::Data(format) => {
                let opts = DataOptions {
                    format,
                    columns: Columns {
                        text: source.text_column.clone(),
                        ..Columns::default()
                    },
                    convert_encoding: source.convert_encoding,
                    require_labels: false,
                    ..DataOptions::default()
                };
                let validated = validate_file(path, &opts, None, None, None)?;
                for row in validated.into_examples(None)? {
                    texts.push(row.text);
                    texts.extend(row.text_pair.filter(|p| !p.trim().is_empty()));
                }
            }
            CorpusFormat::Auto => unreachable!("resolve never returns Auto"),
        }
        if texts.len() == before {
            return Err(Error::Data {
                line: None,
                field: None,
                message: format!("{}: the corpus file has no text", path.display()),
            });
        }
    }
    Ok(texts)
}

fn read_lines(path: &Path, convert_encoding: bool) -> Result<Vec<String>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (text, _) =
        crate::data::encoding::decode(&bytes, convert_encoding).map_err(|p| Error::Data {
            line: Some(p.line),
            field: None,
            message: format!("{}: {}", path.display(), p.message),
        })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(files: Vec<PathBuf>, format: &str) -> CorpusSource {
        CorpusSource {
            files,
            format: CorpusFormat::parse(format, "--format").unwrap(),
            text_column: "text".into(),
            convert_encoding: false,
        }
    }

    #[test]
    fn plain_lines_skip_blanks_and_data_files_need_no_labels() {
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("corpus.txt");
        std::fs::write(&txt, "第一句\n\n  第二句  \n").unwrap();
        let tsv = dir.path().join("rows.tsv");
        std::fs::write(&tsv, "text\n第三句\n第四句\n").unwrap();
        let texts = read_corpus(&source(vec![txt, tsv], "auto")).unwrap();
        assert_eq!(texts, ["第一句", "第二句", "第三句", "第四句"]);
    }

    #[test]
    fn bad_corpora_are_refused_with_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "\n\n").unwrap();
        let err = read_corpus(&source(vec![empty], "auto"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("empty.txt") && err.contains("no text"),
            "{err}"
        );
        let blank = dir.path().join("blank.tsv");
        std::fs::write(&blank, "text\nok\n\nfine\n \n").unwrap();
        let err = read_corpus(&source(vec![blank], "auto"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line"), "{err}");
        assert!(CorpusFormat::parse("xml", "--format")
            .unwrap_err()
            .to_string()
            .contains("--format"));
    }
}

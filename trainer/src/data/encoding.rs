//! Turns a data file's bytes into text. UTF-8 (with or without BOM) is accepted as is; GBK/GB18030 — the
//! encoding Chinese spreadsheets and Windows tools still write by default — is recognised and either
//! converted (when the job asks for it) or refused with a message that says how to fix the file. Anything
//! else is refused with the line of the first byte that is not UTF-8.

/// The encoding a file was read in, as reported to the user (declared with the report).
use contracts::data::IssueDetail;
pub use contracts::data::TextEncoding;

/// Why a file's bytes could not be turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodingProblem {
    /// 1-based line of the first byte that is not valid UTF-8.
    pub line: usize,
    pub message: String,
    pub detail: IssueDetail,
}

/// Decodes `bytes`. With `convert_gb18030`, GBK/GB18030 input is converted to UTF-8; without it such input
/// is an error that names the encoding and the remedy.
pub fn decode(
    bytes: &[u8],
    convert_gb18030: bool,
) -> Result<(String, TextEncoding), EncodingProblem> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(EncodingProblem {
            line: 1,
            message:
                "the file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8"
                    .into(),
            detail: IssueDetail::Utf16,
        });
    }
    let (body, bom) = match bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        Some(rest) => (rest, true),
        None => (bytes, false),
    };
    let utf8_error = match std::str::from_utf8(body) {
        Ok(text) => {
            let enc = if bom {
                TextEncoding::Utf8Bom
            } else {
                TextEncoding::Utf8
            };
            return Ok((text.to_string(), enc));
        }
        Err(e) => e,
    };
    let bad = utf8_error.valid_up_to();
    let line = body[..bad].iter().filter(|&&b| b == b'\n').count() + 1;
    let gb = if bom {
        None
    } else {
        encoding_rs::GB18030.decode_without_bom_handling_and_without_replacement(body)
    };
    match gb {
        // Random binary rarely decodes cleanly as GB18030 *and* yields CJK text; requiring both keeps
        // a corrupt UTF-8 file from being "converted" into mojibake.
        Some(text) if text.chars().any(is_cjk) => {
            if convert_gb18030 {
                Ok((text.into_owned(), TextEncoding::Gb18030))
            } else {
                Err(EncodingProblem {
                    line,
                    message: "the file is not UTF-8: it looks like GBK/GB18030. Convert it \
                              (`iconv -f GB18030 -t UTF-8 in > out`) or set `convert_encoding = true` \
                              to convert it on reading"
                        .into(),
                    detail: IssueDetail::LooksGb18030,
                })
            }
        }
        _ => Err(EncodingProblem {
            line,
            message: format!(
                "the file is not valid UTF-8 (invalid byte 0x{:02X} at byte offset {}); save it as UTF-8",
                body[bad],
                bad + if bom { 3 } else { 0 }
            ),
            detail: IssueDetail::BadByte {
                byte: body[bad],
                offset: bad + if bom { 3 } else { 0 },
            },
        }),
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x3000..=0x303F | 0xFF00..=0xFFEF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_with_and_without_bom() {
        assert_eq!(
            decode("好\n".as_bytes(), false).unwrap(),
            ("好\n".to_string(), TextEncoding::Utf8)
        );
        let mut b = vec![0xEF, 0xBB, 0xBF];
        b.extend_from_slice("好".as_bytes());
        assert_eq!(
            decode(&b, false).unwrap(),
            ("好".to_string(), TextEncoding::Utf8Bom)
        );
    }

    #[test]
    fn gbk_is_refused_or_converted() {
        let (gbk, _, _) = encoding_rs::GBK.encode("text\n很好\n");
        let err = decode(&gbk, false).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("GBK"), "{}", err.message);
        let (text, enc) = decode(&gbk, true).unwrap();
        assert_eq!(text, "text\n很好\n");
        assert_eq!(enc, TextEncoding::Gb18030);
    }

    #[test]
    fn binary_is_refused_with_offset() {
        let err = decode(b"ok\nok\n\xFF\xFF\x00", true).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("0xFF"), "{}", err.message);
    }
}

//! Uploads in GBK/GB18030 or Big5 — what Chinese Excel and Windows tools write — are turned into UTF-8
//! on arrival, so that the store, the validator and every job read one encoding. The conversion streams
//! (an upload may be as large as the server allows), refuses bytes that are not valid in the encoding
//! with the line of the first, and replaces the received file only once the whole of it converted.

use std::path::Path;

use contracts::data::UploadEncoding;
use contracts::error::{internal, AppError, ErrorCode};
use encoding_rs::{DecoderResult, Encoding};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How much of the file the guess reads: enough lines of any table to tell the two apart.
const HEAD: usize = 64 * 1024;

/// The legacy encoding the file at `path` is to be converted from: the one asked for, or for `Auto`
/// the one its first bytes look like (`None`: leave it as it is).
pub async fn source(
    path: &Path,
    asked: UploadEncoding,
) -> Result<Option<UploadEncoding>, AppError> {
    Ok(match asked {
        UploadEncoding::Utf8 => None,
        UploadEncoding::Gb18030 | UploadEncoding::Big5 => Some(asked),
        UploadEncoding::Auto => {
            let mut head = Vec::with_capacity(HEAD);
            let file = tokio::fs::File::open(path)
                .await
                .map_err(|e| internal("reading the upload", e))?;
            file.take(HEAD as u64)
                .read_to_end(&mut head)
                .await
                .map_err(|e| internal("reading the upload", e))?;
            UploadEncoding::guess(&head)
        }
    })
}

/// Converts the file at `path` from `from` to UTF-8 in place; its new size and sha256. Nothing is
/// replaced when a byte sequence is not valid in `from`: that is `dataset_encoding_invalid`, at the
/// line it is on.
pub async fn to_utf8(path: &Path, from: UploadEncoding) -> Result<(u64, String), AppError> {
    let encoding: &'static Encoding = match from {
        UploadEncoding::Gb18030 => encoding_rs::GB18030,
        UploadEncoding::Big5 => encoding_rs::BIG5,
        UploadEncoding::Auto | UploadEncoding::Utf8 => {
            return Err(internal("converting an upload", "no legacy encoding given"))
        }
    };
    let converted = path.with_extension("utf8");
    let result = convert(path, &converted, encoding, from).await;
    match result {
        Ok(done) => {
            tokio::fs::rename(&converted, path)
                .await
                .map_err(|e| internal("replacing the upload", e))?;
            Ok(done)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&converted).await;
            Err(e)
        }
    }
}

async fn convert(
    path: &Path,
    out: &Path,
    encoding: &'static Encoding,
    from: UploadEncoding,
) -> Result<(u64, String), AppError> {
    let io = |e: std::io::Error| internal("converting the upload", e);
    let mut input = tokio::fs::File::open(path).await.map_err(io)?;
    let mut output = tokio::fs::File::create(out).await.map_err(io)?;
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let (mut hasher, mut total, mut line) = (Sha256::new(), 0u64, 1usize);
    let mut chunk = vec![0u8; HEAD];
    let mut text = String::with_capacity(HEAD * 2);
    loop {
        let n = input.read(&mut chunk).await.map_err(io)?;
        let last = n == 0;
        let mut src = &chunk[..n];
        loop {
            text.clear();
            let (result, read) = decoder.decode_to_string_without_replacement(src, &mut text, last);
            line += text.matches('\n').count();
            hasher.update(text.as_bytes());
            total += text.len() as u64;
            output.write_all(text.as_bytes()).await.map_err(io)?;
            src = &src[read..];
            match result {
                DecoderResult::InputEmpty => break,
                DecoderResult::OutputFull => text.reserve(HEAD * 2),
                DecoderResult::Malformed(..) => {
                    return Err(AppError::invalid(
                        "encoding",
                        ErrorCode::DatasetEncodingInvalid,
                        format!(
                            "line {line}: these bytes are not {}; choose the file's encoding, or save it as UTF-8",
                            from.as_str()
                        ),
                    ))
                }
            }
        }
        if last {
            break;
        }
    }
    output.flush().await.map_err(io)?;
    output.sync_all().await.map_err(io)?;
    Ok((total, hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &str = "text\tlabel\n這家飯店的服務很好\tpositive\n櫃檯接待很冷淡\tnegative\n";

    async fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("upload");
        tokio::fs::write(&path, bytes).await.unwrap();
        (dir, path)
    }

    #[tokio::test]
    async fn big5_and_gbk_become_utf8_in_place() {
        for (encoding, asked) in [
            (encoding_rs::BIG5, UploadEncoding::Big5),
            (encoding_rs::GBK, UploadEncoding::Gb18030),
        ] {
            let (_dir, path) = file_with(&encoding.encode(ROWS).0).await;
            let (bytes, sha) = to_utf8(&path, asked).await.unwrap();
            let text = tokio::fs::read_to_string(&path).await.unwrap();
            assert_eq!(text, ROWS);
            assert_eq!(bytes, ROWS.len() as u64);
            assert_eq!(sha, hex::encode(Sha256::digest(ROWS.as_bytes())));
            assert!(!path.with_extension("utf8").exists());
        }
    }

    #[tokio::test]
    async fn auto_guesses_and_utf8_is_left_alone() {
        let (_dir, path) = file_with(&encoding_rs::BIG5.encode(ROWS).0).await;
        assert_eq!(
            source(&path, UploadEncoding::Auto).await.unwrap(),
            Some(UploadEncoding::Big5)
        );
        assert_eq!(source(&path, UploadEncoding::Utf8).await.unwrap(), None);
        let (_dir, utf8) = file_with(ROWS.as_bytes()).await;
        assert_eq!(source(&utf8, UploadEncoding::Auto).await.unwrap(), None);
    }

    #[tokio::test]
    async fn bytes_that_are_not_the_encoding_are_refused_at_their_line_and_change_nothing() {
        let mut bytes = b"text\tlabel\nfine\tpositive\n".to_vec();
        bytes.extend_from_slice(b"\xA4\x40\xFF\xFF\tnegative\n");
        let (_dir, path) = file_with(&bytes).await;
        let err = to_utf8(&path, UploadEncoding::Big5).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::DatasetEncodingInvalid);
        assert_eq!(err.field(), Some("encoding"));
        assert!(err.to_string().starts_with("line 3:"), "{err}");
        assert_eq!(tokio::fs::read(&path).await.unwrap(), bytes, "untouched");
        assert!(!path.with_extension("utf8").exists());
    }
}

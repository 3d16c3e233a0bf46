//! Request-body limits and the JSON body extractor of the REST API, so that every way a body can be
//! wrong ends in the same JSON error shape: too large → 413 `body_too_large`; not JSON, not UTF-8 or
//! the wrong content type → 400 `invalid_body`; well-formed JSON with unknown fields, missing fields
//! or wrong types → 422 `invalid_body` naming the field (via `serde_path_to_error`). A refusal given before
//! the body was read reads a bounded rest of it first, then closes the connection if more is left
//! ([`close_if_body_unread`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;

use contracts::error::{AppError, ErrorCode};
use domain::AppState;

/// Refuses a declared `Content-Length` above the limit before reading anything. Bodies without a
/// length (chunked) are cut off by `tower_http`'s `RequestBodyLimitLayer` and axum's
/// `DefaultBodyLimit` behind this, and end up as the same 413 in [`ApiJson`].
pub async fn enforce_body_limit(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let limit = state.security.max_body_bytes as u64;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        return AppError::TooLarge { limit_bytes: limit }.into_response();
    }
    let mut res = next.run(req).await;
    // A streamed body cut off by `RequestBodyLimitLayer` outside the JSON extractor (a server function,
    // say) answers in plain text; give it the common shape.
    if res.status() == StatusCode::PAYLOAD_TOO_LARGE
        && !res
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
    {
        res = AppError::TooLarge { limit_bytes: limit }.into_response();
    }
    res
}

/// How much of an unread body [`close_if_body_unread`] reads and drops before answering, and for how long.
/// A server that closes while the client is still sending makes the client's kernel answer the rest
/// with a reset, and the client sees "broken pipe" instead of the refusal (seen in the tests: a model
/// archive of a few hundred KiB refused for its name). Uploads that small are read to their end, so the
/// refusal arrives and the connection stays usable; a larger one is cut off after this much.
const LINGER_BYTES: usize = 8 << 20;
const LINGER_TIME: Duration = Duration::from_secs(2);

/// For a response given before the request's body was read to its end (an upload refused by its name or
/// declared length, a CSRF refusal, a 413): reads and drops the rest of the body up to [`LINGER_BYTES`]
/// so the client gets to read the answer, and adds `Connection: close` when more is left. Hyper then
/// closes the connection instead of reading the rest; without the header a client keeps it in its
/// pool, and its next request on it fails with "connection closed before message completed".
pub async fn close_if_body_unread(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    if body.is_end_stream() {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let finished = Arc::new(AtomicBool::new(false));
    let unread = Arc::new(Mutex::new(None));
    let body = Body::new(Watched {
        inner: Some(body),
        finished: finished.clone(),
        unread: unread.clone(),
    });
    let mut res = next.run(Request::from_parts(parts, body)).await;
    if finished.load(Ordering::Acquire) {
        return res;
    }
    let rest = unread.lock().unwrap_or_else(|p| p.into_inner()).take();
    let read_to_end = match rest {
        Some(rest) => linger(rest).await,
        // Still held somewhere (a task the handler spawned): nothing to read here.
        None => false,
    };
    if !read_to_end {
        res.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    res
}

/// Reads and drops `body` up to [`LINGER_BYTES`] within [`LINGER_TIME`]; whether it reached the end.
async fn linger(body: Body) -> bool {
    let drain = async {
        let mut body = std::pin::pin!(body);
        let mut read = 0usize;
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            let Ok(frame) = frame else { return false };
            read += frame.data_ref().map_or(0, |d| d.len());
            if read > LINGER_BYTES {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(LINGER_TIME, drain)
        .await
        .unwrap_or(false)
}

/// A request body that notes when it has been read to its end, and hands what is left of it back to
/// [`close_if_body_unread`] when it is dropped before that.
struct Watched {
    inner: Option<Body>,
    finished: Arc<AtomicBool>,
    unread: Arc<Mutex<Option<Body>>>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::Acquire) {
            *self.unread.lock().unwrap_or_else(|p| p.into_inner()) = self.inner.take();
        }
    }
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(&mut *inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || inner.is_end_stream() {
            self.finished.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| http_body::SizeHint::with_exact(0), Body::size_hint)
    }
}

/// `axum::Json`, but every rejection is an [`AppError`], and every struct in the body must be a JSON
/// object: serde would otherwise also read a struct from an array of its fields in order
/// (`["team"]` as `{"name": "team"}`), a second shape no client is told about ([`parse`]). Use with
/// `#[serde(deny_unknown_fields)]` request types.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned + Serialize> FromRequest<AppState> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let json_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
            })
            .unwrap_or(false);
        if !json_type {
            return Err(AppError::Malformed {
                message: "expected a JSON body with Content-Type: application/json".into(),
            });
        }
        let limit = state.security.max_body_bytes as u64;
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r| bytes_rejection(r, limit))?;
        parse(&bytes).map(ApiJson)
    }
}

fn bytes_rejection(rejection: BytesRejection, limit_bytes: u64) -> AppError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return AppError::TooLarge { limit_bytes };
    }
    AppError::Malformed {
        message: format!("could not read the request body: {}", rejection.body_text()),
    }
}

/// Parses a JSON object, naming the offending field for data errors.
///
/// A struct read from an array is refused wherever it sits: the value is written back and every
/// place where it is an object must have been one in the body. serde has no switch for this, and
/// the written-back value is the shape the OpenAPI document describes.
pub fn parse<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, AppError> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(AppError::Malformed {
            message: "request body is not valid UTF-8".into(),
        });
    }
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(AppError::Malformed {
            message: "the request body must be a JSON object ({…})".into(),
        });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize(&mut de) {
        Ok(v) => {
            de.end().map_err(|e| AppError::Malformed {
                message: format!("malformed JSON body: {e}"),
            })?;
            let given: serde_json::Value =
                serde_json::from_slice(bytes).map_err(|e| AppError::Malformed {
                    message: format!("malformed JSON body: {e}"),
                })?;
            let meant = serde_json::to_value(&v).map_err(|e| AppError::Malformed {
                message: format!("malformed JSON body: {e}"),
            })?;
            match array_for_object(&given, &meant, String::new()) {
                None => Ok(v),
                Some(path) => Err(AppError::Invalid {
                    field: Some(path),
                    code: ErrorCode::InvalidBody,
                    message: "invalid JSON body: expected an object ({…}), found an array".into(),
                    problems: Vec::new(),
                }),
            }
        }
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_data() {
                let field =
                    unknown_or_missing_field(&inner.to_string()).or((path != ".").then_some(path));
                Err(AppError::Invalid {
                    field,
                    code: ErrorCode::InvalidBody,
                    message: format!("invalid JSON body: {inner}"),
                    problems: Vec::new(),
                })
            } else {
                Err(AppError::Malformed {
                    message: format!("malformed JSON body: {inner}"),
                })
            }
        }
    }
}

/// The path of the first place where `meant` (the parsed value written back) has an object and
/// `given` (the body) an array.
fn array_for_object(
    given: &serde_json::Value,
    meant: &serde_json::Value,
    path: String,
) -> Option<String> {
    use serde_json::Value;
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (given, meant) {
        (Value::Array(_), Value::Object(_)) => {
            Some(if path.is_empty() { ".".into() } else { path })
        }
        (Value::Object(given), Value::Object(meant)) => meant.iter().find_map(|(key, inner)| {
            given
                .get(key)
                .and_then(|g| array_for_object(g, inner, join(key)))
        }),
        (Value::Array(given), Value::Array(meant)) => given
            .iter()
            .zip(meant)
            .enumerate()
            .find_map(|(i, (g, m))| array_for_object(g, m, join(&i.to_string()))),
        _ => None,
    }
}

/// serde reports unknown and missing fields at the parent's path; the field name is in the message.
fn unknown_or_missing_field(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("missing field `"))?;
    rest.split('`').next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, serde::Serialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Body {
        name: String,
        count: u32,
    }

    #[derive(serde::Deserialize, serde::Serialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        inner: Body,
        #[serde(default)]
        more: Vec<Body>,
    }

    #[test]
    fn a_struct_is_read_from_an_object_only_at_any_depth() {
        for (body, field) in [
            (r#"["a", 1]"#, None),
            (r#"{"inner": ["a", 1]}"#, Some("inner")),
            (
                r#"{"inner": {"name": "a", "count": 1}, "more": [{"name": "b", "count": 2}, ["c", 3]]}"#,
                Some("more.1"),
            ),
        ] {
            let e = parse::<Outer>(body.as_bytes()).unwrap_err();
            assert_eq!(e.field(), field, "{body}: {e:?}");
        }
        let ok = parse::<Outer>(br#"{"inner": {"name": "a", "count": 1}, "more": []}"#).unwrap();
        assert_eq!((ok.inner.name.as_str(), ok.more.len()), ("a", 0));
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<Body>(br#"{"name":"a","count":1,"extra":true}"#).unwrap_err();
        assert_eq!(
            (e.code().as_str(), e.field()),
            ("invalid_body", Some("extra"))
        );
        let e = parse::<Body>(br#"{"name":"a"}"#).unwrap_err();
        assert_eq!(e.field(), Some("count"));
        let e = parse::<Body>(br#"{"name":"a","count":"x"}"#).unwrap_err();
        assert_eq!(e.field(), Some("count"));
        assert!(matches!(
            parse::<Body>(b"{\"name\":\"\xff\",\"count\":1}").unwrap_err(),
            AppError::Malformed { .. }
        ));
        assert!(matches!(
            parse::<Body>(b"{not json").unwrap_err(),
            AppError::Malformed { .. }
        ));
        assert!(matches!(
            parse::<Body>(br#"{"name":"a","count":1} trailing"#).unwrap_err(),
            AppError::Malformed { .. }
        ));
        assert!(parse::<Body>(br#"{"name":"a","count":1}"#).is_ok());
    }
}

/// `axum::extract::Path` with rejections (`/workspaces/abc`) in the common error shape (the conversion
/// is beside the error's other HTTP mappings, `contracts::error::http`).
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct ApiPath<T>(pub T);

/// `axum::extract::Query` with rejections in the common error shape.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub struct ApiQuery<T>(pub T);

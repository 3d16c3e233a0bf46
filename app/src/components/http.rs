//! Plain HTTP from the browser for what server functions cannot do: an upload whose progress drives a
//! progress bar (`XMLHttpRequest`, because `fetch` reports no upload progress) and GETs of the REST API
//! (log search). Same-origin, so the session cookie goes along; the CSRF check passes on
//! `Sec-Fetch-Site: same-origin`.
//!
//! `XMLHttpRequest` and the file input's `File` are bound by hand with `wasm_bindgen` (a few members)
//! rather than enabling more web-sys features for the whole bundle. On the server the same functions
//! exist and do nothing: they are only called from event handlers and effects, which never run there.

use contracts::error::{AppError, ErrorBody, ErrorCode};

/// An answer: the HTTP status and the body as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The REST API's error body (`{code, message, field}`) as an [`AppError`], so that the UI shows it
    /// like a server function's error (translated by code, under the field it names).
    pub fn error(&self) -> AppError {
        match serde_json::from_str::<ErrorBody>(&self.body) {
            Ok(body) => body.into_error(self.status),
            // Status 0: the request never got an answer (network down, server gone).
            Err(_) if self.status == 0 => AppError::transport("no answer from the server"),
            Err(_) => AppError::transport(format!("HTTP {}", self.status)),
        }
    }
}

/// A place for a browser-only handle (a request, a stream) that lives as long as the component. In the
/// browser it is local storage (the handles are not `Send`); on the server, where the handles are empty
/// stand-ins, it is ordinary storage: a local value created while rendering on one worker thread and
/// dropped on another would panic (`SendWrapper`), and the page's stream would never finish.
#[cfg(feature = "hydrate")]
pub type Slot<T> = leptos::prelude::StoredValue<Option<T>, leptos::prelude::LocalStorage>;
#[cfg(not(feature = "hydrate"))]
pub type Slot<T> = leptos::prelude::StoredValue<Option<T>>;

#[cfg(feature = "hydrate")]
pub fn slot<T: 'static>() -> Slot<T> {
    leptos::prelude::StoredValue::new_local(None)
}

#[cfg(not(feature = "hydrate"))]
pub fn slot<T: Send + Sync + 'static>() -> Slot<T> {
    leptos::prelude::StoredValue::new(None)
}

/// The file chosen in `input`, if any.
pub fn chosen(input: leptos::prelude::NodeRef<leptos::html::Input>) -> Option<Picked> {
    use leptos::prelude::GetUntracked;
    input.get_untracked().and_then(|el| chosen_file(&el))
}

/// The file chosen in `input` to upload, or the error its form shows under the file field when there
/// is none (`missing`, in the reader's language).
pub fn file_to_send(
    input: leptos::prelude::NodeRef<leptos::html::Input>,
    missing: &str,
) -> Result<Picked, AppError> {
    chosen(input).ok_or_else(|| AppError::invalid("file", ErrorCode::FileMissing, missing))
}

/// Keeps a `started` upload in `slot` until it answers; one that could not start is an error.
pub fn keep_upload(slot: Slot<Request>, started: Option<Request>) -> Result<(), AppError> {
    use leptos::prelude::SetValue;
    let request = started.ok_or_else(|| AppError::transport("the upload could not start"))?;
    slot.set_value(Some(request));
    Ok(())
}

#[cfg(feature = "hydrate")]
pub use browser::*;
#[cfg(not(feature = "hydrate"))]
pub use server::*;

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::RefCell;
    use std::rc::Rc;

    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    use super::Response;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_name = XMLHttpRequest)]
        #[derive(Clone)]
        type Xhr;
        #[wasm_bindgen(constructor, js_class = "XMLHttpRequest")]
        fn new() -> Xhr;
        #[wasm_bindgen(method, catch)]
        fn open(this: &Xhr, method: &str, url: &str) -> Result<(), JsValue>;
        #[wasm_bindgen(method, catch, js_name = setRequestHeader)]
        fn set_request_header(this: &Xhr, name: &str, value: &str) -> Result<(), JsValue>;
        #[wasm_bindgen(method, catch)]
        fn send(this: &Xhr, body: &JsValue) -> Result<(), JsValue>;
        #[wasm_bindgen(method)]
        fn abort(this: &Xhr);
        #[wasm_bindgen(method, getter)]
        fn upload(this: &Xhr) -> XhrUpload;
        #[wasm_bindgen(method, getter)]
        fn status(this: &Xhr) -> u16;
        #[wasm_bindgen(method, getter, js_name = responseText)]
        fn response_text(this: &Xhr) -> Option<String>;
        #[wasm_bindgen(method, js_name = addEventListener)]
        fn add_event_listener(this: &Xhr, kind: &str, listener: &Closure<dyn FnMut(JsValue)>);

        type XhrUpload;
        #[wasm_bindgen(method, js_name = addEventListener)]
        fn add_event_listener(
            this: &XhrUpload,
            kind: &str,
            listener: &Closure<dyn FnMut(ProgressEvent)>,
        );

        type ProgressEvent;
        #[wasm_bindgen(method, getter)]
        fn loaded(this: &ProgressEvent) -> f64;
        #[wasm_bindgen(method, getter)]
        fn total(this: &ProgressEvent) -> f64;

        type FileInput;
        #[wasm_bindgen(method, getter)]
        fn files(this: &FileInput) -> Option<FileList>;
        type FileList;
        #[wasm_bindgen(method)]
        fn item(this: &FileList, index: u32) -> Option<File>;

        /// A file chosen in an `<input type=file>`.
        #[derive(Clone)]
        pub type File;
        #[wasm_bindgen(method, getter)]
        fn name(this: &File) -> String;
        #[wasm_bindgen(method, getter)]
        fn size(this: &File) -> f64;
        #[wasm_bindgen(method)]
        fn slice(this: &File, start: f64, end: f64) -> JsValue;

        #[derive(Clone)]
        type FileReader;
        #[wasm_bindgen(constructor, js_class = "FileReader")]
        fn new() -> FileReader;
        #[wasm_bindgen(method, js_name = readAsArrayBuffer)]
        fn read_as_array_buffer(this: &FileReader, blob: &JsValue);
        #[wasm_bindgen(method, getter)]
        fn result(this: &FileReader) -> JsValue;
        #[wasm_bindgen(method, js_name = addEventListener)]
        fn add_event_listener(this: &FileReader, kind: &str, listener: &JsValue);

        type TextDecoder;
        #[wasm_bindgen(constructor, catch, js_class = "TextDecoder")]
        fn new(label: &str) -> Result<TextDecoder, JsValue>;
        #[wasm_bindgen(method)]
        fn decode(this: &TextDecoder, bytes: &[u8]) -> String;
    }

    /// Whether the component that started a browser task (a file read, a request) is still there.
    ///
    /// The browser calls back whenever it is done — after the person has navigated away too — and a
    /// callback that then reads one of the gone component's signals or stored values panics, which
    /// takes the whole page down ("reactive value that has already been disposed", then `unreachable`).
    /// So every callback this module takes runs only while its component lives: the flag is lowered by
    /// the component's cleanup, which runs before its stored values (a request in flight among them)
    /// are dropped, so a request aborted by that drop calls nothing back either.
    #[derive(Clone)]
    struct Alive(std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl Alive {
        /// Tied to the current owner: the component's, in its body and in its event handlers. With no
        /// owner (nothing to outlive), always alive.
        fn here() -> Self {
            let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
            let lowered = flag.clone();
            leptos::prelude::on_cleanup(move || {
                lowered.store(false, std::sync::atomic::Ordering::Relaxed)
            });
            Alive(flag)
        }

        fn get(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    /// Reads the first `limit` bytes of `picked` in the browser and hands them to `on_read` (nothing
    /// when the file cannot be read, or once the component that asked is gone): a look at a file
    /// before it is sent.
    pub fn read_head(picked: &Picked, limit: u64, on_read: impl FnOnce(Vec<u8>) + 'static) {
        let reader = FileReader::new();
        let alive = Alive::here();
        // A one-shot closure, freed once it has run.
        let listener = {
            let reader = reader.clone();
            Closure::once_into_js(move |_: JsValue| {
                let result = reader.result();
                if result.is_object() && alive.get() {
                    on_read(js_sys::Uint8Array::new(&result).to_vec());
                }
            })
        };
        reader.add_event_listener("load", &listener);
        reader.read_as_array_buffer(&picked.file.slice(0.0, limit as f64));
    }

    /// `bytes` as text in `encoding` (a WHATWG label), characters it cannot read replaced; `None`
    /// when this browser does not know the encoding.
    pub fn decode(bytes: &[u8], encoding: &str) -> Option<String> {
        TextDecoder::new(encoding).ok().map(|d| d.decode(bytes))
    }

    /// The file chosen in `input`, if any.
    pub fn chosen_file(input: &leptos::web_sys::HtmlInputElement) -> Option<Picked> {
        let input: &FileInput = input.unchecked_ref();
        let file = input.files()?.item(0)?;
        Some(Picked {
            name: file.name(),
            size: file.size() as u64,
            file,
        })
    }

    /// A chosen file: its name and size, and the handle the upload sends.
    #[derive(Clone)]
    pub struct Picked {
        pub name: String,
        pub size: u64,
        file: File,
    }

    /// A request in flight. Keep it until it has answered: dropping it aborts the request and frees its
    /// listeners (so it is never dropped from inside one of them; the component replaces it later).
    pub struct Request {
        xhr: Xhr,
        done: Rc<RefCell<bool>>,
        _listeners: Vec<Closure<dyn FnMut(JsValue)>>,
        _progress: Option<Closure<dyn FnMut(ProgressEvent)>>,
    }

    impl Drop for Request {
        fn drop(&mut self) {
            if !*self.done.borrow() {
                self.xhr.abort();
            }
        }
    }

    fn start(
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &JsValue,
        on_progress: Option<Box<dyn FnMut(u64, u64)>>,
        on_done: impl FnOnce(Response) + 'static,
    ) -> Option<Request> {
        let xhr = Xhr::new();
        xhr.open(method, url).ok()?;
        for (name, value) in headers {
            xhr.set_request_header(name, value).ok()?;
        }
        let done = Rc::new(RefCell::new(false));
        let on_done = Rc::new(RefCell::new(Some(on_done)));
        let alive = Alive::here();
        // `loadend` follows load, error and abort alike; status 0 means no answer.
        let finish = {
            let (xhr, done, on_done, alive) =
                (xhr.clone(), done.clone(), on_done.clone(), alive.clone());
            Closure::<dyn FnMut(JsValue)>::new(move |_| {
                *done.borrow_mut() = true;
                let Some(f) = on_done.borrow_mut().take() else {
                    return;
                };
                if alive.get() {
                    f(Response {
                        status: xhr.status(),
                        body: xhr.response_text().unwrap_or_default(),
                    });
                }
            })
        };
        xhr.add_event_listener("loadend", &finish);
        let progress = on_progress.map(|mut f| {
            let listener = Closure::<dyn FnMut(ProgressEvent)>::new(move |ev: ProgressEvent| {
                if alive.get() {
                    f(ev.loaded() as u64, ev.total() as u64)
                }
            });
            xhr.upload().add_event_listener("progress", &listener);
            listener
        });
        xhr.send(body).ok()?;
        Some(Request {
            xhr,
            done,
            _listeners: vec![finish],
            _progress: progress,
        })
    }

    /// POSTs the file as the raw body; `on_progress(sent, total)` follows the upload.
    pub fn upload(
        url: &str,
        picked: &Picked,
        on_progress: impl FnMut(u64, u64) + 'static,
        on_done: impl FnOnce(Response) + 'static,
    ) -> Option<Request> {
        start(
            "POST",
            url,
            &[("Content-Type", "application/octet-stream")],
            picked.file.as_ref(),
            Some(Box::new(on_progress)),
            on_done,
        )
    }

    pub fn get(url: &str, on_done: impl FnOnce(Response) + 'static) -> Option<Request> {
        start(
            "GET",
            url,
            &[("Accept", "application/json")],
            &JsValue::NULL,
            None,
            on_done,
        )
    }
}

#[cfg(not(feature = "hydrate"))]
mod server {
    use super::Response;

    #[derive(Clone)]
    pub struct Picked {
        pub name: String,
        pub size: u64,
    }

    pub struct Request;

    pub fn chosen_file(_input: &leptos::web_sys::HtmlInputElement) -> Option<Picked> {
        None
    }

    pub fn read_head(_picked: &Picked, _limit: u64, _on_read: impl FnOnce(Vec<u8>) + 'static) {}

    pub fn decode(_bytes: &[u8], _encoding: &str) -> Option<String> {
        None
    }

    pub fn upload(
        _url: &str,
        _picked: &Picked,
        _on_progress: impl FnMut(u64, u64) + 'static,
        _on_done: impl FnOnce(Response) + 'static,
    ) -> Option<Request> {
        None
    }

    pub fn get(_url: &str, _on_done: impl FnOnce(Response) + 'static) -> Option<Request> {
        None
    }
}

/// `a=1&b=x%20y`: query parameters, percent-encoded (RFC 3986 unreserved characters kept).
pub fn query(params: &[(&str, &str)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_are_percent_encoded() {
        assert_eq!(
            query(&[("name", "评论 v1"), ("filename", "a&b.tsv")]),
            "name=%E8%AF%84%E8%AE%BA%20v1&filename=a%26b.tsv"
        );
    }

    #[test]
    fn rest_error_bodies_become_app_errors() {
        let r = Response {
            status: 422,
            body: r#"{"code":"dataset_invalid","message":"line 7, label: missing label","field":"file"}"#
                .into(),
        };
        let err = r.error();
        assert_eq!(err.code(), "dataset_invalid");
        assert_eq!(err.field(), Some("file"));
        assert_eq!(err.to_string(), "line 7, label: missing label");
        let taken = Response {
            status: 409,
            body: r#"{"code":"dataset_name_taken","message":"taken","field":"name"}"#.into(),
        };
        assert!(matches!(taken.error(), AppError::Conflict { .. }));
        assert_eq!(
            Response {
                status: 0,
                body: String::new()
            }
            .error()
            .code(),
            "transport"
        );
    }
}

//! The build log of one environment version, read from the server's SSE stream
//! (`/api/v1/workspaces/{id}/environments/{env_id}/versions/{version}/log`). The stream sends the whole
//! log so far, then new text as the build writes it (`log` events), and a last `end` event with the
//! build's status; a finished build's log therefore arrives complete and ends at once. The component
//! closes the stream on `end` (an `EventSource` left open would reconnect forever) and when it goes
//! away.
//!
//! `EventSource` is bound by hand with `wasm_bindgen` (four members) instead of enabling more web-sys
//! features for the whole bundle.

use leptos::prelude::*;

use crate::i18n::*;

/// Where the stream of a version's build log is.
pub fn log_url(workspace_id: i64, environment_id: i64, version: i64) -> String {
    format!(
        "/api/v1/workspaces/{workspace_id}/environments/{environment_id}/versions/{version}/log"
    )
}

/// The log as a `<pre>` that follows the stream. `on_end` runs once when the server says the build is
/// over (the page then reloads the environment to show the lock).
#[component]
pub fn BuildLog(
    workspace_id: i64,
    environment_id: i64,
    version: i64,
    /// The build has not started: there is nothing to stream yet.
    waiting: bool,
    #[prop(into)] on_end: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = RwSignal::new(String::new());
    // Streaming until `end` (or an error); only in the browser, so the server renders "not streaming".
    let streaming = RwSignal::new(false);
    // Local to the browser thread there; on the server (where nothing streams) a plain slot, because a
    // thread-local value dropped on another thread panics and leaves the page stream unfinished.
    let stream: crate::components::http::Slot<browser::LogStream> = crate::components::http::slot();
    let pre = NodeRef::<leptos::html::Pre>::new();
    if !waiting {
        Effect::new(move |_| {
            streaming.set(true);
            let on_text = move |chunk: String| {
                text.update(|t| {
                    t.push_str(&chunk);
                    t.push('\n');
                });
                // Keep the newest line in view, as a terminal would.
                if let Some(pre) = pre.get_untracked() {
                    pre.set_scroll_top(pre.scroll_height());
                }
            };
            let on_end = move || {
                streaming.set(false);
                on_end.run(());
            };
            stream.set_value(browser::LogStream::open(
                &log_url(workspace_id, environment_id, version),
                on_text,
                on_end,
            ));
        });
    }
    view! {
        <div class="build-log" data-testid="build-log-panel">
            <p class="hint build-log-state" role="status" data-testid="build-log-state" data-streaming=move || streaming.get().to_string()>
                {move || {
                    if waiting {
                        t_string!(i18n, env_detail.log_waiting).to_string()
                    } else if streaming.get() {
                        t_string!(i18n, env_detail.log_live).to_string()
                    } else if text.with(String::is_empty) {
                        t_string!(i18n, env_detail.log_empty).to_string()
                    } else {
                        String::new()
                    }
                }}
            </p>
            <pre class="log" node_ref=pre data-testid="build-log" tabindex="0" aria-label=move || t_string!(i18n, env_detail.log_title)>
                {move || text.get()}
            </pre>
        </div>
    }
    .into_any()
}

#[cfg(feature = "hydrate")]
mod browser {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[derive(Clone)]
        type EventSource;
        #[wasm_bindgen(constructor, catch)]
        fn new(url: &str) -> Result<EventSource, JsValue>;
        #[wasm_bindgen(method, js_name = addEventListener)]
        fn add_event_listener(
            this: &EventSource,
            kind: &str,
            listener: &Closure<dyn FnMut(MessageEvent)>,
        );
        #[wasm_bindgen(method)]
        fn close(this: &EventSource);

        type MessageEvent;
        #[wasm_bindgen(method, getter)]
        fn data(this: &MessageEvent) -> JsValue;
    }

    /// An open stream; dropping it closes the connection and frees the listeners.
    pub struct LogStream {
        source: EventSource,
        _listeners: Vec<Closure<dyn FnMut(MessageEvent)>>,
    }

    impl LogStream {
        pub fn open(
            url: &str,
            mut on_text: impl FnMut(String) + 'static,
            on_end: impl Fn() + 'static,
        ) -> Option<LogStream> {
            let source = EventSource::new(url).ok()?;
            let log = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                if let Some(text) = ev.data().as_string() {
                    on_text(text);
                }
            });
            // Closed from inside the listener (not by dropping the stream, which would free the closure
            // that is running). A refused stream (403, 404) ends as an error without `end`; a dropped
            // connection would be retried by the browser, but showing what arrived is enough.
            let finish = {
                let source = source.clone();
                let on_end = std::rc::Rc::new(on_end);
                move || {
                    let (source, on_end) = (source.clone(), on_end.clone());
                    Closure::<dyn FnMut(MessageEvent)>::new(move |_| {
                        source.close();
                        on_end();
                    })
                }
            };
            let (end, failed) = (finish(), finish());
            source.add_event_listener("log", &log);
            source.add_event_listener("end", &end);
            source.add_event_listener("error", &failed);
            Some(LogStream {
                source,
                _listeners: vec![log, end, failed],
            })
        }
    }

    impl Drop for LogStream {
        fn drop(&mut self) {
            self.source.close();
        }
    }
}

#[cfg(not(feature = "hydrate"))]
mod browser {
    /// Streams only exist in the browser; effects never run on the server.
    pub struct LogStream;

    impl LogStream {
        pub fn open(
            _url: &str,
            _on_text: impl FnMut(String) + 'static,
            _on_end: impl Fn() + 'static,
        ) -> Option<LogStream> {
            None
        }
    }
}

//! A job's live stream (`GET /api/v1/workspaces/{id}/jobs/{job}/stream`, Server-Sent Events): `metric`
//! events carry a [`MetricPoint`], `log` a [`LogLine`], `status` the [`JobSummary`] whenever it changes.
//! The stream starts with everything so far (or after the ids it is given) and ends once the job has
//! ended and all it produced was sent. The browser would reconnect to an ended stream from the start
//! and send it all again, so the stream is closed at its first error; the page reopens it after the
//! last ids it saw when the job is not over (a dropped connection).
//!
//! `EventSource` is bound by hand with `wasm_bindgen`, like the environments' build log.

use contracts::types::{JobSummary, LogLine, MetricPoint};

/// Where the stream is; `after` = (last metric id, last log id) seen, to resume without repeats.
pub fn stream_url(workspace_id: i64, job_id: i64, after: (i64, i64)) -> String {
    format!(
        "/api/v1/workspaces/{workspace_id}/jobs/{job_id}/stream?metrics_after={}&logs_after={}",
        after.0, after.1
    )
}

/// What the stream delivers, decoded.
pub enum Event {
    Metric(MetricPoint),
    Log(LogLine),
    Status(JobSummary),
    /// The server sent everything the ended job produced; the stream closes next.
    End,
    /// The connection ended: after [`Event::End`], or because it dropped.
    Closed,
}

#[cfg(feature = "hydrate")]
pub use browser::JobStream;
#[cfg(not(feature = "hydrate"))]
pub use server::JobStream;

#[cfg(feature = "hydrate")]
mod browser {
    use std::rc::Rc;

    use wasm_bindgen::prelude::*;

    use super::Event;

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

    /// An open stream; dropping it closes the connection and frees the listeners (so it is dropped
    /// outside its listeners: the page replaces it from a timer).
    pub struct JobStream {
        source: EventSource,
        _listeners: Vec<Closure<dyn FnMut(MessageEvent)>>,
    }

    impl JobStream {
        pub fn open(url: &str, on_event: impl Fn(Event) + 'static) -> Option<JobStream> {
            let source = EventSource::new(url).ok()?;
            let on_event = Rc::new(on_event);
            let decode = |kind: &'static str| {
                let on_event = on_event.clone();
                Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                    let Some(text) = ev.data().as_string() else {
                        return;
                    };
                    let event = match kind {
                        "metric" => serde_json::from_str(&text).ok().map(Event::Metric),
                        "log" => serde_json::from_str(&text).ok().map(Event::Log),
                        "status" => serde_json::from_str(&text).ok().map(Event::Status),
                        _ => Some(Event::End),
                    };
                    if let Some(event) = event {
                        on_event(event);
                    }
                })
            };
            let closed = {
                let (source, on_event) = (source.clone(), on_event.clone());
                Closure::<dyn FnMut(MessageEvent)>::new(move |_| {
                    source.close();
                    on_event(Event::Closed);
                })
            };
            let kinds = ["metric", "log", "status", "end", "error"];
            let listeners = vec![
                decode("metric"),
                decode("log"),
                decode("status"),
                decode("end"),
                closed,
            ];
            for (kind, listener) in kinds.iter().zip(&listeners) {
                source.add_event_listener(kind, listener);
            }
            Some(JobStream {
                source,
                _listeners: listeners,
            })
        }
    }

    impl Drop for JobStream {
        fn drop(&mut self) {
            self.source.close();
        }
    }
}

#[cfg(not(feature = "hydrate"))]
mod server {
    use super::Event;

    /// Streams only exist in the browser; effects never run on the server.
    pub struct JobStream;

    impl JobStream {
        pub fn open(_url: &str, _on_event: impl Fn(Event) + 'static) -> Option<JobStream> {
            None
        }
    }
}

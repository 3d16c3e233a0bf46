//! Server-Sent Events in the browser: a job's metrics, log and status, an environment's build log. The
//! server sends what there is so far, then what comes, and a last `end` event once nothing more will
//! come. The stream is closed at `end` and at the first `error` (a refused stream — 403, 404 — a dropped
//! connection, or the server closing it): an `EventSource` left open reconnects by itself and would
//! receive everything again from the start. Whoever wants more after a drop opens a new stream, after
//! what it has already seen.
//!
//! `EventSource` is bound by hand with `wasm_bindgen` (four members) instead of enabling more web-sys
//! features for the whole bundle. On the server [`EventStream::open`] exists and opens nothing: it is
//! only called from effects, which never run there.

/// What a stream hands its listener.
pub enum Message {
    /// An event of one of the kinds listened to, and its data.
    Data(&'static str, String),
    /// The server's last event: everything was sent. The stream is closed.
    End,
    /// The connection ended before `end` (refused or dropped). The stream is closed.
    Dropped,
}

/// An open stream. Dropping it closes the connection and frees the listeners, so it is never
/// dropped from inside one of them: a component keeps it in a [`Slot`](crate::components::http::Slot)
/// and replaces it from an effect or a timer.
pub struct EventStream {
    #[cfg(feature = "hydrate")]
    _open: browser::Open,
}

impl EventStream {
    /// Opens `url` and hands `on_message` each event of `kinds`, then the end or the drop.
    pub fn open(
        url: &str,
        kinds: &[&'static str],
        on_message: impl Fn(Message) + 'static,
    ) -> Option<EventStream> {
        #[cfg(feature = "hydrate")]
        return browser::open(url, kinds, on_message).map(|open| EventStream { _open: open });
        #[cfg(not(feature = "hydrate"))]
        {
            let _ = (url, kinds, on_message);
            None
        }
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::rc::Rc;

    use wasm_bindgen::prelude::*;

    use super::Message;

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

    /// The source and the listeners it calls.
    pub struct Open {
        source: EventSource,
        _listeners: Vec<Closure<dyn FnMut(MessageEvent)>>,
    }

    impl Drop for Open {
        fn drop(&mut self) {
            self.source.close();
        }
    }

    pub fn open(
        url: &str,
        kinds: &[&'static str],
        on_message: impl Fn(Message) + 'static,
    ) -> Option<Open> {
        let source = EventSource::new(url).ok()?;
        let on_message = Rc::new(on_message);
        let data = |kind: &'static str| {
            let on_message = on_message.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                if let Some(text) = ev.data().as_string() {
                    on_message(Message::Data(kind, text));
                }
            })
        };
        // Closed from inside the listener, not by dropping the stream (which would free the closure
        // that is running).
        let last = |message: fn() -> Message| {
            let (source, on_message) = (source.clone(), on_message.clone());
            Closure::<dyn FnMut(MessageEvent)>::new(move |_| {
                source.close();
                on_message(message());
            })
        };
        let mut listeners = Vec::new();
        for &kind in kinds {
            let listener = data(kind);
            source.add_event_listener(kind, &listener);
            listeners.push(listener);
        }
        let ends = [
            ("end", last(|| Message::End)),
            ("error", last(|| Message::Dropped)),
        ];
        for (kind, listener) in ends {
            source.add_event_listener(kind, &listener);
            listeners.push(listener);
        }
        Some(Open {
            source,
            _listeners: listeners,
        })
    }
}

//! A "Copy" button for text a person pastes elsewhere (an API key, a curl command). It writes to the
//! clipboard through `navigator.clipboard.writeText` and says whether that worked: the API exists only
//! in secure contexts (https, or localhost), so on a plain-http address it says "select and copy"
//! instead of pretending.
//!
//! `navigator.clipboard` and its promise are bound by hand with `wasm_bindgen` (two members), like the
//! XHR in `http`, rather than adding web-sys features to the whole bundle. On the server the button
//! renders the same and the function does nothing: it is only called from a click handler.

use std::time::Duration;

use leptos::prelude::*;

use crate::i18n::*;

/// How long "Copied" stays before the button reads "Copy" again.
const CONFIRM_FOR: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, PartialEq)]
enum State {
    Idle,
    Copied,
    Failed,
}

#[component]
pub fn CopyButton(
    /// What goes to the clipboard, read when the button is clicked.
    #[prop(into)]
    text: Signal<String>,
    testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let state = RwSignal::new(State::Idle);
    let on_click = move |_| {
        clipboard::write(&text.get_untracked(), move |ok| {
            state.try_set(if ok { State::Copied } else { State::Failed });
            set_timeout(
                move || {
                    state.try_set(State::Idle);
                },
                CONFIRM_FOR,
            );
        });
    };
    view! {
        <button type="button" class="button button-small button-ghost copy-button" data-testid=testid
            data-state=move || match state.get() { State::Idle => "idle", State::Copied => "copied", State::Failed => "failed" }
            on:click=on_click>
            {move || match state.get() {
                State::Idle => t_string!(i18n, endpoint_detail.copy),
                State::Copied => t_string!(i18n, endpoint_detail.copied),
                State::Failed => t_string!(i18n, endpoint_detail.copy_failed),
            }}
        </button>
    }
}

#[cfg(feature = "hydrate")]
mod clipboard {
    use std::cell::RefCell;
    use std::rc::Rc;

    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        type Promise;
        /// Throws when there is no `navigator.clipboard` (an insecure context).
        #[wasm_bindgen(catch, js_namespace = ["navigator", "clipboard"], js_name = writeText)]
        fn write_text(text: &str) -> Result<Promise, JsValue>;
        #[wasm_bindgen(method)]
        fn then(this: &Promise, on_ok: &JsValue, on_err: &JsValue) -> Promise;
    }

    /// Writes `text`; `done(true)` once the browser has it, `done(false)` when it refused.
    pub fn write(text: &str, done: impl FnOnce(bool) + 'static) {
        match write_text(text) {
            Ok(promise) => {
                let done = Rc::new(RefCell::new(Some(done)));
                let settle = move |ok: bool| {
                    let done = done.clone();
                    Closure::once_into_js(move |_: JsValue| {
                        if let Some(f) = done.borrow_mut().take() {
                            f(ok)
                        }
                    })
                };
                let _ = promise.then(&settle(true), &settle(false));
            }
            Err(_) => done(false),
        }
    }
}

#[cfg(not(feature = "hydrate"))]
mod clipboard {
    pub fn write(_text: &str, _done: impl FnOnce(bool) + 'static) {}
}

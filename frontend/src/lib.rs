//! The browser half of Paddock: a wasm entry point that hydrates the HTML the server rendered, so the
//! page becomes interactive without a second render. Everything else lives in the `app` crate.
//!
//! # Layout
//! One function, [`hydrate`], which `scripts/site.sh` (or cargo-leptos) builds to wasm with `app`'s
//! `hydrate` feature; the server's pages load it.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}

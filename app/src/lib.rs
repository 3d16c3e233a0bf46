//! Paddock's Leptos application: routes, pages and server functions, compiled twice — natively with
//! `ssr` (server rendering plus the domain under [`ssr`]) and to wasm with `hydrate`.
//!
//! # Layout
//! - [`types`], [`error`]: shapes and the error type shared by server and browser.
//! - [`api`]: server functions, thin wrappers over the domain functions in [`ssr`].
//! - `pages`, `components`: the UI.
//! - [`ssr`] (server only): database, accounts, sessions, workspaces, members, audit log, tokens.

pub mod api;
pub mod error;
pub mod types;

#[cfg(feature = "ssr")]
pub mod ssr;

use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    view! { <p>"Paddock"</p> }
}

//! Paddock's Leptos application: routes, pages and server functions, compiled twice — natively with
//! `ssr` (server rendering; server functions call the `domain` crate) and to wasm with `hydrate`.
//!
//! # Layout
//! - `contracts::types`, `contracts::error`: the shapes and the error type shared by server and
//!   browser live in the `contracts` crate, which the REST API and the CLI use too.
//! - [`api`]: server functions, one module per resource, each a domain call run for the caller.
//! - `context` (server only): the `domain::AppState` and the caller from Leptos context, and
//!   `as_caller`, which runs a server function's body with them.
//! - [`i18n`]: translations generated from `locales/*.json` (Simplified Chinese default, English).
//! - [`components`]: the app shell (header, switcher, language switch) and what the pages are made
//!   of: the page frame and its loading and error states, tables, forms, confirmations, badges,
//!   timers and the browser's streams.
//! - [`pages`]: one module per URL of the dashboard; [`App`] maps URLs to them.

// Leptos views are nested generic types; the environment pages' tables are deeper than rustc's default
// query depth allows when the hydrate build lays out their async hydration.
#![recursion_limit = "256"]

pub mod api;
#[cfg(feature = "ssr")]
pub mod context;

pub mod components;
pub mod i18n;
pub mod pages;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;

use crate::components::auth::Auth;
use crate::i18n::*;
use crate::pages::workspace::{compare, datasets, endpoints, environments, jobs, models, sweeps};
use crate::pages::{admin, auth, home, not_found, tokens, workspace};

/// The HTML document the server wraps around [`App`]: the server calls this once per request (and sets
/// the page's Content-Security-Policy with this render's nonce).
/// `<html>` has no `lang` here on purpose: the i18n provider sets `lang` (and `dir`) through
/// leptos_meta so that it follows the chosen language, and the hydrating client reads it back to
/// start in the same language the server rendered.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light" />
                <link rel="stylesheet" href="/pkg/paddock.css" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                // Defines <paddock-terminal>; small, and it loads xterm.js only when a terminal opens.
                <script src="/terminal.js" defer></script>
                // Defines <paddock-chart>; small, and it loads uPlot only when a job's charts appear.
                <script src="/charts.js" defer></script>
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// How long the language choice is remembered: a year, in milliseconds (leptos_use's unit).
const LANGUAGE_COOKIE_MAX_AGE_MS: i64 = 365 * 24 * 60 * 60 * 1000;

/// The whole dashboard. The language comes from the `i18n_pref_locale` cookie, else Simplified
/// Chinese: the browser's `Accept-Language` is deliberately ignored so that a fresh instance always
/// opens in the product's default language and every visitor sees the same page.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let default_language = leptos_i18n::context::UseLocalesOptions::default()
        .ssr_lang_header_getter(|| None::<String>);
    // Path `/`: without it the browser scopes the cookie to the directory of the page where the
    // language was switched (`/w/1`), and `/signin` would forget it. Browsers treat a cookie
    // without `SameSite` as `Lax`, which is what a preference needs.
    let cookie_options = leptos_i18n::context::CookieOptions::<Locale>::default()
        .path("/".to_string())
        .max_age(LANGUAGE_COOKIE_MAX_AGE_MS);
    view! {
        <I18nContextProvider ssr_lang_header_getter=default_language cookie_options>
            <Routed />
        </I18nContextProvider>
    }
}

/// Everything under the i18n provider: the session and the route table.
#[component]
fn Routed() -> impl IntoView {
    Auth::provide();
    // Effects run only in the browser, after hydration: this mark tells browser tests (and anyone
    // debugging) that the wasm has taken over the server-rendered page.
    Effect::new(move |_| {
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Title formatter=|text: String| if text.is_empty() { "Paddock".to_string() } else { format!("{text} · Paddock") } />
        <Router>
            <Routes fallback=not_found::NotFoundPage>
                <Route path=path!("/signin") view=auth::SignInPage />
                <Route path=path!("/signup") view=auth::SignUpPage />
                <ParentRoute path=path!("") view=home::SignedInLayout>
                    <Route path=path!("") view=home::HomePage />
                    <Route path=path!("/workspaces/new") view=home::NewWorkspacePage />
                    <Route path=path!("/settings/tokens") view=tokens::TokensPage />
                    <Route path=path!("/admin") view=admin::AdminPage />
                    <ParentRoute path=path!("/w/:id") view=workspace::WorkspaceLayout>
                        <Route path=path!("") view=workspace::WorkspaceIndex />
                        <Route path=path!("/environments") view=environments::list::EnvironmentsPage />
                        <Route path=path!("/environments/new") view=environments::form::NewEnvironmentPage />
                        <Route path=path!("/environments/:env_id") view=environments::detail::EnvironmentPage />
                        <Route path=path!("/environments/:env_id/edit") view=environments::form::EditEnvironmentPage />
                        <Route path=path!("/datasets") view=datasets::list::DatasetsPage />
                        <Route path=path!("/datasets/:ds") view=datasets::detail::DatasetPage />
                        <Route path=path!("/jobs") view=jobs::list::JobsPage />
                        <Route path=path!("/jobs/new") view=jobs::form::NewJobPage />
                        <Route path=path!("/jobs/:job") view=jobs::detail::JobPage />
                        <Route path=path!("/compare") view=compare::ComparePage />
                        <Route path=path!("/sweeps") view=sweeps::list::SweepsPage />
                        <Route path=path!("/sweeps/new") view=sweeps::form::NewSweepPage />
                        <Route path=path!("/sweeps/:sweep") view=sweeps::detail::SweepPage />
                        <Route path=path!("/models") view=models::ModelsPage />
                        <Route path=path!("/endpoints") view=endpoints::list::EndpointsPage />
                        <Route path=path!("/endpoints/:endpoint") view=endpoints::detail::EndpointPage />
                        <Route path=path!("/members") view=workspace::members::MembersPage />
                        <Route path=path!("/activity") view=workspace::activity::ActivityPage />
                        <Route path=path!("/settings") view=workspace::settings::SettingsPage />
                    </ParentRoute>
                </ParentRoute>
            </Routes>
        </Router>
    }
}

//! Paddock's HTTP surface: the REST API, the dashboard's pages and server functions, static files,
//! `/healthz` and `/metrics`, all over the `domain` crate. Nothing here decides anything a domain
//! function could: handlers read the request, call the domain and answer in the shared error shape
//! (`contracts::error::http`).
//!
//! # Layout
//! - [`router`]: every route and layer, in the order a request meets them.
//! - [`rest`]: `/api/v1` and its OpenAPI document; [`caller`]: who is calling (the extractors).
//! - [`csrf`] (with the `Host` allow-list), [`headers`] (security headers, CSP), [`limits`] (body
//!   sizes; JSON, path and query extractors with rejections in the common error shape), [`page_guard`]
//!   (which pages need an account), [`errors`] (statuses of the server-function layer's own errors),
//!   [`observability`] (`/metrics`, `/healthz`).
//!
//! Request flow, outermost first: client address → unread-body close → request metrics → tracing →
//! security headers → session cookie → Host allow-list and CSRF check → server-function statuses →
//! body-size limit → route (`/api/v1/*` REST, `/rpc/*` server functions, Leptos pages, `/pkg` assets,
//! `/healthz`, `/metrics`, other static files from the site root).

pub mod caller;
pub mod csrf;
pub mod errors;
pub mod headers;
pub mod limits;
pub mod observability;
pub mod page_guard;
pub mod rest;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{middleware, Router};
use domain::{sessions, AppState};
use leptos::config::LeptosOptions;
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

use crate::config::ServeConfig;

/// The whole HTTP surface of Paddock. Every route but dataset and model uploads is under the general
/// request-body limit; uploads stream to disk under their own (`--max-upload-bytes`, enforced while
/// receiving). Pages and server functions find the [`AppState`] in their Leptos context.
pub fn router(state: AppState, options: LeptosOptions, config: &ServeConfig) -> Router {
    let with_state = {
        let state = state.clone();
        move || provide_context(state.clone())
    };
    let rest::Api { routes, uploads } = rest::api();
    let api = routes
        .route("/healthz", get(observability::healthz))
        .route("/metrics", get(observability::metrics_endpoint))
        .with_state(state.clone());
    let pages = Router::new()
        .leptos_routes_with_context(
            &options,
            generate_route_list(app::App),
            with_state.clone(),
            {
                let options = options.clone();
                move || page(options.clone())
            },
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            page_guard::guard,
        ));
    let limited = Router::new()
        .merge(api)
        .merge(
            Router::new()
                .nest_service(
                    "/pkg",
                    ServeDir::new(config.site_root.join("pkg"))
                        .precompressed_br()
                        .precompressed_gzip(),
                )
                .layer(middleware::map_response(headers::revalidate)),
        )
        .merge(pages)
        .layer(DefaultBodyLimit::max(state.security.max_body_bytes))
        .layer(RequestBodyLimitLayer::new(state.security.max_body_bytes))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            limits::enforce_body_limit,
        ));
    let uploads = uploads
        .layer(DefaultBodyLimit::disable())
        .with_state(state.clone());
    Router::new()
        .merge(limited)
        .merge(uploads)
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            LeptosOptions,
            _,
        >(with_state, page))
        .layer(middleware::from_fn(errors::server_fn_status))
        .layer(middleware::from_fn_with_state(state.clone(), csrf::protect))
        .layer(sessions::layer(&state.db, state.security.secure_cookies))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            headers::secure,
        ))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(observability::track))
        .layer(middleware::from_fn(limits::close_if_body_unread))
        .layer(middleware::from_fn(caller::record_client_addr))
        .with_state(options)
}

/// A dashboard page: the app's HTML shell, with the Content-Security-Policy that admits this render's
/// nonce (leptos gives each render one; the inline hydration script carries it).
fn page(options: LeptosOptions) -> impl IntoView {
    if let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) {
        if let Ok(policy) = headers::page_policy(&nonce).parse() {
            response.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, policy);
        }
    }
    app::shell(options)
}

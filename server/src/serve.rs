//! `paddock serve`: opens and migrates the database, builds the router and serves it until the
//! shutdown future resolves (Ctrl-C or SIGTERM from `main`), then drains open requests.
//!
//! Request flow, outermost first: request metrics → tracing → security headers → session cookie →
//! Host allow-list and CSRF check → server-function statuses → body-size limit → route (`/api/v1/*` REST, `/rpc/*` server functions, Leptos pages, `/pkg` assets,
//! `/healthz`, `/metrics`, other static files from the site root).

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use app::ssr::endpoints::replicas::Deployer;
use app::ssr::engine::Engine;
use app::ssr::jobs::{scheduler, Jobs};
use app::ssr::storage::Storage;
use app::ssr::{
    csrf, environments, headers, http_error, limits, observability, page_guard, rest, sessions,
    AppState,
};
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{middleware, Router};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;

use crate::config::ServeConfig;

pub async fn run(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let db = app::ssr::db::open(&config.db.url()).await?;
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("cannot listen on {}", config.bind))?;
    let addr = listener.local_addr()?;
    observability::install_recorder();

    let site_root = config.site_root.to_string_lossy().into_owned();
    let leptos_options = LeptosOptions::builder()
        .output_name("paddock")
        .site_root(site_root.as_str())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let security = config.security(addr);
    let paddock = std::env::current_exe().context("cannot locate the paddock binary")?;
    let storage = std::sync::Arc::new(Storage::new(
        &config.db.data_dir,
        config.max_upload_bytes,
        paddock,
    ));
    app::ssr::layout::migrate(&db, &storage)
        .await
        .map_err(|e| anyhow::anyhow!("moving the data directory to the store layout: {e}"))?;
    let mut engine_config = config.environments.engine();
    engine_config.volumes_dir = Some(storage.volumes_dir());
    engine_config.stores_dir = Some(storage.stores_dir());
    let engine = std::sync::Arc::new(
        Engine::start(&db, engine_config)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let mut jobs = Jobs::new(
        storage.clone(),
        engine.clone(),
        config.cpu_job_slots,
        config.cpu_job_threads,
    );
    jobs.train_log_max_bytes = config.train_log_max_bytes;
    let jobs = std::sync::Arc::new(jobs);
    let deployer = std::sync::Arc::new(Deployer::new(
        db.clone(),
        storage.clone(),
        engine.clone(),
        Default::default(),
    ));
    deployer.recover().await;
    let state = AppState::new(
        db.clone(),
        leptos_options,
        security,
        engine.clone(),
        storage,
        jobs.clone(),
        deployer,
    );
    app::ssr::workspaces::purge::resume(&state).await;
    let app = router(state, &config);

    // Watching the database files starts before the first request can write to them.
    let guard = app::ssr::db::guard_files(&config.db.url()).await;
    // The one line on stdout; tests and scripts wait for it. The kernel queues connections from now on.
    println!("listening on http://{addr}");
    tracing::info!(%addr, database = %config.db.url(), site_root, "paddock is serving");

    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown);
    tokio::select! {
        result = server => result.context("server failed")?,
        () = sessions::sweep_expired(db.clone()) => {}
        () = environments::reconcile::run(db.clone(), engine.clone()) => {}
        () = scheduler::run(db.clone(), jobs, engine) => {}
        reason = guard => {
            // Going on would acknowledge writes into a file that no later start reads.
            tracing::error!(%reason, "the database files changed under the server; stopping");
            anyhow::bail!("stopped: {reason}; start paddock again to continue on the files now in place");
        }
    }
    db.close().await;
    tracing::info!("shut down");
    Ok(())
}

/// The whole HTTP surface of Paddock. Every route but dataset uploads is under the general request-body
/// limit; uploads stream to disk under their own (`--max-upload-bytes`, enforced while receiving).
pub fn router(state: AppState, config: &ServeConfig) -> Router {
    let routes = generate_route_list(app::App);
    let shell_options = state.leptos_options.clone();
    let pkg_dir = config.site_root.join("pkg");
    let limited = Router::new()
        .merge(rest::router())
        .route("/healthz", get(observability::healthz))
        .route("/metrics", get(observability::metrics_endpoint))
        .nest_service(
            "/pkg",
            ServeDir::new(pkg_dir)
                .precompressed_br()
                .precompressed_gzip(),
        )
        .merge(
            Router::new()
                .leptos_routes_with_context(
                    &state,
                    routes,
                    || (),
                    move || app::shell(shell_options.clone()),
                )
                .route_layer(middleware::from_fn_with_state(
                    state.clone(),
                    page_guard::guard,
                )),
        )
        .layer(DefaultBodyLimit::max(state.security.max_body_bytes))
        .layer(RequestBodyLimitLayer::new(state.security.max_body_bytes))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            limits::enforce_body_limit,
        ));
    Router::new()
        .merge(limited)
        .merge(rest::datasets::upload_router().layer(DefaultBodyLimit::disable()))
        .merge(rest::pretrained::upload_router().layer(DefaultBodyLimit::disable()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(
            app::shell,
        ))
        .layer(middleware::from_fn(http_error::server_fn_status))
        .layer(middleware::from_fn_with_state(state.clone(), csrf::protect))
        .layer(sessions::layer(&state.db, state.security.secure_cookies))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            headers::secure,
        ))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(observability::track))
        .layer(middleware::from_fn(limits::close_if_body_unread))
        .with_state(state)
}

/// Resolves on Ctrl-C or SIGTERM (what `docker stop` and systemd send).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutdown requested; finishing open requests");
}

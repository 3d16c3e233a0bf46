//! `paddock serve`: opens and migrates the database, starts the domain's machinery (engine, scheduler,
//! deployer), builds the router ([`crate::http::router`]) and serves it until the shutdown future
//! resolves (Ctrl-C or SIGTERM from `main`), then drains open requests for at most [`SHUTDOWN_GRACE`].

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use domain::endpoints::replicas::Deployer;
use domain::engine::Engine;
use domain::jobs::{scheduler, Jobs};
use domain::storage::Storage;
use domain::{environments, sessions, AppState};
use leptos::config::LeptosOptions;

use crate::config::ServeConfig;
use crate::http::{self, observability};

/// How long open requests may take to finish once a shutdown was asked for. A live stream (a job's
/// metrics, a build log, a terminal) never finishes by itself, and a client that stops reading a
/// download would hold the server forever; what still runs after this is closed. Below the 10 s
/// `docker stop` gives, so the server ends on its own terms (database closed) rather than killed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

pub async fn run(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let cluster = config.cluster.connect().await?;
    let db = domain::db::open(&config.db.url()).await?;
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
    let key_file = config
        .secrets_key_file
        .clone()
        .unwrap_or_else(|| domain::sealing::default_key_file(&config.db.data_dir));
    domain::sealing::install(&key_file).map_err(anyhow::Error::msg)?;
    let sealed = domain::sealing::seal_stored_secrets(&db)
        .await
        .map_err(|e| anyhow::anyhow!("sealing the stored secrets: {e}"))?;
    if sealed > 0 {
        tracing::info!(
            environments = sealed,
            "secret variables sealed with the secrets key"
        );
    }
    let mut storage = Storage::new(&config.db.data_dir, config.max_upload_bytes, paddock);
    storage.limits = domain::children::ChildLimits {
        memory_mib: config.child_memory_mib,
        deadline_secs: config.child_deadline_secs,
        run_memory_mib: config.run_memory_mib,
    };
    let storage = std::sync::Arc::new(storage);
    domain::layout::migrate(&db, &storage)
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
        db.clone(),
        storage.clone(),
        engine.clone(),
        config.cpu_job_slots,
        config.cpu_job_threads,
    );
    jobs.train_log_max_bytes = config.train_log_max_bytes;
    jobs.stop_grace = std::time::Duration::from_secs(config.stop_grace_secs);
    if let Some((cluster, settings)) = cluster {
        let name = crate::config::ClusterConfig::NAME;
        tracing::info!(cluster = name, "jobs may run on the Slurm cluster");
        let slurm = domain::executor::slurm::Slurm::new(name, cluster, storage.clone(), settings);
        // The first cluster of an empty list.
        let _ = jobs.executors.add_cluster(slurm);
    }
    domain::admin::clusters::load(&db, &storage, &jobs.executors)
        .await
        .map_err(|e| anyhow::anyhow!("reading the registered clusters: {e}"))?;
    jobs.executors.spawn_shared_dir_checks();
    let jobs = std::sync::Arc::new(jobs);
    let deployer = std::sync::Arc::new(Deployer::new(
        db.clone(),
        storage.clone(),
        engine.clone(),
        Default::default(),
        jobs.executors.clone(),
    ));
    deployer.recover().await;
    let state = AppState::new(
        db.clone(),
        security,
        engine.clone(),
        storage,
        jobs.clone(),
        deployer,
    );
    domain::workspaces::purge::resume(&state).await;
    let app = http::router(state, leptos_options, &config);

    // Watching the database files starts before the first request can write to them.
    let guard = domain::db::guard_files(&config.db.url()).await;
    // The one line on stdout; tests and scripts wait for it. The kernel queues connections from now on.
    println!("listening on http://{addr}");
    tracing::info!(%addr, database = %config.db.url(), site_root, "paddock is serving");

    let (asked, mut asked_rx) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = asked.send(true);
    };
    let grace_over = async move {
        if asked_rx.wait_for(|asked| *asked).await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown);
    tokio::select! {
        result = server => result.context("server failed")?,
        () = grace_over => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "open requests did not finish in time; closing them");
        }
        () = sessions::sweep_expired(db.clone()) => {}
        () = domain::identity::ldap::recheck_forever(db.clone()) => {}
        () = environments::reconcile::run(db.clone(), engine.clone()) => {}
        () = domain::sweeps::driver::run(db.clone(), jobs.clone()) => {}
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

//! Keeping the database and Docker in agreement. Three mechanisms, each enough on its own to converge:
//! - **events**: Docker's event stream for this installation's containers updates an environment's status
//!   the moment its container exits, is OOM-killed or disappears;
//! - **reconcile**: at start-up and every `reconcile_every`, the containers carrying this installation's
//!   labels are listed and compared with the database — a container gone is marked `missing` (its GPUs
//!   released), a container whose environment no longer wants one is removed, and one whose environment
//!   row is gone is removed or kept by the orphan policy (`adopt` also takes back a running container
//!   whose environment lost track of it);
//! - **recovery**: builds interrupted by a restart are queued again.
//!
//! Idle auto-stop rides on the reconcile tick.

use contracts::ids::EnvironmentId;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use containers::labels;
use containers::lifecycle::{ContainerEvent, ContainerStatus};
use containers::reconcile::{ListFilter, ManagedContainer};
use futures_util::StreamExt;
use sqlx::SqlitePool;

use super::lifecycle::stop_container;
use super::status::{self, Container, Reason};
use super::{env_rows, record_event, EnvRow};
use crate::engine::{Engine, OrphanPolicy};
use crate::gpus::{self, Holder};
use crate::transitions::Machine;
use contracts::error::AppError;
use contracts::types::{BuildStatus, EnvStatus};

/// How long to wait before watching events again after the stream broke (Docker restarted or went away).
const WATCH_RETRY: Duration = Duration::from_secs(5);

/// What one reconcile pass changed, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Environments whose container was gone.
    pub missing: Vec<EnvironmentId>,
    /// Environments whose status was corrected from what Docker says.
    pub updated: Vec<EnvironmentId>,
    /// Containers removed: unwanted leftovers and orphans under the `remove` policy.
    pub removed: Vec<String>,
    /// Orphans left alone under the `keep` (or `adopt`, when nothing can take them) policy.
    pub kept: Vec<String>,
    /// Containers taken back by their environment under the `adopt` policy.
    pub adopted: Vec<String>,
}

/// Runs the event watcher and the periodic reconcile until the process ends. Called once by the server.
pub async fn run(db: SqlitePool, engine: Arc<Engine>) {
    recover_builds(&db, &engine).await;
    tokio::spawn(watch(db.clone(), engine.clone()));
    let mut tick = tokio::time::interval(engine.config.reconcile_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // GPUs come and go without Docker (a lost GPU, a driver reloaded), and local runs use them.
        engine.refresh_gpus().await;
        if !engine.check().await {
            continue;
        }
        match reconcile(&db, &engine).await {
            Ok(report) if report != Report::default() => {
                tracing::info!(?report, "reconciled environments with Docker")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reconcile failed"),
        }
        if let Some(idle) = engine.config.idle_stop {
            if let Err(e) = stop_idle(&db, &engine, idle).await {
                tracing::warn!(error = %e, "idle auto-stop failed");
            }
        }
    }
}

/// Builds left `building` by a previous process, and queued ones, are run again.
pub async fn recover_builds(db: &SqlitePool, engine: &Arc<Engine>) {
    let result = async {
        let mut tx = crate::db::write_tx(db).await?;
        let interrupted: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM environment_versions WHERE build_status = 'building'",
        )
        .fetch_all(&mut *tx)
        .await?;
        for id in interrupted {
            super::builds::Build::transition(
                &mut tx,
                id,
                BuildStatus::Queued,
                super::builds::Reason::Interrupted,
                None,
            )
            .await?;
        }
        let queued: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM environment_versions WHERE build_status = 'queued'")
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok::<_, AppError>(queued)
    }
    .await;
    match result {
        Ok(queued) => {
            for version_id in queued {
                super::builds::spawn(db.clone(), engine.clone(), version_id, false);
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot recover interrupted builds"),
    }
}

/// One pass; see the module docs.
pub async fn reconcile(db: &SqlitePool, engine: &Engine) -> Result<Report, AppError> {
    let docker = engine.docker().await?;
    let prefix = labels::container_name(&engine.instance, &["env", ""]);
    let filter = ListFilter {
        instance: Some(engine.instance.clone()),
        name_prefix: Some(prefix),
        workspace: None,
    };
    let found = docker
        .list_managed(&filter)
        .await
        .map_err(|e| engine.error("listing containers", e))?;
    let by_name: HashMap<&str, &ManagedContainer> =
        found.iter().map(|c| (c.name.as_str(), c)).collect();
    let envs = env_rows!("").fetch_all(db).await?;
    let wanted: HashMap<&str, &EnvRow> = envs
        .iter()
        .filter_map(|e| e.container_name.as_deref().map(|name| (name, e)))
        .collect();
    let env_ids: HashMap<String, &EnvRow> = envs.iter().map(|e| (e.id.to_string(), e)).collect();
    let mut report = Report::default();

    for env in envs.iter().filter(|e| e.container_name.is_some()) {
        let name = env.container_name.as_deref().unwrap_or_default();
        let status = env.status;
        match by_name.get(name) {
            // Provisioning in flight in a request writes its own outcome; one older than that can be is
            // left from a crash and is judged like any other state.
            None if status == EnvStatus::Provisioning && !stale(&env.updated_at) => {}
            None if status != EnvStatus::Missing => {
                mark_missing(
                    db,
                    env.id,
                    "the container disappeared (removed outside Paddock?)",
                )
                .await?;
                report.missing.push(env.id);
            }
            None => {}
            Some(found) if apply_status(db, env, found.status).await? => {
                report.updated.push(env.id)
            }
            Some(_) => {}
        }
    }
    for container in &found {
        if wanted.contains_key(container.name.as_str()) {
            continue;
        }
        let owner = container
            .labels
            .get(labels::ENVIRONMENT)
            .and_then(|id| env_ids.get(id.as_str()));
        match (engine.config.orphans, owner) {
            // The environment exists but its row says it has no container (a restored database, or a
            // crash between Docker and the database): take the running container back.
            (OrphanPolicy::Adopt, Some(env)) if container.status.is_running() => {
                let mut tx = crate::db::write_tx(db).await?;
                let running = Container::named(&container.name);
                status::set(
                    &mut tx,
                    env.id,
                    EnvStatus::Running,
                    Reason::Adopted,
                    running,
                )
                .await?;
                record_event(
                    &mut tx,
                    env.id,
                    "adopted",
                    &format!("found {} running and took it back", container.name),
                )
                .await?;
                tx.commit().await?;
                report.adopted.push(container.name.clone());
            }
            (OrphanPolicy::Remove, _) | (_, Some(_)) => {
                docker
                    .remove(&container.name)
                    .await
                    .map_err(|e| engine.error("removing a leftover container", e))?;
                report.removed.push(container.name.clone());
            }
            (OrphanPolicy::Keep | OrphanPolicy::Adopt, None) => {
                tracing::warn!(container = %container.name, "keeping a Paddock container that belongs to no environment");
                report.kept.push(container.name.clone());
            }
        }
    }
    Ok(report)
}

/// Longest a provision can take before its `provisioning` state counts as left over from a crash.
const PROVISION_STALE: chrono::Duration = chrono::Duration::minutes(10);

fn stale(updated_at: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(updated_at)
        .is_ok_and(|t| chrono::Utc::now() - t.to_utc() > PROVISION_STALE)
}

async fn mark_missing(
    db: &SqlitePool,
    env_id: EnvironmentId,
    message: &str,
) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let name: Option<String> =
        sqlx::query_scalar("SELECT container_name FROM environments WHERE id = ?")
            .bind(env_id)
            .fetch_optional(&mut *tx)
            .await?
            .flatten();
    let gone = Container::gone(message);
    if !status::set(
        &mut tx,
        env_id,
        EnvStatus::Missing,
        Reason::Disappeared,
        gone,
    )
    .await?
    {
        return Ok(());
    }
    gpus::release(&mut tx, Holder::Environment(env_id)).await?;
    record_event(
        &mut tx,
        env_id,
        "missing",
        &format!("{message} [{}]", name.unwrap_or_default()),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Writes what Docker says about an environment's container; true when something changed. Exited and
/// OOM-killed containers keep their GPUs until `down` or `up`, because they still exist and a restart
/// would use the same devices.
async fn apply_status(
    db: &SqlitePool,
    env: &EnvRow,
    docker_status: ContainerStatus,
) -> Result<bool, AppError> {
    let (status, reason, exit_code, message) = match docker_status {
        ContainerStatus::Running | ContainerStatus::Restarting | ContainerStatus::Paused => {
            (EnvStatus::Running, Reason::SeenRunning, None, None)
        }
        ContainerStatus::Created => return Ok(false),
        ContainerStatus::Exited { code } => (
            EnvStatus::Exited,
            Reason::Exited,
            Some(code),
            Some(format!("the main process exited with code {code}")),
        ),
        ContainerStatus::OomKilled => (
            EnvStatus::OomKilled,
            Reason::OomKilled,
            Some(137),
            Some(
                "killed for using more memory than the environment's limit; raise `memory`"
                    .to_string(),
            ),
        ),
        ContainerStatus::Dead => (
            EnvStatus::Failed,
            Reason::Dead,
            None,
            Some("Docker reports the container as dead".to_string()),
        ),
        ContainerStatus::Missing => {
            mark_missing(db, env.id, "the container was removed").await?;
            return Ok(true);
        }
    };
    if env.status == status && env.exit_code == exit_code {
        return Ok(false);
    }
    let mut tx = crate::db::write_tx(db).await?;
    let seen = Container {
        name: env.container_name.as_deref(),
        exit_code,
        message: message.as_deref(),
    };
    if !status::set(&mut tx, env.id, status, reason, seen).await? {
        return Ok(false);
    }
    record_event(
        &mut tx,
        env.id,
        status.as_str(),
        message.as_deref().unwrap_or("running"),
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Stops running environments whose last activity is older than `idle`.
pub async fn stop_idle(
    db: &SqlitePool,
    engine: &Engine,
    idle: Duration,
) -> Result<Vec<EnvironmentId>, AppError> {
    let cutoff =
        chrono::Utc::now() - chrono::Duration::from_std(idle).unwrap_or(chrono::Duration::MAX);
    let cutoff = cutoff.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let idle_envs = env_rows!(
        "WHERE status = 'running' AND COALESCE(last_active_at, updated_at) < ?",
        cutoff
    )
    .fetch_all(db)
    .await?;
    let mut stopped = Vec::new();
    for env in idle_envs {
        let minutes = idle.as_secs() / 60;
        stop_container(
            db,
            engine,
            &env,
            Reason::Idle,
            &format!("stopped after {minutes} min without terminal or exec activity"),
        )
        .await?;
        stopped.push(env.id);
    }
    Ok(stopped)
}

/// Follows Docker's events for this installation's containers, reconnecting after failures.
async fn watch(db: SqlitePool, engine: Arc<Engine>) {
    let mut since: Option<i64> = None;
    loop {
        let docker = match engine.docker().await {
            Ok(d) => d,
            Err(_) => {
                tokio::time::sleep(WATCH_RETRY).await;
                continue;
            }
        };
        let mut events = Box::pin(docker.container_events(Some(&engine.instance), since));
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    since = event.time_nano.or(since);
                    if let Err(e) = on_event(&db, &event).await {
                        tracing::warn!(error = %e, container = ?event.name, "could not record a container event");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Docker event stream broke");
                    break;
                }
            }
        }
        tokio::time::sleep(WATCH_RETRY).await;
    }
}

async fn on_event(db: &SqlitePool, event: &ContainerEvent) -> Result<(), AppError> {
    let Some(env_id) = event
        .labels
        .get(labels::ENVIRONMENT)
        .and_then(|id| id.parse::<i64>().ok())
    else {
        return Ok(());
    };
    let env = env_rows!("WHERE id = ?", env_id).fetch_optional(db).await?;
    // Only the container the environment currently wants counts: events of a container being replaced
    // or stopped on purpose (name cleared first) are not news.
    let Some(env) = env.filter(|e| e.container_name.is_some() && e.container_name == event.name)
    else {
        return Ok(());
    };
    if env.status == EnvStatus::Provisioning {
        return Ok(());
    }
    apply_status(db, &env, event.status).await?;
    Ok(())
}

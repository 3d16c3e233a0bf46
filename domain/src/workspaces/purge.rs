//! Carrying out a workspace's deletion, decided by [`super::delete`]: every process and container it
//! runs is stopped, its GPU leases are released, its files (volume, job logs), Docker volumes and
//! network removed, and only then its rows deleted. Each step can be repeated, so a crash half-way is finished by [`resume`] at the
//! next start; until the last step the workspace row, marked `deleting_since`, is the record of what is
//! left to do. Ids are never reused (AUTOINCREMENT), so nothing left behind could be inherited anyway.

use contracts::ids::{EndpointId, EvaluationId, JobId, WorkspaceId};
use std::time::Duration;

use sqlx::SqlitePool;

use crate::audit::{self, Entry};
use crate::db::write_tx;
use crate::executor::{Handle, Stop};
use crate::jobs::status::Reason;
use crate::storage::workspace_folder;
use crate::AppState;
use contracts::error::internal;
use contracts::error::AppError;
use contracts::types::JobStatus;

/// The message of what a workspace's deletion stopped.
pub(crate) const DELETED: &str = "the workspace was deleted";

/// How long the purge waits, in all, for processes and starting jobs to be gone before it gives up
/// until the next start (it logs what still runs).
const STOP_PATIENCE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(500);

/// Purges the workspace in the background.
pub fn spawn(state: AppState, workspace_id: WorkspaceId) {
    tokio::spawn(async move {
        if let Err(e) = run(&state, workspace_id).await {
            tracing::error!(%workspace_id, error = %e, "deleting the workspace did not finish; it is retried at the next start");
        }
    });
}

/// At start: finishes every deletion a previous server did not.
pub async fn resume(state: &AppState) {
    let pending: Result<Vec<WorkspaceId>, sqlx::Error> =
        sqlx::query_scalar("SELECT id FROM workspaces WHERE deleting_since IS NOT NULL")
            .fetch_all(&state.db)
            .await;
    match pending {
        Ok(ids) => {
            for id in ids {
                tracing::info!(workspace_id = %id, "finishing the deletion of a workspace");
                spawn(state.clone(), id);
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot look for workspaces being deleted"),
    }
}

/// What still runs after one round of stopping.
#[derive(Debug, Default)]
struct Running {
    jobs: Vec<JobId>,
    evaluations: Vec<EvaluationId>,
    replicas: Vec<i64>,
}

impl Running {
    fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.evaluations.is_empty() && self.replicas.is_empty()
    }
}

pub async fn run(state: &AppState, workspace_id: WorkspaceId) -> Result<(), AppError> {
    let deadline = tokio::time::Instant::now() + STOP_PATIENCE;
    loop {
        let running = stop_round(state, workspace_id).await?;
        if running.is_empty() {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(internal(
                "stopping the workspace's processes",
                format!("still running after {STOP_PATIENCE:?}: {running:?}"),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
    remove_environments(state, workspace_id).await?;
    remove_files(state, workspace_id).await?;
    forget(&state.db, workspace_id).await
}

/// One round: kills what runs (SIGKILL: nothing of a deleted workspace is worth a graceful end),
/// and says what is still alive or still being started.
async fn stop_round(state: &AppState, workspace_id: WorkspaceId) -> Result<Running, AppError> {
    let db = &state.db;
    let mut running = Running::default();

    type Row = (
        JobId,
        String,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let jobs: Vec<Row> = sqlx::query_as(
        "SELECT id, status, pid, container_name, cluster, cluster_job FROM jobs
         WHERE workspace_id = ? AND finished_at IS NULL",
    )
    .bind(workspace_id)
    .fetch_all(db)
    .await?;
    for (id, status, pid, container, cluster, cluster_job) in jobs {
        let handle = Handle::of(
            pid,
            container.as_deref(),
            cluster.as_deref(),
            cluster_job.as_deref(),
        );
        let alive = match handle {
            Some(handle) => {
                let executors = &state.jobs.executors;
                executors.stop(&handle, Stop::Kill).await;
                // A job on a cluster this server no longer has cannot be followed: it is let go.
                executors.of(&handle).is_some()
                    && executors.is_running(&handle).await != Some(false)
            }
            // Being launched by the scheduler: its process is recorded in a moment, then killed.
            None => status == "starting",
        };
        if alive {
            running.jobs.push(id);
        } else {
            let mut tx = crate::db::write_tx(db).await?;
            crate::jobs::status::finish(
                &mut tx,
                id,
                JobStatus::Cancelled,
                Reason::WorkspaceDeleted,
                Some(DELETED),
            )
            .await?;
            tx.commit().await?;
        }
    }

    let evaluations: Vec<(EvaluationId, Option<i64>)> = sqlx::query_as(
        "SELECT id, pid FROM evaluations WHERE workspace_id = ? AND status IN ('queued', 'running')",
    )
    .bind(workspace_id)
    .fetch_all(db)
    .await?;
    for (id, pid) in evaluations {
        if let Some(group) = pid {
            let (handle, executors) = (Handle::Process { group }, &state.jobs.executors);
            executors.stop(&handle, Stop::Kill).await;
            if executors.is_running(&handle).await != Some(false) {
                running.evaluations.push(id);
                continue;
            }
        }
        let mut tx = crate::db::write_tx(db).await?;
        crate::evaluations::status::fail(
            &mut tx,
            id,
            crate::evaluations::status::Reason::WorkspaceDeleted,
            DELETED,
        )
        .await?;
        tx.commit().await?;
    }

    let endpoints: Vec<(EndpointId, String)> =
        sqlx::query_as("SELECT id, slug FROM endpoints WHERE workspace_id = ?")
            .bind(workspace_id)
            .fetch_all(db)
            .await?;
    for (id, slug) in endpoints {
        state.deployer.gateway.remove_route(&slug).await;
        state.deployer.stop_replicas(id).await;
        let left: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM endpoint_replicas WHERE endpoint_id = ?")
                .bind(id)
                .fetch_all(db)
                .await?;
        running.replicas.extend(left);
    }
    Ok(running)
}

/// Removes the environments' containers, then the workspace's Docker volumes and network. Without
/// Docker the purge stops here and is retried later when the workspace may have anything in Docker
/// (it has environments, or jobs that ran in containers): going on would leave containers, volumes
/// or a network that nothing records any more.
async fn remove_environments(state: &AppState, workspace_id: WorkspaceId) -> Result<(), AppError> {
    let containers: Vec<String> = sqlx::query_scalar(
        "SELECT container_name FROM environments WHERE workspace_id = ? AND container_name IS NOT NULL",
    )
    .bind(workspace_id)
    .fetch_all(&state.db)
    .await?;
    let used_docker: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM environments WHERE workspace_id = ?1)
             OR EXISTS (SELECT 1 FROM jobs WHERE workspace_id = ?1 AND executor = 'docker')",
    )
    .bind(workspace_id)
    .fetch_one(&state.db)
    .await?;
    let docker = match state.engine.docker().await {
        Ok(docker) => docker,
        Err(e) if used_docker => return Err(e),
        Err(_) => return Ok(()),
    };
    for name in containers {
        docker
            .remove(&name)
            .await
            .map_err(|e| state.engine.error("removing an environment's container", e))?;
    }
    docker
        .remove_workspace_objects(&workspace_id.to_string(), &state.engine.instance)
        .await
        .map_err(|e| {
            state
                .engine
                .error("removing the workspace's volumes and network", e)
        })
}

/// Removes the workspace's volume (never following a link a container planted in it), its store, and
/// the server-side folders of its runs: local run folders and job logs.
async fn remove_files(state: &AppState, workspace_id: WorkspaceId) -> Result<(), AppError> {
    let jobs: Vec<JobId> = sqlx::query_scalar("SELECT id FROM jobs WHERE workspace_id = ?")
        .bind(workspace_id)
        .fetch_all(&state.db)
        .await?;
    let evaluations: Vec<EvaluationId> = sqlx::query_scalar(
        "SELECT e.id FROM evaluations e JOIN checkpoints c ON c.id = e.checkpoint_id WHERE c.workspace_id = ?",
    )
    .bind(workspace_id)
    .fetch_all(&state.db)
    .await?;
    let storage = state.storage.clone();
    tokio::task::spawn_blocking(move || {
        let folder = std::path::PathBuf::from(workspace_folder(workspace_id));
        for root in [storage.volumes_dir(), storage.stores_dir()] {
            match beneath::Dir::open(&root) {
                Ok(root) => root.remove_all(&folder)?,
                Err(e) if e.is_missing() => {}
                Err(e) => return Err(e),
            }
        }
        let runs = storage.runs()?;
        for job_id in jobs {
            runs.remove_all(&crate::jobs::job_rel(job_id))?;
            let logs = storage.job_logs_dir(job_id);
            match std::fs::remove_dir_all(&logs) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    return Err(beneath::Error::Io { path: logs, source })
                }
                _ => {}
            }
        }
        for id in evaluations {
            runs.remove_all(&crate::evaluations::run_rel(id))?;
        }
        Ok(())
    })
    .await
    .map_err(|e| internal("removing a workspace's files", e))?
    .map_err(|e| internal("removing a workspace's files", e))
}

/// The last step: leases and rows, in one transaction, audited.
async fn forget(db: &SqlitePool, workspace_id: WorkspaceId) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    sqlx::query(&format!(
        "DELETE FROM gpu_leases WHERE (holder_kind, holder_id) IN
             (SELECT holder_kind, holder_id FROM ({}) WHERE workspace_id = ?)",
        crate::gpus::LEASES_BY_WORKSPACE
    ))
    .bind(workspace_id)
    .execute(&mut *tx)
    .await?;
    // Children first: endpoints and jobs hold checkpoints and datasets that refuse (RESTRICT) to go
    // while something refers to them, whatever order a cascade would pick.
    for statement in [
        "DELETE FROM endpoints WHERE workspace_id = ?",
        "DELETE FROM evaluations WHERE workspace_id = ?",
        "DELETE FROM jobs WHERE workspace_id = ?",
    ] {
        sqlx::query(statement)
            .bind(workspace_id)
            .execute(&mut *tx)
            .await?;
    }
    let Some(name): Option<String> =
        sqlx::query_scalar("DELETE FROM workspaces WHERE id = ? RETURNING name")
            .bind(workspace_id)
            .fetch_optional(&mut *tx)
            .await?
    else {
        return Ok(());
    };
    let entry = Entry::unattended("workspace.purge", "workspace", &name);
    let detail = serde_json::json!({ "workspace_id": workspace_id });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    tracing::info!(%workspace_id, "workspace deleted with everything it owned");
    Ok(())
}

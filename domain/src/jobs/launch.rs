//! Starting a job the scheduler placed: its run folder and `job.toml` (under the server's `runs/` for a
//! local process, in the workspace volume for a container: see [`Jobs::run_root`]), then the
//! executor it was submitted for (a local process, or a container from its environment's image), then a
//! supervisor. A job cancelled while starting is stopped as soon as it runs; one that cannot start is
//! failed with the reason and gives its GPUs back.

use std::path::Path;
use std::sync::Arc;

use sqlx::SqlitePool;

use super::status::{self, Reason};
use super::{docker, job_rel, local, supervise, Jobs};
use crate::gpus::{self, Holder};
use crate::storage::in_volume;
use contracts::error::AppError;
use contracts::types::JobStatus;

/// Launches job `job_id` (status `starting`, GPUs already leased) in the background.
pub fn start(db: SqlitePool, jobs: Arc<Jobs>, job_id: i64) {
    tokio::spawn(async move {
        match launch(&db, &jobs, job_id).await {
            Ok(()) => {
                jobs.changed();
                supervise::spawn(db, jobs, job_id)
            }
            Err(message) => {
                tracing::error!(job_id, %message, "job could not be started");
                if let Err(e) = fail(&db, job_id, &message).await {
                    tracing::error!(job_id, error = %e, "could not record a failed start");
                }
                jobs.changed();
                jobs.wake.notify_one();
            }
        }
    });
}

async fn fail(db: &SqlitePool, job_id: i64, message: &str) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let message = format!("could not start: {message}");
    status::transition(
        &mut tx,
        job_id,
        JobStatus::Failed,
        Reason::StartFailed,
        Some(&message),
    )
    .await?;
    sqlx::query("UPDATE jobs SET finished_at = ? WHERE id = ?")
        .bind(crate::now())
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    gpus::release(&mut tx, Holder::Job(job_id)).await?;
    tx.commit().await?;
    Ok(())
}

async fn launch(db: &SqlitePool, jobs: &Arc<Jobs>, job_id: i64) -> Result<(), String> {
    let (workspace_id, executor, config_toml, gpu_indices): (i64, String, String, Option<String>) =
        sqlx::query_as(
            "SELECT workspace_id, executor, config_toml, gpu_indices FROM jobs WHERE id = ?",
        )
        .bind(job_id)
        .fetch_one(db)
        .await
        .map_err(|e| e.to_string())?;
    // A container's run folder is in the volume, where anything may have been put under its name (a
    // link, a FIFO at `job.toml`): made and written through `beneath`, never through a link.
    let dir = {
        let (root, rel) = (jobs.run_root(&executor, workspace_id), job_rel(job_id));
        in_volume("preparing the job's directory", move || {
            let dir = root?.create_dir_all(&rel, 0o755)?;
            // Left by an earlier attempt of this job (a retry after a crash while starting).
            for stale in [
                "exit_code",
                "exit_code.tmp",
                "trainer.pid",
                "events.jsonl",
                "train.log",
            ] {
                dir.remove_all(Path::new(stale))?;
            }
            dir.write(Path::new("job.toml"), config_toml.as_bytes(), 0o644)?;
            Ok(dir)
        })
        .await
        .map_err(|e| e.to_string())?
    };
    let devices: Vec<u32> = gpu_indices
        .as_deref()
        .and_then(|g| serde_json::from_str(g).ok())
        .unwrap_or_default();

    let (pid, container) = match executor.as_str() {
        super::DOCKER => (None, Some(docker::launch(db, jobs, job_id, &dir).await?)),
        _ => (Some(local::launch(jobs, dir, &devices)? as i64), None),
    };
    // Where it runs is recorded whatever happens next, in the same transaction as the move to running.
    let moved = async {
        let mut tx = crate::db::write_tx(db).await?;
        sqlx::query("UPDATE jobs SET pid = ?, container_name = ? WHERE id = ?")
            .bind(pid)
            .bind(&container)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        let moved =
            status::transition(&mut tx, job_id, JobStatus::Running, Reason::Launched, None).await?;
        tx.commit().await?;
        Ok::<_, AppError>(moved)
    }
    .await
    .map_err(|e| e.to_string())?;
    if moved.is_none() {
        // Cancelled while starting: stop it.
        local::wait_for_pid_file(jobs, &executor, workspace_id, &job_rel(job_id)).await;
        match &container {
            Some(name) => docker::signal_stop(jobs, name).await,
            None => local::signal_stop(&jobs.storage, &job_rel(job_id), pid).await,
        }
    }
    Ok(())
}

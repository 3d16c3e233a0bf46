//! Starting a job the scheduler placed: its run folder and `job.toml` beneath its executor's run root
//! (the server's `runs/` for a local process, the workspace volume for a container), then the executor
//! it was submitted for (see [`crate::executor`]), then a supervisor. A job cancelled while starting is
//! stopped as soon as it runs; one that cannot start is failed with the reason and gives its GPUs back.

use contracts::ids::{EnvironmentId, JobId, WorkspaceId};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;

use super::status::{self, Reason};
use super::{job_rel, supervise, Jobs};
use crate::environments::secrets;
use crate::executor::{wait_for_pid_file, InImage, Stop, Unit, Work};
use crate::gpus::{self, Holder};
use crate::storage::in_volume;
use crate::transitions::Machine;
use contracts::error::AppError;
use contracts::types::{ExecutorKind, JobStatus};

/// Launches job `job_id` (status `starting`, GPUs already leased) in the background.
pub fn start(db: SqlitePool, jobs: Arc<Jobs>, job_id: JobId) {
    tokio::spawn(async move {
        match launch(&db, &jobs, job_id).await {
            Ok(()) => {
                jobs.changed();
                supervise::spawn(db, jobs, job_id)
            }
            Err(message) => {
                tracing::error!(%job_id, %message, "job could not be started");
                if let Err(e) = fail(&db, job_id, &message).await {
                    tracing::error!(%job_id, error = %e, "could not record a failed start");
                }
                jobs.changed();
                jobs.wake.notify_one();
            }
        }
    });
}

async fn fail(db: &SqlitePool, job_id: JobId, message: &str) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let message = format!("could not start: {message}");
    status::finish(
        &mut tx,
        job_id,
        JobStatus::Failed,
        Reason::StartFailed,
        Some(&message),
    )
    .await?;
    gpus::release(&mut tx, Holder::Job(job_id)).await?;
    tx.commit().await?;
    Ok(())
}

async fn launch(db: &SqlitePool, jobs: &Arc<Jobs>, job_id: JobId) -> Result<(), String> {
    type Launch = (
        WorkspaceId,
        ExecutorKind,
        Option<String>,
        String,
        i64,
        Option<EnvironmentId>,
        Option<String>,
        Option<i64>,
        String,
    );
    let (
        workspace_id,
        kind,
        cluster,
        config_toml,
        gpus,
        environment_id,
        image_id,
        time_limit_secs,
        spec_json,
    ): Launch = sqlx::query_as(
        "SELECT workspace_id, executor, cluster, config_toml, gpus, environment_id, image_id,
                    time_limit_secs, spec_json
             FROM jobs WHERE id = ?",
    )
    .bind(job_id)
    .fetch_one(db)
    .await
    .map_err(|e| e.to_string())?;
    let spec = serde_json::from_str::<contracts::types::JobSpec>(&spec_json)
        .map_err(|e| format!("the job's stored spec: {e}"))?;
    // On a cluster: the partition the job asked for, and what its workspace is charged to there.
    let placement = match cluster.as_deref() {
        Some(name) => {
            let partition = spec.partition.clone();
            crate::admin::cluster_placement(db, workspace_id, name, partition)
                .await
                .map_err(|e| e.to_string())?
        }
        None => Default::default(),
    };
    let executor = match cluster.as_deref() {
        Some(name) => {
            // Asked again now, as for an evaluation: the cluster may have gone, or a shared-directory
            // check since the submission may have found the partition's nodes blind to the data
            // directory, where the job could only fail.
            let partition = placement.partition.as_deref();
            let gpus = u32::try_from(gpus).unwrap_or(0);
            let runs_on = jobs.executors.runs_on(name, partition, kind, gpus).await;
            runs_on.map_err(|refused| format!("{refused}; submit the job again once it can run"))?
        }
        None => jobs.executor(kind),
    };
    let rel = job_rel(job_id);
    // A container's run folder is in the volume, where anything may have been put under its name (a
    // link, a FIFO at `job.toml`): made and written through `beneath`, never through a link.
    let folder = {
        let (root, rel) = (executor.run_root(workspace_id), rel.clone());
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
    // The GPUs leased for it at scheduling, by UUID (none on a cluster, whose scheduler picks them).
    let devices = {
        let mut conn = db.acquire().await.map_err(|e| e.to_string())?;
        gpus::uuids(
            &gpus::leased(&mut conn, Holder::Job(job_id))
                .await
                .map_err(|e| e.to_string())?,
        )
    };
    let image = match kind {
        ExecutorKind::Docker => Some(in_image(db, environment_id, image_id).await?),
        ExecutorKind::Local => None,
    };
    let work = Work {
        unit: Unit::Job(job_id),
        workspace_id,
        folder,
        rel: rel.clone(),
        args: run_args(spec.ranks(), spec.gpus, spec.nodes()),
        stdout: "events.jsonl",
        log: "train.log",
        log_limit: jobs.train_log_max_bytes,
        devices,
        gpus: u32::try_from(gpus).unwrap_or(0),
        nodes: spec.nodes(),
        image,
        time_limit: time_limit_secs
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs),
        placement,
    };
    let handle = executor.start(work).await?;
    // Where it runs is recorded whatever happens next, in the same transaction as the move to running.
    let moved = async {
        let mut tx = crate::db::write_tx(db).await?;
        sqlx::query("UPDATE jobs SET pid = ?, container_name = ?, cluster_job = ? WHERE id = ?")
            .bind(handle.pid())
            .bind(handle.container())
            .bind(handle.cluster_job())
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        let moved =
            status::Job::transition(&mut tx, job_id, JobStatus::Running, Reason::Launched, None)
                .await?;
        tx.commit().await?;
        Ok::<_, AppError>(moved)
    }
    .await
    .map_err(|e| e.to_string())?;
    if moved.is_none() {
        // Cancelled while starting: stop it.
        wait_for_pid_file(executor.as_ref(), workspace_id, &rel).await;
        executor.stop(&handle, Stop::Ask).await;
    }
    Ok(())
}

/// The command a job runs: `train`, or `launch` with its ranks (data parallelism), each given one of
/// the run's GPUs — named by `CUDA_VISIBLE_DEVICES` where the executor sets it, else the first `gpus`
/// the run sees (a container's own) — on each of its nodes (a cluster's batch job, which the launch
/// spreads over its nodes).
fn run_args(ranks: u32, gpus: u32, nodes: u32) -> Vec<String> {
    let train = ["train", "--config", "job.toml"].map(String::from);
    if ranks <= 1 && nodes <= 1 {
        return train.to_vec();
    }
    let launch = [
        "launch",
        "--nodes",
        &nodes.to_string(),
        "--ranks",
        &ranks.to_string(),
        "--gpus",
        &gpus.to_string(),
        "--",
    ];
    launch.map(String::from).into_iter().chain(train).collect()
}

/// The environment image a container job runs in, with the environment's secrets (tokens for a hub, a
/// tracker), which reach its jobs as they reach its own container: at start, never in the image or the
/// job's rows.
async fn in_image(
    db: &SqlitePool,
    environment_id: Option<EnvironmentId>,
    image_id: Option<String>,
) -> Result<InImage, String> {
    let image_id = image_id.ok_or("the job has no environment image")?;
    let environment_id = environment_id.ok_or("the job's environment was deleted")?;
    let mut conn = db.acquire().await.map_err(|e| e.to_string())?;
    let secrets = secrets::load(&mut conn, environment_id)
        .await
        .map_err(|e| e.to_string())?;
    Ok(InImage {
        image_id,
        environment_id,
        env: secrets::container_env(&secrets),
    })
}

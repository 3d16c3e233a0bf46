//! The Docker executor: `paddock train` in a fresh container from the job's environment image (its
//! runtime layer carries `paddock` and libtorch), with the environment's limits, the leased GPUs and the
//! workspace volume at `/workspace`. Like the local executor it runs the trainer under a small `sh`
//! wrapper that writes events, log, pid and exit status to files in the job's directory — which is the
//! same directory on the host, because the volume is bound to it — so one supervisor follows both kinds
//! of run and a restarted server re-attaches the same way. Cancelling sends SIGTERM to the container's
//! PID 1 (the wrapper), which passes it to the trainer.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use containers::labels;
use containers::lifecycle::{Limits, ProvisionRequest};
use sqlx::SqlitePool;

use super::Jobs;
use crate::environments::lifecycle::{network_name, store_dir, volume_dir, volume_name};
use crate::environments::secrets;
use crate::environments::spec::to_env_spec;
use crate::storage::DEFAULT_VOLUME;
use contracts::types::EnvironmentSpec;

/// PID 1 of a job container: `$1` is the job's directory inside the container, `$2` the byte limit of
/// `train.log`. As the local wrapper ([`super::local::WRAPPER`]), with the signal Docker sends PID 1
/// passed on to the trainer; the pipeline runs in the background because a shell runs traps only
/// between commands, and `wait` is one.
const WRAPPER: &str = r#"cd "$1" || exit 98
limit="$2"
trap 'kill -TERM $(cat trainer.pid 2>/dev/null) 2>/dev/null' TERM INT
{ paddock train --config job.toml 2>&1 >events.jsonl </dev/null &
  echo $! > trainer.pid
  wait $!
  echo $? > exit_code.tmp
} | { paddock log-sink --max-bytes "$limit" train.log || cat >> train.log; } &
pipeline=$!
wait $pipeline
while kill -0 $pipeline 2>/dev/null; do wait $pipeline; done
mv exit_code.tmp exit_code"#;

/// The job container's deterministic name.
pub fn container_name(jobs: &Jobs, job_id: i64) -> String {
    labels::container_name(&jobs.engine.instance, &["job", &job_id.to_string()])
}

/// Creates and starts the container of job `job_id` (status `starting`); returns its name.
pub async fn launch(
    db: &SqlitePool,
    jobs: &Arc<Jobs>,
    job_id: i64,
    dir: &beneath::Dir,
) -> Result<String, String> {
    let (workspace_id, environment_id, image_id, gpu_indices): (
        i64,
        Option<i64>,
        Option<String>,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT workspace_id, environment_id, image_id, gpu_indices FROM jobs WHERE id = ?",
    )
    .bind(job_id)
    .fetch_one(db)
    .await
    .map_err(|e| e.to_string())?;
    let image_id = image_id.ok_or("the job has no environment image")?;
    let environment_id = environment_id.ok_or("the job's environment was deleted")?;
    let docker = jobs.engine.docker().await.map_err(|e| e.to_string())?;
    let limits = environment_limits(db, &docker, environment_id).await?;
    // The environment's secrets (tokens for a hub, a tracker) reach its jobs as they reach its own
    // container: at start, never in the image or the job's rows.
    let mut conn = db.acquire().await.map_err(|e| e.to_string())?;
    let secrets = secrets::load(&mut conn, environment_id)
        .await
        .map_err(|e| e.to_string())?;
    drop(conn);
    let devices: Vec<u32> = gpu_indices
        .as_deref()
        .and_then(|g| serde_json::from_str(g).ok())
        .unwrap_or_default();
    give_to_container_user(dir)?;
    let name = container_name(jobs, job_id);
    // A leftover from an earlier attempt (a crash between create and record) is replaced.
    docker.remove(&name).await.map_err(|e| e.to_string())?;
    let inside = format!("/workspace/jobs/{job_id}");
    let request = ProvisionRequest {
        name: name.clone(),
        image: image_id,
        workspace: workspace_id.to_string(),
        environment: environment_id.to_string(),
        instance: jobs.engine.instance.clone(),
        extra_labels: BTreeMap::from([("paddock.job".to_string(), job_id.to_string())]),
        limits,
        gpu_device_ids: devices.iter().map(u32::to_string).collect(),
        volume: volume_name(&jobs.engine, workspace_id, DEFAULT_VOLUME),
        network: Some(network_name(&jobs.engine, workspace_id)),
        volume_dir: volume_dir(&jobs.engine, workspace_id, DEFAULT_VOLUME)
            .map_err(|e| e.to_string())?,
        store_dir: store_dir(&jobs.engine, workspace_id).map_err(|e| e.to_string())?,
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            WRAPPER.into(),
            "sh".into(),
            inside,
            jobs.train_log_max_bytes.to_string(),
        ]),
        env: secrets::container_env(&secrets),
    };
    docker
        .provision(&request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(name)
}

/// The CPU, memory, shared-memory and pids limits of environment `environment_id`'s current spec, for
/// the containers that run in its image (jobs and endpoint replicas).
pub(crate) async fn environment_limits(
    db: &SqlitePool,
    docker: &containers::Docker,
    environment_id: i64,
) -> Result<Limits, String> {
    let spec_json: String = sqlx::query_scalar(
        "SELECT v.spec_json FROM environments e JOIN environment_versions v
             ON v.environment_id = e.id AND v.version = e.current_version WHERE e.id = ?",
    )
    .bind(environment_id)
    .fetch_optional(db)
    .await
    .map_err(|e| e.to_string())?
    .ok_or("the environment was deleted")?;
    let spec: EnvironmentSpec = serde_json::from_str(&spec_json).map_err(|e| e.to_string())?;
    let host = docker.host_limits().await.map_err(|e| e.to_string())?;
    let resources = to_env_spec(&spec, Path::new("/unused"))
        .resources(&host)
        .map_err(|e| e.to_string())?;
    Ok(Limits::from_resources(&resources))
}

/// The container runs as uid 1000; the job directory the server made must be writable by it. Owner and
/// mode are changed on open descriptors: a path in the volume could be a link to any file on the host.
fn give_to_container_user(dir: &beneath::Dir) -> Result<(), String> {
    let (uid, gid) = (containers::build::users::UID, containers::build::users::GID);
    if std::os::unix::fs::fchown(dir, Some(uid), Some(gid)).is_err() {
        dir.set_mode(0o777).map_err(|e| e.to_string())?;
    }
    if let Ok(toml) = dir.open_file(Path::new("job.toml"), u64::MAX) {
        let _ = std::os::unix::fs::fchown(&toml, Some(uid), Some(gid));
    }
    Ok(())
}

/// Whether the job's container still runs; `None` when Docker cannot say (then nothing is concluded).
pub async fn is_running(jobs: &Jobs, name: &str) -> Option<bool> {
    let docker = jobs.engine.docker().await.ok()?;
    match docker.status(name).await {
        Ok(status) => Some(status.is_running()),
        Err(e) if e.is_unreachable() => None,
        Err(_) => Some(false),
    }
}

/// Asks the trainer to stop gracefully (SIGTERM to the wrapper, which forwards it).
pub async fn signal_stop(jobs: &Jobs, name: &str) {
    if let Ok(docker) = jobs.engine.docker().await {
        if let Err(e) = docker.signal(name, "TERM").await {
            tracing::warn!(container = name, error = %e, "could not signal a job container");
        }
    }
}

/// Removes the finished job's container (its files stay in the job's directory).
pub async fn remove(jobs: &Jobs, name: &str) {
    if let Ok(docker) = jobs.engine.docker().await {
        if let Err(e) = docker.remove(name).await {
            tracing::warn!(container = name, error = %e, "could not remove a finished job's container");
        }
    }
}

//! Where Paddock keeps files, and the trainer's command line it runs on them. Everything is under the data
//! directory: `volumes/w<workspace>/<volume>/` backs a workspace volume (what containers see as
//! `/workspace`; datasets under `datasets/`, job outputs under `jobs/`), `logs/jobs/<id>/` keeps each
//! job's rotated log, and `tmp/` holds uploads until they are validated — on the same file system, so accepting one is a rename, never a half-copied file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::AppError;

/// The volume datasets and jobs use; environments may name others.
pub const DEFAULT_VOLUME: &str = "workspace";

#[derive(Debug, Clone)]
pub struct Storage {
    pub data_dir: PathBuf,
    /// Largest dataset upload accepted, in bytes (the request body limit does not apply to uploads).
    pub max_upload_bytes: u64,
    /// The `paddock` binary whose `validate` (and later `train`) subcommands the server runs: the
    /// trainer links libtorch, which the web app never loads.
    pub paddock_binary: PathBuf,
}

impl Storage {
    /// Storage under `data_dir` (made absolute: Docker needs absolute bind paths).
    pub fn new(data_dir: &Path, max_upload_bytes: u64, paddock_binary: PathBuf) -> Storage {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        Storage {
            data_dir,
            max_upload_bytes,
            paddock_binary,
        }
    }

    /// The root of all workspace volumes (the engine's `volumes_dir`).
    pub fn volumes_dir(&self) -> PathBuf {
        self.data_dir.join("volumes")
    }

    /// The host directory of a workspace's volume.
    pub fn volume_dir(&self, workspace_id: i64, volume: &str) -> PathBuf {
        self.volumes_dir()
            .join(format!("w{workspace_id}"))
            .join(volume)
    }

    /// Uploads in progress.
    pub fn tmp_dir(&self) -> PathBuf {
        self.data_dir.join("tmp")
    }

    /// A job's rotated log files (`job.log`, `job.log.1`, …), outside the workspace volume: they are
    /// the operators' record, not something a job's container should see or change.
    pub fn job_logs_dir(&self, job_id: i64) -> PathBuf {
        self.data_dir
            .join("logs")
            .join("jobs")
            .join(job_id.to_string())
    }

    /// A workspace's default volume, opened as the hostile tree it is (see [`in_volume`]); made if missing.
    pub fn volume(&self, workspace_id: i64) -> beneath::Result<beneath::Dir> {
        beneath::Dir::create(&self.volume_dir(workspace_id, DEFAULT_VOLUME))
    }
}

/// How long one piece of file work in a volume may take before the request gives up on it.
pub const VOLUME_DEADLINE: Duration = Duration::from_secs(10);

/// Runs file work on a workspace volume — a tree the team's containers write, so every name in it may be
/// a link, a FIFO or a huge file — through [`beneath`] on the blocking pool and within
/// [`VOLUME_DEADLINE`], so no trick played in the volume holds a runtime worker or a database connection.
/// A refused file is a 409 that names it and says why; `what` says what the file was for.
pub async fn in_volume<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> beneath::Result<T> + Send + 'static,
) -> Result<T, AppError> {
    let answer = tokio::time::timeout(VOLUME_DEADLINE, tokio::task::spawn_blocking(work)).await;
    match answer {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(e))) => Err(volume_error(what, &e)),
        Ok(Err(join)) => Err(crate::ssr::http_error::internal(what, join)),
        Err(_) => Err(AppError::unavailable(
            "volume_timeout",
            format!(
                "{what}: the workspace volume did not answer within {} s",
                VOLUME_DEADLINE.as_secs()
            ),
        )),
    }
}

/// Removes `rel` (a file or a folder) from a workspace's volume, never following a link planted in it.
/// For clean-ups after the row is gone: a failure is logged, not answered — the row is what counts.
pub async fn remove_from_volume(storage: &Storage, workspace_id: i64, rel: PathBuf) {
    let storage = storage.clone();
    let shown = rel.display().to_string();
    let removed = in_volume("removing files", move || {
        storage.volume(workspace_id)?.remove_all(&rel)
    })
    .await;
    if let Err(e) = removed {
        tracing::warn!(workspace_id, path = shown, error = %e, "could not remove files from a volume");
    }
}

/// The answer for a file in a volume that could not be used.
fn volume_error(what: &str, e: &beneath::Error) -> AppError {
    if e.is_refusal() {
        tracing::warn!(what, error = %e, "refused a file in a workspace volume");
        AppError::conflict(
            "file",
            "volume_file_refused",
            format!("{what}: {e}; files Paddock reads from the workspace volume must be regular files, not links"),
        )
    } else if e.is_missing() {
        AppError::conflict(
            "file",
            "volume_file_missing",
            format!("{what}: {e} in the workspace volume"),
        )
    } else {
        crate::ssr::http_error::internal(what, e)
    }
}

//! Where Paddock keeps files, and the trainer's command line it runs on them. Everything is under the data
//! directory, split by who may write it:
//!
//! | path | written by | in containers |
//! |---|---|---|
//! | `paddock.db` (+ `-wal`, `-shm`) | the server | never |
//! | `store/w<workspace>/` — `datasets/<id>/`, `models/<id>/`, `checkpoints/<job>/<name>/` | the server | read-only at `/paddock` |
//! | `runs/jobs/<id>/`, `runs/evaluations/<id>/` — local runs' config, events, log, pid, exit status, output | the server and the processes it starts | never |
//! | `logs/jobs/<id>/` — each job's rotated log | the server | never |
//! | `tmp/` — uploads until validated (same file system: accepting one is a rename) | the server | never |
//! | `volumes/w<workspace>/<volume>/` — the team's files; container jobs' runs under `jobs/<id>/` | the team's containers | read-write at `/workspace` |
//!
//! So what only the server should change — dataset originals, uploaded models, registered checkpoints,
//! pid and exit files of processes it runs as itself — is out of every container's reach, and the one
//! tree a container writes (its volume) is read as hostile input through [`beneath`]. A checkpoint a job
//! writes is copied into the store when it is registered; from then on downloads, evaluations,
//! deployments and fine-tuning read the copy. An ended local run's own checkpoint folders are then
//! removed; a container run's stay in the team's volume, theirs to keep. [`super::layout`] moves data
//! directories of the earlier layout (everything in the volume) at start.

use contracts::ids::{JobId, WorkspaceId};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::children::{self, ChildLimits, Failure};
use contracts::error::{AppError, ErrorCode};

/// The most a trainer subcommand's report may weigh (an import report, a validation's JSON, a
/// prediction per sample text).
pub(crate) const MAX_TRAINER_STDOUT: usize = 16 << 20;

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
    /// The limits of every process the server starts on a team's input (an admin's settings).
    pub limits: ChildLimits,
}

impl Storage {
    /// Runs `paddock ARGS` (a trainer subcommand: a check or a conversion of `input_bytes` of a team's
    /// input) in its own process on the CPU, under the limits that input gets — libtorch stays out of
    /// the server, and a crash or a runaway there is the subcommand's — and returns its stdout (up to
    /// `MAX_TRAINER_STDOUT`), or why it failed. Starting it at all failing is the server's error.
    pub async fn run_trainer<I, S>(
        &self,
        args: I,
        input_bytes: u64,
    ) -> Result<Result<Vec<u8>, Failure>, AppError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = tokio::process::Command::new(&self.paddock_binary);
        command.args(args).env("CUDA_VISIBLE_DEVICES", "");
        let limits = self.limits.for_input(input_bytes);
        let finished = children::run(command, limits, MAX_TRAINER_STDOUT).await?;
        Ok(match finished.failure() {
            None => Ok(finished.stdout),
            // The trainer names the files it read by their paths here: the client sees them relative
            // to the data directory, whose place on the host is none of its business.
            Some(Failure::Refused(why)) => {
                let root = format!("{}/", self.data_dir.display());
                Err(Failure::Refused(why.replace(&root, "")))
            }
            Some(failure) => Err(failure),
        })
    }

    /// Storage under `data_dir` (made absolute: Docker needs absolute bind paths), with the default
    /// limits of the processes it runs.
    pub fn new(data_dir: &Path, max_upload_bytes: u64, paddock_binary: PathBuf) -> Storage {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        Storage {
            data_dir,
            max_upload_bytes,
            paddock_binary,
            limits: ChildLimits::default(),
        }
    }

    /// The root of all workspace volumes (the engine's `volumes_dir`).
    pub fn volumes_dir(&self) -> PathBuf {
        self.data_dir.join("volumes")
    }

    /// The host directory of a workspace's volume.
    pub fn volume_dir(&self, workspace_id: WorkspaceId, volume: &str) -> PathBuf {
        self.volumes_dir()
            .join(workspace_folder(workspace_id))
            .join(volume)
    }

    /// A workspace's store on the host: what the server keeps for it (see the module's table). Rows'
    /// `path` columns of datasets, models and checkpoints are relative to it.
    pub fn store_dir(&self, workspace_id: WorkspaceId) -> PathBuf {
        self.stores_dir().join(workspace_folder(workspace_id))
    }

    /// The root of all workspace stores (the engine's `stores_dir`).
    pub fn stores_dir(&self) -> PathBuf {
        self.data_dir.join("store")
    }

    /// A workspace's store, made if missing (server-owned, 0755: containers read it through a read-only
    /// bind, never as its owner).
    pub fn store(&self, workspace_id: WorkspaceId) -> beneath::Result<beneath::Dir> {
        beneath::Dir::create(&self.store_dir(workspace_id))
    }

    /// Where local runs (jobs and evaluations the server starts as its own processes) keep their files.
    pub fn runs_dir(&self) -> PathBuf {
        self.data_dir.join("runs")
    }

    /// [`Storage::runs_dir`], made if missing.
    pub fn runs(&self) -> beneath::Result<beneath::Dir> {
        beneath::Dir::create(&self.runs_dir())
    }

    /// Uploads in progress.
    pub fn tmp_dir(&self) -> PathBuf {
        self.data_dir.join("tmp")
    }

    /// A job's rotated log files (`job.log`, `job.log.1`, …), outside the workspace volume: they are
    /// the operators' record, not something a job's container should see or change.
    pub fn job_logs_dir(&self, job_id: JobId) -> PathBuf {
        self.data_dir
            .join("logs")
            .join("jobs")
            .join(job_id.to_string())
    }

    /// A workspace's default volume, opened as the hostile tree it is (see [`in_volume`]); made if missing.
    pub fn volume(&self, workspace_id: WorkspaceId) -> beneath::Result<beneath::Dir> {
        beneath::Dir::create(&self.volume_dir(workspace_id, DEFAULT_VOLUME))
    }
}

/// A workspace's folder under `volumes/` and `store/`.
pub fn workspace_folder(workspace_id: WorkspaceId) -> String {
    format!("w{workspace_id}")
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
        Ok(Err(join)) => Err(contracts::error::internal(what, join)),
        Err(_) => Err(AppError::unavailable(
            ErrorCode::VolumeTimeout,
            format!(
                "{what}: the workspace volume did not answer within {} s",
                VOLUME_DEADLINE.as_secs()
            ),
        )),
    }
}

/// Removes `rel` (a file or a folder) from a workspace's volume, never following a link planted in it.
/// For clean-ups after the row is gone: a failure is logged, not answered — the row is what counts.
pub async fn remove_from_volume(storage: &Storage, workspace_id: WorkspaceId, rel: PathBuf) {
    remove(storage, workspace_id, rel, Storage::volume).await
}

/// Removes `rel` from a workspace's store; as [`remove_from_volume`].
pub async fn remove_from_store(storage: &Storage, workspace_id: WorkspaceId, rel: PathBuf) {
    remove(storage, workspace_id, rel, Storage::store).await
}

async fn remove(
    storage: &Storage,
    workspace_id: WorkspaceId,
    rel: PathBuf,
    tree: fn(&Storage, WorkspaceId) -> beneath::Result<beneath::Dir>,
) {
    let storage = storage.clone();
    let shown = rel.display().to_string();
    let removed = in_volume("removing files", move || {
        tree(&storage, workspace_id)?.remove_all(&rel)
    })
    .await;
    if let Err(e) = removed {
        tracing::warn!(%workspace_id, path = shown, error = %e, "could not remove a workspace's files");
    }
}

/// The answer for a file in a volume that could not be used.
fn volume_error(what: &str, e: &beneath::Error) -> AppError {
    if e.is_refusal() {
        tracing::warn!(what, error = %e, "refused a file in a workspace volume");
        AppError::conflict(
            "file",
            ErrorCode::VolumeFileRefused,
            format!("{what}: {e}; files Paddock reads from the workspace volume must be regular files, not links"),
        )
    } else if e.is_missing() {
        AppError::conflict(
            "file",
            ErrorCode::VolumeFileMissing,
            format!("{what}: {e} in the workspace volume"),
        )
    } else {
        contracts::error::internal(what, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks the server runs itself (a model's trial predictions, the parity gate's reference) see
    /// no GPU: on a GPU host they would otherwise take GPU 0 from whoever leased it.
    #[tokio::test]
    async fn the_server_s_own_checks_see_no_gpu() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path(), 1 << 20, "/bin/sh".into());
        let seen = storage
            .run_trainer(["-c", "printf '[%s]' \"${CUDA_VISIBLE_DEVICES-unset}\""], 0)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&seen), "[]");
    }
}

//! Where Paddock keeps files, and the trainer's command line it runs on them. Everything is under the data
//! directory: `volumes/w<workspace>/<volume>/` backs a workspace volume (what containers see as
//! `/workspace`; datasets under `datasets/`, job outputs under `jobs/`), `logs/jobs/<id>/` keeps each
//! job's rotated log, and `tmp/` holds uploads until they are validated — on the same file system, so accepting one is a rename, never a half-copied file.

use std::path::{Path, PathBuf};

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
}

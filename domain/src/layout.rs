//! Moving a data directory of the first layout — everything a workspace had lived in its volume, where
//! its containers could rename it — to the current one (see [`super::storage`]). Runs once, at start,
//! before anything is served or resumed:
//!
//! 1. datasets and uploaded models are copied into the workspace's store under the same relative path;
//!    registered checkpoints to `checkpoints/<job>/<name>`, their old place kept as `run_path` (the
//!    trainer's retention is still followed there). Everything is read through [`beneath`] — the old
//!    volume is hostile input like any — and a file that is gone or refused leaves its checkpoint marked
//!    deleted rather than stopping the start;
//! 2. job files of queued jobs are rewritten to name the store;
//! 3. local runs still going (their folders were in the volume) and running evaluations are stopped and
//!    failed with a message saying why, since nothing can follow them any more;
//! 4. all rows change, and the layout is marked done, in one transaction; only then are the old copies of
//!    datasets and models removed from the volumes.
//!
//! A crash before the commit leaves the old layout whole, and the next start copies again.

use contracts::ids::{CheckpointId, EvaluationId, JobId, WorkspaceId};
use std::path::{Path, PathBuf};

use sqlx::SqlitePool;

use super::jobs::checkpoints;
use super::storage::{Storage, DEFAULT_VOLUME};
use contracts::error::AppError;
use contracts::types::{ExecutorKind, JobStatus};

/// The layout [`super::storage`] describes.
pub const CURRENT: i64 = 2;

/// The message of a run the move had to stop.
const STOPPED: &str =
    "stopped when Paddock moved its files to the new storage layout; run it again";

/// Brings the data directory to [`CURRENT`]; does nothing when it is there.
pub async fn migrate(db: &SqlitePool, storage: &Storage) -> Result<(), AppError> {
    let layout: i64 = sqlx::query_scalar("SELECT storage_layout FROM instance_settings")
        .fetch_one(db)
        .await?;
    if layout >= CURRENT {
        return Ok(());
    }
    let datasets: Vec<(i64, WorkspaceId, String)> =
        sqlx::query_as("SELECT id, workspace_id, path FROM datasets")
            .fetch_all(db)
            .await?;
    let models: Vec<(i64, WorkspaceId, String)> =
        sqlx::query_as("SELECT id, workspace_id, path FROM pretrained_models")
            .fetch_all(db)
            .await?;
    let old_checkpoints: Vec<(CheckpointId, JobId, WorkspaceId, String, Option<String>)> = sqlx::query_as(
        "SELECT id, job_id, workspace_id, path, deleted_at FROM checkpoints WHERE run_path IS NULL",
    )
    .fetch_all(db)
    .await?;
    tracing::info!(
        datasets = datasets.len(),
        models = models.len(),
        checkpoints = old_checkpoints.len(),
        "moving the data directory to the store layout"
    );

    let copy_storage = storage.clone();
    let plan = tokio::task::spawn_blocking(move || {
        copy_all(&copy_storage, &datasets, &models, &old_checkpoints)
    })
    .await
    .map_err(|e| contracts::error::internal("moving the data directory", e))??;

    let mut tx = super::db::write_tx(db).await?;
    for moved in &plan.checkpoints {
        sqlx::query(
            "UPDATE checkpoints SET path = ?, run_path = ?, deleted_at = COALESCE(deleted_at, ?) WHERE id = ?",
        )
        .bind(&moved.path)
        .bind(&moved.run_path)
        .bind((!moved.copied).then(super::now))
        .bind(moved.id)
        .execute(&mut *tx)
        .await?;
    }
    // Queued jobs' files name their inputs relative to a run folder in the volume; they now run
    // elsewhere and read the store.
    let queued: Vec<(JobId, WorkspaceId, ExecutorKind, String)> = sqlx::query_as(
        "SELECT id, workspace_id, executor, config_toml FROM jobs WHERE status IN ('queued', 'starting') AND pid IS NULL AND container_name IS NULL AND cluster_job IS NULL",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (id, workspace_id, executor, config) in queued {
        // As the executors see the store (see `Executor::store_seen`); this runs before they exist.
        let store = match executor {
            ExecutorKind::Docker => containers::build::STORE_DIR.to_string(),
            ExecutorKind::Local => storage
                .store_dir(workspace_id)
                .to_string_lossy()
                .into_owned(),
        };
        sqlx::query("UPDATE jobs SET config_toml = ? WHERE id = ?")
            .bind(rewrite_config(&config, &store, &plan.renamed(workspace_id)))
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    let stopped_jobs: Vec<(JobId, Option<i64>)> = sqlx::query_as(
        "SELECT id, pid FROM jobs WHERE executor <> 'docker' AND finished_at IS NULL AND pid IS NOT NULL",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (id, pid) in &stopped_jobs {
        if let Some(pid) = pid {
            super::executor::local::kill_group(*pid);
        }
        let interrupted = super::jobs::status::Reason::Interrupted;
        super::jobs::status::finish(&mut tx, *id, JobStatus::Failed, interrupted, Some(STOPPED))
            .await?;
        super::gpus::release(&mut tx, super::gpus::Holder::Job(*id)).await?;
    }
    let stopped_evaluations: Vec<(EvaluationId, i64)> = sqlx::query_as(
        "SELECT id, pid FROM evaluations WHERE status NOT IN ('succeeded', 'failed') AND pid IS NOT NULL",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (id, pid) in &stopped_evaluations {
        super::executor::local::kill_group(*pid);
        super::evaluations::status::fail(
            &mut tx,
            *id,
            super::evaluations::status::Reason::Interrupted,
            STOPPED,
        )
        .await?;
    }
    sqlx::query("UPDATE instance_settings SET storage_layout = ?")
        .bind(CURRENT)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(
        stopped_jobs = stopped_jobs.len(),
        stopped_evaluations = stopped_evaluations.len(),
        "the data directory has the store layout"
    );
    // The old copies of what the server keeps; job folders stay (they are the team's runs).
    for (workspace_id, rel) in plan.old_copies {
        super::storage::remove_from_volume(storage, workspace_id, rel).await;
    }
    Ok(())
}

/// What the copies did.
#[derive(Default)]
struct Plan {
    checkpoints: Vec<MovedCheckpoint>,
    /// Folders of datasets and models in the volumes, removed after the commit.
    old_copies: Vec<(WorkspaceId, PathBuf)>,
}

struct MovedCheckpoint {
    id: CheckpointId,
    workspace_id: WorkspaceId,
    /// In the store.
    path: String,
    /// Where it was, in the volume.
    run_path: String,
    /// False: its files were gone or refused; the row is marked deleted.
    copied: bool,
}

impl Plan {
    /// Old path → new path of the workspace's checkpoints (datasets and models keep theirs).
    fn renamed(&self, workspace_id: WorkspaceId) -> Vec<(&str, &str)> {
        self.checkpoints
            .iter()
            .filter(|c| c.workspace_id == workspace_id)
            .map(|c| (c.run_path.as_str(), c.path.as_str()))
            .collect()
    }
}

fn copy_all(
    storage: &Storage,
    datasets: &[(i64, WorkspaceId, String)],
    models: &[(i64, WorkspaceId, String)],
    checkpoints_: &[(CheckpointId, JobId, WorkspaceId, String, Option<String>)],
) -> Result<Plan, AppError> {
    let mut plan = Plan::default();
    let open = |workspace_id: WorkspaceId| -> Result<(beneath::Dir, PathBuf), AppError> {
        let volume = beneath::Dir::create(&storage.volume_dir(workspace_id, DEFAULT_VOLUME));
        let volume = volume.map_err(|e| contracts::error::internal("opening a volume", e))?;
        storage
            .store(workspace_id)
            .map_err(|e| contracts::error::internal("making a workspace's store", e))?;
        Ok((volume, storage.store_dir(workspace_id)))
    };
    for (id, workspace_id, path) in datasets.iter().chain(models) {
        let (volume, store) = open(*workspace_id)?;
        // A dataset's folder is `datasets/<id>`, a model's `models/<id>`: the first two names.
        let folder: PathBuf = Path::new(path).components().take(2).collect();
        match copy_tree(&volume, &folder, &store.join(&folder)) {
            Ok(()) => plan.old_copies.push((*workspace_id, folder)),
            // Left as it is: the row's downloads and jobs will say the file is missing.
            Err(e) => tracing::warn!(id, path, error = %e, "could not move a file to the store"),
        }
    }
    for (id, job_id, workspace_id, path, deleted_at) in checkpoints_ {
        let (volume, store) = open(*workspace_id)?;
        let name = Path::new(path).file_name().unwrap_or_default();
        let moved = checkpoints::store_rel(*job_id).join(name);
        let copied = deleted_at.is_none()
            && match checkpoints::copy_to_store(&volume, Path::new(path), &store, *job_id) {
                Ok(_) => true,
                Err(e) => {
                    tracing::warn!(%id, path, error = %e, "a checkpoint could not be moved; marked deleted");
                    false
                }
            };
        plan.checkpoints.push(MovedCheckpoint {
            id: *id,
            workspace_id: *workspace_id,
            path: moved.to_string_lossy().into_owned(),
            run_path: path.clone(),
            copied,
        });
    }
    Ok(plan)
}

/// Copies the folder `rel` beneath `volume` (regular files only, through no link) to `to`, replacing
/// what an earlier attempt left there.
fn copy_tree(volume: &beneath::Dir, rel: &Path, to: &Path) -> beneath::Result<()> {
    let io = |path: &Path, source| beneath::Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let files = volume.open_dir(rel)?.files(checkpoints::MAX_ENTRIES)?;
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| io(to, e))?;
    }
    for mut entry in files {
        let target = to.join(&entry.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        let mut out = std::fs::File::create(&target).map_err(|e| io(&target, e))?;
        std::io::copy(
            &mut std::io::Read::take(&mut entry.file, entry.bytes),
            &mut out,
        )
        .map_err(|e| io(&target, e))?;
    }
    Ok(())
}

/// A queued job's file with its inputs in the store: `"../../<path>"` (relative to its run folder in
/// the volume) becomes `"<store>/<path>"`, checkpoints under their new names. A file that does not parse
/// as a job file is left as it is: the trainer will refuse it with its reason.
fn rewrite_config(config: &str, store: &str, renamed: &[(&str, &str)]) -> String {
    let Ok(mut job) = contracts::job::JobConfig::from_toml_str(config) else {
        return config.to_string();
    };
    job.map_paths(|path| {
        let Ok(rest) = path.strip_prefix("../..") else {
            return;
        };
        let rest = rest.to_string_lossy();
        let rest = renamed
            .iter()
            .find(|(old, _)| *old == rest)
            .map_or(rest.as_ref(), |(_, new)| *new);
        *path = std::path::Path::new(store).join(rest);
    });
    match job.to_toml() {
        Ok(text) => format!(
            "# Generated by Paddock from the job's spec; moved to the store layout.\n{text}"
        ),
        Err(_) => config.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::test_db;

    #[test]
    fn queued_job_files_name_the_store() {
        let old = "[data]\ntrain = \"../../datasets/3/a b.tsv\"\nlabels = [\"neg\", \"pos\"]\n\n[model]\npretrained = \"../../jobs/4/output/checkpoints/step-10\"\n[output]\ndir = \"output\"\n";
        let new = rewrite_config(
            old,
            "/paddock",
            &[("jobs/4/output/checkpoints/step-10", "checkpoints/4/step-10")],
        );
        let parsed: toml::Value = toml::from_str(&new).unwrap();
        assert_eq!(
            parsed["data"]["train"].as_str(),
            Some("/paddock/datasets/3/a b.tsv")
        );
        assert_eq!(
            parsed["model"]["pretrained"].as_str(),
            Some("/paddock/checkpoints/4/step-10")
        );
        assert_eq!(parsed["output"]["dir"].as_str(), Some("output"));
        assert_eq!(parsed["data"]["labels"].as_array().unwrap().len(), 2);
    }

    /// A data directory of the first layout — a dataset, a model and two checkpoints in the volume (one
    /// replaced by a link to the database), a queued job reading them and a local run still going — is
    /// moved: files in the store, rows pointing there, the job's file rewritten, the run stopped, the old
    /// copies gone from the volume, nothing read through the link. A second start changes nothing.
    #[tokio::test]
    async fn a_first_layout_data_directory_is_moved_once() {
        let (dir, db) = test_db().await;
        let storage = Storage::new(dir.path(), 1 << 20, PathBuf::from("/nonexistent/paddock"));
        sqlx::query("UPDATE instance_settings SET storage_layout = 1")
            .execute(&db)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO users (username, password_hash, created_at) VALUES ('u', 'x', 'now')",
        )
        .execute(&db)
        .await
        .unwrap();
        sqlx::query("INSERT INTO workspaces (name, created_at) VALUES ('w', 'now')")
            .execute(&db)
            .await
            .unwrap();
        let volume = storage.volume_dir(WorkspaceId::new(1), DEFAULT_VOLUME);
        let write = |rel: &str, bytes: &[u8]| {
            let path = volume.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };
        write("datasets/1/r.tsv", b"text\tlabel\n");
        write("models/1/config.json", b"{}");
        write("models/1/model.safetensors", b"m");
        write("jobs/1/output/checkpoints/step-5/model.safetensors", b"w5");
        std::fs::create_dir_all(volume.join("jobs/1/output/checkpoints")).unwrap();
        std::os::unix::fs::symlink(dir.path(), volume.join("jobs/1/output/checkpoints/step-9"))
            .unwrap();
        for sql in [
            "INSERT INTO datasets (workspace_id, name, file_name, format, path, bytes, sha256, rows, text_column, label_column, report_json, preview_json, created_at)
             VALUES (1, 'd', 'r.tsv', 'tsv', 'datasets/1/r.tsv', 1, 'x', 1, 'text', 'label', '{}', '{}', 'now')",
            "INSERT INTO pretrained_models (workspace_id, name, file_name, sha256, path, bytes, config_json, created_at)
             VALUES (1, 'm', 'm.tar', 'x', 'models/1', 1, '{}', 'now')",
            "INSERT INTO jobs (workspace_id, name, spec_json, config_toml, executor, status, created_at)
             VALUES (1, 'done', '{}', '', 'local', 'succeeded', 'now')",
            "INSERT INTO checkpoints (job_id, workspace_id, step, path, bytes, sha256, created_at)
             VALUES (1, 1, 5, 'jobs/1/output/checkpoints/step-5', 2, 'x', 'now')",
            "INSERT INTO checkpoints (job_id, workspace_id, step, path, bytes, sha256, created_at)
             VALUES (1, 1, 9, 'jobs/1/output/checkpoints/step-9', 2, 'x', 'now')",
            "INSERT INTO jobs (workspace_id, name, spec_json, config_toml, executor, status, created_at)
             VALUES (1, 'queued', '{}', '[data]\ntrain = \"../../datasets/1/r.tsv\"\n[model]\npretrained = \"../../jobs/1/output/checkpoints/step-5\"\n[output]\ndir = \"output\"\n', 'local', 'queued', 'now')",
            "INSERT INTO jobs (workspace_id, name, spec_json, config_toml, executor, status, pid, created_at)
             VALUES (1, 'running', '{}', '', 'local', 'running', 999999999, 'now')",
        ] {
            sqlx::query(sql).execute(&db).await.unwrap();
        }

        migrate(&db, &storage).await.unwrap();

        let store = storage.store_dir(WorkspaceId::new(1));
        assert_eq!(
            std::fs::read(store.join("datasets/1/r.tsv")).unwrap(),
            b"text\tlabel\n"
        );
        assert_eq!(
            std::fs::read(store.join("models/1/model.safetensors")).unwrap(),
            b"m"
        );
        assert_eq!(
            std::fs::read(store.join("checkpoints/1/step-5/model.safetensors")).unwrap(),
            b"w5"
        );
        assert!(!volume.join("datasets/1").exists() && !volume.join("models/1").exists());
        assert!(volume.join("jobs/1/output").exists(), "the runs stay");
        let rows: Vec<(String, Option<String>, bool)> = sqlx::query_as(
            "SELECT path, run_path, deleted_at IS NOT NULL FROM checkpoints ORDER BY step",
        )
        .fetch_all(&db)
        .await
        .unwrap();
        assert_eq!(
            rows,
            [
                (
                    "checkpoints/1/step-5".to_string(),
                    Some("jobs/1/output/checkpoints/step-5".to_string()),
                    false
                ),
                (
                    "checkpoints/1/step-9".to_string(),
                    Some("jobs/1/output/checkpoints/step-9".to_string()),
                    true
                ),
            ]
        );
        assert!(
            !store.join("checkpoints/1/step-9").exists(),
            "nothing read through the link"
        );
        let config: String =
            sqlx::query_scalar("SELECT config_toml FROM jobs WHERE name = 'queued'")
                .fetch_one(&db)
                .await
                .unwrap();
        let store_text = store.to_string_lossy();
        assert!(
            config.contains(&format!("train = \"{store_text}/datasets/1/r.tsv\"")),
            "{config}"
        );
        assert!(
            config.contains(&format!(
                "pretrained = \"{store_text}/checkpoints/1/step-5\""
            )),
            "{config}"
        );
        let (status, message): (String, Option<String>) =
            sqlx::query_as("SELECT status, status_message FROM jobs WHERE name = 'running'")
                .fetch_one(&db)
                .await
                .unwrap();
        assert_eq!(
            (status.as_str(), message.as_deref()),
            ("failed", Some(STOPPED))
        );

        // Once only: a second start finds the layout current and leaves everything.
        std::fs::write(store.join("datasets/1/r.tsv"), b"changed").unwrap();
        migrate(&db, &storage).await.unwrap();
        assert_eq!(
            std::fs::read(store.join("datasets/1/r.tsv")).unwrap(),
            b"changed"
        );
    }
}

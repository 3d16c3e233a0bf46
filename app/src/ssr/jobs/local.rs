//! The local-process executor: `paddock train` as a child of a small `sh` wrapper in the job's directory.
//! Everything a run produces goes to files there — events to `events.jsonl`, stderr to `train.log`, the
//! trainer's pid to `trainer.pid` and finally its exit status to `exit_code` — so the run does not depend
//! on the server staying up: after a restart (even `kill -9`) the supervisor reads on from where the
//! database says it stopped, and learns how the run ended from `exit_code`.

use std::path::Path;
use std::sync::Arc;

use sqlx::SqlitePool;

use super::{supervise, Jobs};
use crate::ssr::gpus::{self, Holder};

/// The wrapper: runs the trainer in the background so that its pid can be recorded (a cancel signals the
/// trainer, not the shell), waits for it and writes its exit status atomically.
const WRAPPER: &str = r#"paddock="$1"
"$paddock" train --config job.toml >events.jsonl 2>train.log </dev/null &
echo $! > trainer.pid
wait $!
echo $? > exit_code.tmp && mv exit_code.tmp exit_code"#;

/// Launches job `job_id` (status `starting`, GPUs already leased) in the background.
pub fn start(db: SqlitePool, jobs: Arc<Jobs>, job_id: i64) {
    tokio::spawn(async move {
        if let Err(message) = launch(&db, &jobs, job_id).await {
            tracing::error!(job_id, %message, "job could not be started");
            let result = async {
                let mut tx = crate::ssr::db::write_tx(&db).await?;
                sqlx::query("UPDATE jobs SET status = 'failed', status_message = ?, finished_at = ? WHERE id = ?")
                    .bind(format!("could not start: {message}"))
                    .bind(crate::ssr::now())
                    .bind(job_id)
                    .execute(&mut *tx)
                    .await?;
                gpus::release(&mut tx, Holder::Job(job_id)).await?;
                tx.commit().await?;
                Ok::<_, crate::error::AppError>(())
            }
            .await;
            if let Err(e) = result {
                tracing::error!(job_id, error = %e, "could not record a failed start");
            }
            jobs.wake.notify_one();
        }
    });
}

async fn launch(db: &SqlitePool, jobs: &Arc<Jobs>, job_id: i64) -> Result<(), String> {
    let (workspace_id, config_toml, gpu_indices): (i64, String, Option<String>) =
        sqlx::query_as("SELECT workspace_id, config_toml, gpu_indices FROM jobs WHERE id = ?")
            .bind(job_id)
            .fetch_one(db)
            .await
            .map_err(|e| e.to_string())?;
    let dir = jobs.job_dir(workspace_id, job_id);
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for stale in ["exit_code", "exit_code.tmp", "trainer.pid"] {
        let _ = tokio::fs::remove_file(dir.join(stale)).await;
    }
    tokio::fs::write(dir.join("job.toml"), &config_toml)
        .await
        .map_err(|e| format!("writing job.toml: {e}"))?;
    let devices: Vec<u32> = gpu_indices
        .as_deref()
        .and_then(|g| serde_json::from_str(g).ok())
        .unwrap_or_default();
    let visible = devices
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(WRAPPER)
        .arg("sh")
        .arg(&jobs.storage.paddock_binary)
        .current_dir(&dir)
        // Only the leased GPUs (none for a CPU job) are visible to the trainer.
        .env("CUDA_VISIBLE_DEVICES", &visible)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group: a Ctrl-C aimed at the server does not reach the job.
        .process_group(0);
    let mut child = command.spawn().map_err(|e| format!("running sh: {e}"))?;
    let pid = child.id().ok_or("the wrapper exited at once")?;
    // Reap the wrapper when it ends (after a server restart, init does).
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let moved = sqlx::query(
        "UPDATE jobs SET pid = ?, status = 'running' WHERE id = ? AND status = 'starting'",
    )
    .bind(pid as i64)
    .bind(job_id)
    .execute(db)
    .await
    .map_err(|e| e.to_string())?;
    if moved.rows_affected() == 0 {
        // Cancelled while starting: record the pid and stop it.
        sqlx::query("UPDATE jobs SET pid = ? WHERE id = ?")
            .bind(pid as i64)
            .bind(job_id)
            .execute(db)
            .await
            .map_err(|e| e.to_string())?;
        wait_for_pid_file(&dir).await;
        signal_stop(&dir);
    }
    supervise::spawn(db.clone(), jobs.clone(), job_id);
    Ok(())
}

async fn wait_for_pid_file(dir: &Path) {
    for _ in 0..50 {
        if dir.join("trainer.pid").exists() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Asks the trainer to stop gracefully (SIGTERM: it finishes the step, writes a checkpoint, ends).
pub fn signal_stop(dir: &Path) {
    if let Some(pid) = trainer_pid(dir) {
        // SAFETY: kill(2) with a pid read from our own file and a standard signal has no memory effects.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

fn trainer_pid(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join("trainer.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|p| *p > 1)
}

/// Whether a process with this pid exists (ours or not: EPERM also means it exists).
pub fn is_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The run's exit status once it has ended.
pub fn exit_code(dir: &Path) -> Option<i64> {
    std::fs::read_to_string(dir.join("exit_code"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

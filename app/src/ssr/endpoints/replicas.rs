//! An endpoint's replicas: `paddock serve-model` processes the server starts, watches and restarts. A
//! deployment starts every replica, waits until each is warmed up, runs the parity gate against the
//! first, and only then routes traffic to them. A watcher per endpoint restarts a crashed replica with
//! exponential back-off and keeps the gateway's route to the ready ones. Replicas are recorded (pid, URL)
//! so a restarted server re-attaches to those still answering and starts the others again.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;
use tokio::io::AsyncBufReadExt;

use super::gateway::{Backend, Gateway};
use super::parity;
use crate::error::AppError;
use crate::ssr::jobs::local::is_alive;
use crate::ssr::storage::{Storage, DEFAULT_VOLUME};

/// How long a replica may take to load and warm up its model.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How often the watcher checks the replicas.
const WATCH_EVERY: Duration = Duration::from_secs(2);
/// Longest back-off between restarts of a crashing replica.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Everything the replica machinery needs.
pub struct Deployer {
    pub db: SqlitePool,
    pub storage: Arc<Storage>,
    pub gateway: Arc<Gateway>,
}

#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Target {
    pub id: i64,
    pub workspace_id: i64,
    pub slug: String,
    pub replicas: i64,
    pub max_batch_tokens: i64,
    pub max_wait_ms: i64,
    pub device: String,
    pub status: String,
    pub checkpoint_path: String,
}

const TARGET: &str = "SELECT e.id, e.workspace_id, e.slug, e.replicas, e.max_batch_tokens, e.max_wait_ms, e.device, e.status,
     c.path AS checkpoint_path FROM endpoints e JOIN checkpoints c ON c.id = e.checkpoint_id";

impl Deployer {
    pub(crate) async fn target(&self, endpoint_id: i64) -> Result<Option<Target>, AppError> {
        Ok(
            sqlx::query_as::<_, Target>(&format!("{TARGET} WHERE e.id = ?"))
                .bind(endpoint_id)
                .fetch_optional(&self.db)
                .await?,
        )
    }

    fn model_dir(&self, t: &Target) -> PathBuf {
        self.storage
            .volume_dir(t.workspace_id, DEFAULT_VOLUME)
            .join(&t.checkpoint_path)
    }

    /// Deploys in the background: replicas, parity gate, route, then watching.
    pub fn spawn_deploy(self: &Arc<Self>, endpoint_id: i64) {
        let me = self.clone();
        tokio::spawn(async move {
            if let Err(message) = me.deploy(endpoint_id).await {
                tracing::warn!(endpoint_id, %message, "deployment failed");
                let _ = me.fail(endpoint_id, &message).await;
            }
        });
    }

    async fn deploy(self: &Arc<Self>, endpoint_id: i64) -> Result<(), String> {
        let t = self
            .target(endpoint_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the endpoint was deleted")?;
        let dir = self.model_dir(&t);
        let mut backends = Vec::new();
        for ordinal in 0..t.replicas {
            backends.push(self.start_replica(&t, ordinal, &dir).await?);
        }
        let report = parity::check(
            &self.storage,
            &self.db,
            endpoint_id,
            &dir,
            &backends[0].base_url,
        )
        .await;
        let passed = report["passed"].as_bool() == Some(true);
        sqlx::query("UPDATE endpoints SET parity_report = ? WHERE id = ?")
            .bind(report.to_string())
            .bind(endpoint_id)
            .execute(&self.db)
            .await
            .map_err(|e| e.to_string())?;
        if !passed {
            self.stop_replicas(endpoint_id).await;
            return Err(format!(
                "the parity gate failed: {}",
                report["message"]
                    .as_str()
                    .unwrap_or("served logits differ from the trainer's")
            ));
        }
        let moved = sqlx::query(
            "UPDATE endpoints SET status = 'ready', status_message = NULL, updated_at = ? WHERE id = ? AND status = 'starting'",
        )
        .bind(crate::ssr::now())
        .bind(endpoint_id)
        .execute(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        if moved.rows_affected() == 0 {
            // Undeployed while starting.
            self.stop_replicas(endpoint_id).await;
            return Ok(());
        }
        self.gateway.set_route(&t.slug, backends).await;
        self.spawn_watch(endpoint_id);
        Ok(())
    }

    async fn fail(&self, endpoint_id: i64, message: &str) -> Result<(), AppError> {
        sqlx::query("UPDATE endpoints SET status = 'failed', status_message = ?, updated_at = ? WHERE id = ? AND status <> 'stopped'")
            .bind(message)
            .bind(crate::ssr::now())
            .bind(endpoint_id)
            .execute(&self.db)
            .await?;
        Ok(())
    }

    /// Starts replica `ordinal` and waits until it has warmed up.
    async fn start_replica(
        &self,
        t: &Target,
        ordinal: i64,
        dir: &Path,
    ) -> Result<Arc<Backend>, String> {
        sqlx::query(
            "INSERT INTO endpoint_replicas (endpoint_id, ordinal, status, started_at) VALUES (?, ?, 'starting', ?)
             ON CONFLICT (endpoint_id, ordinal) DO UPDATE SET status = 'starting', pid = NULL, base_url = NULL, started_at = excluded.started_at",
        )
        .bind(t.id)
        .bind(ordinal)
        .bind(crate::ssr::now())
        .execute(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        let logs = self
            .storage
            .data_dir
            .join("endpoints")
            .join(t.id.to_string());
        std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logs.join(format!("replica-{ordinal}.log")))
            .map_err(|e| e.to_string())?;
        let mut child = tokio::process::Command::new(&self.storage.paddock_binary)
            .arg("serve-model")
            .arg("--model")
            .arg(dir)
            .args(["--bind", "127.0.0.1:0"])
            .args([
                "--max-batch-tokens",
                &t.max_batch_tokens.to_string(),
                "--max-wait-ms",
                &t.max_wait_ms.to_string(),
            ])
            .args(["--device", &t.device])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::from(log))
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting serve-model: {e}"))?;
        let pid = child.id().unwrap_or(0) as i64;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let first = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
        let base_url = match first {
            Ok(Ok(Some(line))) if line.starts_with("listening on ") => {
                line.trim_start_matches("listening on ").trim().to_string()
            }
            _ => {
                let _ = child.start_kill();
                let tail = std::fs::read_to_string(logs.join(format!("replica-{ordinal}.log")))
                    .unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(5).collect();
                let message = format!(
                    "replica {ordinal} did not start: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                );
                self.replica_failed(t.id, ordinal, &message).await;
                return Err(message);
            }
        };
        // Reap it when it ends (the watcher notices through its pid), and keep its stdout drained.
        tokio::spawn(async move {
            while let Ok(Some(_)) = lines.next_line().await {}
            let _ = child.wait().await;
        });
        sqlx::query("UPDATE endpoint_replicas SET status = 'ready', pid = ?, base_url = ?, last_error = NULL WHERE endpoint_id = ? AND ordinal = ?")
            .bind(pid)
            .bind(&base_url)
            .bind(t.id)
            .bind(ordinal)
            .execute(&self.db)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(Backend {
            base_url,
            outstanding: AtomicUsize::new(0),
        }))
    }

    async fn replica_failed(&self, endpoint_id: i64, ordinal: i64, message: &str) {
        let _ = sqlx::query("UPDATE endpoint_replicas SET status = 'failed', last_error = ? WHERE endpoint_id = ? AND ordinal = ?")
            .bind(message)
            .bind(endpoint_id)
            .bind(ordinal)
            .execute(&self.db)
            .await;
    }

    /// Stops every replica of the endpoint (SIGTERM, then SIGKILL after a grace period).
    pub async fn stop_replicas(&self, endpoint_id: i64) {
        let pids: Vec<(i64, Option<i64>)> =
            sqlx::query_as("SELECT ordinal, pid FROM endpoint_replicas WHERE endpoint_id = ?")
                .bind(endpoint_id)
                .fetch_all(&self.db)
                .await
                .unwrap_or_default();
        for (_, pid) in &pids {
            if let Some(pid) = pid {
                signal(*pid, libc::SIGTERM);
            }
        }
        for _ in 0..50 {
            if pids.iter().all(|(_, pid)| !pid.is_some_and(is_alive)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for (_, pid) in &pids {
            if let Some(pid) = pid.filter(|p| is_alive(*p)) {
                signal(pid, libc::SIGKILL);
            }
        }
        let _ = sqlx::query(
            "UPDATE endpoint_replicas SET status = 'stopped', pid = NULL WHERE endpoint_id = ?",
        )
        .bind(endpoint_id)
        .execute(&self.db)
        .await;
    }

    /// Watches a ready endpoint: restarts crashed replicas with back-off and keeps the route current.
    pub fn spawn_watch(self: &Arc<Self>, endpoint_id: i64) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut backoff: std::collections::HashMap<i64, (Duration, tokio::time::Instant)> =
                Default::default();
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let Ok(Some(t)) = me.target(endpoint_id).await else {
                    return;
                };
                if t.status != "ready" {
                    return;
                }
                let rows: Vec<(i64, Option<i64>, Option<String>, String)> =
                    sqlx::query_as("SELECT ordinal, pid, base_url, status FROM endpoint_replicas WHERE endpoint_id = ? ORDER BY ordinal")
                        .bind(endpoint_id)
                        .fetch_all(&me.db)
                        .await
                        .unwrap_or_default();
                let mut changed = false;
                for (ordinal, pid, _, status) in &rows {
                    let alive = pid.is_some_and(is_alive);
                    if alive && status == "ready" {
                        continue;
                    }
                    let now = tokio::time::Instant::now();
                    let (delay, due) = backoff
                        .get(ordinal)
                        .copied()
                        .unwrap_or((Duration::from_secs(1), now));
                    if now < due {
                        continue;
                    }
                    changed = true;
                    if status == "ready" {
                        me.replica_failed(endpoint_id, *ordinal, "the replica exited; restarting")
                            .await;
                    }
                    let _ = sqlx::query("UPDATE endpoint_replicas SET restarts = restarts + 1 WHERE endpoint_id = ? AND ordinal = ?")
                        .bind(endpoint_id)
                        .bind(ordinal)
                        .execute(&me.db)
                        .await;
                    let dir = me.model_dir(&t);
                    match me.start_replica(&t, *ordinal, &dir).await {
                        Ok(_) => {
                            backoff.remove(ordinal);
                        }
                        Err(e) => {
                            tracing::warn!(endpoint_id, ordinal, error = %e, "replica restart failed");
                            backoff.insert(*ordinal, ((delay * 2).min(MAX_BACKOFF), now + delay));
                        }
                    }
                }
                if changed {
                    me.refresh_route(&t).await;
                }
            }
        });
    }

    /// Points the gateway at the endpoint's ready replicas (keeping in-flight counts of unchanged ones).
    pub(crate) async fn refresh_route(&self, t: &Target) {
        let ready: Vec<String> = sqlx::query_scalar(
            "SELECT base_url FROM endpoint_replicas WHERE endpoint_id = ? AND status = 'ready' AND base_url IS NOT NULL ORDER BY ordinal",
        )
        .bind(t.id)
        .fetch_all(&self.db)
        .await
        .unwrap_or_default();
        let current = self.gateway.backends(&t.slug).await;
        let backends = ready
            .into_iter()
            .map(|url| {
                current
                    .iter()
                    .find(|b| b.base_url == url)
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(Backend {
                            base_url: url,
                            outstanding: AtomicUsize::new(0),
                        })
                    })
            })
            .collect();
        self.gateway.set_route(&t.slug, backends).await;
    }

    /// After a restart: ready endpoints re-attach to replicas that still answer (and restart the rest
    /// through their watcher); endpoints that were starting deploy again.
    pub async fn recover(self: &Arc<Self>) {
        let targets: Vec<Target> =
            sqlx::query_as(&format!("{TARGET} WHERE e.status IN ('starting', 'ready')"))
                .fetch_all(&self.db)
                .await
                .unwrap_or_default();
        let client = reqwest::Client::new();
        for t in targets {
            if t.status == "starting" {
                self.stop_replicas(t.id).await;
                self.spawn_deploy(t.id);
                continue;
            }
            let rows: Vec<(i64, Option<i64>, Option<String>)> = sqlx::query_as(
                "SELECT ordinal, pid, base_url FROM endpoint_replicas WHERE endpoint_id = ?",
            )
            .bind(t.id)
            .fetch_all(&self.db)
            .await
            .unwrap_or_default();
            for (ordinal, pid, url) in rows {
                let healthy = match (&pid, &url) {
                    (Some(pid), Some(url)) if is_alive(*pid) => client
                        .get(format!("{url}/health"))
                        .timeout(Duration::from_secs(3))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success()),
                    _ => false,
                };
                if !healthy {
                    if let Some(pid) = pid.filter(|p| is_alive(*p)) {
                        signal(pid, libc::SIGKILL);
                    }
                    self.replica_failed(
                        t.id,
                        ordinal,
                        "not answering after a server restart; restarting",
                    )
                    .await;
                }
            }
            self.refresh_route(&t).await;
            self.spawn_watch(t.id);
        }
    }
}

fn signal(pid: i64, signal: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        if pid > 1 {
            // SAFETY: kill(2) on a pid we started, with a standard signal.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

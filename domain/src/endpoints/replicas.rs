//! An endpoint's replicas: `paddock serve-model` processes the server starts, watches, replaces and
//! stops. A replica runs in a container from the image of the job that wrote the checkpoint when that job
//! ran in an environment and Docker is reachable (reached on its bridge address), and as a local process
//! otherwise; a replica on `cuda` holds one GPU in the shared inventory.
//!
//! Every change of the serving set follows one rule — start and warm up the new replicas, move traffic,
//! then drain and stop the old ones — so deploying, rolling out another checkpoint and scaling never leave
//! a request without a replica. One change at a time per endpoint: the endpoint's lock is held by
//! deployments, changes and the watcher's restarts. Replicas are recorded (ordinal, pid or container, URL)
//! so a restarted server re-attaches to those still answering and replaces the others.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use containers::labels;
use containers::lifecycle::ProvisionRequest;
use sqlx::SqlitePool;
use tokio::io::AsyncBufReadExt;

use super::gateway::{Backend, Gateway, REQUEST_TIMEOUT};
use super::parity;
use crate::db::write_tx;
use crate::engine::Engine;
use crate::environments::lifecycle::{network_name, store_dir, volume_dir, volume_name};
use crate::gpus::{self, Holder};
use crate::jobs::docker::environment_limits;
use crate::jobs::local::is_alive;
use crate::storage::{Storage, DEFAULT_VOLUME};
use contracts::error::AppError;
use contracts::types::GpuSpec;

/// How long a replica may take to load and warm up its model.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How often the watcher checks the replicas.
const WATCH_EVERY: Duration = Duration::from_secs(2);
/// Longest back-off between restarts of a crashing replica.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The port `serve-model` listens on inside a replica container.
const CONTAINER_PORT: u16 = 8080;
/// How long a stopping replica gets to finish what it is answering.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Everything the replica machinery needs.
pub struct Deployer {
    pub db: SqlitePool,
    pub storage: Arc<Storage>,
    pub engine: Arc<Engine>,
    pub gateway: Arc<Gateway>,
    /// Per endpoint: held while its serving set changes.
    locks: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    /// Endpoints with a user's change (rollout or scaling) under way; a second one is refused.
    changing: Mutex<HashSet<i64>>,
}

/// What an endpoint should serve, as the replica machinery needs it.
#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Target {
    pub id: i64,
    pub workspace_id: i64,
    pub slug: String,
    pub replicas: i64,
    pub max_batch_tokens: i64,
    pub max_wait_ms: i64,
    pub device: String,
    pub precision: String,
    pub status: String,
    pub checkpoint_id: i64,
}

const TARGET: &str = "SELECT id, workspace_id, slug, replicas, max_batch_tokens, max_wait_ms, device, precision, status, checkpoint_id FROM endpoints";

/// A checkpoint to serve: its files, and the image of the job that wrote it.
#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Model {
    pub path: String,
    pub image_id: Option<String>,
    pub environment_id: Option<i64>,
}

/// One recorded replica.
#[derive(sqlx::FromRow, Clone)]
struct Replica {
    id: i64,
    ordinal: i64,
    status: String,
    pid: Option<i64>,
    container: Option<String>,
    base_url: Option<String>,
}

const REPLICA: &str =
    "SELECT id, ordinal, status, pid, container, base_url FROM endpoint_replicas WHERE endpoint_id = ?";

/// A user's change to a ready endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Change {
    pub replicas: i64,
    /// Roll out this checkpoint (`None`: keep the current one and only scale).
    pub checkpoint_id: Option<i64>,
}

impl Deployer {
    pub fn new(
        db: SqlitePool,
        storage: Arc<Storage>,
        engine: Arc<Engine>,
        gateway: Arc<Gateway>,
    ) -> Self {
        Deployer {
            db,
            storage,
            engine,
            gateway,
            locks: Default::default(),
            changing: Default::default(),
        }
    }

    fn lock(&self, endpoint_id: i64) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(endpoint_id)
            .or_default()
            .clone()
    }

    pub(crate) async fn target(&self, endpoint_id: i64) -> Result<Option<Target>, AppError> {
        Ok(
            sqlx::query_as::<_, Target>(&format!("{TARGET} WHERE id = ?"))
                .bind(endpoint_id)
                .fetch_optional(&self.db)
                .await?,
        )
    }

    pub(crate) async fn model(&self, checkpoint_id: i64) -> Result<Model, String> {
        sqlx::query_as::<_, Model>(
            "SELECT c.path, j.image_id, j.environment_id
             FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.id = ?",
        )
        .bind(checkpoint_id)
        .fetch_optional(&self.db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("checkpoint {checkpoint_id} was deleted"))
    }

    /// The checkpoint's directory on this host: its copy in the workspace's store, which no container
    /// can change.
    pub(crate) fn model_dir(&self, workspace_id: i64, model: &Model) -> PathBuf {
        self.storage.store_dir(workspace_id).join(&model.path)
    }

    async fn replicas(&self, endpoint_id: i64) -> Vec<Replica> {
        sqlx::query_as::<_, Replica>(&format!("{REPLICA} ORDER BY ordinal"))
            .bind(endpoint_id)
            .fetch_all(&self.db)
            .await
            .unwrap_or_default()
    }

    /// Deploys in the background: replicas, parity gate, route, then watching.
    pub fn spawn_deploy(self: &Arc<Self>, endpoint_id: i64) {
        let me = self.clone();
        tokio::spawn(async move {
            let lock = me.lock(endpoint_id);
            let _held = lock.lock().await;
            if let Err(message) = me.deploy(endpoint_id).await {
                tracing::warn!(endpoint_id, %message, "deployment failed");
                let _ = sqlx::query("UPDATE endpoints SET status = 'failed', status_message = ?, updated_at = ? WHERE id = ? AND status = 'starting'")
                    .bind(&message)
                    .bind(crate::now())
                    .bind(endpoint_id)
                    .execute(&me.db)
                    .await;
            }
        });
    }

    async fn deploy(self: &Arc<Self>, endpoint_id: i64) -> Result<(), String> {
        let t = self
            .target(endpoint_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the endpoint was deleted")?;
        // Whatever an earlier deployment left.
        let leftovers = self.replicas(endpoint_id).await;
        self.retire(&t, &leftovers).await;
        let model = self.model(t.checkpoint_id).await?;
        let started = self.start_many(&t, &model, t.replicas).await?;
        let report = self.parity(&t, &model, &started).await;
        let passed = report["passed"].as_bool() == Some(true);
        sqlx::query("UPDATE endpoints SET parity_report = ? WHERE id = ?")
            .bind(report.to_string())
            .bind(endpoint_id)
            .execute(&self.db)
            .await
            .map_err(|e| e.to_string())?;
        if !passed {
            self.retire(&t, &started).await;
            return Err(parity_failure(&report));
        }
        let moved = sqlx::query(
            "UPDATE endpoints SET status = 'ready', status_message = NULL, updated_at = ? WHERE id = ? AND status = 'starting'",
        )
        .bind(crate::now())
        .bind(endpoint_id)
        .execute(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        if moved.rows_affected() == 0 {
            // Undeployed while starting.
            self.retire(&t, &started).await;
            return Ok(());
        }
        self.refresh_route(&t).await;
        self.spawn_watch(endpoint_id);
        Ok(())
    }

    /// The parity gate against the first of `started`.
    async fn parity(&self, t: &Target, model: &Model, started: &[Replica]) -> serde_json::Value {
        let url = started
            .first()
            .and_then(|r| r.base_url.clone())
            .unwrap_or_default();
        parity::check(
            &self.storage,
            &self.db,
            t.id,
            &self.model_dir(t.workspace_id, model),
            &url,
            &t.precision,
        )
        .await
    }

    /// Starts a user's change in the background; `false` when another one is still under way.
    pub(crate) fn spawn_change(self: &Arc<Self>, endpoint_id: i64, change: Change) -> bool {
        if !self
            .changing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(endpoint_id)
        {
            return false;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let lock = me.lock(endpoint_id);
            let held = lock.lock().await;
            let result = me.change(endpoint_id, change).await;
            drop(held);
            me.changing
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&endpoint_id);
            let message = match result {
                Ok(()) => None,
                Err(message) => {
                    tracing::warn!(endpoint_id, %message, "endpoint change failed");
                    Some(message)
                }
            };
            let _ = sqlx::query("UPDATE endpoints SET status_message = ?, updated_at = ? WHERE id = ? AND status = 'ready'")
                .bind(message)
                .bind(crate::now())
                .bind(endpoint_id)
                .execute(&me.db)
                .await;
        });
        true
    }

    /// Rolls out another checkpoint (new replicas pass the parity gate before traffic moves to them) or
    /// scales. The old replicas serve until the new ones are in the route, then drain.
    async fn change(self: &Arc<Self>, endpoint_id: i64, change: Change) -> Result<(), String> {
        let Some(t) = self.target(endpoint_id).await.map_err(|e| e.to_string())? else {
            return Ok(());
        };
        if t.status != "ready" {
            return Ok(());
        }
        let old = self.replicas(endpoint_id).await;
        if let Some(checkpoint_id) = change.checkpoint_id.filter(|c| *c != t.checkpoint_id) {
            let model = self.model(checkpoint_id).await?;
            let started = self
                .start_many(&t, &model, change.replicas)
                .await
                .map_err(|e| format!("the rollout of checkpoint {checkpoint_id} failed: {e}"))?;
            let report = self.parity(&t, &model, &started).await;
            if report["passed"].as_bool() != Some(true) {
                self.retire(&t, &started).await;
                return Err(format!(
                    "the rollout of checkpoint {checkpoint_id} failed; still serving checkpoint {}: {}",
                    t.checkpoint_id,
                    parity_failure(&report)
                ));
            }
            let moved = sqlx::query("UPDATE endpoints SET checkpoint_id = ?, replicas = ?, parity_report = ?, updated_at = ? WHERE id = ? AND status = 'ready'")
                .bind(checkpoint_id)
                .bind(change.replicas)
                .bind(report.to_string())
                .bind(crate::now())
                .bind(endpoint_id)
                .execute(&self.db)
                .await
                .map_err(|e| e.to_string())?;
            if moved.rows_affected() == 0 {
                self.retire(&t, &started).await;
                return Ok(());
            }
            self.retire(&t, &old).await;
            return Ok(());
        }
        let live: Vec<Replica> = old.into_iter().filter(|r| r.status != "stopped").collect();
        let have = live.len() as i64;
        if change.replicas > have {
            let model = self.model(t.checkpoint_id).await?;
            self.start_many(&t, &model, change.replicas - have).await?;
            self.refresh_route(&t).await;
        } else if change.replicas < have {
            self.retire(&t, &live[change.replicas as usize..]).await;
        }
        sqlx::query("UPDATE endpoints SET replicas = ?, updated_at = ? WHERE id = ?")
            .bind(change.replicas)
            .bind(crate::now())
            .bind(endpoint_id)
            .execute(&self.db)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Starts `count` replicas of `model` side by side (new ordinals); all or none: when one fails, the
    /// others are stopped again.
    async fn start_many(
        &self,
        t: &Target,
        model: &Model,
        count: i64,
    ) -> Result<Vec<Replica>, String> {
        let next: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(ordinal) + 1, 0) FROM endpoint_replicas WHERE endpoint_id = ?",
        )
        .bind(t.id)
        .fetch_one(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        let results = futures_util::future::join_all(
            (next..next + count).map(|ordinal| self.start_replica(t, model, ordinal)),
        )
        .await;
        let (started, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
        let started: Vec<Replica> = started.into_iter().filter_map(Result::ok).collect();
        if let Some(Err(message)) = failed.into_iter().next() {
            self.retire(t, &started).await;
            return Err(message);
        }
        Ok(started)
    }

    /// Starts replica `ordinal` of `model` (or replaces it) and waits until it has warmed up.
    async fn start_replica(
        &self,
        t: &Target,
        model: &Model,
        ordinal: i64,
    ) -> Result<Replica, String> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO endpoint_replicas (endpoint_id, ordinal, status, started_at) VALUES (?, ?, 'starting', ?)
             ON CONFLICT (endpoint_id, ordinal) DO UPDATE SET status = 'starting', pid = NULL, container = NULL,
                 base_url = NULL, started_at = excluded.started_at
             RETURNING id",
        )
        .bind(t.id)
        .bind(ordinal)
        .bind(crate::now())
        .fetch_one(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        let started = async {
            let gpu = self.lease_gpu(t, id).await?;
            match (&model.image_id, model.environment_id) {
                (Some(image), Some(environment_id)) if self.engine.docker().await.is_ok() => {
                    self.start_container(t, model, ordinal, image, environment_id, gpu)
                        .await
                }
                _ => self.start_process(t, model, ordinal, gpu).await,
            }
        }
        .await;
        match started {
            Ok((pid, container, base_url)) => {
                sqlx::query("UPDATE endpoint_replicas SET status = 'ready', pid = ?, container = ?, base_url = ?, last_error = NULL WHERE id = ?")
                    .bind(pid)
                    .bind(&container)
                    .bind(&base_url)
                    .bind(id)
                    .execute(&self.db)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Replica {
                    id,
                    ordinal,
                    status: "ready".into(),
                    pid,
                    container,
                    base_url: Some(base_url),
                })
            }
            Err(message) => {
                self.release_gpu(id).await;
                self.replica_failed(id, &message).await;
                Err(message)
            }
        }
    }

    /// One GPU for a replica serving on `cuda`, from the inventory shared with environments and jobs.
    async fn lease_gpu(&self, t: &Target, replica_id: i64) -> Result<Option<u32>, String> {
        if t.device != "cuda" {
            return Ok(None);
        }
        let host = self.engine.gpus().await;
        let mut tx = write_tx(&self.db).await.map_err(|e| e.to_string())?;
        let leased = gpus::lease(
            &mut tx,
            &host,
            Holder::EndpointReplica(replica_id),
            &GpuSpec::Count(1),
            false,
        )
        .await
        .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        Ok(leased.first().copied())
    }

    async fn release_gpu(&self, replica_id: i64) {
        if let Ok(mut conn) = self.db.acquire().await {
            let _ = gpus::release(&mut conn, Holder::EndpointReplica(replica_id)).await;
        }
    }

    fn serve_args(t: &Target, model_dir: String, bind: &str) -> Vec<String> {
        // Rows per forward pass, after sorting a batch by length: on CPU small sub-batches waste less
        // padding on mixed-length requests; a GPU wants wide ones.
        let rows_per_pass = if t.device == "cuda" { "64" } else { "16" };
        [
            "serve-model",
            "--model",
            &model_dir,
            "--bind",
            bind,
            "--max-batch-tokens",
            &t.max_batch_tokens.to_string(),
            "--max-wait-ms",
            &t.max_wait_ms.to_string(),
            "--device",
            &t.device,
            "--precision",
            &t.precision,
            "--batch-size",
            rows_per_pass,
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// A local `serve-model` process; ready when it prints the address it listens on.
    async fn start_process(
        &self,
        t: &Target,
        model: &Model,
        ordinal: i64,
        gpu: Option<u32>,
    ) -> Result<(Option<i64>, Option<String>, String), String> {
        let logs = self
            .storage
            .data_dir
            .join("endpoints")
            .join(t.id.to_string());
        std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
        let log_path = logs.join(format!("replica-{ordinal}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| e.to_string())?;
        let dir = self.model_dir(t.workspace_id, model);
        let mut command = tokio::process::Command::new(&self.storage.paddock_binary);
        command
            .args(Self::serve_args(
                t,
                dir.to_string_lossy().into_owned(),
                "127.0.0.1:0",
            ))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::from(log))
            .process_group(0);
        if let Some(gpu) = gpu {
            command.env("CUDA_VISIBLE_DEVICES", gpu.to_string());
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting serve-model: {e}"))?;
        let pid = child.id().map(i64::from);
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let first = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
        let base_url = match first {
            Ok(Ok(Some(line))) if line.starts_with("listening on ") => {
                line.trim_start_matches("listening on ").trim().to_string()
            }
            _ => {
                let _ = child.start_kill();
                let tail = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!(
                    "replica {ordinal} did not start: {}",
                    last_lines(&tail, 5)
                ));
            }
        };
        // Reap it when it ends (the watcher notices through its pid), and keep its stdout drained.
        tokio::spawn(async move {
            while let Ok(Some(_)) = lines.next_line().await {}
            let _ = child.wait().await;
        });
        Ok((pid, None, base_url))
    }

    /// A replica container from the job's image, with its environment's limits and the workspace volume;
    /// ready when `/health` answers on its bridge address.
    async fn start_container(
        &self,
        t: &Target,
        model: &Model,
        ordinal: i64,
        image: &str,
        environment_id: i64,
        gpu: Option<u32>,
    ) -> Result<(Option<i64>, Option<String>, String), String> {
        let docker = self.engine.docker().await.map_err(|e| e.to_string())?;
        let limits = environment_limits(&self.db, &docker, environment_id).await?;
        let name = labels::container_name(
            &self.engine.instance,
            &["endpoint", &t.id.to_string(), &ordinal.to_string()],
        );
        docker.remove(&name).await.map_err(|e| e.to_string())?;
        let mut cmd = vec!["paddock".to_string()];
        cmd.extend(Self::serve_args(
            t,
            format!("{}/{}", containers::build::STORE_DIR, model.path),
            &format!("0.0.0.0:{CONTAINER_PORT}"),
        ));
        let request = ProvisionRequest {
            name: name.clone(),
            image: image.to_string(),
            workspace: t.workspace_id.to_string(),
            environment: environment_id.to_string(),
            instance: self.engine.instance.clone(),
            extra_labels: [("paddock.endpoint".to_string(), t.id.to_string())].into(),
            limits,
            gpu_device_ids: gpu.iter().map(u32::to_string).collect(),
            volume: volume_name(&self.engine, t.workspace_id, DEFAULT_VOLUME),
            network: Some(network_name(&self.engine, t.workspace_id)),
            volume_dir: volume_dir(&self.engine, t.workspace_id, DEFAULT_VOLUME)
                .map_err(|e| e.to_string())?,
            store_dir: store_dir(&self.engine, t.workspace_id).map_err(|e| e.to_string())?,
            cmd: Some(cmd),
            env: Vec::new(),
        };
        docker
            .provision(&request)
            .await
            .map_err(|e| format!("starting the replica container: {e}"))?;
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            let status = docker.status(&name).await.map_err(|e| e.to_string())?;
            if !status.is_running() {
                let tail = docker.logs_tail(&name, 5).await.unwrap_or_default();
                let _ = docker.remove(&name).await;
                return Err(format!(
                    "replica {ordinal} did not start ({status:?}): {}",
                    last_lines(&tail, 5)
                ));
            }
            if let Ok(Some(ip)) = docker.ip_address(&name).await {
                let base_url = format!("http://{ip}:{CONTAINER_PORT}");
                if healthy(&client, &base_url).await {
                    return Ok((None, Some(name), base_url));
                }
            }
            if tokio::time::Instant::now() > deadline {
                let _ = docker.remove(&name).await;
                return Err(format!(
                    "replica {ordinal} was not ready within {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn replica_failed(&self, replica_id: i64, message: &str) {
        let _ = sqlx::query("UPDATE endpoint_replicas SET status = 'failed', pid = NULL, last_error = ? WHERE id = ?")
            .bind(message)
            .bind(replica_id)
            .execute(&self.db)
            .await;
    }

    /// Whether a replica's process or container still runs (when Docker cannot say: assumed yes).
    async fn alive(&self, r: &Replica) -> bool {
        if let Some(name) = &r.container {
            return match self.engine.docker().await {
                Ok(docker) => match docker.status(name).await {
                    Ok(status) => status.is_running(),
                    Err(e) => e.is_unreachable(),
                },
                Err(_) => true,
            };
        }
        r.pid.is_some_and(is_alive)
    }

    /// Takes `replicas` out of service: out of the route, drained of the requests they are answering,
    /// stopped, their GPUs released and their rows removed.
    async fn retire(&self, t: &Target, replicas: &[Replica]) {
        if replicas.is_empty() {
            return;
        }
        let ids: Vec<i64> = replicas.iter().map(|r| r.id).collect();
        for id in &ids {
            let _ = sqlx::query("UPDATE endpoint_replicas SET status = 'stopped' WHERE id = ?")
                .bind(id)
                .execute(&self.db)
                .await;
        }
        let leaving: Vec<Arc<Backend>> = self
            .gateway
            .backends(&t.slug)
            .await
            .into_iter()
            .filter(|b| {
                replicas
                    .iter()
                    .any(|r| r.base_url.as_deref() == Some(b.base_url.as_str()))
            })
            .collect();
        self.refresh_route(t).await;
        // A request that picked a backend just before the route changed is counted a moment later.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let drained = tokio::time::Instant::now() + REQUEST_TIMEOUT;
        while leaving
            .iter()
            .any(|b| b.outstanding.load(Ordering::SeqCst) > 0)
            && tokio::time::Instant::now() < drained
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        futures_util::future::join_all(replicas.iter().map(|r| self.stop(r))).await;
        for id in ids {
            self.release_gpu(id).await;
            let _ = sqlx::query("DELETE FROM endpoint_replicas WHERE id = ?")
                .bind(id)
                .execute(&self.db)
                .await;
        }
    }

    /// Stops one replica: SIGTERM (serve-model finishes what it is answering), SIGKILL after the grace.
    async fn stop(&self, r: &Replica) {
        if let Some(name) = &r.container {
            if let Ok(docker) = self.engine.docker().await {
                let _ = docker.stop(name, STOP_GRACE.as_secs() as i32).await;
                if let Err(e) = docker.remove(name).await {
                    tracing::warn!(container = %name, error = %e, "could not remove a replica container");
                }
            }
            return;
        }
        let Some(pid) = r.pid else { return };
        signal(pid, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while is_alive(pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if is_alive(pid) {
            signal(pid, libc::SIGKILL);
        }
    }

    /// Stops every replica of the endpoint (undeploy, delete, deploy again).
    pub async fn stop_replicas(&self, endpoint_id: i64) {
        let Ok(Some(t)) = self.target(endpoint_id).await else {
            // Deleted: its rows are gone with it, so only the gateway's route can be left.
            return;
        };
        let replicas = self.replicas(endpoint_id).await;
        self.retire(&t, &replicas).await;
    }

    /// Watches a ready endpoint: restarts crashed replicas with back-off and keeps the route current.
    pub fn spawn_watch(self: &Arc<Self>, endpoint_id: i64) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut backoff: HashMap<i64, (Duration, tokio::time::Instant)> = HashMap::new();
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let lock = me.lock(endpoint_id);
                // A deployment or change is replacing the replicas; look again later.
                let Ok(_held) = lock.try_lock() else { continue };
                let Ok(Some(t)) = me.target(endpoint_id).await else {
                    return;
                };
                if t.status != "ready" {
                    return;
                }
                let mut changed = false;
                for r in me.replicas(endpoint_id).await {
                    if r.status == "stopped" || (r.status == "ready" && me.alive(&r).await) {
                        continue;
                    }
                    let now = tokio::time::Instant::now();
                    let (delay, due) = backoff
                        .get(&r.ordinal)
                        .copied()
                        .unwrap_or((Duration::from_secs(1), now));
                    if now < due {
                        continue;
                    }
                    changed = true;
                    if r.status == "ready" {
                        tracing::warn!(
                            endpoint_id,
                            ordinal = r.ordinal,
                            "a replica exited; restarting it"
                        );
                        me.replica_failed(r.id, "the replica exited; restarting")
                            .await;
                        me.refresh_route(&t).await;
                    }
                    me.stop(&r).await;
                    let _ = sqlx::query(
                        "UPDATE endpoint_replicas SET restarts = restarts + 1 WHERE id = ?",
                    )
                    .bind(r.id)
                    .execute(&me.db)
                    .await;
                    let started = match me.model(t.checkpoint_id).await {
                        Ok(model) => me.start_replica(&t, &model, r.ordinal).await,
                        Err(e) => Err(e),
                    };
                    match started {
                        Ok(_) => {
                            backoff.remove(&r.ordinal);
                        }
                        Err(e) => {
                            tracing::warn!(endpoint_id, ordinal = r.ordinal, error = %e, "replica restart failed");
                            backoff.insert(r.ordinal, ((delay * 2).min(MAX_BACKOFF), now + delay));
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

    /// After a restart: ready endpoints re-attach to replicas that still answer (the watcher replaces the
    /// rest, and drops what an interrupted change had started); endpoints that were starting deploy again.
    pub async fn recover(self: &Arc<Self>) {
        self.remove_orphan_containers().await;
        let targets: Vec<Target> =
            sqlx::query_as(&format!("{TARGET} WHERE status IN ('starting', 'ready')"))
                .fetch_all(&self.db)
                .await
                .unwrap_or_default();
        let client = reqwest::Client::new();
        for t in targets {
            if t.status == "starting" {
                self.spawn_deploy(t.id);
                continue;
            }
            let _ = sqlx::query("UPDATE endpoints SET status_message = NULL WHERE id = ?")
                .bind(t.id)
                .execute(&self.db)
                .await;
            let replicas = self.replicas(t.id).await;
            let (interrupted, kept): (Vec<Replica>, Vec<Replica>) = replicas
                .into_iter()
                .partition(|r| matches!(r.status.as_str(), "starting" | "stopped"));
            self.retire(&t, &interrupted).await;
            for r in kept {
                let answering = match &r.base_url {
                    Some(url) => self.alive(&r).await && healthy(&client, url).await,
                    None => false,
                };
                if !answering {
                    self.stop(&r).await;
                    self.replica_failed(r.id, "not answering after a server restart; restarting")
                        .await;
                }
            }
            self.refresh_route(&t).await;
            self.spawn_watch(t.id);
        }
    }

    /// Removes this installation's replica containers that no replica row names: an endpoint deleted, or
    /// a replica retired, by a server that died before its container was gone. Nothing routes to them,
    /// and they would hold memory (and GPUs) forever. Runs before anything is deployed again, so no
    /// container being started can be mistaken for one.
    async fn remove_orphan_containers(&self) {
        let Ok(docker) = self.engine.docker().await else {
            return; // no Docker: no containers
        };
        let filter = containers::reconcile::ListFilter {
            instance: Some(self.engine.instance.clone()),
            name_prefix: Some(labels::container_name(
                &self.engine.instance,
                &["endpoint", ""],
            )),
            workspace: None,
        };
        let found = match docker.list_managed(&filter).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list replica containers");
                return;
            }
        };
        let known: HashSet<String> = match sqlx::query_scalar(
            "SELECT container FROM endpoint_replicas WHERE container IS NOT NULL",
        )
        .fetch_all(&self.db)
        .await
        {
            Ok(names) => names.into_iter().collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read replica containers");
                return;
            }
        };
        for container in found.iter().filter(|c| !known.contains(&c.name)) {
            match docker.remove(&container.name).await {
                Ok(()) => {
                    tracing::info!(container = %container.name, "removed an orphaned replica container")
                }
                Err(e) => {
                    tracing::warn!(container = %container.name, error = %e, "cannot remove an orphaned replica container")
                }
            }
        }
    }
}

async fn healthy(client: &reqwest::Client, base_url: &str) -> bool {
    client
        .get(format!("{base_url}/health"))
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

fn parity_failure(report: &serde_json::Value) -> String {
    format!(
        "the parity gate failed: {}",
        report["message"]
            .as_str()
            .unwrap_or("served logits differ from the trainer's")
    )
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
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

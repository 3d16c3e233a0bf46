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

use contracts::ids::{CheckpointId, EndpointId, EnvironmentId, WorkspaceId};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use containers::labels;
use sqlx::SqlitePool;

use super::gateway::{Backend, Gateway, Route, REQUEST_TIMEOUT};
use super::parity;
use super::scaler::Scaler;
use super::status::{self, EndpointReason, ReplicaReason};
use crate::db::write_tx;
use crate::engine::Engine;
use crate::executor::{
    healthy, Executor, ExecutorKind, Executors, Handle, InImage, Service, Stop, Unit,
};
use crate::gpus::{self, Holder};
use crate::storage::Storage;
use crate::transitions::Machine;
use contracts::error::{internal, AppError};
use contracts::serving::ParityReport;
use contracts::types::{EndpointStatus, GpuSpec};

/// How long a replica may take to load and warm up its model.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How often the watcher checks the replicas.
const WATCH_EVERY: Duration = Duration::from_secs(2);
/// Longest back-off between restarts of a crashing replica.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long a stopping replica gets to finish what it is answering.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Everything the replica machinery needs.
pub struct Deployer {
    pub db: SqlitePool,
    pub storage: Arc<Storage>,
    pub engine: Arc<Engine>,
    pub gateway: Arc<Gateway>,
    /// Where replicas run: a container of the job's image when Docker is there, a local process otherwise.
    executors: Executors,
    /// Per endpoint: held while its serving set changes.
    locks: Mutex<HashMap<EndpointId, Arc<tokio::sync::Mutex<()>>>>,
    /// Endpoints with a user's change (rollout or scaling) under way; a second one is refused.
    changing: Mutex<HashSet<EndpointId>>,
}

/// What an endpoint should serve, as the replica machinery needs it.
#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Target {
    pub id: EndpointId,
    pub workspace_id: WorkspaceId,
    pub slug: String,
    pub replicas: i64,
    pub max_batch_tokens: i64,
    pub max_wait_ms: i64,
    pub device: String,
    pub precision: String,
    pub status: EndpointStatus,
    pub checkpoint_id: CheckpointId,
    /// The cluster its replicas run on (`None`: this server), and its partition there.
    pub cluster: Option<String>,
    pub partition: Option<String>,
    /// How it sizes itself, when it does.
    pub autoscale: Option<sqlx::types::Json<contracts::scaling::Autoscale>>,
    /// The canary under way, if any.
    pub canary: Option<sqlx::types::Json<contracts::scaling::Canary>>,
}

impl Target {
    /// The checkpoint a replica serves: the canary's for a canary replica.
    pub(crate) fn checkpoint_of(&self, canary: bool) -> CheckpointId {
        match (&self.canary, canary) {
            (Some(c), true) => c.0.spec.checkpoint_id,
            _ => self.checkpoint_id,
        }
    }
}

const TARGET: &str = "SELECT id, workspace_id, slug, replicas, max_batch_tokens, max_wait_ms, device, precision, status, checkpoint_id, cluster, partition, autoscale, canary FROM endpoints";

/// A checkpoint to serve: its files, and the image of the job that wrote it.
#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Model {
    pub path: String,
    pub image_id: Option<String>,
    pub environment_id: Option<EnvironmentId>,
}

/// One recorded replica.
#[derive(sqlx::FromRow, Clone)]
pub(crate) struct Replica {
    id: i64,
    ordinal: i64,
    pub status: EndpointStatus,
    pid: Option<i64>,
    container: Option<String>,
    /// Its endpoint's cluster, which its batch job runs on.
    cluster: Option<String>,
    cluster_job: Option<String>,
    base_url: Option<String>,
    token: Option<String>,
    /// Whether it serves the endpoint's canary.
    pub canary: bool,
}

impl Replica {
    fn handle(&self) -> Option<Handle> {
        Handle::of(
            self.pid,
            self.container.as_deref(),
            self.cluster.as_deref(),
            self.cluster_job.as_deref(),
        )
    }
}

const REPLICA: &str =
    "SELECT r.id, r.ordinal, r.status, r.pid, r.container, e.cluster, r.cluster_job, r.base_url, r.token, r.canary
     FROM endpoint_replicas r JOIN endpoints e ON e.id = r.endpoint_id WHERE r.endpoint_id = ?";

/// A user's change to a ready endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Change {
    pub replicas: i64,
    /// Roll out this checkpoint (`None`: keep the current one and only scale).
    pub checkpoint_id: Option<CheckpointId>,
}

impl Deployer {
    /// Replicas run by `executors`: the server's, the same its jobs run by (with its cluster, if it
    /// has one).
    pub fn new(
        db: SqlitePool,
        storage: Arc<Storage>,
        engine: Arc<Engine>,
        gateway: Arc<Gateway>,
        executors: Executors,
    ) -> Self {
        Deployer {
            executors,
            db,
            storage,
            engine,
            gateway,
            locks: Default::default(),
            changing: Default::default(),
        }
    }

    /// Refuses, before anything is recorded, a cluster this server does not have, a partition it does
    /// not have or that names no cluster, and one whose nodes do not see the data directory or, for
    /// replicas on `device` cuda (one GPU each), have no driver for Paddock's CUDA.
    pub(crate) async fn check_cluster(
        &self,
        cluster: Option<&str>,
        partition: Option<&str>,
        device: &str,
    ) -> Result<(), AppError> {
        let gpus = u32::from(device == "cuda");
        match cluster {
            Some(name) => self
                .executors
                .runs_on(name, partition, ExecutorKind::Local, gpus)
                .await
                .map(drop),
            None if partition.is_some() => Err(crate::executor::partition_without_cluster()),
            None => Ok(()),
        }
    }

    pub(crate) fn lock(&self, endpoint_id: EndpointId) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(endpoint_id)
            .or_default()
            .clone()
    }

    pub(crate) async fn target(&self, endpoint_id: EndpointId) -> Result<Option<Target>, AppError> {
        Ok(
            sqlx::query_as::<_, Target>(&format!("{TARGET} WHERE id = ?"))
                .bind(endpoint_id)
                .fetch_optional(&self.db)
                .await?,
        )
    }

    pub(crate) async fn model(&self, checkpoint_id: CheckpointId) -> Result<Model, String> {
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
    pub(crate) fn model_dir(&self, workspace_id: WorkspaceId, model: &Model) -> PathBuf {
        self.storage.store_dir(workspace_id).join(&model.path)
    }

    pub(crate) async fn replicas(&self, endpoint_id: EndpointId) -> Vec<Replica> {
        sqlx::query_as::<_, Replica>(&format!("{REPLICA} ORDER BY ordinal"))
            .bind(endpoint_id)
            .fetch_all(&self.db)
            .await
            .unwrap_or_default()
    }

    /// Deploys in the background: replicas, parity gate, route, then watching.
    pub fn spawn_deploy(self: &Arc<Self>, endpoint_id: EndpointId) {
        let me = self.clone();
        tokio::spawn(async move {
            let lock = me.lock(endpoint_id);
            let _held = lock.lock().await;
            if let Err(message) = me.deploy(endpoint_id).await {
                tracing::warn!(%endpoint_id, %message, "deployment failed");
                // Only from starting: an endpoint undeployed meanwhile stays stopped.
                if let Ok(mut conn) = me.db.acquire().await {
                    let _ = status::endpoint(
                        &mut conn,
                        endpoint_id,
                        EndpointStatus::Failed,
                        EndpointReason::DeployFailed,
                        Some(&message),
                    )
                    .await;
                }
            }
        });
    }

    async fn deploy(self: &Arc<Self>, endpoint_id: EndpointId) -> Result<(), String> {
        let t = self
            .target(endpoint_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the endpoint was deleted")?;
        // Whatever an earlier deployment left.
        let leftovers = self.replicas(endpoint_id).await;
        self.retire(&t, &leftovers).await;
        let model = self.model(t.checkpoint_id).await?;
        let started = self.start_many(&t, &model, t.replicas, false).await?;
        let report = self.parity_of(&t, &model, &started).await;
        sqlx::query("UPDATE endpoints SET parity_report = ? WHERE id = ?")
            .bind(serde_json::to_string(&report).map_err(|e| e.to_string())?)
            .bind(endpoint_id)
            .execute(&self.db)
            .await
            .map_err(|e| e.to_string())?;
        if !report.passed {
            self.retire(&t, &started).await;
            return Err(parity_failure(&report));
        }
        let ready = EndpointStatus::Ready;
        let moved =
            status::endpoint_afresh_in(&self.db, endpoint_id, ready, EndpointReason::Deployed)
                .await
                .map_err(|e| e.to_string())?;
        if moved.is_none() {
            // Undeployed while starting.
            self.retire(&t, &started).await;
            return Ok(());
        }
        self.refresh_route(&t).await;
        self.spawn_watch(endpoint_id);
        Ok(())
    }

    /// The parity gate against the first of `started`.
    pub(crate) async fn parity_of(
        &self,
        t: &Target,
        model: &Model,
        started: &[Replica],
    ) -> ParityReport {
        let first = started.first();
        let url = first.and_then(|r| r.base_url.clone()).unwrap_or_default();
        let token = first.and_then(|r| r.token.clone()).unwrap_or_default();
        parity::check(
            &self.storage,
            &self.db,
            t.id,
            &self.model_dir(t.workspace_id, model),
            &url,
            &token,
            &t.precision,
        )
        .await
    }

    /// Starts a user's change in the background; `false` when another one is still under way.
    pub(crate) fn spawn_change(self: &Arc<Self>, endpoint_id: EndpointId, change: Change) -> bool {
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
                    tracing::warn!(%endpoint_id, %message, "endpoint change failed");
                    Some(message)
                }
            };
            let _ = sqlx::query("UPDATE endpoints SET status_message = ?, pending_change = NULL, updated_at = ? WHERE id = ? AND status = 'ready'")
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
    async fn change(
        self: &Arc<Self>,
        endpoint_id: EndpointId,
        change: Change,
    ) -> Result<(), String> {
        let Some(t) = self.target(endpoint_id).await.map_err(|e| e.to_string())? else {
            return Ok(());
        };
        if t.status != EndpointStatus::Ready {
            return Ok(());
        }
        let old = self.replicas(endpoint_id).await;
        if let Some(checkpoint_id) = change.checkpoint_id.filter(|c| *c != t.checkpoint_id) {
            let model = self.model(checkpoint_id).await?;
            let started = self
                .start_many(&t, &model, change.replicas, false)
                .await
                .map_err(|e| format!("the rollout of checkpoint {checkpoint_id} failed: {e}"))?;
            let report = self.parity_of(&t, &model, &started).await;
            if !report.passed {
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
                .bind(serde_json::to_string(&report).map_err(|e| e.to_string())?)
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
        let live: Vec<Replica> = old
            .into_iter()
            .filter(|r| r.status != EndpointStatus::Stopped)
            .collect();
        let have = live.len() as i64;
        if change.replicas > have {
            let model = self.model(t.checkpoint_id).await?;
            self.start_many(&t, &model, change.replicas - have, false)
                .await?;
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

    /// Starts `count` replicas of `model` side by side (new ordinals; `canary`: as the canary's); all or
    /// none: when one fails, the others are stopped again.
    pub(crate) async fn start_many(
        &self,
        t: &Target,
        model: &Model,
        count: i64,
        canary: bool,
    ) -> Result<Vec<Replica>, String> {
        let next: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(ordinal) + 1, 0) FROM endpoint_replicas WHERE endpoint_id = ?",
        )
        .bind(t.id)
        .fetch_one(&self.db)
        .await
        .map_err(|e| e.to_string())?;
        let results = futures_util::future::join_all(
            (next..next + count).map(|ordinal| self.start_replica(t, model, ordinal, canary)),
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
        canary: bool,
    ) -> Result<Replica, String> {
        let id = self
            .claim_replica(t.id, ordinal, canary)
            .await
            .map_err(|e| format!("replica {ordinal}: {e}"))?;
        // Its own bearer token: only the gateway and the parity gate, which hold it, can call it.
        let token = new_token();
        let started = async {
            // On a cluster its scheduler picks the GPU (GRES); here one is leased from the inventory.
            let cluster = match &t.cluster {
                Some(name) => Some(self.executors.cluster(name, ExecutorKind::Local).ok_or_else(|| {
                    format!("this server no longer has the cluster {name:?} its replicas run on")
                })?),
                None => None,
            };
            let gpu = match cluster {
                Some(_) => {
                    self.cluster_gpu_within_quota(t, id).await?;
                    None
                }
                None => self.lease_gpu(t, id).await?,
            };
            // On a cluster replicas run natively (the `paddock` runtime on the nodes), as jobs do.
            let (kind, image) = match (&model.image_id, model.environment_id) {
                (Some(image), Some(environment_id))
                    if cluster.is_none() && self.engine.docker().await.is_ok() =>
                {
                    (
                        ExecutorKind::Docker,
                        Some(InImage {
                            image_id: image.clone(),
                            environment_id,
                            env: Vec::new(),
                        }),
                    )
                }
                _ => (ExecutorKind::Local, None),
            };
            let runs_on = cluster.unwrap_or_else(|| self.executors.get(kind));
            let placement = match &t.cluster {
                Some(name) => crate::admin::cluster_placement(
                    &self.db,
                    t.workspace_id,
                    name,
                    t.partition.clone(),
                )
                .await
                .map_err(|e| e.to_string())?,
                None => Default::default(),
            };
            let service = Service {
                unit: Unit::Replica {
                    endpoint: t.id,
                    ordinal,
                },
                token: token.clone(),
                workspace_id: t.workspace_id,
                args: Self::serve_args(t, runs_on.as_ref()),
                model: model.path.clone(),
                devices: gpu.into_iter().collect(),
                gpus: u32::from(t.device == "cuda"),
                log: self
                    .storage
                    .data_dir
                    .join("endpoints")
                    .join(t.id.to_string())
                    .join(format!("replica-{ordinal}.log")),
                image,
                start_timeout: START_TIMEOUT,
                placement,
            };
            runs_on
                .serve(service)
                .await
                .map_err(|e| format!("replica {ordinal}: {e}"))
        }
        .await;
        match started {
            Ok(served) => {
                let (pid, container, cluster_job) = (
                    served.handle.pid(),
                    served.handle.container(),
                    served.handle.cluster_job(),
                );
                let moved = async {
                    let mut tx = write_tx(&self.db).await?;
                    let moved = status::Replica::transition(
                        &mut tx,
                        id,
                        EndpointStatus::Ready,
                        ReplicaReason::Started,
                        None,
                    )
                    .await?;
                    sqlx::query("UPDATE endpoint_replicas SET pid = ?, container = ?, cluster_job = ?, base_url = ?, token = ?, last_error = NULL WHERE id = ?")
                        .bind(pid)
                        .bind(container)
                        .bind(cluster_job)
                        .bind(&served.base_url)
                        .bind(&token)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok::<_, AppError>(moved)
                }
                .await;
                if !matches!(moved, Ok(Some(_))) {
                    // Retired while it started (the endpoint was undeployed): nothing will route to it.
                    self.executors
                        .stop(&served.handle, Stop::Within(STOP_GRACE))
                        .await;
                    self.executors.clean_up(&served.handle).await;
                    self.release_gpu(id).await;
                    return Err(match moved {
                        Err(e) => e.to_string(),
                        Ok(_) => format!("replica {ordinal} was retired while it started"),
                    });
                }
                Ok(Replica {
                    id,
                    ordinal,
                    status: EndpointStatus::Ready,
                    pid,
                    container: container.map(str::to_string),
                    cluster: t.cluster.clone(),
                    cluster_job: cluster_job.map(str::to_string),
                    base_url: Some(served.base_url),
                    token: Some(token),
                    canary,
                })
            }
            Err(message) => {
                self.release_gpu(id).await;
                self.replica_failed(id, ReplicaReason::StartFailed, &message)
                    .await;
                Err(message)
            }
        }
    }

    /// One GPU for a replica serving on `cuda`, from the inventory shared with environments and jobs.
    async fn lease_gpu(&self, t: &Target, replica_id: i64) -> Result<Option<String>, String> {
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
        Ok(leased.into_iter().next().map(|g| g.uuid))
    }

    /// A replica on `cuda` on a cluster holds one of its GPUs, which counts against its workspace's
    /// quota with the GPUs held here; it is counted already, as a starting replica.
    async fn cluster_gpu_within_quota(&self, t: &Target, replica_id: i64) -> Result<(), String> {
        if t.device != "cuda" {
            return Ok(());
        }
        let mut conn = self.db.acquire().await.map_err(|e| e.to_string())?;
        gpus::within_quota(&mut conn, Holder::EndpointReplica(replica_id), 0)
            .await
            .map_err(|e| e.to_string())
    }

    async fn release_gpu(&self, replica_id: i64) {
        if let Ok(mut conn) = self.db.acquire().await {
            let _ = gpus::release(&mut conn, Holder::EndpointReplica(replica_id)).await;
        }
    }

    /// `serve-model`'s arguments but the model's folder and the address, which the executor chooses.
    fn serve_args(t: &Target, runs_on: &dyn Executor) -> Vec<String> {
        let device = match t.device.as_str() {
            "cuda" => runs_on.gpu_device(),
            _ => "cpu",
        };
        // Rows per forward pass, after sorting a batch by length: on CPU small sub-batches waste less
        // padding on mixed-length requests; a GPU wants wide ones.
        let rows_per_pass = if device == "cuda" { "64" } else { "16" };
        [
            "serve-model",
            "--max-batch-tokens",
            &t.max_batch_tokens.to_string(),
            "--max-wait-ms",
            &t.max_wait_ms.to_string(),
            "--device",
            device,
            "--precision",
            &t.precision,
            "--batch-size",
            rows_per_pass,
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// Records replica `id` (row id) as starting, a new row for a new ordinal or a restart of a failed
    /// one; returns the row id.
    async fn claim_replica(
        &self,
        endpoint_id: EndpointId,
        ordinal: i64,
        canary: bool,
    ) -> Result<i64, AppError> {
        let mut tx = write_tx(&self.db).await?;
        let existing: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM endpoint_replicas WHERE endpoint_id = ? AND ordinal = ?",
        )
        .bind(endpoint_id)
        .bind(ordinal)
        .fetch_optional(&mut *tx)
        .await?;
        let id = match existing {
            Some(id) => {
                let restarted = status::Replica::transition(
                    &mut tx,
                    id,
                    EndpointStatus::Starting,
                    ReplicaReason::Restarted,
                    None,
                )
                .await?;
                if restarted.is_none() {
                    return Err(internal("restarting a replica", "it has not failed"));
                }
                sqlx::query("UPDATE endpoint_replicas SET pid = NULL, container = NULL, cluster_job = NULL, base_url = NULL, token = NULL, started_at = ? WHERE id = ?")
                    .bind(crate::now())
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                id
            }
            None => {
                sqlx::query_scalar(
                    "INSERT INTO endpoint_replicas (endpoint_id, ordinal, status, status_reason, started_at, canary)
                     VALUES (?, ?, 'starting', 'created', ?, ?) RETURNING id",
                )
                .bind(endpoint_id)
                .bind(ordinal)
                .bind(crate::now())
                .bind(canary)
                .fetch_one(&mut *tx)
                .await?
            }
        };
        tx.commit().await?;
        Ok(id)
    }

    /// Records that replica `replica_id` failed (it did not start, exited, stopped answering); the
    /// watcher starts it again.
    async fn replica_failed(&self, replica_id: i64, reason: ReplicaReason, message: &str) {
        let failed = async {
            let mut tx = write_tx(&self.db).await?;
            status::Replica::transition(
                &mut tx,
                replica_id,
                EndpointStatus::Failed,
                reason,
                Some(message),
            )
            .await?;
            sqlx::query("UPDATE endpoint_replicas SET pid = NULL WHERE id = ?")
                .bind(replica_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok::<_, AppError>(())
        }
        .await;
        if let Err(e) = failed {
            tracing::warn!(replica_id, error = %e, "could not record a failed replica");
        }
    }

    /// Whether a replica's process or container still runs (when its executor cannot say: assumed yes).
    async fn alive(&self, r: &Replica) -> bool {
        match r.handle() {
            Some(handle) => self.executors.is_running(&handle).await.unwrap_or(true),
            None => false,
        }
    }

    /// Takes `replicas` out of service: out of the route, drained of the requests they are answering,
    /// stopped, their GPUs released and their rows removed.
    pub(crate) async fn retire(&self, t: &Target, replicas: &[Replica]) {
        if replicas.is_empty() {
            return;
        }
        let ids: Vec<i64> = replicas.iter().map(|r| r.id).collect();
        if let Ok(mut conn) = self.db.acquire().await {
            for id in &ids {
                let _ = status::Replica::transition(
                    &mut conn,
                    *id,
                    EndpointStatus::Stopped,
                    ReplicaReason::Retired,
                    None,
                )
                .await;
            }
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

    /// Stops one replica: SIGTERM (serve-model finishes what it is answering), killed after the grace.
    async fn stop(&self, r: &Replica) {
        if let Some(handle) = r.handle() {
            self.executors.stop(&handle, Stop::Within(STOP_GRACE)).await;
            self.executors.clean_up(&handle).await;
        }
    }

    /// Stops every replica of the endpoint (undeploy, delete, deploy again).
    pub async fn stop_replicas(&self, endpoint_id: EndpointId) {
        let Ok(Some(t)) = self.target(endpoint_id).await else {
            // Deleted: its rows are gone with it, so only the gateway's route can be left.
            return;
        };
        let replicas = self.replicas(endpoint_id).await;
        self.retire(&t, &replicas).await;
    }

    /// Watches a ready endpoint: restarts crashed replicas with back-off and keeps the route current.
    pub fn spawn_watch(self: &Arc<Self>, endpoint_id: EndpointId) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut backoff: HashMap<i64, (Duration, tokio::time::Instant)> = HashMap::new();
            let mut scaler = Scaler::new();
            let bell = scaler.bell.clone();
            loop {
                // A call to an endpoint at zero replicas rings the bell: no need to wait for the tick.
                tokio::select! {
                    _ = tokio::time::sleep(WATCH_EVERY) => {}
                    _ = bell.notified() => {}
                }
                let lock = me.lock(endpoint_id);
                // A deployment or change is replacing the replicas; look again later.
                let Ok(_held) = lock.try_lock() else { continue };
                let Ok(Some(t)) = me.target(endpoint_id).await else {
                    return;
                };
                if t.status != EndpointStatus::Ready {
                    return;
                }
                let mut changed = false;
                for r in me.replicas(endpoint_id).await {
                    let serving = r.status == EndpointStatus::Ready && me.alive(&r).await;
                    if r.status == EndpointStatus::Stopped || serving {
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
                    match r.status {
                        EndpointStatus::Ready => {
                            tracing::warn!(
                                %endpoint_id,
                                ordinal = r.ordinal,
                                "a replica exited; restarting it"
                            );
                            me.replica_failed(
                                r.id,
                                ReplicaReason::Exited,
                                "the replica exited; restarting",
                            )
                            .await;
                            me.refresh_route(&t).await;
                        }
                        // Left starting by an interrupted start.
                        EndpointStatus::Starting => {
                            me.replica_failed(
                                r.id,
                                ReplicaReason::Interrupted,
                                "interrupted while starting; restarting",
                            )
                            .await;
                        }
                        _ => {}
                    }
                    me.stop(&r).await;
                    let _ = sqlx::query(
                        "UPDATE endpoint_replicas SET restarts = restarts + 1 WHERE id = ?",
                    )
                    .bind(r.id)
                    .execute(&me.db)
                    .await;
                    let started = match me.model(t.checkpoint_of(r.canary)).await {
                        Ok(model) => me.start_replica(&t, &model, r.ordinal, r.canary).await,
                        Err(e) => Err(e),
                    };
                    match started {
                        Ok(_) => {
                            backoff.remove(&r.ordinal);
                        }
                        Err(e) => {
                            tracing::warn!(%endpoint_id, ordinal = r.ordinal, error = %e, "replica restart failed");
                            backoff.insert(r.ordinal, ((delay * 2).min(MAX_BACKOFF), now + delay));
                        }
                    }
                }
                if changed {
                    me.refresh_route(&t).await;
                }
                let (canary, live): (Vec<Replica>, Vec<Replica>) = me
                    .replicas(endpoint_id)
                    .await
                    .into_iter()
                    .filter(|r| r.status != EndpointStatus::Stopped)
                    .partition(|r| r.canary);
                scaler.tick(&me, &t, &live).await;
                if !canary.is_empty() {
                    super::canary::judge(&me, &t).await;
                }
            }
        });
    }

    /// Grows the endpoint from `current` to `wanted` replicas within its workspace's caps: the new ones
    /// warm up before they join the route. `Err`: why not (a cap, the GPU quota, a replica that did not
    /// start), in words for the page.
    pub(crate) async fn add_replicas(
        &self,
        t: &Target,
        current: u32,
        wanted: u32,
    ) -> Result<(), String> {
        let fits = async {
            let mut conn = self.db.acquire().await?;
            super::super::caps::replicas_fit(
                &mut conn,
                t.workspace_id,
                Some(t.id),
                i64::from(wanted),
            )
            .await
        }
        .await;
        if let Err(e) = fits {
            return Err(match e {
                AppError::Internal => "the database did not answer".to_string(),
                refused => refused.to_string(),
            });
        }
        let model = self.model(t.checkpoint_id).await?;
        self.start_many(t, &model, i64::from(wanted.saturating_sub(current)), false)
            .await?;
        self.refresh_route(t).await;
        Ok(())
    }

    /// Points the gateway at the endpoint's ready replicas, stable and canary, with the canary's share
    /// (keeping in-flight counts of unchanged ones).
    pub(crate) async fn refresh_route(&self, t: &Target) {
        let ready: Vec<(String, String, bool)> = sqlx::query_as(
            "SELECT base_url, COALESCE(token, ''), canary FROM endpoint_replicas WHERE endpoint_id = ? AND status = 'ready' AND base_url IS NOT NULL ORDER BY ordinal",
        )
        .bind(t.id)
        .fetch_all(&self.db)
        .await
        .unwrap_or_default();
        // Read now, not from `t`: a step or a pause may have changed it since.
        let canary: Option<sqlx::types::Json<contracts::scaling::Canary>> =
            sqlx::query_scalar("SELECT canary FROM endpoints WHERE id = ?")
                .bind(t.id)
                .fetch_optional(&self.db)
                .await
                .ok()
                .flatten()
                .flatten();
        let current = self.gateway.backends(&t.slug).await;
        let mut route = Route {
            canary_percent: canary.map_or(0, |c| c.0.share_percent()),
            ..Route::default()
        };
        for (url, token, is_canary) in ready {
            let backend = current
                .iter()
                .find(|b| b.base_url == url && b.token == token)
                .cloned()
                .unwrap_or_else(|| {
                    Arc::new(Backend {
                        base_url: url,
                        token,
                        outstanding: AtomicUsize::new(0),
                    })
                });
            match is_canary {
                true => route.canary.push(backend),
                false => route.stable.push(backend),
            }
        }
        self.gateway.set_route(&t.slug, route).await;
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
            if t.status == EndpointStatus::Starting {
                self.spawn_deploy(t.id);
                continue;
            }
            let _ = sqlx::query(
                "UPDATE endpoints SET status_message = NULL, pending_change = NULL WHERE id = ?",
            )
            .bind(t.id)
            .execute(&self.db)
            .await;
            super::canary::recover(self, &t).await;
            let replicas = self.replicas(t.id).await;
            let (interrupted, kept): (Vec<Replica>, Vec<Replica>) =
                replicas.into_iter().partition(|r| {
                    matches!(r.status, EndpointStatus::Starting | EndpointStatus::Stopped)
                });
            self.retire(&t, &interrupted).await;
            for r in kept {
                let answering = match &r.base_url {
                    Some(url) => self.alive(&r).await && healthy(&client, url).await,
                    None => false,
                };
                if !answering {
                    self.stop(&r).await;
                    self.replica_failed(
                        r.id,
                        ReplicaReason::Exited,
                        "not answering after a server restart; restarting",
                    )
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

/// A replica's bearer token: 32 random bytes, hex.
fn new_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

fn parity_failure(report: &ParityReport) -> String {
    format!("the parity gate failed: {}", report.message)
}

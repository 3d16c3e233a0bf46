//! Endpoints: checkpoints served over HTTP. Deploying creates the endpoint and starts its replicas in the
//! background (`replicas`); the parity gate decides whether it becomes ready; the gateway (`gateway`)
//! serves `POST /v1/endpoints/{slug}/predict` to holders of the endpoint's API keys. Viewers read; editors
//! and owners deploy, change, undeploy and manage keys. Every change is audited.
//!
//! # Layout
//! - this file: deploy, list, read, change (scale or move to another checkpoint, rolled out without
//!   dropping requests), undeploy, delete, the playground and the gateway's request path.
//! - [`keys`]: the endpoint's API keys.
//! - [`replicas`]: starting, watching, restarting and re-attaching `paddock serve-model` processes.
//! - [`canary`]: canary rollouts judged against the stable version, promoted or rolled back.
//! - [`scaler`]: autoscaling on load, down to zero replicas and back.
//! - [`history`]: what the endpoint decided by itself and what people changed in how it runs.
//! - [`status`]: the endpoint's and the replica's state machines.
//! - [`parity`]: the gate that compares served logits with the trainer's.
//! - [`gateway`]: keys, rate limits, load balancing and the traffic numbers.

pub mod canary;
pub mod gateway;
pub mod history;
pub mod keys;
pub mod parity;
pub mod replicas;
pub mod scaler;
pub mod status;

pub use keys::{create_key, revoke_key};

use contracts::ids::{CheckpointId, EndpointId, JobId, WorkspaceId};
use std::sync::Arc;
use std::time::Instant;

use contracts::scaling::{Autoscale, EndpointEvent};
use contracts::serving::{Answer, ErrorReply, Input, Pair, PredictReply, PredictRequest};
use contracts::task::Task;
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};

use super::access::{self, authorize};
use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;
use keys::keys_of;
use replicas::Deployer;
use status::EndpointReason;
use {crate::db::taken, contracts::error::internal};

pub use contracts::scaling::MAX_REPLICAS;

struct Row {
    id: EndpointId,
    workspace_id: WorkspaceId,
    slug: String,
    name: String,
    checkpoint_id: CheckpointId,
    job_id: JobId,
    replicas: i64,
    max_batch_tokens: i64,
    max_wait_ms: i64,
    device: String,
    precision: String,
    status: String,
    status_message: Option<String>,
    pending_change: Option<sqlx::types::Json<ChangeUnderWay>>,
    parity_report: Option<String>,
    cluster: Option<String>,
    partition: Option<String>,
    autoscale: Option<sqlx::types::Json<Autoscale>>,
    cold_start_ms: Option<i64>,
    canary: Option<sqlx::types::Json<contracts::scaling::Canary>>,
    created_at: String,
}

// `endpoint_rows!("WHERE …", args…)`: endpoints, with their checkpoint's job (see
// `db::row_query!`).
crate::db::row_query!(
    $ endpoint_rows,
    Row,
    r#"SELECT e.id AS "id!: contracts::ids::EndpointId", e.workspace_id AS "workspace_id: contracts::ids::WorkspaceId", e.slug, e.name,
        e.checkpoint_id AS "checkpoint_id: contracts::ids::CheckpointId", c.job_id AS "job_id: contracts::ids::JobId", e.replicas,
        e.max_batch_tokens, e.max_wait_ms, e.device, e.precision, e.status, e.status_message,
        e.pending_change AS "pending_change: sqlx::types::Json<contracts::types::ChangeUnderWay>", e.parity_report, e.cluster, e.partition,
        e.autoscale AS "autoscale: sqlx::types::Json<contracts::scaling::Autoscale>", e.cold_start_ms,
        e.canary AS "canary: sqlx::types::Json<contracts::scaling::Canary>", e.created_at
      FROM endpoints e JOIN checkpoints c ON c.id = e.checkpoint_id"#
);

impl Row {
    /// `actor`'s `action` on this endpoint, for the audit log.
    fn entry<'a>(&'a self, actor: &'a Actor, action: &'a str) -> Entry<'a> {
        Entry::in_workspace(actor, self.workspace_id, action, &self.slug)
    }

    async fn summary(&self, conn: &mut SqliteConnection) -> Result<EndpointSummary, AppError> {
        let ready: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM endpoint_replicas WHERE endpoint_id = ? AND status = 'ready'",
        )
        .bind(self.id)
        .fetch_one(conn)
        .await?;
        Ok(EndpointSummary {
            id: self.id,
            workspace_id: self.workspace_id,
            slug: self.slug.clone(),
            name: self.name.clone(),
            checkpoint_id: self.checkpoint_id,
            job_id: self.job_id,
            replicas: self.replicas as u32,
            ready_replicas: ready as u32,
            status: EndpointStatus::parse(&self.status)
                .ok_or_else(|| internal("stored endpoint status", &self.status))?,
            status_message: self.status_message.clone(),
            change: self.pending_change.as_ref().map(|c| c.0),
            cluster: self.cluster.clone(),
            autoscale: self.autoscale.as_ref().map(|a| a.0),
            cold_start_ms: self.cold_start_ms.map(|ms| ms as u64),
            created_at: self.created_at.clone(),
        })
    }
}

async fn row(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<Row, AppError> {
    endpoint_rows!(
        "WHERE e.workspace_id = ? AND e.id = ?",
        workspace_id,
        endpoint_id
    )
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)
}

/// Endpoint `endpoint_id`, in a write transaction for an editor or owner of its workspace.
async fn editing(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<(Transaction<'static, Sqlite>, Row), AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    Ok((tx, r))
}

pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<EndpointSummary>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows = endpoint_rows!("WHERE e.workspace_id = ? ORDER BY e.id DESC", workspace_id)
        .fetch_all(&mut *conn)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        out.push(r.summary(&mut conn).await?);
    }
    Ok(out)
}

pub async fn get(
    db: &SqlitePool,
    deployer: &Deployer,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<EndpointDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let r = row(&mut conn, workspace_id, endpoint_id).await?;
    type ReplicaRow = (
        i64,
        String,
        i64,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let replicas: Vec<ReplicaRow> = sqlx::query_as(
        "SELECT ordinal, status, restarts, last_error, started_at, cluster_job FROM endpoint_replicas WHERE endpoint_id = ? ORDER BY ordinal",
    )
    .bind(endpoint_id)
    .fetch_all(&mut *conn)
    .await?;
    let keys = keys_of(&mut conn, endpoint_id).await?;
    let task = checkpoint_task(&mut conn, r.checkpoint_id).await?;
    Ok(EndpointDetail {
        task,
        summary: r.summary(&mut conn).await?,
        spec: EndpointSpec {
            name: r.name.clone(),
            slug: Some(r.slug.clone()),
            checkpoint_id: r.checkpoint_id,
            replicas: r.replicas as u32,
            max_batch_tokens: r.max_batch_tokens as u32,
            max_wait_ms: r.max_wait_ms as u32,
            device: r.device.clone(),
            precision: r.precision.clone(),
            cluster: r.cluster.clone(),
            partition: r.partition.clone(),
            autoscale: r.autoscale.as_ref().map(|a| a.0),
        },
        replicas: replicas
            .into_iter()
            .map(
                |(ordinal, status, restarts, last_error, started_at, cluster_job)| {
                    EndpointReplica {
                        ordinal: ordinal as u32,
                        status: EndpointStatus::parse(&status).unwrap_or(EndpointStatus::Failed),
                        restarts: restarts as u32,
                        last_error,
                        started_at,
                        cluster_job,
                    }
                },
            )
            .collect(),
        keys,
        parity_report: r
            .parity_report
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok()),
        metrics: deployer.gateway.metrics(endpoint_id),
        history: history::history(&mut conn, endpoint_id).await?,
        canary_figures: r
            .canary
            .as_ref()
            .map(|c| canary::figures(deployer, endpoint_id, &c.0)),
        canary: r.canary.map(|c| c.0),
        predict_path: format!("/v1/endpoints/{}/predict", r.slug),
        can_edit: role.can_edit(),
    })
}

/// What a checkpoint's model does: its job's task (a job of a `paddock` before tasks classified).
async fn checkpoint_task(
    conn: &mut sqlx::SqliteConnection,
    checkpoint_id: CheckpointId,
) -> Result<Task, AppError> {
    let spec: Option<String> = sqlx::query_scalar(
        "SELECT j.spec_json FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.id = ?",
    )
    .bind(checkpoint_id)
    .fetch_optional(conn)
    .await?;
    Ok(spec
        .and_then(|s| serde_json::from_str::<JobSpec>(&s).ok())
        .map(|spec| spec.task)
        .unwrap_or_default())
}

/// The URL-safe slug of a name (`ERNIE 情感 v2` → `ernie-v2`), or the given one checked.
fn slug_for(spec: &EndpointSpec) -> Result<String, AppError> {
    let invalid = || {
        AppError::invalid(
            "slug",
            ErrorCode::SlugInvalid,
            "the slug must be 3–40 characters of a-z, 0-9 and -",
        )
    };
    let slug = match &spec.slug {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => {
            let derived: String = spec
                .name
                .to_lowercase()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
                .split('-')
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("-");
            let derived: String = derived.chars().take(32).collect();
            format!(
                "{}-{}",
                if derived.len() >= 3 {
                    derived
                } else {
                    "model".into()
                },
                hex::encode(rand::random::<[u8; 2]>())
            )
        }
    };
    let ok = (3..=40).contains(&slug.len())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-');
    if ok {
        Ok(slug)
    } else {
        Err(invalid())
    }
}

fn check_spec(spec: &EndpointSpec) -> Result<(), AppError> {
    check_spec_with(spec, hostcaps::cpu::bf16().is_native())
}

/// `cpu_bf16`: whether this host's CPU has native bfloat16 (a parameter so tests walk both answers).
/// `auto` is taken on every device: the replica measures, or serves float32 where bf16 is not native.
fn check_spec_with(spec: &EndpointSpec, cpu_bf16: bool) -> Result<(), AppError> {
    crate::names::checked(&spec.name, ErrorCode::EndpointSpecInvalid, "name")?;
    if let Some(policy) = &spec.autoscale {
        check_autoscale(policy)?;
    }
    if !(1..=MAX_REPLICAS).contains(&spec.replicas) {
        return Err(AppError::invalid(
            "replicas",
            ErrorCode::EndpointSpecInvalid,
            format!("replicas must be 1–{MAX_REPLICAS}"),
        ));
    }
    if !(64..=1 << 20).contains(&spec.max_batch_tokens) {
        return Err(AppError::invalid(
            "max_batch_tokens",
            ErrorCode::EndpointSpecInvalid,
            "max_batch_tokens must be 64–1048576",
        ));
    }
    if spec.max_wait_ms > 1000 {
        return Err(AppError::invalid(
            "max_wait_ms",
            ErrorCode::EndpointSpecInvalid,
            "max_wait_ms must be at most 1000",
        ));
    }
    if !["cpu", "cuda"].contains(&spec.device.as_str()) {
        return Err(AppError::invalid(
            "device",
            ErrorCode::EndpointSpecInvalid,
            "device must be cpu or cuda",
        ));
    }
    match (spec.precision.as_str(), spec.device.as_str()) {
        ("fp32" | "auto", _) | ("bf16" | "fp16", "cuda") => Ok(()),
        ("bf16", _) if cpu_bf16 => Ok(()),
        ("bf16", _) => Err(AppError::invalid(
            "precision",
            ErrorCode::EndpointSpecInvalid,
            "bf16 on CPU needs AVX512-BF16 instructions, which this server's CPU lacks; use fp32 or cuda",
        )),
        ("fp16", _) => Err(AppError::invalid(
            "precision",
            ErrorCode::EndpointSpecInvalid,
            "fp16 needs device cuda; on CPU use fp32 or bf16",
        )),
        _ => Err(AppError::invalid(
            "precision",
            ErrorCode::EndpointSpecInvalid,
            "precision must be auto, fp32, bf16 or fp16",
        )),
    }
}

fn check_autoscale(policy: &Autoscale) -> Result<(), AppError> {
    match AppError::invalid_fields(ErrorCode::EndpointSpecInvalid, policy.problems("autoscale")) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A checkpoint of the workspace whose files still exist.
async fn live_checkpoint(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
) -> Result<(), AppError> {
    let deleted: Option<Option<String>> =
        sqlx::query_scalar("SELECT deleted_at FROM checkpoints WHERE workspace_id = ? AND id = ?")
            .bind(workspace_id)
            .bind(checkpoint_id)
            .fetch_optional(conn)
            .await?;
    match deleted {
        None => Err(AppError::invalid(
            "checkpoint_id",
            ErrorCode::CheckpointNotFound,
            format!("checkpoint {checkpoint_id} is not in this workspace"),
        )),
        Some(Some(_)) => Err(AppError::invalid(
            "checkpoint_id",
            ErrorCode::CheckpointDeleted,
            "this checkpoint's files were removed by retention",
        )),
        Some(None) => Ok(()),
    }
}

/// Refuses a rollout from the model of `serving` to a model of another task: the endpoint's callers
/// send inputs of its task and read its kind of answers.
async fn same_task(
    conn: &mut SqliteConnection,
    serving: CheckpointId,
    checkpoint_id: CheckpointId,
) -> Result<(), AppError> {
    let (serving, task) = (
        checkpoint_task(conn, serving).await?,
        checkpoint_task(conn, checkpoint_id).await?,
    );
    match serving == task {
        true => Ok(()),
        false => Err(AppError::invalid(
            "checkpoint_id",
            ErrorCode::EndpointSpecInvalid,
            format!("this endpoint serves a {serving} model; a {task} model takes other inputs or answers otherwise, so deploy it as an endpoint of its own"),
        )),
    }
}

/// Deploys a checkpoint as a new endpoint (editors and owners); it becomes ready once its replicas are
/// up and the parity gate passed.
pub async fn deploy(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    spec: EndpointSpec,
) -> Result<EndpointDetail, AppError> {
    check_spec(&spec)?;
    deployer
        .check_cluster(
            spec.cluster.as_deref(),
            spec.partition.as_deref(),
            &spec.device,
        )
        .await?;
    let slug = slug_for(&spec)?;
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    live_checkpoint(&mut tx, workspace_id, spec.checkpoint_id).await?;
    let replicas = scaler::initial_replicas(spec.replicas, spec.autoscale.as_ref());
    super::caps::replicas_fit(&mut tx, workspace_id, None, i64::from(replicas)).await?;
    let now = super::now();
    let name = spec.name.trim();
    let autoscale = spec.autoscale.map(sqlx::types::Json);
    let id = sqlx::query_scalar!(
        r#"INSERT INTO endpoints (workspace_id, slug, name, checkpoint_id, replicas, max_batch_tokens, max_wait_ms,
             device, precision, cluster, partition, autoscale, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id AS "id!: EndpointId""#,
        workspace_id,
        slug,
        name,
        spec.checkpoint_id,
        replicas,
        spec.max_batch_tokens,
        spec.max_wait_ms,
        spec.device,
        spec.precision,
        spec.cluster,
        spec.partition,
        autoscale,
        actor.user_id,
        now,
        now,
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(taken("slug", ErrorCode::SlugTaken, "this slug is in use"))?;
    let entry = Entry::in_workspace(actor, workspace_id, "endpoint.deploy", &slug);
    let detail = serde_json::json!({ "endpoint_id": id, "checkpoint_id": spec.checkpoint_id, "replicas": replicas, "cluster": spec.cluster, "partition": spec.partition, "autoscale": spec.autoscale });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    deployer.spawn_deploy(id);
    get(db, deployer, actor, workspace_id, id).await
}

/// Stops the replicas; the endpoint answers 503 until deployed again. Editors and owners.
pub async fn undeploy(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<EndpointDetail, AppError> {
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    status::endpoint_afresh(
        &mut tx,
        endpoint_id,
        EndpointStatus::Stopped,
        EndpointReason::Undeployed,
    )
    .await?;
    audit::record(&mut tx, r.entry(actor, "endpoint.undeploy")).await?;
    tx.commit().await?;
    deployer.gateway.remove_route(&r.slug).await;
    deployer.stop_replicas(endpoint_id).await;
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// Deploys a stopped or failed endpoint again (same spec).
pub async fn redeploy(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<EndpointDetail, AppError> {
    let stopped = |r: &Row| {
        if matches!(r.status.as_str(), "stopped" | "failed") {
            Ok(())
        } else {
            Err(AppError::conflict(
                "status",
                ErrorCode::EndpointRunning,
                "the endpoint is running; undeploy it first or change it",
            ))
        }
    };
    // The cluster's scheduler is asked without holding SQLite's writer (over SSH it is a round trip);
    // the endpoint is then read again under it.
    let (tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    drop(tx);
    stopped(&r)?;
    deployer
        .check_cluster(r.cluster.as_deref(), r.partition.as_deref(), &r.device)
        .await?;
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    stopped(&r)?;
    live_checkpoint(&mut tx, workspace_id, r.checkpoint_id).await?;
    super::caps::replicas_fit(&mut tx, workspace_id, Some(endpoint_id), r.replicas).await?;
    status::endpoint_afresh(
        &mut tx,
        endpoint_id,
        EndpointStatus::Starting,
        EndpointReason::Redeployed,
    )
    .await?
    .ok_or_else(|| internal("redeploying an endpoint", "its status changed meanwhile"))?;
    sqlx::query("UPDATE endpoints SET parity_report = NULL WHERE id = ?")
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    audit::record(&mut tx, r.entry(actor, "endpoint.deploy")).await?;
    tx.commit().await?;
    deployer.spawn_deploy(endpoint_id);
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// Deletes an endpoint with its keys and request log, stopping its replicas first.
pub async fn delete(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<(), AppError> {
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    // Stopped first, so that neither a deployment nor the watcher starts anything while it goes.
    status::endpoint(
        &mut tx,
        endpoint_id,
        EndpointStatus::Stopped,
        EndpointReason::Deleted,
        None,
    )
    .await?;
    tx.commit().await?;
    deployer.gateway.remove_route(&r.slug).await;
    deployer.stop_replicas(endpoint_id).await;
    let mut tx = write_tx(db).await?;
    sqlx::query("DELETE FROM endpoints WHERE id = ?")
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    audit::record(&mut tx, r.entry(actor, "endpoint.delete")).await?;
    tx.commit().await?;
    Ok(())
}

/// Scales an endpoint or moves it to another checkpoint of the workspace (editors and owners). A ready
/// endpoint changes in the background without failing a request: new replicas start and pass the parity
/// gate before traffic moves, and the old ones drain; meanwhile `pending_change` says what is under way
/// (and, should the change fail, `status_message` says why — the endpoint keeps serving what it served). A stopped or failed
/// endpoint only records the new spec for its next deployment.
pub async fn change(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    change: EndpointChange,
) -> Result<EndpointDetail, AppError> {
    if let Some(n) = change.replicas {
        if !(1..=MAX_REPLICAS).contains(&n) {
            return Err(AppError::invalid(
                "replicas",
                ErrorCode::EndpointSpecInvalid,
                format!("replicas must be 1–{MAX_REPLICAS}"),
            ));
        }
    }
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    if r.canary.is_some() {
        return Err(AppError::conflict(
            "status",
            ErrorCode::EndpointChanging,
            "a canary is under way on this endpoint; promote it or roll it back first",
        ));
    }
    if change.replicas.is_some() && r.autoscale.is_some() {
        return Err(AppError::conflict(
            "replicas",
            ErrorCode::EndpointScalesItself,
            "this endpoint sizes itself; change its autoscaling (floor and ceiling), or turn it off to set replicas by hand",
        ));
    }
    if let Some(checkpoint_id) = change.checkpoint_id {
        live_checkpoint(&mut tx, workspace_id, checkpoint_id).await?;
        same_task(&mut tx, r.checkpoint_id, checkpoint_id).await?;
    }
    let replicas = change.replicas.map_or(r.replicas, i64::from);
    if replicas > r.replicas {
        super::caps::replicas_fit(&mut tx, workspace_id, Some(endpoint_id), replicas).await?;
    }
    let checkpoint_id = change.checkpoint_id.unwrap_or(r.checkpoint_id);
    if replicas == r.replicas && checkpoint_id == r.checkpoint_id {
        return Err(AppError::invalid(
            "replicas",
            ErrorCode::EndpointUnchanged,
            "nothing to change: give another replica count or checkpoint",
        ));
    }
    let detail = serde_json::json!({ "replicas": replicas, "checkpoint_id": checkpoint_id,
        "from": { "replicas": r.replicas, "checkpoint_id": r.checkpoint_id } });
    let ready = match r.status.as_str() {
        "starting" => {
            return Err(AppError::conflict(
                "status",
                ErrorCode::EndpointStarting,
                "the endpoint is still starting; change it once it is ready",
            ))
        }
        status => status == "ready",
    };
    if ready {
        let pending = if checkpoint_id != r.checkpoint_id {
            ChangeUnderWay::Rollout {
                checkpoint_id,
                replicas: replicas as u32,
            }
        } else {
            ChangeUnderWay::Scale {
                from: r.replicas as u32,
                to: replicas as u32,
            }
        };
        sqlx::query(
            "UPDATE endpoints SET pending_change = ?, status_message = NULL, updated_at = ? WHERE id = ?",
        )
        .bind(sqlx::types::Json(pending))
        .bind(super::now())
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    } else {
        sqlx::query(
            "UPDATE endpoints SET replicas = ?, checkpoint_id = ?, updated_at = ? WHERE id = ?",
        )
        .bind(replicas)
        .bind(checkpoint_id)
        .bind(super::now())
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    }
    audit::record(&mut tx, r.entry(actor, "endpoint.change").detail(detail)).await?;
    if ready {
        let planned = replicas::Change {
            replicas,
            checkpoint_id: (checkpoint_id != r.checkpoint_id).then_some(checkpoint_id),
        };
        if !deployer.spawn_change(endpoint_id, planned) {
            return Err(AppError::conflict(
                "status",
                ErrorCode::EndpointChanging,
                "another change of this endpoint is under way; wait for it to finish",
            ));
        }
    }
    tx.commit().await?;
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// Lets the endpoint size itself by `policy`, or (`None`) fixes it at the replicas it runs now (one,
/// if it was at zero). Editors and owners; recorded in its history and the audit log. The scaler acts
/// on it at its next tick; the floor must fit the workspace's caps now.
pub async fn set_autoscale(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    policy: Option<Autoscale>,
) -> Result<EndpointDetail, AppError> {
    if let Some(p) = &policy {
        check_autoscale(p)?;
    }
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    let replicas = match &policy {
        Some(p) => r.replicas.max(i64::from(p.min_replicas)),
        None => r.replicas.max(1),
    };
    if replicas > r.replicas {
        super::caps::replicas_fit(&mut tx, workspace_id, Some(endpoint_id), replicas).await?;
    }
    sqlx::query("UPDATE endpoints SET autoscale = ?, replicas = ?, updated_at = ? WHERE id = ?")
        .bind(policy.map(sqlx::types::Json))
        .bind(replicas)
        .bind(super::now())
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    history::record(
        &mut tx,
        endpoint_id,
        Some(actor.user_id),
        &EndpointEvent::AutoscaleSet { policy },
    )
    .await?;
    let detail = serde_json::json!({ "autoscale": policy, "replicas": replicas });
    audit::record(&mut tx, r.entry(actor, "endpoint.autoscale").detail(detail)).await?;
    tx.commit().await?;
    deployer
        .gateway
        .set_wake_wait(&r.slug, scaler::cold_start_wait(policy.as_ref()));
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// Most texts one playground request may carry.
const PLAYGROUND_MAX_INPUTS: usize = 32;
/// Longest playground text, in characters.
const PLAYGROUND_MAX_CHARS: usize = 4000;

/// The dashboard's playground: any member of the workspace sends texts to a ready endpoint with their
/// session instead of an API key. The request takes the same path through the gateway as an API call
/// (and counts in the endpoint's numbers); labels come back by name with every label's probability.
pub async fn try_predict(
    db: &SqlitePool,
    deployer: &Deployer,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    inputs: Vec<Input>,
) -> Result<Vec<PlaygroundPrediction>, AppError> {
    let trimmed = |t: String| t.trim().to_string();
    let inputs: Vec<Input> = inputs
        .into_iter()
        .map(|input| match input {
            Input::Text(t) => Input::Text(trimmed(t)),
            Input::Pair(p) => Input::Pair(Pair {
                text_a: trimmed(p.text_a),
                text_b: trimmed(p.text_b),
            }),
        })
        .filter(|input| input.texts().iter().all(|t| !t.is_empty()))
        .collect();
    if inputs.is_empty() || inputs.len() > PLAYGROUND_MAX_INPUTS {
        return Err(AppError::invalid(
            "inputs",
            ErrorCode::PlaygroundInputsInvalid,
            format!("give 1–{PLAYGROUND_MAX_INPUTS} non-empty texts, one per line"),
        ));
    }
    if let Some(i) = inputs.iter().position(|input| {
        input
            .texts()
            .iter()
            .any(|t| t.chars().count() > PLAYGROUND_MAX_CHARS)
    }) {
        return Err(AppError::invalid(
            "inputs",
            ErrorCode::PlaygroundInputsInvalid,
            format!(
                "text {} is longer than {PLAYGROUND_MAX_CHARS} characters",
                i + 1
            ),
        ));
    }
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let r = row(&mut conn, workspace_id, endpoint_id).await?;
    let task = checkpoint_task(&mut conn, r.checkpoint_id).await?;
    drop(conn);
    if let Some(i) = inputs.iter().position(|input| !input.fits(task)) {
        let want = match task.pairs() {
            true => "a pair of texts (text_a, text_b)",
            false => "a text",
        };
        return Err(AppError::invalid(
            "inputs",
            ErrorCode::PlaygroundInputsInvalid,
            format!("input {}: this {task} endpoint takes {want}", i + 1),
        ));
    }
    if r.status != "ready" {
        return Err(AppError::unavailable(
            ErrorCode::EndpointUnavailable,
            "the endpoint is not ready",
        ));
    }
    let body = serde_json::to_vec(&PredictRequest::many(inputs.clone(), false))
        .map_err(|e| internal("playground body", e))?;
    let started = Instant::now();
    // The stable version answers the playground: its labels are the ones shown.
    let answered = deployer
        .gateway
        .forward(&r.slug, body.into(), gateway::Pick::Stable)
        .await;
    let latency = started.elapsed();
    let answer = answered.outcome.and_then(|(status, bytes)| {
        if (200..300).contains(&status) {
            serde_json::from_slice::<PredictReply>(&bytes)
                .map_err(|e| internal("replica answer", e))
        } else if status == 429 || status == 503 {
            let refusal = serde_json::from_slice::<ErrorReply>(&bytes).ok();
            Err(AppError::unavailable(
                ErrorCode::EndpointBusy,
                refusal.map_or("the endpoint is busy; try again".into(), |r| r.message),
            ))
        } else if status == 422 {
            // The model refused the inputs (a tokenizer's limit, a rollout to a model of another
            // task): its words are the user's to read.
            let refusal = serde_json::from_slice::<ErrorReply>(&bytes).ok();
            Err(AppError::invalid(
                "inputs",
                ErrorCode::PlaygroundInputsInvalid,
                refusal.map_or("the model refused the inputs".into(), |r| r.message),
            ))
        } else {
            Err(internal("replica answer", status))
        }
    });
    deployer.gateway.record(
        r.id,
        answered.version,
        latency,
        answer.is_ok(),
        answer.as_ref().ok().map(|a| a.batch_rows),
    );
    let answer = answer?;
    let model = deployer
        .model(r.checkpoint_id)
        .await
        .map_err(|e| internal("endpoint checkpoint", e))?;
    let labels = crate::jobs::checkpoint_config(&deployer.storage, r.workspace_id, &model.path)
        .await
        .map(|config| label_names(&config))
        .unwrap_or_default();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    if answer.predictions.len() != inputs.len() {
        return Err(internal("replica answer", "one prediction per input"));
    }
    Ok(inputs
        .into_iter()
        .zip(answer.predictions)
        .map(|(input, answer)| {
            let (text, text_pair) = input.into_texts();
            let name = |i: usize| labels.get(i).cloned().unwrap_or_else(|| i.to_string());
            let answer = match answer {
                Answer::Label(p) => {
                    let mut probabilities: Vec<LabelProbability> = p
                        .probabilities
                        .iter()
                        .enumerate()
                        .map(|(i, v)| LabelProbability {
                            label: name(i),
                            probability: f64::from(*v),
                        })
                        .collect();
                    probabilities.sort_by(|a, b| b.probability.total_cmp(&a.probability));
                    PlaygroundAnswer::Label {
                        label: p.label,
                        probabilities,
                    }
                }
                Answer::Entities(e) => PlaygroundAnswer::Entities {
                    entities: e.entities,
                },
            };
            PlaygroundPrediction {
                text,
                text_pair,
                answer,
                latency_ms,
            }
        })
        .collect())
}

/// Label names by id from a checkpoint's `config.json` (`id2label`); empty when it has none.
fn label_names(config: &serde_json::Value) -> Vec<String> {
    let Some(map) = config["id2label"].as_object() else {
        return Vec::new();
    };
    let mut pairs: Vec<(usize, String)> = map
        .iter()
        .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_str()?.to_string())))
        .collect();
    pairs.sort();
    pairs.into_iter().map(|(_, v)| v).collect()
}

/// The gateway's request path: key, rate limit, replica, numbers, sampled log.
pub async fn predict(
    db: &SqlitePool,
    gateway: &gateway::Gateway,
    slug: &str,
    secret: &str,
    body: bytes::Bytes,
    pick: gateway::Pick,
) -> Result<gateway::Answered, AppError> {
    let caller = gateway.authenticate(db, slug, secret).await?;
    gateway.admit(&caller)?;
    // How many texts the request asks about, for the request log (0: the model server will refuse it).
    let inputs = serde_json::from_slice::<PredictRequest>(&body)
        .ok()
        .and_then(PredictRequest::into_inputs)
        .map_or(0, |inputs| inputs.len() as i64);
    let started = Instant::now();
    let answered = gateway.forward(slug, body, pick).await;
    let latency = started.elapsed();
    let (status, batch_rows) = match &answered.outcome {
        Ok((status, bytes)) => {
            let rows = serde_json::from_slice::<PredictReply>(bytes)
                .ok()
                .map(|reply| reply.batch_rows);
            (*status, rows)
        }
        Err(_) => (503, None),
    };
    let ok = (200..300).contains(&status);
    if gateway.record(
        caller.endpoint_id,
        answered.version,
        latency,
        ok,
        batch_rows,
    ) {
        let _ = sqlx::query("INSERT INTO endpoint_requests (endpoint_id, key_id, status, latency_ms, inputs, at) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(caller.endpoint_id)
            .bind(caller.key_id)
            .bind(i64::from(status))
            .bind(latency.as_secs_f64() * 1000.0)
            .bind(inputs)
            .bind(super::now())
            .execute(db)
            .await;
    }
    if gateway.key_use_due(caller.key_id) {
        let _ = sqlx::query("UPDATE endpoint_keys SET last_used_at = ? WHERE id = ?")
            .bind(super::now())
            .bind(caller.key_id)
            .execute(db)
            .await;
    }
    Ok(answered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, slug: Option<&str>) -> EndpointSpec {
        EndpointSpec {
            name: name.into(),
            slug: slug.map(str::to_string),
            checkpoint_id: CheckpointId::new(1),
            replicas: 1,
            max_batch_tokens: 8192,
            max_wait_ms: 5,
            device: "cpu".into(),
            precision: "fp32".into(),
            cluster: None,
            partition: None,
            autoscale: None,
        }
    }

    #[test]
    fn slugs_are_derived_or_checked() {
        let derived = slug_for(&spec("ERNIE 情感 v2", None)).unwrap();
        assert!(derived.starts_with("ernie-v2-"), "{derived}");
        assert!(slug_for(&spec("情感", None)).unwrap().starts_with("model-"));
        assert_eq!(
            slug_for(&spec("x", Some("sentiment-prod"))).unwrap(),
            "sentiment-prod"
        );
        for bad in ["ab", "Upper", "has space", "-edge", "../x"] {
            assert_eq!(
                slug_for(&spec("x", Some(bad))).unwrap_err().field(),
                Some("slug"),
                "{bad}"
            );
        }
        let mut s = spec("x", None);
        s.replicas = 0;
        assert_eq!(check_spec(&s).unwrap_err().field(), Some("replicas"));
        s.replicas = 1;
        s.device = "tpu".into();
        assert_eq!(check_spec(&s).unwrap_err().field(), Some("device"));
    }

    #[test]
    fn precision_fits_the_device() {
        let mut s = spec("x", None);
        for (device, precision, ok) in [
            ("cpu", "fp32", true),
            ("cpu", "auto", true),
            ("cuda", "auto", true),
            ("cuda", "fp32", true),
            ("cuda", "bf16", true),
            ("cuda", "fp16", true),
            ("cpu", "fp16", false),
            ("cpu", "int8", false),
            ("cuda", "", false),
        ] {
            (s.device, s.precision) = (device.into(), precision.into());
            match check_spec(&s) {
                Ok(()) => assert!(ok, "{device} {precision} accepted"),
                Err(e) => {
                    assert!(!ok, "{device} {precision} refused: {e}");
                    assert_eq!(e.field(), Some("precision"));
                }
            }
        }
        // bf16 on the CPU: both answers on any CPU, and the real check follows the host's.
        (s.device, s.precision) = ("cpu".into(), "bf16".into());
        assert!(check_spec_with(&s, true).is_ok());
        let e = check_spec_with(&s, false).unwrap_err();
        assert_eq!(e.field(), Some("precision"));
        assert!(e.to_string().contains("AVX512-BF16"), "{e}");
        assert_eq!(check_spec(&s).is_ok(), hostcaps::cpu::bf16().is_native());
    }
}

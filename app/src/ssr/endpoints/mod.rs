//! Endpoints: checkpoints served over HTTP. Deploying creates the endpoint and starts its replicas in the
//! background (`replicas`); the parity gate decides whether it becomes ready; the gateway (`gateway`)
//! serves `POST /v1/endpoints/{slug}/predict` to holders of the endpoint's API keys. Viewers read; editors
//! and owners deploy, change, undeploy and manage keys. Every change is audited.
//!
//! # Layout
//! - this file: deploy, list, read, change (scale or move to another checkpoint, rolled out without
//!   dropping requests), undeploy, keys, and the gateway's request path.
//! - [`replicas`]: starting, watching, restarting and re-attaching `paddock serve-model` processes.
//! - [`parity`]: the gate that compares served logits with the trainer's.
//! - [`gateway`]: keys, rate limits, load balancing and the traffic numbers.

pub mod gateway;
pub mod parity;
pub mod replicas;

use std::sync::Arc;
use std::time::Instant;

use sqlx::{SqliteConnection, SqlitePool};

use super::access::authorize;
use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use super::http_error::{internal, is_unique_violation};
use crate::error::AppError;
use crate::types::*;
use replicas::Deployer;

/// Replicas one endpoint may run.
pub const MAX_REPLICAS: u32 = 8;

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    workspace_id: i64,
    slug: String,
    name: String,
    checkpoint_id: i64,
    job_id: i64,
    replicas: i64,
    max_batch_tokens: i64,
    max_wait_ms: i64,
    device: String,
    status: String,
    status_message: Option<String>,
    parity_report: Option<String>,
    created_at: String,
}

const SELECT: &str = "SELECT e.id, e.workspace_id, e.slug, e.name, e.checkpoint_id, c.job_id, e.replicas, e.max_batch_tokens, \
     e.max_wait_ms, e.device, e.status, e.status_message, e.parity_report, e.created_at
     FROM endpoints e JOIN checkpoints c ON c.id = e.checkpoint_id";

impl Row {
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
            created_at: self.created_at.clone(),
        })
    }
}

async fn row(
    conn: &mut SqliteConnection,
    workspace_id: i64,
    endpoint_id: i64,
) -> Result<Row, AppError> {
    sqlx::query_as::<_, Row>(&format!("{SELECT} WHERE e.workspace_id = ? AND e.id = ?"))
        .bind(workspace_id)
        .bind(endpoint_id)
        .fetch_optional(conn)
        .await?
        .ok_or(AppError::NotFound)
}

pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: i64,
) -> Result<Vec<EndpointSummary>, AppError> {
    let mut conn = db.acquire().await?;
    authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let rows = sqlx::query_as::<_, Row>(&format!(
        "{SELECT} WHERE e.workspace_id = ? ORDER BY e.id DESC"
    ))
    .bind(workspace_id)
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
    workspace_id: i64,
    endpoint_id: i64,
) -> Result<EndpointDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let r = row(&mut conn, workspace_id, endpoint_id).await?;
    type ReplicaRow = (i64, String, i64, Option<String>, Option<String>);
    let replicas: Vec<ReplicaRow> = sqlx::query_as(
        "SELECT ordinal, status, restarts, last_error, started_at FROM endpoint_replicas WHERE endpoint_id = ? ORDER BY ordinal",
    )
    .bind(endpoint_id)
    .fetch_all(&mut *conn)
    .await?;
    let keys = keys_of(&mut conn, endpoint_id).await?;
    Ok(EndpointDetail {
        summary: r.summary(&mut conn).await?,
        spec: EndpointSpec {
            name: r.name.clone(),
            slug: Some(r.slug.clone()),
            checkpoint_id: r.checkpoint_id,
            replicas: r.replicas as u32,
            max_batch_tokens: r.max_batch_tokens as u32,
            max_wait_ms: r.max_wait_ms as u32,
            device: r.device.clone(),
        },
        replicas: replicas
            .into_iter()
            .map(
                |(ordinal, status, restarts, last_error, started_at)| EndpointReplica {
                    ordinal: ordinal as u32,
                    status: EndpointStatus::parse(&status).unwrap_or(EndpointStatus::Failed),
                    restarts: restarts as u32,
                    last_error,
                    started_at,
                },
            )
            .collect(),
        keys,
        parity_report: r
            .parity_report
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok()),
        metrics: deployer.gateway.metrics(endpoint_id),
        predict_path: format!("/v1/endpoints/{}/predict", r.slug),
        can_edit: role.can_edit(),
    })
}

/// The URL-safe slug of a name (`ERNIE 情感 v2` → `ernie-v2`), or the given one checked.
fn slug_for(spec: &EndpointSpec) -> Result<String, AppError> {
    let invalid = || {
        AppError::invalid(
            "slug",
            "slug_invalid",
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
    let name = spec.name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "endpoint_spec_invalid",
            "name must be 1–64 characters",
        ));
    }
    if !(1..=MAX_REPLICAS).contains(&spec.replicas) {
        return Err(AppError::invalid(
            "replicas",
            "endpoint_spec_invalid",
            format!("replicas must be 1–{MAX_REPLICAS}"),
        ));
    }
    if !(64..=1 << 20).contains(&spec.max_batch_tokens) {
        return Err(AppError::invalid(
            "max_batch_tokens",
            "endpoint_spec_invalid",
            "max_batch_tokens must be 64–1048576",
        ));
    }
    if spec.max_wait_ms > 1000 {
        return Err(AppError::invalid(
            "max_wait_ms",
            "endpoint_spec_invalid",
            "max_wait_ms must be at most 1000",
        ));
    }
    if !["cpu", "cuda"].contains(&spec.device.as_str()) {
        return Err(AppError::invalid(
            "device",
            "endpoint_spec_invalid",
            "device must be cpu or cuda",
        ));
    }
    Ok(())
}

/// A checkpoint of the workspace whose files still exist.
async fn live_checkpoint(
    conn: &mut SqliteConnection,
    workspace_id: i64,
    checkpoint_id: i64,
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
            "checkpoint_not_found",
            format!("checkpoint {checkpoint_id} is not in this workspace"),
        )),
        Some(Some(_)) => Err(AppError::invalid(
            "checkpoint_id",
            "checkpoint_deleted",
            "this checkpoint's files were removed by retention",
        )),
        Some(None) => Ok(()),
    }
}

/// Deploys a checkpoint as a new endpoint (editors and owners); it becomes ready once its replicas are
/// up and the parity gate passed.
pub async fn deploy(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: i64,
    spec: EndpointSpec,
) -> Result<EndpointDetail, AppError> {
    check_spec(&spec)?;
    let slug = slug_for(&spec)?;
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    live_checkpoint(&mut tx, workspace_id, spec.checkpoint_id).await?;
    let now = super::now();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO endpoints (workspace_id, slug, name, checkpoint_id, replicas, max_batch_tokens, max_wait_ms, device,
             created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(workspace_id)
    .bind(&slug)
    .bind(spec.name.trim())
    .bind(spec.checkpoint_id)
    .bind(spec.replicas)
    .bind(spec.max_batch_tokens)
    .bind(spec.max_wait_ms)
    .bind(&spec.device)
    .bind(actor.user_id)
    .bind(&now)
    .bind(&now)
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| if is_unique_violation(&e) { AppError::conflict("slug", "slug_taken", "this slug is in use") } else { e.into() })?;
    audit::record(
        &mut tx,
        Entry::by(actor, Some(workspace_id), "endpoint.deploy", "endpoint", &slug)
            .detail(serde_json::json!({ "endpoint_id": id, "checkpoint_id": spec.checkpoint_id, "replicas": spec.replicas })),
    )
    .await?;
    tx.commit().await?;
    deployer.spawn_deploy(id);
    get(db, deployer, actor, workspace_id, id).await
}

/// Stops the replicas; the endpoint answers 503 until deployed again. Editors and owners.
pub async fn undeploy(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: i64,
    endpoint_id: i64,
) -> Result<EndpointDetail, AppError> {
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    sqlx::query("UPDATE endpoints SET status = 'stopped', status_message = NULL, updated_at = ? WHERE id = ?")
        .bind(super::now())
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "endpoint.undeploy",
            "endpoint",
            &r.slug,
        ),
    )
    .await?;
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
    workspace_id: i64,
    endpoint_id: i64,
) -> Result<EndpointDetail, AppError> {
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    if !matches!(r.status.as_str(), "stopped" | "failed") {
        return Err(AppError::conflict(
            "status",
            "endpoint_running",
            "the endpoint is running; undeploy it first or change it",
        ));
    }
    live_checkpoint(&mut tx, workspace_id, r.checkpoint_id).await?;
    sqlx::query("UPDATE endpoints SET status = 'starting', status_message = NULL, parity_report = NULL, updated_at = ? WHERE id = ?")
        .bind(super::now())
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "endpoint.deploy",
            "endpoint",
            &r.slug,
        ),
    )
    .await?;
    tx.commit().await?;
    deployer.stop_replicas(endpoint_id).await;
    deployer.spawn_deploy(endpoint_id);
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// Deletes a stopped endpoint with its keys and request log.
pub async fn delete(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: i64,
    endpoint_id: i64,
) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    sqlx::query("DELETE FROM endpoints WHERE id = ?")
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "endpoint.delete",
            "endpoint",
            &r.slug,
        ),
    )
    .await?;
    tx.commit().await?;
    deployer.gateway.remove_route(&r.slug).await;
    deployer.stop_replicas(endpoint_id).await;
    Ok(())
}

async fn keys_of(
    conn: &mut SqliteConnection,
    endpoint_id: i64,
) -> Result<Vec<EndpointKey>, AppError> {
    type KeyRow = (
        i64,
        String,
        String,
        i64,
        String,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<KeyRow> = sqlx::query_as(
        "SELECT id, name, prefix, rate_limit_per_minute, created_at, last_used_at, revoked_at FROM endpoint_keys
         WHERE endpoint_id = ? ORDER BY id",
    )
    .bind(endpoint_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, name, prefix, rate, created_at, last_used_at, revoked_at)| EndpointKey {
                id,
                name,
                prefix,
                rate_limit_per_minute: rate as u32,
                created_at,
                last_used_at,
                revoked_at,
            },
        )
        .collect())
}

/// Creates an API key for the endpoint; the secret is shown once. Editors and owners.
pub async fn create_key(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: i64,
    endpoint_id: i64,
    name: &str,
    rate_limit_per_minute: Option<u32>,
) -> Result<NewEndpointKey, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "key_name_invalid",
            "the key's name must be 1–64 characters",
        ));
    }
    let rate = rate_limit_per_minute.unwrap_or(600);
    if !(1..=1_000_000).contains(&rate) {
        return Err(AppError::invalid(
            "rate_limit_per_minute",
            "key_rate_invalid",
            "rate_limit_per_minute must be 1–1000000",
        ));
    }
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    let secret = format!("pdk_ep_{}", hex::encode(rand::random::<[u8; 24]>()));
    let prefix: String = secret.chars().take(14).collect();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO endpoint_keys (endpoint_id, name, prefix, secret_sha256, rate_limit_per_minute, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(endpoint_id)
    .bind(name)
    .bind(&prefix)
    .bind(crate::ssr::tokens::digest(&secret))
    .bind(rate)
    .bind(actor.user_id)
    .bind(super::now())
    .fetch_one(&mut *tx)
    .await?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "endpoint.key_create",
            "endpoint",
            &r.slug,
        )
        .detail(serde_json::json!({ "key_id": id, "name": name, "rate_limit_per_minute": rate })),
    )
    .await?;
    let key = keys_of(&mut tx, endpoint_id)
        .await?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| internal("new key", id))?;
    tx.commit().await?;
    Ok(NewEndpointKey { key, secret })
}

pub async fn revoke_key(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: i64,
    endpoint_id: i64,
    key_id: i64,
) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, Role::Editor).await?;
    let r = row(&mut tx, workspace_id, endpoint_id).await?;
    let done = sqlx::query("UPDATE endpoint_keys SET revoked_at = ? WHERE id = ? AND endpoint_id = ? AND revoked_at IS NULL")
        .bind(super::now())
        .bind(key_id)
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(AppError::NotFound);
    }
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "endpoint.key_revoke",
            "endpoint",
            &r.slug,
        )
        .detail(serde_json::json!({ "key_id": key_id })),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The gateway's request path: key, rate limit, replica, numbers, sampled log.
pub async fn predict(
    db: &SqlitePool,
    gateway: &gateway::Gateway,
    slug: &str,
    secret: &str,
    body: bytes::Bytes,
) -> Result<(u16, bytes::Bytes), AppError> {
    let caller = gateway.authenticate(db, slug, secret).await?;
    gateway.admit(&caller)?;
    let inputs = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .map(|v| v["inputs"].as_array().map_or(1, Vec::len) as i64)
        .unwrap_or(0);
    let started = Instant::now();
    let result = gateway.forward(slug, body).await;
    let latency = started.elapsed();
    let (status, batch_rows) = match &result {
        Ok((status, bytes)) => {
            let rows = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v["batch_rows"].as_u64())
                .map(|r| r as u32);
            (*status, rows)
        }
        Err(_) => (503, None),
    };
    let ok = (200..300).contains(&status);
    if gateway.record(caller.endpoint_id, latency, ok, batch_rows) {
        let _ = sqlx::query("INSERT INTO endpoint_requests (endpoint_id, key_id, status, latency_ms, inputs, at) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(caller.endpoint_id)
            .bind(caller.key_id)
            .bind(i64::from(status))
            .bind(latency.as_secs_f64() * 1000.0)
            .bind(inputs)
            .bind(super::now())
            .execute(db)
            .await;
        let _ = sqlx::query("UPDATE endpoint_keys SET last_used_at = ? WHERE id = ?")
            .bind(super::now())
            .bind(caller.key_id)
            .execute(db)
            .await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, slug: Option<&str>) -> EndpointSpec {
        EndpointSpec {
            name: name.into(),
            slug: slug.map(str::to_string),
            checkpoint_id: 1,
            replicas: 1,
            max_batch_tokens: 8192,
            max_wait_ms: 5,
            device: "cpu".into(),
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
}

//! An endpoint's API keys: created by editors (the secret is shown once; only its SHA-256 is stored),
//! each with its own rate limit, revoked without touching the others. The gateway checks them
//! (`gateway::Gateway::authenticate`).

use contracts::ids::{EndpointId, KeyId, WorkspaceId};
use sqlx::{SqliteConnection, SqlitePool};

use crate::audit;
use crate::auth::Actor;
use contracts::error::internal;
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;

pub(super) async fn keys_of(
    conn: &mut SqliteConnection,
    endpoint_id: EndpointId,
) -> Result<Vec<EndpointKey>, AppError> {
    type KeyRow = (
        KeyId,
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
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    name: &str,
    rate_limit_per_minute: Option<u32>,
) -> Result<NewEndpointKey, AppError> {
    let name = crate::names::checked(name, ErrorCode::KeyNameInvalid, "the key's name")?;
    let rate = rate_limit_per_minute.unwrap_or(600);
    if !(1..=1_000_000).contains(&rate) {
        return Err(AppError::invalid(
            "rate_limit_per_minute",
            ErrorCode::KeyRateInvalid,
            "rate_limit_per_minute must be 1–1000000",
        ));
    }
    let (mut tx, r) = super::editing(db, actor, workspace_id, endpoint_id).await?;
    let secret = format!("pdk_ep_{}", hex::encode(rand::random::<[u8; 24]>()));
    let prefix: String = secret.chars().take(14).collect();
    let id: KeyId = sqlx::query_scalar(
        "INSERT INTO endpoint_keys (endpoint_id, name, prefix, secret_sha256, rate_limit_per_minute, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(endpoint_id)
    .bind(name)
    .bind(&prefix)
    .bind(crate::tokens::digest(&secret))
    .bind(rate)
    .bind(actor.user_id)
    .bind(crate::now())
    .fetch_one(&mut *tx)
    .await?;
    let entry = r.entry(actor, "endpoint.key_create");
    let detail = serde_json::json!({ "key_id": id, "name": name, "rate_limit_per_minute": rate });
    audit::record(&mut tx, entry.detail(detail)).await?;
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
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    key_id: KeyId,
) -> Result<(), AppError> {
    let (mut tx, r) = super::editing(db, actor, workspace_id, endpoint_id).await?;
    let done = sqlx::query("UPDATE endpoint_keys SET revoked_at = ? WHERE id = ? AND endpoint_id = ? AND revoked_at IS NULL")
        .bind(crate::now())
        .bind(key_id)
        .bind(endpoint_id)
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(AppError::NotFound);
    }
    let entry = r.entry(actor, "endpoint.key_revoke");
    let detail = serde_json::json!({ "key_id": key_id });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(())
}

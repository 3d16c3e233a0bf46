//! Personal API tokens for `Authorization: Bearer`. The secret is 32 random bytes shown once at
//! creation; only its SHA-256 is stored (a fast hash is enough: the secret has 256 bits of entropy,
//! unlike a password), plus a short prefix so a person can tell tokens apart.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::SqlitePool;

use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use crate::error::AppError;
use crate::types::{ApiToken, NewApiToken};

/// Marks Paddock tokens so secret scanners and people recognise them.
pub const SECRET_PREFIX: &str = "pdk_";
/// Characters of the secret kept for display (`pdk_` plus 8).
const DISPLAY_PREFIX_LEN: usize = 12;

pub(crate) fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret (API tokens, endpoint keys): its SHA-256, never the secret itself.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    name: String,
    prefix: String,
    created_at: String,
    last_used_at: Option<String>,
}

impl From<Row> for ApiToken {
    fn from(r: Row) -> Self {
        ApiToken {
            id: r.id,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
        }
    }
}

pub async fn list(db: &SqlitePool, actor: &Actor) -> Result<Vec<ApiToken>, AppError> {
    Ok(sqlx::query_as::<_, Row>(
        "SELECT id, name, prefix, created_at, last_used_at FROM api_tokens WHERE user_id = ? ORDER BY id DESC",
    )
    .bind(actor.user_id)
    .fetch_all(db)
    .await?
    .into_iter()
    .map(ApiToken::from)
    .collect())
}

pub async fn create(db: &SqlitePool, actor: &Actor, name: &str) -> Result<NewApiToken, AppError> {
    let name = super::names::display_name(name).ok_or_else(|| {
        AppError::invalid(
            "name",
            "token_name_invalid",
            format!("token name must be {}", super::names::NAME_RULE),
        )
    })?;
    let secret = random_secret();
    let prefix = &secret[..DISPLAY_PREFIX_LEN];
    let mut tx = write_tx(db).await?;
    let row = sqlx::query_as::<_, Row>(
        "INSERT INTO api_tokens (user_id, name, prefix, secret_sha256, created_at) VALUES (?, ?, ?, ?, ?)
         RETURNING id, name, prefix, created_at, last_used_at",
    )
    .bind(actor.user_id)
    .bind(name)
    .bind(prefix)
    .bind(digest(&secret))
    .bind(super::now())
    .fetch_one(&mut *tx)
    .await?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            None,
            "token.create",
            "token",
            &format!("{name} ({prefix}…)"),
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(NewApiToken {
        token: row.into(),
        secret,
    })
}

/// Deletes one of the caller's tokens; someone else's token is `NotFound`.
pub async fn revoke(db: &SqlitePool, actor: &Actor, token_id: i64) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    let deleted: Option<(String, String)> = sqlx::query_as(
        "DELETE FROM api_tokens WHERE id = ? AND user_id = ? RETURNING name, prefix",
    )
    .bind(token_id)
    .bind(actor.user_id)
    .fetch_optional(&mut *tx)
    .await?;
    let (name, prefix) = deleted.ok_or(AppError::NotFound)?;
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            None,
            "token.revoke",
            "token",
            &format!("{name} ({prefix}…)"),
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The user a secret belongs to, recording its use; `None` for an unknown or revoked secret.
pub async fn authenticate(db: &SqlitePool, secret: &str) -> Result<Option<i64>, AppError> {
    if !secret.starts_with(SECRET_PREFIX) {
        return Ok(None);
    }
    Ok(sqlx::query_scalar(
        "UPDATE api_tokens SET last_used_at = ? WHERE secret_sha256 = ? RETURNING user_id",
    )
    .bind(super::now())
    .bind(digest(secret))
    .fetch_optional(db)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssr::testing::{actor, test_db};

    #[tokio::test]
    async fn token_lifecycle() {
        let (_dir, db) = test_db().await;
        let alice = actor(&db, "alice").await;
        let bob = actor(&db, "bob").await;
        let new = create(&db, &alice, " laptop ").await.unwrap();
        assert!(new.secret.starts_with("pdk_") && new.secret.len() > 40);
        assert_eq!(new.token.name, "laptop");
        assert!(new.secret.starts_with(&new.token.prefix));
        // Only the digest is stored.
        let stored: String = sqlx::query_scalar("SELECT secret_sha256 FROM api_tokens")
            .fetch_one(&db)
            .await
            .unwrap();
        assert_ne!(stored, new.secret);

        assert_eq!(
            authenticate(&db, &new.secret).await.unwrap(),
            Some(alice.user_id)
        );
        assert!(list(&db, &alice).await.unwrap()[0].last_used_at.is_some());
        assert_eq!(authenticate(&db, "pdk_wrong").await.unwrap(), None);
        assert!(list(&db, &bob).await.unwrap().is_empty());
        assert_eq!(
            revoke(&db, &bob, new.token.id).await.unwrap_err(),
            AppError::NotFound
        );
        revoke(&db, &alice, new.token.id).await.unwrap();
        assert_eq!(authenticate(&db, &new.secret).await.unwrap(), None);
        assert_eq!(
            create(&db, &alice, "  ").await.unwrap_err().code(),
            "token_name_invalid"
        );
    }
}

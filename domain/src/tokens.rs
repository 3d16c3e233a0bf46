//! Personal API tokens for `Authorization: Bearer`. The secret is 32 random bytes shown once at
//! creation; only its SHA-256 is stored (a fast hash is enough: the secret has 256 bits of entropy,
//! unlike a password), plus a short prefix so a person can tell tokens apart. A token expires (90
//! days unless asked otherwise) so a forgotten one stops working by itself, and a `read` token can
//! only read — [`super::auth::caller`] refuses it anything but `GET`/`HEAD`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use contracts::ids::{TokenId, UserId};
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::SqlitePool;

use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use contracts::error::{AppError, ErrorCode};
use contracts::types::{ApiToken, NewApiToken, TokenRequest, TokenScope, MAX_TOKEN_DAYS};

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
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

#[derive(sqlx::FromRow)]
struct Row {
    id: TokenId,
    name: String,
    prefix: String,
    scope: String,
    created_at: String,
    last_used_at: Option<String>,
    expires_at: Option<String>,
}

const COLUMNS: &str = "id, name, prefix, scope, created_at, last_used_at, expires_at";

impl From<Row> for ApiToken {
    fn from(r: Row) -> Self {
        ApiToken {
            id: r.id,
            name: r.name,
            prefix: r.prefix,
            // The column's CHECK allows only the two; anything else is treated as the lesser.
            scope: TokenScope::parse(&r.scope).unwrap_or(TokenScope::Read),
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            expires_at: r.expires_at,
        }
    }
}

/// A bearer token's owner and what the token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub token_id: TokenId,
    pub user_id: UserId,
    pub scope: TokenScope,
}

pub async fn list(db: &SqlitePool, actor: &Actor) -> Result<Vec<ApiToken>, AppError> {
    Ok(sqlx::query_as::<_, Row>(&format!(
        "SELECT {COLUMNS} FROM api_tokens WHERE user_id = ? ORDER BY id DESC"
    ))
    .bind(actor.user_id)
    .fetch_all(db)
    .await?
    .into_iter()
    .map(ApiToken::from)
    .collect())
}

pub async fn create(
    db: &SqlitePool,
    actor: &Actor,
    request: &TokenRequest,
) -> Result<NewApiToken, AppError> {
    let name = super::names::checked(&request.name, ErrorCode::TokenNameInvalid, "token name")?;
    let days = request.expires_in_days;
    if days > MAX_TOKEN_DAYS {
        return Err(AppError::invalid(
            "expires_in_days",
            ErrorCode::TokenExpiryInvalid,
            format!("a token lives at most {MAX_TOKEN_DAYS} days (or 0 for no expiry)"),
        ));
    }
    let expires_at = (days > 0).then(|| {
        (chrono::Utc::now() + chrono::Duration::days(i64::from(days)))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    });
    let secret = random_secret();
    let prefix = &secret[..DISPLAY_PREFIX_LEN];
    let mut tx = write_tx(db).await?;
    let row = sqlx::query_as::<_, Row>(&format!(
        "INSERT INTO api_tokens (user_id, name, prefix, secret_sha256, created_at, scope, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {COLUMNS}"
    ))
    .bind(actor.user_id)
    .bind(name)
    .bind(prefix)
    .bind(digest(&secret))
    .bind(super::now())
    .bind(request.scope.as_str())
    .bind(&expires_at)
    .fetch_one(&mut *tx)
    .await?;
    let resource = format!("{name} ({prefix}…)");
    let entry = Entry::by(actor, None, "token.create", "token", &resource);
    let detail = serde_json::json!({ "scope": request.scope, "expires_at": expires_at });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(NewApiToken {
        token: row.into(),
        secret,
    })
}

/// Deletes one of the caller's tokens; someone else's token is `NotFound`.
pub async fn revoke(db: &SqlitePool, actor: &Actor, token_id: TokenId) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    let deleted: Option<(String, String)> = sqlx::query_as(
        "DELETE FROM api_tokens WHERE id = ? AND user_id = ? RETURNING name, prefix",
    )
    .bind(token_id)
    .bind(actor.user_id)
    .fetch_optional(&mut *tx)
    .await?;
    let (name, prefix) = deleted.ok_or(AppError::NotFound)?;
    let resource = format!("{name} ({prefix}…)");
    let entry = Entry::by(actor, None, "token.revoke", "token", &resource);
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(())
}

/// Whose a secret is and what it may do, recording its use; `None` for an unknown, revoked or
/// expired secret.
pub async fn authenticate(db: &SqlitePool, secret: &str) -> Result<Option<Grant>, AppError> {
    if !secret.starts_with(SECRET_PREFIX) {
        return Ok(None);
    }
    let now = super::now();
    // Instants are stored as RFC 3339 UTC to the second, so they compare as text.
    let row: Option<(TokenId, UserId, String)> = sqlx::query_as(
        "UPDATE api_tokens SET last_used_at = ?1
         WHERE secret_sha256 = ?2 AND (expires_at IS NULL OR expires_at > ?1)
         RETURNING id, user_id, scope",
    )
    .bind(&now)
    .bind(digest(secret))
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(token_id, user_id, scope)| Grant {
        token_id,
        user_id,
        scope: TokenScope::parse(&scope).unwrap_or(TokenScope::Read),
    }))
}

/// Whether token `token_id` still lets its holder in (not revoked, not expired): what a connection
/// opened with it re-checks while it stays open.
pub async fn still_valid(db: &SqlitePool, token_id: TokenId) -> Result<bool, AppError> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM api_tokens WHERE id = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
    )
    .bind(token_id)
    .bind(super::now())
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::people;

    #[tokio::test]
    async fn token_lifecycle() {
        let (_dir, db, [alice, bob]) = people(["alice", "bob"]).await;
        let new = create(&db, &alice, &request(" laptop ")).await.unwrap();
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
            Some(Grant {
                token_id: new.token.id,
                user_id: alice.user_id,
                scope: TokenScope::Write
            })
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
            create(&db, &alice, &request("  "))
                .await
                .unwrap_err()
                .code(),
            "token_name_invalid"
        );
    }

    fn request(name: &str) -> TokenRequest {
        TokenRequest {
            name: name.into(),
            scope: TokenScope::Write,
            expires_in_days: contracts::types::DEFAULT_TOKEN_DAYS,
        }
    }

    #[tokio::test]
    async fn tokens_expire_and_carry_their_scope() {
        let (_dir, db, [alice]) = people(["alice"]).await;
        let read = create(
            &db,
            &alice,
            &TokenRequest {
                scope: TokenScope::Read,
                ..request("dashboard")
            },
        )
        .await
        .unwrap();
        assert_eq!(read.token.scope, TokenScope::Read);
        let in_90_days = chrono::Utc::now() + chrono::Duration::days(90);
        let expires =
            chrono::DateTime::parse_from_rfc3339(read.token.expires_at.as_deref().unwrap())
                .unwrap();
        assert!((expires.to_utc() - in_90_days).num_seconds().abs() < 60);
        assert_eq!(
            authenticate(&db, &read.secret)
                .await
                .unwrap()
                .unwrap()
                .scope,
            TokenScope::Read
        );
        let forever = create(
            &db,
            &alice,
            &TokenRequest {
                expires_in_days: 0,
                ..request("forever")
            },
        )
        .await
        .unwrap();
        assert_eq!(forever.token.expires_at, None);
        assert_eq!(
            create(
                &db,
                &alice,
                &TokenRequest {
                    expires_in_days: 3651,
                    ..request("too long")
                }
            )
            .await
            .unwrap_err()
            .code(),
            "token_expiry_invalid"
        );
        // Expired: refused, though still listed (so its owner sees why).
        sqlx::query("UPDATE api_tokens SET expires_at = '2000-01-01T00:00:00Z' WHERE id = ?")
            .bind(read.token.id)
            .execute(&db)
            .await
            .unwrap();
        assert_eq!(authenticate(&db, &read.secret).await.unwrap(), None);
        assert_eq!(list(&db, &alice).await.unwrap().len(), 2);
    }
}

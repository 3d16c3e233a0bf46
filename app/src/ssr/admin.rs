//! Instance administration, for instance admins only: the sign-up switch and enabling or disabling
//! accounts. Disabling an account ends its sessions and makes its tokens useless at once (both are
//! checked against the account on every request).

use sqlx::SqlitePool;

use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use crate::error::AppError;
use crate::types::{InstanceSettings, UserAccount};

fn require_admin(actor: &Actor) -> Result<(), AppError> {
    if actor.is_admin {
        Ok(())
    } else {
        Err(AppError::Forbidden)
    }
}

pub async fn settings(db: &SqlitePool, actor: &Actor) -> Result<InstanceSettings, AppError> {
    require_admin(actor)?;
    let signup_enabled: bool =
        sqlx::query_scalar("SELECT signup_enabled FROM instance_settings WHERE id = 1")
            .fetch_one(db)
            .await?;
    Ok(InstanceSettings { signup_enabled })
}

pub async fn set_signup_enabled(
    db: &SqlitePool,
    actor: &Actor,
    enabled: bool,
) -> Result<InstanceSettings, AppError> {
    require_admin(actor)?;
    let mut tx = write_tx(db).await?;
    sqlx::query("UPDATE instance_settings SET signup_enabled = ? WHERE id = 1")
        .bind(enabled)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut tx,
        Entry::by(actor, None, "settings.signup", "instance", "signup_enabled")
            .detail(serde_json::json!({ "enabled": enabled })),
    )
    .await?;
    tx.commit().await?;
    Ok(InstanceSettings {
        signup_enabled: enabled,
    })
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    username: String,
    is_admin: bool,
    disabled: bool,
    created_at: String,
}

impl From<Row> for UserAccount {
    fn from(r: Row) -> Self {
        UserAccount {
            id: r.id,
            username: r.username,
            is_admin: r.is_admin,
            disabled: r.disabled,
            created_at: r.created_at,
        }
    }
}

const SELECT: &str = "SELECT id, username, is_admin, disabled, created_at FROM users";

pub async fn list_users(db: &SqlitePool, actor: &Actor) -> Result<Vec<UserAccount>, AppError> {
    require_admin(actor)?;
    Ok(
        sqlx::query_as::<_, Row>(&format!("{SELECT} ORDER BY username"))
            .fetch_all(db)
            .await?
            .into_iter()
            .map(UserAccount::from)
            .collect(),
    )
}

/// Admins cannot disable themselves: that would lock the last admin out of the instance.
pub async fn set_user_disabled(
    db: &SqlitePool,
    actor: &Actor,
    user_id: i64,
    disabled: bool,
) -> Result<UserAccount, AppError> {
    require_admin(actor)?;
    if user_id == actor.user_id && disabled {
        return Err(AppError::denied(
            "cannot_disable_self",
            "you cannot disable your own account",
        ));
    }
    let mut tx = write_tx(db).await?;
    let row = sqlx::query_as::<_, Row>(
        "UPDATE users SET disabled = ?1, session_epoch = session_epoch + (?1 != disabled) WHERE id = ?2
         RETURNING id, username, is_admin, disabled, created_at",
    )
    .bind(disabled)
    .bind(user_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(AppError::NotFound)?;
    let action = if disabled {
        "user.disable"
    } else {
        "user.enable"
    };
    audit::record(
        &mut tx,
        Entry::by(actor, None, action, "user", &row.username),
    )
    .await?;
    tx.commit().await?;
    Ok(row.into())
}

/// Sets (or with `None` removes) a workspace's GPU quota: the most GPUs its jobs and environments may
/// hold at once. Instance admins only — they share out the machine; owners cannot raise their own.
pub async fn set_gpu_quota(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: i64,
    max_gpus: Option<u32>,
) -> Result<Option<u32>, AppError> {
    require_admin(actor)?;
    if max_gpus.is_some_and(|n| n > 1024) {
        return Err(AppError::invalid(
            "max_gpus",
            "quota_invalid",
            "max_gpus must be at most 1024 (or null for no quota)",
        ));
    }
    let mut tx = write_tx(db).await?;
    let name: String = sqlx::query_scalar("SELECT name FROM workspaces WHERE id = ?")
        .bind(workspace_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(AppError::NotFound)?;
    match max_gpus {
        Some(n) => {
            sqlx::query(
                "INSERT INTO workspace_quotas (workspace_id, max_gpus) VALUES (?, ?)
                 ON CONFLICT (workspace_id) DO UPDATE SET max_gpus = excluded.max_gpus",
            )
            .bind(workspace_id)
            .bind(n)
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM workspace_quotas WHERE workspace_id = ?")
                .bind(workspace_id)
                .execute(&mut *tx)
                .await?;
        }
    }
    audit::record(
        &mut tx,
        Entry::by(
            actor,
            Some(workspace_id),
            "workspace.gpu_quota",
            "workspace",
            &name,
        )
        .detail(serde_json::json!({ "max_gpus": max_gpus })),
    )
    .await?;
    tx.commit().await?;
    Ok(max_gpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssr::testing::{actor, test_db};

    #[tokio::test]
    async fn only_admins_administer() {
        let (_dir, db) = test_db().await;
        let admin = actor(&db, "root").await;
        assert!(admin.is_admin, "first account is admin");
        let user = actor(&db, "user").await;
        assert_eq!(settings(&db, &user).await.unwrap_err(), AppError::Forbidden);
        assert_eq!(
            list_users(&db, &user).await.unwrap_err(),
            AppError::Forbidden
        );
        assert!(
            !set_signup_enabled(&db, &admin, false)
                .await
                .unwrap()
                .signup_enabled
        );
        assert!(!settings(&db, &admin).await.unwrap().signup_enabled);
        let e =
            crate::ssr::accounts::sign_up(&db, &Default::default(), "late", "long enough pw", None)
                .await
                .unwrap_err();
        assert_eq!(e.code(), "signup_disabled");
        assert!(
            set_user_disabled(&db, &admin, user.user_id, true)
                .await
                .unwrap()
                .disabled
        );
        assert_eq!(
            set_user_disabled(&db, &admin, admin.user_id, true)
                .await
                .unwrap_err()
                .code(),
            "cannot_disable_self"
        );
        assert_eq!(
            set_user_disabled(&db, &admin, 999, true).await.unwrap_err(),
            AppError::NotFound
        );
        assert_eq!(list_users(&db, &admin).await.unwrap().len(), 2);
    }
}

//! The audit log: who did what to which resource, when and from which address. Entries are written
//! with the same transaction as the change they describe, so a change without its entry (or the
//! reverse) cannot happen. Workspace members read their workspace's entries on the Activity page.

use contracts::ids::{UserId, WorkspaceId};
use sqlx::{SqliteConnection, SqlitePool};

use super::access;
use super::auth::Actor;
use contracts::error::AppError;
use contracts::types::{AuditEntry, Role};

/// How many entries one page of the activity list holds.
pub const PAGE_SIZE: i64 = 50;

/// One change to record.
pub struct Entry<'a> {
    /// `None` for instance-level events (accounts, tokens, deleted workspaces).
    pub workspace_id: Option<WorkspaceId>,
    pub actor_id: Option<UserId>,
    /// A dotted verb: `workspace.create`, `member.add`, `token.revoke`, ...
    pub action: &'a str,
    pub resource_type: &'a str,
    /// A human-readable identifier of the resource (a name, not only an id).
    pub resource: &'a str,
    pub detail: Option<serde_json::Value>,
    pub ip: Option<&'a str>,
}

impl<'a> Entry<'a> {
    /// An entry for `actor` acting inside `workspace_id`.
    pub fn by(
        actor: &'a Actor,
        workspace_id: Option<WorkspaceId>,
        action: &'a str,
        resource_type: &'a str,
        resource: &'a str,
    ) -> Self {
        Entry {
            workspace_id,
            actor_id: Some(actor.user_id),
            action,
            resource_type,
            resource,
            detail: None,
            ip: actor.ip.as_deref(),
        }
    }

    /// An entry for what the server or the command line did, with no one signed in (a reset password,
    /// a purged workspace).
    pub fn unattended(action: &'a str, resource_type: &'a str, resource: &'a str) -> Self {
        Entry {
            workspace_id: None,
            actor_id: None,
            action,
            resource_type,
            resource,
            detail: None,
            ip: None,
        }
    }

    /// An entry for `actor` acting on `resource` inside workspace `workspace_id`, a thing of the kind
    /// the action starts with (`dataset.delete` is done to a `dataset`).
    pub fn in_workspace(
        actor: &'a Actor,
        workspace_id: WorkspaceId,
        action: &'a str,
        resource: &'a str,
    ) -> Self {
        let kind = action.split('.').next().unwrap_or(action);
        Entry::by(actor, Some(workspace_id), action, kind, resource)
    }

    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }
}

/// Writes an entry on the caller's transaction.
pub async fn record(conn: &mut SqliteConnection, entry: Entry<'_>) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO audit_log (workspace_id, actor_id, action, resource_type, resource, detail, ip, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(entry.workspace_id)
    .bind(entry.actor_id)
    .bind(entry.action)
    .bind(entry.resource_type)
    .bind(entry.resource)
    .bind(entry.detail.map(|d| d.to_string()))
    .bind(entry.ip)
    .bind(super::now())
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    actor: Option<String>,
    action: String,
    resource_type: String,
    resource: String,
    detail: Option<String>,
    ip: Option<String>,
    at: String,
}

/// A workspace's entries, newest first, [`PAGE_SIZE`] at a time; `before` is the last id of the
/// previous page. Any member may read them.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    before: Option<i64>,
) -> Result<Vec<AuditEntry>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows = sqlx::query_as::<_, Row>(
        "SELECT a.id, u.username AS actor, a.action, a.resource_type, a.resource, a.detail, a.ip, a.at
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
         WHERE a.workspace_id = ? AND a.id < ?
         ORDER BY a.id DESC LIMIT ?",
    )
    .bind(workspace_id)
    .bind(before.unwrap_or(i64::MAX))
    .bind(PAGE_SIZE)
    .fetch_all(&mut *conn)
    .await?;
    Ok(entries(rows))
}

/// The instance's own entries (accounts, sign-ins and their refusals, identity providers, settings),
/// newest first, [`PAGE_SIZE`] at a time. Instance admins only.
pub async fn instance(
    db: &SqlitePool,
    actor: &Actor,
    before: Option<i64>,
) -> Result<Vec<AuditEntry>, AppError> {
    if !actor.is_admin {
        return Err(AppError::Forbidden);
    }
    let rows = sqlx::query_as::<_, Row>(
        "SELECT a.id, u.username AS actor, a.action, a.resource_type, a.resource, a.detail, a.ip, a.at
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
         WHERE a.workspace_id IS NULL AND a.id < ?
         ORDER BY a.id DESC LIMIT ?",
    )
    .bind(before.unwrap_or(i64::MAX))
    .bind(PAGE_SIZE)
    .fetch_all(db)
    .await?;
    Ok(entries(rows))
}

fn entries(rows: Vec<Row>) -> Vec<AuditEntry> {
    rows.into_iter()
        .map(|r| AuditEntry {
            id: r.id,
            actor: r.actor,
            action: r.action,
            resource_type: r.resource_type,
            resource: r.resource,
            detail: r.detail,
            ip: r.ip,
            at: r.at,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_workspace_things_kind_is_its_actions_first_word() {
        let (_dir, db) = crate::testing::test_db().await;
        let me = crate::testing::actor(&db, "owner").await;
        for (action, kind) in [
            ("dataset.delete", "dataset"),
            ("member.change_role", "member"),
            ("checkpoint.evaluate", "checkpoint"),
            ("workspace.gpu_quota", "workspace"),
        ] {
            let entry = Entry::in_workspace(&me, WorkspaceId::new(7), action, "x");
            assert_eq!(
                (entry.workspace_id, entry.actor_id, entry.resource_type),
                (Some(WorkspaceId::new(7)), Some(me.user_id), kind)
            );
        }
    }
}

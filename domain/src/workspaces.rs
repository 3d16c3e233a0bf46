//! Team workspaces: create (the creator becomes the owner), list the caller's, read, rename, delete.
//! Every operation on one workspace goes through `access::authorize` and every change is audited in
//! its own transaction. Deleting is two steps: [`delete`] decides (at once, atomically), [`purge`]
//! carries it out (stops and removes everything the workspace owns, survives a crash).

pub mod purge;

use contracts::ids::{EndpointId, JobId, WorkspaceId};
use sqlx::{SqliteConnection, SqlitePool};

use super::access;
use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use super::{endpoints, jobs, names};
use contracts::error::{AppError, ErrorCode};
use contracts::types::{EndpointStatus, JobStatus, Role, WorkspaceSummary};

/// Trims a workspace name and checks it ([`names`]).
pub fn normalize_name(raw: &str) -> Result<String, AppError> {
    names::checked(raw, ErrorCode::WorkspaceNameInvalid, "workspace name").map(str::to_string)
}

struct Row {
    id: WorkspaceId,
    name: String,
    role: String,
    member_count: i64,
    created_at: String,
}

impl Row {
    fn into_summary(self) -> Result<WorkspaceSummary, AppError> {
        let role = access::stored_role(&self.role)?;
        Ok(WorkspaceSummary {
            id: self.id,
            name: self.name,
            role,
            member_count: self.member_count,
            created_at: self.created_at,
        })
    }
}

// `workspace_rows!("WHERE …", args…)`: the caller's workspaces with the caller's role and the
// member count; the first argument is the caller's user id (see `db::row_query!`).
crate::db::row_query!(
    $ workspace_rows,
    Row,
    r#"SELECT w.id AS "id!: contracts::ids::WorkspaceId", w.name, m.role, w.created_at,
        (SELECT COUNT(*) FROM members c WHERE c.workspace_id = w.id) AS "member_count!: i64"
      FROM workspaces w JOIN members m ON m.workspace_id = w.id AND m.user_id = ?"#
);

async fn summary(
    conn: &mut SqliteConnection,
    actor: &Actor,
    id: WorkspaceId,
) -> Result<WorkspaceSummary, AppError> {
    workspace_rows!("WHERE w.id = ?", actor.user_id, id)
        .fetch_optional(conn)
        .await?
        .ok_or(AppError::NotFound)?
        .into_summary()
}

/// The caller's workspaces, by name.
pub async fn list(db: &SqlitePool, actor: &Actor) -> Result<Vec<WorkspaceSummary>, AppError> {
    workspace_rows!("ORDER BY w.name COLLATE NOCASE, w.id", actor.user_id)
        .fetch_all(db)
        .await?
        .into_iter()
        .map(Row::into_summary)
        .collect()
}

pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    id: WorkspaceId,
) -> Result<WorkspaceSummary, AppError> {
    let mut conn = access::connect(db, actor, id, Role::Viewer).await?;
    summary(&mut conn, actor, id).await
}

pub async fn create(
    db: &SqlitePool,
    actor: &Actor,
    name: &str,
) -> Result<WorkspaceSummary, AppError> {
    let name = normalize_name(name)?;
    let now = super::now();
    let mut tx = write_tx(db).await?;
    let id: WorkspaceId = sqlx::query_scalar(
        "INSERT INTO workspaces (name, created_by, created_at) VALUES (?, ?, ?) RETURNING id",
    )
    .bind(&name)
    .bind(actor.user_id)
    .bind(&now)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO members (workspace_id, user_id, role, added_at) VALUES (?, ?, 'owner', ?)",
    )
    .bind(id)
    .bind(actor.user_id)
    .bind(&now)
    .execute(&mut *tx)
    .await?;
    let entry = Entry::in_workspace(actor, id, "workspace.create", &name);
    audit::record(&mut tx, entry).await?;
    let ws = summary(&mut tx, actor, id).await?;
    tx.commit().await?;
    Ok(ws)
}

/// Owners only.
pub async fn rename(
    db: &SqlitePool,
    actor: &Actor,
    id: WorkspaceId,
    name: &str,
) -> Result<WorkspaceSummary, AppError> {
    let mut tx = access::begin(db, actor, id, Role::Owner).await?;
    // Validated after the access check: a non-member learns nothing, not even that a name was bad.
    let name = normalize_name(name)?;
    let old: String = sqlx::query_scalar("SELECT name FROM workspaces WHERE id = ?")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query("UPDATE workspaces SET name = ? WHERE id = ?")
        .bind(&name)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::in_workspace(actor, id, "workspace.rename", &name);
    let detail = serde_json::json!({ "from": old, "to": name });
    audit::record(&mut tx, entry.detail(detail)).await?;
    let ws = summary(&mut tx, actor, id).await?;
    tx.commit().await?;
    Ok(ws)
}

/// Owners only. Decides the deletion at once and carries it out in the background ([`purge`]).
pub async fn delete(
    state: &super::AppState,
    actor: &Actor,
    id: WorkspaceId,
) -> Result<(), AppError> {
    mark_deleting(&state.db, actor, id).await?;
    purge::spawn(state.clone(), id);
    Ok(())
}

/// Decides the deletion in one transaction: the workspace loses its members (so nobody reaches it
/// any more, by session or token), its endpoint keys, its queued jobs and its endpoints' wish to
/// run, and is marked `deleting_since`; the purge does the rest.
async fn mark_deleting(db: &SqlitePool, actor: &Actor, id: WorkspaceId) -> Result<(), AppError> {
    let mut tx = access::begin(db, actor, id, Role::Owner).await?;
    let now = super::now();
    let name: String = sqlx::query_scalar(
        "UPDATE workspaces SET deleting_since = ? WHERE id = ? AND deleting_since IS NULL RETURNING name",
    )
    .bind(&now)
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    for statement in [
        "DELETE FROM members WHERE workspace_id = ?1",
        "DELETE FROM endpoint_keys WHERE endpoint_id IN (SELECT id FROM endpoints WHERE workspace_id = ?1)",
    ] {
        sqlx::query(statement)
            .bind(id)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
    }
    let endpoints: Vec<EndpointId> =
        sqlx::query_scalar("SELECT id FROM endpoints WHERE workspace_id = ?")
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
    for endpoint_id in endpoints {
        endpoints::status::endpoint(
            &mut tx,
            endpoint_id,
            EndpointStatus::Stopped,
            endpoints::status::EndpointReason::Deleted,
            Some("the workspace was deleted"),
        )
        .await?;
    }
    let queued: Vec<JobId> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE workspace_id = ? AND status = 'queued'")
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
    let reason = jobs::status::Reason::WorkspaceDeleted;
    for job_id in queued {
        jobs::status::finish(
            &mut tx,
            job_id,
            JobStatus::Cancelled,
            reason,
            Some(purge::DELETED),
        )
        .await?;
    }
    // Outside the workspace: its log goes with it.
    let entry = Entry::by(actor, None, "workspace.delete", "workspace", &name);
    let detail = serde_json::json!({ "workspace_id": id });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::people;

    #[test]
    fn names_are_trimmed_and_checked() {
        assert_eq!(normalize_name("  中文 NLP 团队 ").unwrap(), "中文 NLP 团队");
        for bad in ["", "   ", "a\u{7}b", &"x".repeat(65)] {
            assert_eq!(
                normalize_name(bad).unwrap_err().code(),
                "workspace_name_invalid"
            );
        }
    }

    #[tokio::test]
    async fn creator_owns_and_outsiders_get_not_found() {
        let (_dir, db, [alice, bob]) = people(["alice", "bob"]).await;
        let ws = create(&db, &alice, " Team A ").await.unwrap();
        assert_eq!(
            (ws.name.as_str(), ws.role, ws.member_count),
            ("Team A", Role::Owner, 1)
        );
        assert_eq!(list(&db, &alice).await.unwrap().len(), 1);
        assert!(list(&db, &bob).await.unwrap().is_empty());
        assert_eq!(get(&db, &bob, ws.id).await.unwrap_err(), AppError::NotFound);
        assert_eq!(
            rename(&db, &bob, ws.id, "x").await.unwrap_err(),
            AppError::NotFound
        );
        assert_eq!(
            mark_deleting(&db, &bob, ws.id).await.unwrap_err(),
            AppError::NotFound
        );
        assert_eq!(
            get(&db, &alice, WorkspaceId::new(9999)).await.unwrap_err(),
            AppError::NotFound
        );

        let renamed = rename(&db, &alice, ws.id, "Team B").await.unwrap();
        assert_eq!(renamed.name, "Team B");
        mark_deleting(&db, &alice, ws.id).await.unwrap();
        assert_eq!(
            get(&db, &alice, ws.id).await.unwrap_err(),
            AppError::NotFound
        );
        let actions: Vec<String> = sqlx::query_scalar(
            "SELECT action FROM audit_log WHERE action LIKE 'workspace.%' ORDER BY id",
        )
        .fetch_all(&db)
        .await
        .unwrap();
        assert_eq!(
            actions,
            ["workspace.create", "workspace.rename", "workspace.delete"]
        );
    }

    #[tokio::test]
    async fn invalid_name_writes_nothing() {
        let (_dir, db, [alice]) = people(["alice"]).await;
        assert_eq!(
            create(&db, &alice, "").await.unwrap_err().code(),
            "workspace_name_invalid"
        );
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM workspaces")
            .fetch_one(&db)
            .await
            .unwrap();
        assert_eq!(n, 0);
    }
}

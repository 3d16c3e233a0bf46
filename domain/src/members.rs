//! Workspace members and their roles (owner, editor, viewer). Owners add and remove members by
//! username and change roles; anyone may leave. A workspace always keeps at least one owner: the
//! check runs inside the same write transaction as the change.

use contracts::ids::{UserId, WorkspaceId};
use sqlx::{SqliteConnection, SqlitePool};

use super::access;
use super::accounts::normalize_username;
use super::audit::{self, Entry};
use super::auth::Actor;
use contracts::error::{AppError, ErrorCode};
use contracts::types::{Member, Role};

fn parse_role(raw: &str) -> Result<Role, AppError> {
    Role::parse(raw.trim()).ok_or_else(|| {
        AppError::invalid(
            "role",
            ErrorCode::RoleInvalid,
            "role must be owner, editor or viewer",
        )
    })
}

struct Row {
    user_id: UserId,
    username: String,
    role: String,
    added_at: String,
}

impl Row {
    fn into_member(self) -> Result<Member, AppError> {
        let role = access::stored_role(&self.role)?;
        Ok(Member {
            user_id: self.user_id,
            username: self.username,
            role,
            added_at: self.added_at,
        })
    }
}

// `member_rows!("WHERE …", args…)`: members, with their usernames (see `db::row_query!`).
crate::db::row_query!(
    $ member_rows,
    Row,
    r#"SELECT m.user_id AS "user_id: contracts::ids::UserId", u.username, m.role, m.added_at
      FROM members m JOIN users u ON u.id = m.user_id"#
);

/// Member `user_id` of the workspace (NotFound when they are not one).
async fn member(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    user_id: UserId,
) -> Result<Member, AppError> {
    member_rows!(
        "WHERE m.workspace_id = ? AND m.user_id = ?",
        workspace_id,
        user_id
    )
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)?
    .into_member()
}

async fn owner_count(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
) -> Result<i64, AppError> {
    Ok(
        sqlx::query_scalar(
            "SELECT COUNT(*) FROM members WHERE workspace_id = ? AND role = 'owner'",
        )
        .bind(workspace_id)
        .fetch_one(conn)
        .await?,
    )
}

fn last_owner() -> AppError {
    AppError::conflict(
        "user_id",
        ErrorCode::LastOwner,
        "a workspace needs at least one owner; make someone else owner first",
    )
}

/// Members by role (owners first), then name. Any member may list them.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<Member>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows = member_rows!(
        "WHERE m.workspace_id = ?
         ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'editor' THEN 1 ELSE 2 END, u.username",
        workspace_id
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter().map(Row::into_member).collect()
}

/// Owners only.
pub async fn add(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    username: &str,
    role: &str,
) -> Result<Member, AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Owner).await?;
    let role = parse_role(role)?;
    let username = normalize_username(username)?;
    let user_id: UserId = sqlx::query_scalar("SELECT id FROM users WHERE username = ?")
        .bind(&username)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| {
            AppError::invalid(
                "username",
                ErrorCode::UserNotFound,
                format!("no account named {username:?}"),
            )
        })?;
    match member(&mut tx, workspace_id, user_id).await {
        Err(AppError::NotFound) => {}
        Ok(_) => {
            return Err(AppError::conflict(
                "username",
                ErrorCode::AlreadyMember,
                format!("{username} is already a member"),
            ))
        }
        Err(e) => return Err(e),
    }
    sqlx::query("INSERT INTO members (workspace_id, user_id, role, added_at) VALUES (?, ?, ?, ?)")
        .bind(workspace_id)
        .bind(user_id)
        .bind(role.as_str())
        .bind(super::now())
        .execute(&mut *tx)
        .await?;
    let entry = Entry::in_workspace(actor, workspace_id, "member.add", &username);
    audit::record(&mut tx, entry.detail(serde_json::json!({ "role": role }))).await?;
    let added = member(&mut tx, workspace_id, user_id).await?;
    tx.commit().await?;
    Ok(added)
}

/// Owners only; the last owner cannot be demoted.
pub async fn change_role(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    user_id: UserId,
    role: &str,
) -> Result<Member, AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Owner).await?;
    let role = parse_role(role)?;
    let current = member(&mut tx, workspace_id, user_id).await?;
    if current.role == Role::Owner
        && role != Role::Owner
        && owner_count(&mut tx, workspace_id).await? <= 1
    {
        return Err(last_owner());
    }
    sqlx::query("UPDATE members SET role = ? WHERE workspace_id = ? AND user_id = ?")
        .bind(role.as_str())
        .bind(workspace_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::in_workspace(actor, workspace_id, "member.change_role", &current.username);
    let detail = serde_json::json!({ "from": current.role, "to": role });
    audit::record(&mut tx, entry.detail(detail)).await?;
    let changed = member(&mut tx, workspace_id, user_id).await?;
    tx.commit().await?;
    Ok(changed)
}

/// Owners may remove anyone; any member may remove themselves. The last owner cannot be removed.
pub async fn remove(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    user_id: UserId,
) -> Result<(), AppError> {
    let need = if user_id == actor.user_id {
        Role::Viewer
    } else {
        Role::Owner
    };
    let mut tx = access::begin(db, actor, workspace_id, need).await?;
    let current = member(&mut tx, workspace_id, user_id).await?;
    if current.role == Role::Owner && owner_count(&mut tx, workspace_id).await? <= 1 {
        return Err(last_owner());
    }
    sqlx::query("DELETE FROM members WHERE workspace_id = ? AND user_id = ?")
        .bind(workspace_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    let action = if user_id == actor.user_id {
        "member.leave"
    } else {
        "member.remove"
    };
    let entry = Entry::in_workspace(actor, workspace_id, action, &current.username);
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::people;
    use crate::workspaces;

    #[tokio::test]
    async fn roles_are_enforced_and_last_owner_protected() {
        let (_dir, db, [alice, bob, carol]) = people(["alice", "bob", "carol"]).await;
        let ws = workspaces::create(&db, &alice, "NLP").await.unwrap();

        let m = add(&db, &alice, ws.id, "Bob", "viewer").await.unwrap();
        assert_eq!((m.username.as_str(), m.role), ("bob", Role::Viewer));
        for (username, role, code) in [
            ("bob", "editor", "already_member"),
            ("nobody", "editor", "user_not_found"),
            ("carol", "boss", "role_invalid"),
        ] {
            let refused = add(&db, &alice, ws.id, username, role).await.unwrap_err();
            assert_eq!(refused.code(), code, "{username} as {role}");
        }
        // A viewer may read but not change; an outsider learns nothing.
        assert_eq!(list(&db, &bob, ws.id).await.unwrap().len(), 2);
        assert_eq!(
            add(&db, &bob, ws.id, "carol", "viewer").await.unwrap_err(),
            AppError::Forbidden
        );
        assert_eq!(
            list(&db, &carol, ws.id).await.unwrap_err(),
            AppError::NotFound
        );

        let demoted = change_role(&db, &alice, ws.id, alice.user_id, "editor").await;
        assert_eq!(demoted.unwrap_err().code(), "last_owner");
        let removed = remove(&db, &alice, ws.id, alice.user_id).await;
        assert_eq!(removed.unwrap_err().code(), "last_owner");
        change_role(&db, &alice, ws.id, bob.user_id, "owner")
            .await
            .unwrap();
        change_role(&db, &bob, ws.id, alice.user_id, "editor")
            .await
            .unwrap();
        // Alice is an editor now: she may leave, but not remove others.
        assert_eq!(
            remove(&db, &alice, ws.id, bob.user_id).await.unwrap_err(),
            AppError::Forbidden
        );
        remove(&db, &alice, ws.id, alice.user_id).await.unwrap();
        assert_eq!(
            list(&db, &alice, ws.id).await.unwrap_err(),
            AppError::NotFound
        );

        let entries = crate::audit::list(&db, &bob, ws.id, None).await.unwrap();
        let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(
            actions,
            [
                "member.leave",
                "member.change_role",
                "member.change_role",
                "member.add",
                "workspace.create"
            ]
        );
        assert_eq!(entries[0].actor.as_deref(), Some("alice"));
    }
}

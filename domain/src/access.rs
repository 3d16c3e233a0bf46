//! The one authorisation check for anything inside a workspace. Every workspace-scoped query calls
//! [`authorize`] first, most through `connect` or `begin`, which hand out the connection or write
//! transaction the work then uses: a non-member gets `NotFound` — exactly what a missing workspace
//! gets, so the workspace's existence and name never leak — and a member whose role is too low gets
//! `Forbidden`. Instance admins get no special access to workspaces: administering accounts is not
//! reading data.

use contracts::ids::WorkspaceId;
use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};

use super::auth::Actor;
use contracts::error::AppError;
use contracts::types::Role;

/// The caller's role in the workspace, if it is at least `need`.
pub async fn authorize(
    conn: &mut SqliteConnection,
    actor: &Actor,
    workspace_id: WorkspaceId,
    need: Role,
) -> Result<Role, AppError> {
    let role: Option<String> =
        sqlx::query_scalar("SELECT role FROM members WHERE workspace_id = ? AND user_id = ?")
            .bind(workspace_id)
            .bind(actor.user_id)
            .fetch_optional(conn)
            .await?;
    let role = role
        .and_then(|r| Role::parse(&r))
        .ok_or(AppError::NotFound)?;
    if role < need {
        return Err(AppError::Forbidden);
    }
    Ok(role)
}

/// A role as the members table stores it; any other word there is the server's fault, not the
/// caller's.
pub(crate) fn stored_role(word: &str) -> Result<Role, AppError> {
    Role::parse(word).ok_or_else(|| contracts::error::internal("stored role", word))
}

/// A connection for work inside workspace `workspace_id`, once [`authorize`] found that `actor` holds
/// at least `need` there.
pub(crate) async fn connect(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    need: Role,
) -> Result<PoolConnection<Sqlite>, AppError> {
    let mut conn = db.acquire().await?;
    authorize(&mut conn, actor, workspace_id, need).await?;
    Ok(conn)
}

/// As [`connect`], in a write transaction (`db::write_tx`): the change that follows reads what it
/// changes, and another writer must not slip in between.
pub(crate) async fn begin(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    need: Role,
) -> Result<Transaction<'static, Sqlite>, AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    authorize(&mut tx, actor, workspace_id, need).await?;
    Ok(tx)
}

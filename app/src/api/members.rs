//! A workspace's members and their roles (`owner`, `editor` or `viewer`); changes are for owners.

use contracts::ids::{UserId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::Member;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::members};

#[server(prefix = "/rpc", endpoint = "list_members")]
pub async fn list_members(workspace_id: WorkspaceId) -> Result<Vec<Member>, AppError> {
    as_caller(|s, a| async move { members::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "add_member")]
pub async fn add_member(
    workspace_id: WorkspaceId,
    username: String,
    role: String,
) -> Result<Member, AppError> {
    as_caller(|s, a| async move { members::add(&s.db, &a, workspace_id, &username, &role).await })
        .await
}

/// The last owner cannot be demoted.
#[server(prefix = "/rpc", endpoint = "change_member_role")]
pub async fn change_member_role(
    workspace_id: WorkspaceId,
    user_id: UserId,
    role: String,
) -> Result<Member, AppError> {
    as_caller(
        |s, a| async move { members::change_role(&s.db, &a, workspace_id, user_id, &role).await },
    )
    .await
}

/// Owners, or a member removing themselves. The last owner cannot be removed.
#[server(prefix = "/rpc", endpoint = "remove_member")]
pub async fn remove_member(workspace_id: WorkspaceId, user_id: UserId) -> Result<(), AppError> {
    as_caller(|s, a| async move { members::remove(&s.db, &a, workspace_id, user_id).await }).await
}

//! Team workspaces: the caller's list, one by id (`NotFound` for non-members), create, rename, delete.

use contracts::ids::WorkspaceId;
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::WorkspaceSummary;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::workspaces};

/// Workspaces the caller is a member of.
#[server(prefix = "/rpc", endpoint = "list_workspaces")]
pub async fn list_workspaces() -> Result<Vec<WorkspaceSummary>, AppError> {
    as_caller(|s, a| async move { workspaces::list(&s.db, &a).await }).await
}

#[server(prefix = "/rpc", endpoint = "get_workspace")]
pub async fn get_workspace(workspace_id: WorkspaceId) -> Result<WorkspaceSummary, AppError> {
    as_caller(|s, a| async move { workspaces::get(&s.db, &a, workspace_id).await }).await
}

/// The creator becomes its owner.
#[server(prefix = "/rpc", endpoint = "create_workspace")]
pub async fn create_workspace(name: String) -> Result<WorkspaceSummary, AppError> {
    as_caller(|s, a| async move { workspaces::create(&s.db, &a, &name).await }).await
}

/// Owners only.
#[server(prefix = "/rpc", endpoint = "rename_workspace")]
pub async fn rename_workspace(
    workspace_id: WorkspaceId,
    name: String,
) -> Result<WorkspaceSummary, AppError> {
    as_caller(|s, a| async move { workspaces::rename(&s.db, &a, workspace_id, &name).await }).await
}

/// Owners only.
#[server(prefix = "/rpc", endpoint = "delete_workspace")]
pub async fn delete_workspace(workspace_id: WorkspaceId) -> Result<(), AppError> {
    as_caller(|s, a| async move { workspaces::delete(&s, &a, workspace_id).await }).await
}

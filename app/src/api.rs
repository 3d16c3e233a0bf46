//! Server functions: the UI's calls into the server. Each is a few lines that take `AppState` and the
//! caller from context and call the same domain function the REST API calls (`crate::ssr::*`), so each
//! rule lives in one place. Prefix `/rpc` keeps them apart from the public REST API under `/api/v1`.

use leptos::prelude::*;

use crate::error::AppError;
use crate::types::*;

// ---- accounts ------------------------------------------------------------------------------------

/// The signed-in account, or `None`.
#[server(prefix = "/rpc")]
pub async fn current_user() -> Result<Option<Me>, AppError> {
    unimplemented!("backend")
}

/// Creates an account and signs it in. The first account becomes the instance admin.
#[server(prefix = "/rpc")]
pub async fn sign_up(username: String, password: String) -> Result<Me, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn sign_in(username: String, password: String) -> Result<Me, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn sign_out() -> Result<(), AppError> {
    unimplemented!("backend")
}

// ---- workspaces -----------------------------------------------------------------------------------

/// Workspaces the caller is a member of.
#[server(prefix = "/rpc")]
pub async fn list_workspaces() -> Result<Vec<WorkspaceSummary>, AppError> {
    unimplemented!("backend")
}

/// NotFound for non-members.
#[server(prefix = "/rpc")]
pub async fn get_workspace(workspace_id: i64) -> Result<WorkspaceSummary, AppError> {
    unimplemented!("backend")
}

/// The creator becomes its owner.
#[server(prefix = "/rpc")]
pub async fn create_workspace(name: String) -> Result<WorkspaceSummary, AppError> {
    unimplemented!("backend")
}

/// Owners only.
#[server(prefix = "/rpc")]
pub async fn rename_workspace(workspace_id: i64, name: String) -> Result<WorkspaceSummary, AppError> {
    unimplemented!("backend")
}

/// Owners only.
#[server(prefix = "/rpc")]
pub async fn delete_workspace(workspace_id: i64) -> Result<(), AppError> {
    unimplemented!("backend")
}

// ---- members --------------------------------------------------------------------------------------

#[server(prefix = "/rpc")]
pub async fn list_members(workspace_id: i64) -> Result<Vec<Member>, AppError> {
    unimplemented!("backend")
}

/// Owners only. `role` is `owner`, `editor` or `viewer`.
#[server(prefix = "/rpc")]
pub async fn add_member(workspace_id: i64, username: String, role: String) -> Result<Member, AppError> {
    unimplemented!("backend")
}

/// Owners only. The last owner cannot be demoted.
#[server(prefix = "/rpc")]
pub async fn change_member_role(workspace_id: i64, user_id: i64, role: String) -> Result<Member, AppError> {
    unimplemented!("backend")
}

/// Owners only (or a member removing themselves). The last owner cannot be removed.
#[server(prefix = "/rpc")]
pub async fn remove_member(workspace_id: i64, user_id: i64) -> Result<(), AppError> {
    unimplemented!("backend")
}

// ---- activity -------------------------------------------------------------------------------------

/// Newest first; `before` is an entry id for paging.
#[server(prefix = "/rpc")]
pub async fn list_activity(workspace_id: i64, before: Option<i64>) -> Result<Vec<AuditEntry>, AppError> {
    unimplemented!("backend")
}

// ---- personal API tokens --------------------------------------------------------------------------

#[server(prefix = "/rpc")]
pub async fn list_tokens() -> Result<Vec<ApiToken>, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn create_token(name: String) -> Result<NewApiToken, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn revoke_token(token_id: i64) -> Result<(), AppError> {
    unimplemented!("backend")
}

// ---- instance administration (admins only) -------------------------------------------------------

#[server(prefix = "/rpc")]
pub async fn instance_settings() -> Result<InstanceSettings, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn set_signup_enabled(enabled: bool) -> Result<InstanceSettings, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn list_users() -> Result<Vec<UserAccount>, AppError> {
    unimplemented!("backend")
}

#[server(prefix = "/rpc")]
pub async fn set_user_disabled(user_id: i64, disabled: bool) -> Result<UserAccount, AppError> {
    unimplemented!("backend")
}

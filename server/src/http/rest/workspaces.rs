//! `/api/v1/workspaces/...`: workspaces, their members and their activity log. Thin handlers over
//! `domain::workspaces`, `domain::members` and `domain::audit`, where the access rules live.

use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{MemberPath, WorkspacePath};
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path, ApiQuery as Query};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::{AuditEntry, Member, WorkspaceSummary};
use domain::{audit, members, workspaces, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![
        list, create; get, rename, delete; list_members, add_member;
        change_member_role, remove_member; activity
    ]
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceBody {
    /// 1–64 characters, no control characters; surrounding spaces are trimmed.
    pub name: String,
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberBody {
    pub username: String,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRoleBody {
    /// `owner`, `editor` or `viewer`.
    pub role: String,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ActivityQuery {
    /// Return entries older than this entry id (paging).
    pub before: Option<i64>,
}

/// Workspaces the caller is a member of.
#[utoipa::path(get, path = "/api/v1/workspaces", tag = "workspaces", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<WorkspaceSummary>), (status = 401, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
) -> Result<Json<Vec<WorkspaceSummary>>, AppError> {
    Ok(Json(workspaces::list(&state.db, &actor).await?))
}

/// Creates a workspace; the caller becomes its owner.
#[utoipa::path(post, path = "/api/v1/workspaces", tag = "workspaces", security(("session" = []), ("token" = [])),
    request_body = WorkspaceBody,
    responses((status = 201, body = WorkspaceSummary), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    Caller { state, actor }: Caller,
    ApiJson(body): ApiJson<WorkspaceBody>,
) -> Result<(StatusCode, Json<WorkspaceSummary>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(workspaces::create(&state.db, &actor, &body.name).await?),
    ))
}

/// One workspace (members only; anyone else gets 404).
#[utoipa::path(get, path = "/api/v1/workspaces/{id}", tag = "workspaces", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = WorkspaceSummary), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<WorkspaceSummary>, AppError> {
    Ok(Json(workspaces::get(&state.db, &actor, id).await?))
}

/// Renames a workspace (owners).
#[utoipa::path(patch, path = "/api/v1/workspaces/{id}", tag = "workspaces", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = WorkspaceBody,
    responses((status = 200, body = WorkspaceSummary), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn rename(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(body): ApiJson<WorkspaceBody>,
) -> Result<Json<WorkspaceSummary>, AppError> {
    Ok(Json(
        workspaces::rename(&state.db, &actor, id, &body.name).await?,
    ))
}

/// Deletes a workspace and everything in it (owners). At once nobody reaches it any more; its
/// processes, containers, files and rows are removed in the background (finished after a restart).
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}", tag = "workspaces", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 204, description = "done"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<StatusCode, AppError> {
    workspaces::delete(&state, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The workspace's members.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/members", tag = "members", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<Member>), (status = 404, body = ErrorBody)))]
pub async fn list_members(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<Member>>, AppError> {
    Ok(Json(members::list(&state.db, &actor, id).await?))
}

/// Adds an existing account as a member (owners).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/members", tag = "members", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = AddMemberBody,
    responses((status = 201, body = Member), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "already a member", body = ErrorBody),
              (status = 422, description = "unknown user or role", body = ErrorBody)))]
pub async fn add_member(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(body): ApiJson<AddMemberBody>,
) -> Result<(StatusCode, Json<Member>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(members::add(&state.db, &actor, id, &body.username, &body.role).await?),
    ))
}

/// Changes a member's role (owners). The last owner cannot be demoted (409).
#[utoipa::path(patch, path = "/api/v1/workspaces/{id}/members/{user_id}", tag = "members",
    security(("session" = []), ("token" = [])),
    params(MemberPath),
    request_body = ChangeRoleBody,
    responses((status = 200, body = Member), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "last owner", body = ErrorBody)))]
pub async fn change_member_role(
    Caller { state, actor }: Caller,
    Path(MemberPath { id, user_id }): Path<MemberPath>,
    ApiJson(body): ApiJson<ChangeRoleBody>,
) -> Result<Json<Member>, AppError> {
    Ok(Json(
        members::change_role(&state.db, &actor, id, user_id, &body.role).await?,
    ))
}

/// Removes a member (owners; any member may remove themselves). The last owner cannot be removed (409).
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/members/{user_id}", tag = "members",
    security(("session" = []), ("token" = [])),
    params(MemberPath),
    responses((status = 204, description = "done"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "last owner", body = ErrorBody)))]
pub async fn remove_member(
    Caller { state, actor }: Caller,
    Path(MemberPath { id, user_id }): Path<MemberPath>,
) -> Result<StatusCode, AppError> {
    members::remove(&state.db, &actor, id, user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The workspace's audit log, newest first.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/activity", tag = "workspaces", security(("session" = []), ("token" = [])),
    params(WorkspacePath, ActivityQuery),
    responses((status = 200, body = Vec<AuditEntry>), (status = 404, body = ErrorBody)))]
pub async fn activity(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(q): Query<ActivityQuery>,
) -> Result<Json<Vec<AuditEntry>>, AppError> {
    Ok(Json(audit::list(&state.db, &actor, id, q.before).await?))
}

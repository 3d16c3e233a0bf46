//! `/api/v1/admin/...`: instance settings, accounts and loading image archives, for instance admins
//! (others get 403).

use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{ClusterPath, UserPath, WorkspaceClusterPath, WorkspacePath};
use crate::http::caller::{Caller, Uploader};
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::{
    ClusterAccount, ClusterRegistration, ClusterSshKey, ClusterView, InstanceSettings,
    SettingsChange, SharedDirCheck, UserAccount, WorkspaceClusterAccount, WorkspaceGpuQuota,
};
use domain::{admin, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![settings, update_settings; users; update_user; gpu_quotas; set_gpu_quota; set_cluster_account; cluster_accounts; check_cluster; register_cluster; remove_cluster; cluster_ssh_key]
}

/// Routes whose bodies are streamed past the general body-size limit (an image archive is GBs).
pub fn upload_routes() -> OpenApiRouter<AppState> {
    routes_of![load_images]
}

/// What an image archive brought.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct LoadedImages {
    /// References Docker tagged (or IDs of untagged images), as `docker load` prints them.
    pub loaded: Vec<String>,
}

/// Loads a `docker save` archive (the raw body, streamed into Docker): how a base image reaches a
/// server that no registry reaches. Admins only.
#[utoipa::path(post, path = "/api/v1/admin/images/load", tag = "admin", security(("session" = []), ("token" = [])),
    request_body(content = String, content_type = "application/octet-stream", description = "the archive `docker save` wrote (a tar)"),
    responses((status = 200, body = LoadedImages), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 422, description = "`image_archive_invalid`", body = ErrorBody),
              (status = 503, description = "`docker_unavailable`", body = ErrorBody)))]
pub async fn load_images(
    Uploader { state, actor, .. }: Uploader,
    body: axum::body::Body,
) -> Result<Json<LoadedImages>, AppError> {
    let stream = body.into_data_stream();
    let loaded = state.engine.load_images(&state.db, &actor, stream).await?;
    Ok(Json(LoadedImages { loaded }))
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    pub disabled: bool,
}

#[utoipa::path(get, path = "/api/v1/admin/settings", tag = "admin", security(("session" = []), ("token" = [])),
    responses((status = 200, body = InstanceSettings), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn settings(Caller { state, actor }: Caller) -> Result<Json<InstanceSettings>, AppError> {
    Ok(Json(admin::settings(&state.db, &actor).await?))
}

#[utoipa::path(patch, path = "/api/v1/admin/settings", tag = "admin", security(("session" = []), ("token" = [])),
    request_body = SettingsChange,
    responses((status = 200, body = InstanceSettings), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
/// Changes the settings the body names (`signup_enabled`, `allow_pickled_weights`); the others stay.
pub async fn update_settings(
    Caller { state, actor }: Caller,
    ApiJson(body): ApiJson<SettingsChange>,
) -> Result<Json<InstanceSettings>, AppError> {
    let allowed = &state.security.registry_mirror_hosts;
    Ok(Json(
        admin::update_settings(&state.db, &actor, body, allowed).await?,
    ))
}

#[utoipa::path(get, path = "/api/v1/admin/users", tag = "admin", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<UserAccount>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn users(Caller { state, actor }: Caller) -> Result<Json<Vec<UserAccount>>, AppError> {
    Ok(Json(admin::list_users(&state.db, &actor).await?))
}

/// Disables or re-enables an account; disabling ends its sessions and stops its tokens.
#[utoipa::path(patch, path = "/api/v1/admin/users/{id}", tag = "admin", security(("session" = []), ("token" = [])),
    params(UserPath), request_body = UserBody,
    responses((status = 200, body = UserAccount), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn update_user(
    Caller { state, actor }: Caller,
    Path(UserPath { id }): Path<UserPath>,
    ApiJson(body): ApiJson<UserBody>,
) -> Result<Json<UserAccount>, AppError> {
    Ok(Json(
        admin::set_user_disabled(&state.db, &actor, id, body.disabled).await?,
    ))
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaBody {
    /// The most GPUs the workspace may hold at once; `null` removes the quota.
    pub max_gpus: Option<u32>,
}

/// Sets the Slurm account and QoS a workspace's work is charged to on a cluster (instance admins);
/// both `null` removes the mapping (the server's defaults apply).
#[utoipa::path(put, path = "/api/v1/admin/workspaces/{id}/clusters/{cluster}", tag = "admin", security(("session" = []), ("token" = [])),
    params(WorkspaceClusterPath), request_body = ClusterAccount,
    responses((status = 200, body = ClusterAccount), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn set_cluster_account(
    Caller { state, actor }: Caller,
    Path(WorkspaceClusterPath { id, cluster }): Path<WorkspaceClusterPath>,
    ApiJson(body): ApiJson<ClusterAccount>,
) -> Result<Json<ClusterAccount>, AppError> {
    let executors = &state.jobs.executors;
    Ok(Json(
        admin::set_cluster_account(&state.db, executors, &actor, id, &cluster, body).await?,
    ))
}

/// Every workspace and the Slurm account and QoS its work is charged to on the cluster (`null`: the
/// server's defaults), by workspace name (instance admins).
#[utoipa::path(get, path = "/api/v1/admin/clusters/{cluster}/accounts", tag = "admin", security(("session" = []), ("token" = [])),
    params(ClusterPath),
    responses((status = 200, body = Vec<WorkspaceClusterAccount>), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn cluster_accounts(
    Caller { state, actor }: Caller,
    Path(ClusterPath { cluster }): Path<ClusterPath>,
) -> Result<Json<Vec<WorkspaceClusterAccount>>, AppError> {
    let executors = &state.jobs.executors;
    Ok(Json(
        admin::list_cluster_accounts(&state.db, executors, &actor, &cluster).await?,
    ))
}

/// Checks now that the cluster's nodes see this server's data directory: a small batch job on each
/// partition reads a file the server wrote there and writes one back (instance admins). Takes as long
/// as the cluster takes to run them (at most two minutes); jobs are refused on a partition that fails.
#[utoipa::path(post, path = "/api/v1/admin/clusters/{cluster}/preflight", tag = "admin", security(("session" = []), ("token" = [])),
    params(ClusterPath),
    responses((status = 200, body = SharedDirCheck), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn check_cluster(
    Caller { state, actor }: Caller,
    Path(ClusterPath { cluster }): Path<ClusterPath>,
) -> Result<Json<SharedDirCheck>, AppError> {
    Ok(Json(
        admin::check_cluster(&state.jobs.executors, &actor, &cluster).await?,
    ))
}

/// Registers a Slurm cluster (instance admins): checked field by field, then asked whether it answers
/// through the tools as reached and has the default partition; kept only then, and reached again at
/// every start. The nodes' view of the shared directory is checked next, in the background (see the
/// cluster's `shared_dir`).
#[utoipa::path(post, path = "/api/v1/admin/clusters", tag = "admin", security(("session" = []), ("token" = [])),
    request_body = ClusterRegistration,
    responses((status = 201, body = ClusterView), (status = 403, body = ErrorBody),
              (status = 409, description = "`cluster_name_taken`", body = ErrorBody),
              (status = 422, description = "`cluster_settings_invalid` (with every field's problem), `cluster_unreachable` (at `reach`), `cluster_invalid` (at `partition`)", body = ErrorBody),
              (status = 503, description = "`cluster_unreachable`: the server cannot make its SSH key (no `ssh-keygen`)", body = ErrorBody)))]
pub async fn register_cluster(
    Caller { state, actor }: Caller,
    ApiJson(body): ApiJson<ClusterRegistration>,
) -> Result<(axum::http::StatusCode, Json<ClusterView>), AppError> {
    let executors = &state.jobs.executors;
    let view =
        admin::clusters::register(&state.db, &state.storage, executors, &actor, body).await?;
    Ok((axum::http::StatusCode::CREATED, Json(view)))
}

/// Removes a registered cluster (instance admins), once no job, evaluation or endpoint of this server
/// may still run there; its workspaces' accounts there go with it.
#[utoipa::path(delete, path = "/api/v1/admin/clusters/{cluster}", tag = "admin", security(("session" = []), ("token" = [])),
    params(ClusterPath),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "`cluster_in_use`, `cluster_from_settings`", body = ErrorBody)))]
pub async fn remove_cluster(
    Caller { state, actor }: Caller,
    Path(ClusterPath { cluster }): Path<ClusterPath>,
) -> Result<axum::http::StatusCode, AppError> {
    let executors = &state.jobs.executors;
    admin::clusters::remove(&state.db, &state.storage, executors, &actor, &cluster).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// The public key this server signs in to login nodes with (made on first use): add it to the
/// `authorized_keys` of the user a cluster is reached as (instance admins).
#[utoipa::path(get, path = "/api/v1/admin/ssh-key", tag = "admin", security(("session" = []), ("token" = [])),
    responses((status = 200, body = ClusterSshKey), (status = 403, body = ErrorBody),
              (status = 503, description = "`cluster_unreachable`: the server cannot make its SSH key (no `ssh-keygen`)", body = ErrorBody)))]
pub async fn cluster_ssh_key(
    Caller { state, actor }: Caller,
) -> Result<Json<ClusterSshKey>, AppError> {
    Ok(Json(
        admin::clusters::ssh_key(&state.storage, &actor).await?,
    ))
}

/// Every workspace's GPU quota and the GPUs it holds now (instance admins).
#[utoipa::path(get, path = "/api/v1/admin/gpu-quotas", tag = "admin", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<WorkspaceGpuQuota>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn gpu_quotas(
    Caller { state, actor }: Caller,
) -> Result<Json<Vec<WorkspaceGpuQuota>>, AppError> {
    Ok(Json(admin::gpu_quotas(&state.db, &actor).await?))
}

/// Sets a workspace's GPU quota (instance admins).
#[utoipa::path(put, path = "/api/v1/admin/workspaces/{id}/gpu-quota", tag = "admin", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = QuotaBody,
    responses((status = 200, body = QuotaBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn set_gpu_quota(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(body): ApiJson<QuotaBody>,
) -> Result<Json<serde_json::Value>, AppError> {
    let max_gpus = admin::set_gpu_quota(&state.db, &actor, id, body.max_gpus).await?;
    Ok(Json(serde_json::json!({ "max_gpus": max_gpus })))
}

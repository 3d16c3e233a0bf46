//! `/api/v1/workspaces/{id}/sweeps/...`: thin handlers over `domain::sweeps`. A sweep's trials are
//! jobs: their metrics, logs and checkpoints are read under `/jobs`.

use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{SweepPath, WorkspacePath};
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::{AppError, ErrorBody};
use contracts::sweeps::{SweepDetail, SweepExtend, SweepSpec, SweepSummary};
use domain::sweeps;
use domain::AppState;

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![list, create; get; pause; resume; extend; cancel]
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/sweeps", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<SweepSummary>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<SweepSummary>>, AppError> {
    Ok(Json(sweeps::list(&state.db, &actor, id).await?))
}

/// Starts a sweep (editors and owners): every value is checked as its trial's job will be; 422 names
/// each bad field by its path in the spec (`parameters.learning_rate.min`, `job.dataset_id`).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/sweeps", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = SweepSpec,
    responses((status = 201, body = SweepDetail), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(spec): ApiJson<SweepSpec>,
) -> Result<(StatusCode, Json<SweepDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(sweeps::create(&state.db, &state.jobs, &actor, id, spec).await?),
    ))
}

/// The sweep, its best trial and every trial (best objective first) with its values and rungs.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/sweeps/{sweep_id}", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(SweepPath),
    responses((status = 200, body = SweepDetail), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(SweepPath { id, sweep_id }): Path<SweepPath>,
) -> Result<Json<SweepDetail>, AppError> {
    Ok(Json(sweeps::get(&state.db, &actor, id, sweep_id).await?))
}

/// Starts no new trial until resumed; queued and running trials go on.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/sweeps/{sweep_id}/pause", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(SweepPath),
    responses((status = 200, body = SweepDetail), (status = 409, description = "`sweep_status_conflict`: not running", body = ErrorBody)))]
pub async fn pause(
    Caller { state, actor }: Caller,
    Path(SweepPath { id, sweep_id }): Path<SweepPath>,
) -> Result<Json<SweepDetail>, AppError> {
    Ok(Json(
        sweeps::pause(&state.db, &state.jobs, &actor, id, sweep_id).await?,
    ))
}

#[utoipa::path(post, path = "/api/v1/workspaces/{id}/sweeps/{sweep_id}/resume", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(SweepPath),
    responses((status = 200, body = SweepDetail), (status = 409, description = "`sweep_status_conflict`: finished or cancelled", body = ErrorBody)))]
pub async fn resume(
    Caller { state, actor }: Caller,
    Path(SweepPath { id, sweep_id }): Path<SweepPath>,
) -> Result<Json<SweepDetail>, AppError> {
    Ok(Json(
        sweeps::resume(&state.db, &state.jobs, &actor, id, sweep_id).await?,
    ))
}

/// Allows more trials in all (a grid: up to its size); a finished sweep runs again.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/sweeps/{sweep_id}/extend", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(SweepPath), request_body = SweepExtend,
    responses((status = 200, body = SweepDetail), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn extend(
    Caller { state, actor }: Caller,
    Path(SweepPath { id, sweep_id }): Path<SweepPath>,
    ApiJson(body): ApiJson<SweepExtend>,
) -> Result<Json<SweepDetail>, AppError> {
    Ok(Json(
        sweeps::extend(&state.db, &state.jobs, &actor, id, sweep_id, body).await?,
    ))
}

/// Cancels the sweep and its queued and running trials (running ones stop with a checkpoint).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/sweeps/{sweep_id}/cancel", tag = "sweeps", security(("session" = []), ("token" = [])),
    params(SweepPath),
    responses((status = 200, body = SweepDetail), (status = 403, body = ErrorBody)))]
pub async fn cancel(
    Caller { state, actor }: Caller,
    Path(SweepPath { id, sweep_id }): Path<SweepPath>,
) -> Result<Json<SweepDetail>, AppError> {
    Ok(Json(
        sweeps::cancel(&state.db, &state.jobs, &actor, id, sweep_id).await?,
    ))
}

//! `/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations`: thin handlers over
//! `domain::evaluations` — start an evaluation of a checkpoint on a dataset, list a checkpoint's
//! evaluations, read one (to poll it until it is over).

use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{CheckpointPath, EvaluationPath};
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::*;
use domain::evaluations;
use domain::AppState;

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![list, start; get]
}

/// Starts evaluating the checkpoint on a dataset of the workspace (editors and owners). 422
/// `labels_mismatch` names the dataset's labels the checkpoint was not trained on; 409
/// `checkpoint_deleted` when retention removed its files. The answer is `queued` or `running`; poll
/// the evaluation until it is `succeeded` (with its metrics) or `failed` (with the reason).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations", tag = "checkpoints",
    security(("session" = []), ("token" = [])),
    params(CheckpointPath),
    request_body = EvaluationRequest,
    responses((status = 201, body = EvaluationInfo), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn start(
    Caller { state, actor }: Caller,
    Path(CheckpointPath { id, checkpoint_id }): Path<CheckpointPath>,
    ApiJson(body): ApiJson<EvaluationRequest>,
) -> Result<(StatusCode, Json<EvaluationInfo>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(evaluations::start(&state.db, &state.jobs, &actor, id, checkpoint_id, body).await?),
    ))
}

/// The checkpoint's evaluations, newest first.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations", tag = "checkpoints",
    security(("session" = []), ("token" = [])),
    params(CheckpointPath),
    responses((status = 200, body = Vec<EvaluationInfo>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(CheckpointPath { id, checkpoint_id }): Path<CheckpointPath>,
) -> Result<Json<Vec<EvaluationInfo>>, AppError> {
    Ok(Json(
        evaluations::list(&state.db, &actor, id, Some(checkpoint_id), None).await?,
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations/{evaluation_id}",
    tag = "checkpoints", security(("session" = []), ("token" = [])),
    params(EvaluationPath),
    responses((status = 200, body = EvaluationInfo), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(p): Path<EvaluationPath>,
) -> Result<Json<EvaluationInfo>, AppError> {
    let (id, checkpoint_id) = (p.id, p.checkpoint_id);
    let info = evaluations::get(&state.db, &actor, id, checkpoint_id, p.evaluation_id).await?;
    Ok(Json(info))
}

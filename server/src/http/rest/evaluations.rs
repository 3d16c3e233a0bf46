//! `/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations`: thin handlers over
//! `domain::evaluations` — start an evaluation of a checkpoint on a dataset, list a checkpoint's
//! evaluations, read one (to poll it until it is over).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::*;
use domain::evaluations;
use domain::AppState;

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, start))
        .routes(routes!(get))
}

/// Starts evaluating the checkpoint on a dataset of the workspace (editors and owners). 422
/// `labels_mismatch` names the dataset's labels the checkpoint was not trained on; 409
/// `checkpoint_deleted` when retention removed its files. The answer is `queued` or `running`; poll
/// the evaluation until it is `succeeded` (with its metrics) or `failed` (with the reason).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations", tag = "checkpoints",
    security(("session" = []), ("token" = [])),
    params(("id" = i64, Path, description = "workspace id"), ("checkpoint_id" = i64, Path, description = "checkpoint id")),
    request_body = EvaluationRequest,
    responses((status = 201, body = EvaluationInfo), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    Caller(actor): Caller,
    Path((id, checkpoint_id)): Path<(i64, i64)>,
    ApiJson(body): ApiJson<EvaluationRequest>,
) -> Result<(StatusCode, Json<EvaluationInfo>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(
            evaluations::start(
                &state.db,
                &state.jobs,
                &actor,
                id,
                checkpoint_id,
                body.dataset_id,
            )
            .await?,
        ),
    ))
}

/// The checkpoint's evaluations, newest first.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations", tag = "checkpoints",
    security(("session" = []), ("token" = [])),
    params(("id" = i64, Path, description = "workspace id"), ("checkpoint_id" = i64, Path, description = "checkpoint id")),
    responses((status = 200, body = Vec<EvaluationInfo>), (status = 404, body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    Caller(actor): Caller,
    Path((id, checkpoint_id)): Path<(i64, i64)>,
) -> Result<Json<Vec<EvaluationInfo>>, AppError> {
    Ok(Json(
        evaluations::list(&state.db, &actor, id, Some(checkpoint_id), None).await?,
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations/{evaluation_id}",
    tag = "checkpoints", security(("session" = []), ("token" = [])),
    params(("id" = i64, Path, description = "workspace id"), ("checkpoint_id" = i64, Path, description = "checkpoint id"),
           ("evaluation_id" = i64, Path, description = "evaluation id")),
    responses((status = 200, body = EvaluationInfo), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    Caller(actor): Caller,
    Path((id, checkpoint_id, evaluation_id)): Path<(i64, i64, i64)>,
) -> Result<Json<EvaluationInfo>, AppError> {
    Ok(Json(
        evaluations::get(&state.db, &actor, id, checkpoint_id, evaluation_id).await?,
    ))
}

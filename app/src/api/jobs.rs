//! Fine-tuning jobs: list, one, submit, and the control buttons. Live metrics and logs come from the
//! REST route `GET /api/v1/workspaces/{id}/jobs/{job_id}/stream` (server-sent events).

use contracts::ids::{JobId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::precision::{PrecisionAdvice, Work};
use contracts::runs::{Comparison, JobQuery};
use contracts::types::{ClusterPlacement, ClusterView, JobDetail, JobSpec, JobSummary, JobVerb};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::jobs};

/// The workspace's jobs that pass `query`. JSON in: a form-encoded body leaves out a query with no
/// word set (every field is skipped when empty), and the call would fail for lack of it.
#[server(prefix = "/rpc", endpoint = "list_jobs", input = leptos::server_fn::codec::Json)]
pub async fn list_jobs(
    workspace_id: WorkspaceId,
    query: JobQuery,
) -> Result<Vec<JobSummary>, AppError> {
    as_caller(|s, a| async move { jobs::list(&s.db, &a, workspace_id, &query).await }).await
}

/// Runs `jobs` (`1,2,3`) side by side.
#[server(prefix = "/rpc", endpoint = "compare_runs")]
pub async fn compare_runs(workspace_id: WorkspaceId, jobs: String) -> Result<Comparison, AppError> {
    as_caller(|s, a| async move {
        let ids = jobs::comparison::parse_ids(&jobs)?;
        jobs::comparison::compare(&s.db, &a, workspace_id, &ids).await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "get_job")]
pub async fn get_job(workspace_id: WorkspaceId, job_id: JobId) -> Result<JobDetail, AppError> {
    as_caller(|s, a| async move { jobs::get(&s.db, &a, workspace_id, job_id).await }).await
}

/// The clusters jobs may run on, as their schedulers see them now (the job form's "runs on").
#[server(prefix = "/rpc", endpoint = "list_clusters")]
pub async fn list_clusters() -> Result<Vec<ClusterView>, AppError> {
    as_caller(|s, a| async move { Ok(jobs::clusters(&s.jobs, &a).await) }).await
}

/// The precision the job and deploy forms start from on this server, with the measurement behind it
/// (made at first use: it may take a few seconds once).
#[server(prefix = "/rpc", endpoint = "get_precision_advice")]
pub async fn get_precision_advice(work: Work) -> Result<PrecisionAdvice, AppError> {
    as_caller(|s, _| async move { Ok(s.precision.advice(&s.storage, work).await) }).await
}

/// Where a job on a cluster is now, as its scheduler says.
#[server(prefix = "/rpc", endpoint = "job_placement")]
pub async fn job_placement(
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<Option<ClusterPlacement>, AppError> {
    as_caller(|s, a| async move { jobs::placement(&s.db, &s.jobs, &a, workspace_id, job_id).await })
        .await
}

#[server(prefix = "/rpc", endpoint = "submit_job", input = leptos::server_fn::codec::Json)]
pub async fn submit_job(workspace_id: WorkspaceId, spec: JobSpec) -> Result<JobDetail, AppError> {
    as_caller(|s, a| async move { jobs::submit(&s.db, &s.jobs, &a, workspace_id, spec).await })
        .await
}

/// What a job's button does; a deleted job answers `None`.
#[server(prefix = "/rpc", endpoint = "job_action", input = leptos::server_fn::codec::Json)]
pub async fn job_action(
    workspace_id: WorkspaceId,
    job_id: JobId,
    verb: JobVerb,
) -> Result<Option<JobDetail>, AppError> {
    as_caller(|s, a| async move {
        let (db, runs, ws) = (&s.db, &s.jobs, workspace_id);
        match verb {
            JobVerb::Cancel => jobs::cancel(db, runs, &a, ws, job_id).await.map(Some),
            JobVerb::Retry => jobs::retry(db, runs, &a, ws, job_id, false).await.map(Some),
            JobVerb::Resume => jobs::retry(db, runs, &a, ws, job_id, true).await.map(Some),
            JobVerb::Delete => jobs::delete(db, runs, &a, ws, job_id).await.map(|()| None),
        }
    })
    .await
}

//! Fine-tuning jobs: list, one, submit, and the control buttons. Live metrics and logs come from the
//! REST route `GET /api/v1/workspaces/{id}/jobs/{job_id}/stream` (server-sent events).

use contracts::ids::{JobId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{JobDetail, JobSpec, JobSummary};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, contracts::error::ErrorCode, domain::jobs};

#[server(prefix = "/rpc", endpoint = "list_jobs")]
pub async fn list_jobs(workspace_id: WorkspaceId) -> Result<Vec<JobSummary>, AppError> {
    as_caller(|s, a| async move { jobs::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "get_job")]
pub async fn get_job(workspace_id: WorkspaceId, job_id: JobId) -> Result<JobDetail, AppError> {
    as_caller(|s, a| async move { jobs::get(&s.db, &a, workspace_id, job_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "submit_job", input = leptos::server_fn::codec::Json)]
pub async fn submit_job(workspace_id: WorkspaceId, spec: JobSpec) -> Result<JobDetail, AppError> {
    as_caller(|s, a| async move { jobs::submit(&s.db, &s.jobs, &a, workspace_id, spec).await })
        .await
}

/// `cancel`, `retry`, `resume` (retry from the latest checkpoint) or `delete` (answers `None`).
#[server(prefix = "/rpc", endpoint = "job_action")]
pub async fn job_action(
    workspace_id: WorkspaceId,
    job_id: JobId,
    action: String,
) -> Result<Option<JobDetail>, AppError> {
    as_caller(|s, a| async move {
        let (db, runs, ws) = (&s.db, &s.jobs, workspace_id);
        match action.as_str() {
            "cancel" => jobs::cancel(db, runs, &a, ws, job_id).await.map(Some),
            "retry" => jobs::retry(db, runs, &a, ws, job_id, false).await.map(Some),
            "resume" => jobs::retry(db, runs, &a, ws, job_id, true).await.map(Some),
            "delete" => jobs::delete(db, runs, &a, ws, job_id).await.map(|()| None),
            _ => Err(AppError::invalid(
                "action",
                ErrorCode::ActionInvalid,
                "action must be cancel, retry, resume or delete",
            )),
        }
    })
    .await
}

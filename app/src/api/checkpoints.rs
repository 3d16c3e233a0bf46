//! The checkpoints a workspace's jobs wrote, with their metrics; downloads go to the REST route
//! `GET /api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/download`.

use contracts::ids::WorkspaceId;
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::CheckpointInfo;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::jobs};

#[server(prefix = "/rpc", endpoint = "list_checkpoints")]
pub async fn list_checkpoints(workspace_id: WorkspaceId) -> Result<Vec<CheckpointInfo>, AppError> {
    as_caller(|s, a| async move { jobs::checkpoints(&s.db, &a, workspace_id, None).await }).await
}

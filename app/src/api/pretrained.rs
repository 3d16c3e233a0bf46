//! Pretrained models to fine-tune from. Uploads go to the REST route
//! `POST /api/v1/workspaces/{id}/pretrained-models/upload` (a streamed body with upload progress).

use contracts::ids::{PretrainedId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::PretrainedModel;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::pretrained};

#[server(prefix = "/rpc", endpoint = "list_pretrained_models")]
pub async fn list_pretrained_models(
    workspace_id: WorkspaceId,
) -> Result<Vec<PretrainedModel>, AppError> {
    as_caller(|s, a| async move { pretrained::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "delete_pretrained_model")]
pub async fn delete_pretrained_model(
    workspace_id: WorkspaceId,
    model_id: PretrainedId,
) -> Result<(), AppError> {
    as_caller(|s, a| async move {
        pretrained::delete(&s.db, &s.storage, &a, workspace_id, model_id).await
    })
    .await
}

//! Sweeps: list, one, create, and the control buttons. A sweep's trials are jobs: their pages, charts
//! and checkpoints are the jobs'.

use contracts::error::AppError;
use contracts::ids::{SweepId, WorkspaceId};
use contracts::sweeps::{SweepDetail, SweepSpec, SweepSummary, SweepVerb};
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::sweeps};

#[server(prefix = "/rpc", endpoint = "list_sweeps")]
pub async fn list_sweeps(workspace_id: WorkspaceId) -> Result<Vec<SweepSummary>, AppError> {
    as_caller(|s, a| async move { sweeps::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "get_sweep")]
pub async fn get_sweep(
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepDetail, AppError> {
    as_caller(|s, a| async move { sweeps::get(&s.db, &a, workspace_id, sweep_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "create_sweep", input = leptos::server_fn::codec::Json)]
pub async fn create_sweep(
    workspace_id: WorkspaceId,
    spec: SweepSpec,
) -> Result<SweepDetail, AppError> {
    as_caller(|s, a| async move { sweeps::create(&s.db, &s.jobs, &a, workspace_id, spec).await })
        .await
}

#[server(prefix = "/rpc", endpoint = "sweep_action", input = leptos::server_fn::codec::Json)]
pub async fn sweep_action(
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
    verb: SweepVerb,
) -> Result<SweepDetail, AppError> {
    as_caller(|s, a| async move {
        let (db, runs, ws) = (&s.db, &s.jobs, workspace_id);
        match verb {
            SweepVerb::Pause => sweeps::pause(db, runs, &a, ws, sweep_id).await,
            SweepVerb::Resume => sweeps::resume(db, runs, &a, ws, sweep_id).await,
            SweepVerb::Cancel => sweeps::cancel(db, runs, &a, ws, sweep_id).await,
        }
    })
    .await
}

//! Container environments: the Docker host's status and catalog, specs and their versions, image
//! builds, and the lifecycle buttons. The terminal and the build log stream over REST routes.

use contracts::ids::{EnvironmentId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{
    DockerStatus, EnvironmentDetail, EnvironmentSpec, EnvironmentStats, EnvironmentSummary,
    EnvironmentVerb,
};
#[cfg(feature = "ssr")]
use {
    crate::context::as_caller,
    domain::environments::{self, lifecycle},
};

/// Docker availability, host size, GPUs and the base-image catalog (any signed-in account).
#[server(prefix = "/rpc", endpoint = "docker_status")]
pub async fn get_docker_status() -> Result<DockerStatus, AppError> {
    as_caller(|s, _| async move { s.engine.status(&s.db).await }).await
}

#[server(prefix = "/rpc", endpoint = "list_environments")]
pub async fn list_environments(
    workspace_id: WorkspaceId,
) -> Result<Vec<EnvironmentSummary>, AppError> {
    as_caller(|s, a| async move { environments::list(&s.db, &a, workspace_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "get_environment")]
pub async fn get_environment(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
) -> Result<EnvironmentDetail, AppError> {
    as_caller(
        |s, a| async move { environments::get(&s.db, &a, workspace_id, environment_id).await },
    )
    .await
}

/// Creates an environment and starts its image build.
#[server(prefix = "/rpc", endpoint = "create_environment", input = leptos::server_fn::codec::Json)]
pub async fn create_environment(
    workspace_id: WorkspaceId,
    spec: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    as_caller(
        |s, a| async move { environments::create(&s.db, &s.engine, &a, workspace_id, spec).await },
    )
    .await
}

/// A new version when the spec differs.
#[server(prefix = "/rpc", endpoint = "update_environment", input = leptos::server_fn::codec::Json)]
pub async fn update_environment(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    spec: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    as_caller(|s, a| async move {
        environments::update(&s.db, &s.engine, &a, workspace_id, environment_id, spec).await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "delete_environment")]
pub async fn delete_environment(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
) -> Result<(), AppError> {
    as_caller(|s, a| async move {
        environments::delete(&s.db, &s.engine, &a, workspace_id, environment_id).await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "rebuild_environment")]
pub async fn rebuild_environment(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    force: bool,
) -> Result<EnvironmentDetail, AppError> {
    as_caller(|s, a| async move {
        environments::rebuild(&s.db, &s.engine, &a, workspace_id, environment_id, force).await
    })
    .await
}

/// What a lifecycle button does.
#[server(prefix = "/rpc", endpoint = "environment_action", input = leptos::server_fn::codec::Json)]
pub async fn environment_action(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    verb: EnvironmentVerb,
) -> Result<EnvironmentDetail, AppError> {
    as_caller(|s, a| async move {
        let (db, engine, id) = (&s.db, &s.engine, environment_id);
        match verb {
            EnvironmentVerb::Up => lifecycle::up(db, engine, &a, workspace_id, id).await,
            EnvironmentVerb::Down => lifecycle::down(db, engine, &a, workspace_id, id).await,
            EnvironmentVerb::Restart => lifecycle::restart(db, engine, &a, workspace_id, id).await,
        }
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "environment_stats")]
pub async fn get_environment_stats(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
) -> Result<EnvironmentStats, AppError> {
    as_caller(|s, a| async move {
        lifecycle::stats(&s.db, &s.engine, &a, workspace_id, environment_id).await
    })
    .await
}

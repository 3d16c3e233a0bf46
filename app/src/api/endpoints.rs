//! Endpoints as the dashboard manages them (the session's member, by role). Callers of an endpoint use
//! the gateway `POST /v1/endpoints/{slug}/predict` with an API key instead.

use contracts::ids::{EndpointId, KeyId, WorkspaceId};
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{
    EndpointChange, EndpointDetail, EndpointSpec, EndpointSummary, EndpointVerb, NewEndpointKey,
    PlaygroundPrediction,
};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::endpoints};

#[server(prefix = "/rpc", endpoint = "list_endpoints")]
pub async fn list_endpoints(workspace_id: WorkspaceId) -> Result<Vec<EndpointSummary>, AppError> {
    as_caller(|s, a| async move { endpoints::list(&s.db, &a, workspace_id).await }).await
}

/// With its replicas, keys (never their secrets), parity report and live traffic numbers.
#[server(prefix = "/rpc", endpoint = "get_endpoint")]
pub async fn get_endpoint(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
) -> Result<EndpointDetail, AppError> {
    as_caller(|s, a| async move {
        endpoints::get(&s.db, &s.deployer, &a, workspace_id, endpoint_id).await
    })
    .await
}

/// Deploys a checkpoint; the endpoint starts as `starting` and becomes `ready` after the parity gate.
#[server(prefix = "/rpc", endpoint = "deploy_endpoint", input = leptos::server_fn::codec::Json)]
pub async fn deploy_endpoint(
    workspace_id: WorkspaceId,
    spec: EndpointSpec,
) -> Result<EndpointDetail, AppError> {
    as_caller(
        |s, a| async move { endpoints::deploy(&s.db, &s.deployer, &a, workspace_id, spec).await },
    )
    .await
}

/// What an endpoint's button does; a deleted endpoint answers `None`.
#[server(prefix = "/rpc", endpoint = "endpoint_action", input = leptos::server_fn::codec::Json)]
pub async fn endpoint_action(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    verb: EndpointVerb,
) -> Result<Option<EndpointDetail>, AppError> {
    as_caller(|s, a| async move {
        let (db, deployer, ws, id) = (&s.db, &s.deployer, workspace_id, endpoint_id);
        match verb {
            EndpointVerb::Undeploy => endpoints::undeploy(db, deployer, &a, ws, id)
                .await
                .map(Some),
            EndpointVerb::Deploy => endpoints::redeploy(db, deployer, &a, ws, id)
                .await
                .map(Some),
            EndpointVerb::Delete => endpoints::delete(db, deployer, &a, ws, id)
                .await
                .map(|()| None),
        }
    })
    .await
}

/// The secret is in the answer once; only its prefix is kept readable.
#[server(prefix = "/rpc", endpoint = "create_endpoint_key", input = leptos::server_fn::codec::Json)]
pub async fn create_endpoint_key(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    name: String,
    rate_limit_per_minute: Option<u32>,
) -> Result<NewEndpointKey, AppError> {
    as_caller(|s, a| async move {
        endpoints::create_key(
            &s.db,
            &a,
            workspace_id,
            endpoint_id,
            &name,
            rate_limit_per_minute,
        )
        .await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "revoke_endpoint_key")]
pub async fn revoke_endpoint_key(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    key_id: KeyId,
) -> Result<(), AppError> {
    as_caller(|s, a| async move {
        endpoints::revoke_key(&s.db, &a, workspace_id, endpoint_id, key_id).await
    })
    .await
}

/// Scales the endpoint and/or rolls out another checkpoint; the answer's `change` says what is under way.
#[server(prefix = "/rpc", endpoint = "change_endpoint", input = leptos::server_fn::codec::Json)]
pub async fn change_endpoint(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    change: EndpointChange,
) -> Result<EndpointDetail, AppError> {
    as_caller(|s, a| async move {
        endpoints::change(&s.db, &s.deployer, &a, workspace_id, endpoint_id, change).await
    })
    .await
}

/// Lets the endpoint size itself by `policy`, or (`None`) fixes it at the replicas it runs now.
#[server(prefix = "/rpc", endpoint = "set_endpoint_autoscale", input = leptos::server_fn::codec::Json)]
pub async fn set_endpoint_autoscale(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    policy: Option<contracts::scaling::Autoscale>,
) -> Result<EndpointDetail, AppError> {
    as_caller(|s, a| async move {
        endpoints::set_autoscale(&s.db, &s.deployer, &a, workspace_id, endpoint_id, policy).await
    })
    .await
}

/// Starts a canary of another checkpoint beside the stable version.
#[server(prefix = "/rpc", endpoint = "start_canary", input = leptos::server_fn::codec::Json)]
pub async fn start_canary(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    spec: contracts::scaling::CanarySpec,
) -> Result<EndpointDetail, AppError> {
    as_caller(|s, a| async move {
        endpoints::canary::start(&s.db, &s.deployer, &a, workspace_id, endpoint_id, spec).await
    })
    .await
}

/// Promotes, pauses, resumes or rolls back the canary under way.
#[server(prefix = "/rpc", endpoint = "canary_step", input = leptos::server_fn::codec::Json)]
pub async fn canary_step(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    action: contracts::scaling::CanaryAction,
) -> Result<EndpointDetail, AppError> {
    as_caller(|s, a| async move {
        endpoints::canary::act(&s.db, &s.deployer, &a, workspace_id, endpoint_id, action).await
    })
    .await
}

/// The playground: any member tries a ready endpoint with their session, no API key.
#[server(prefix = "/rpc", endpoint = "try_predict", input = leptos::server_fn::codec::Json)]
pub async fn try_predict(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    inputs: Vec<contracts::serving::Input>,
) -> Result<Vec<PlaygroundPrediction>, AppError> {
    as_caller(|s, a| async move {
        endpoints::try_predict(&s.db, &s.deployer, &a, workspace_id, endpoint_id, inputs).await
    })
    .await
}

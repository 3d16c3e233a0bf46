//! The path parameters of the REST routes, one struct per kind of resource: the handler's extractor
//! and the parameters its OpenAPI entry lists are the same type, so a route cannot document a
//! parameter it does not read (or read one under another name). Field names are the `{…}` names of
//! the route templates.

use contracts::ids::{
    CheckpointId, DatasetId, EndpointId, EnvironmentId, EvaluationId, JobId, KeyId, MappingId,
    PretrainedId, ProviderId, SweepId, TokenId, UserId, WorkspaceId,
};
use serde::Deserialize;
use utoipa::IntoParams;

/// Declares each path struct with its fields, every one described once for the OpenAPI document.
macro_rules! path_params {
    ($($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty = $about:literal),+ $(,)? })+) => {$(
        $(#[$doc])*
        #[derive(Debug, Deserialize, IntoParams)]
        #[into_params(parameter_in = Path)]
        pub struct $name {
            $(#[doc = $about] pub $field: $ty,)+
        }
    )+};
}

path_params! {
    /// `/workspaces/{id}`.
    WorkspacePath { id: WorkspaceId = "workspace id" }
    /// `/admin/identity-providers/{id}`.
    ProviderPath { id: ProviderId = "identity provider id" }
    /// `/admin/identity-providers/{id}/mappings/{mapping_id}`.
    MappingPath { id: ProviderId = "identity provider id", mapping_id: MappingId = "group mapping id" }
    /// `/auth/ldap/{provider}/signin`.
    ProviderNamePath { provider: String = "the provider's name (`corp`)" }
    /// `/admin/clusters/{cluster}/…`.
    ClusterPath { cluster: String = "the cluster's name (`slurm`)" }
    /// `/admin/workspaces/{id}/clusters/{cluster}`.
    WorkspaceClusterPath { id: WorkspaceId = "workspace id", cluster: String = "the cluster's name (`slurm`)" }
    /// `/workspaces/{id}/members/{user_id}`.
    MemberPath { id: WorkspaceId = "workspace id", user_id: UserId = "member's user id" }
    /// `/workspaces/{id}/datasets/{dataset_id}`.
    DatasetPath { id: WorkspaceId = "workspace id", dataset_id: DatasetId = "dataset id" }
    /// `/workspaces/{id}/environments/{env_id}`.
    EnvironmentPath { id: WorkspaceId = "workspace id", env_id: EnvironmentId = "environment id" }
    /// `/workspaces/{id}/environments/{env_id}/versions/{version}`.
    VersionPath { id: WorkspaceId = "workspace id", env_id: EnvironmentId = "environment id", version: i64 = "version number" }
    /// `/workspaces/{id}/jobs/{job_id}`.
    JobPath { id: WorkspaceId = "workspace id", job_id: JobId = "job id" }
    /// `/workspaces/{id}/sweeps/{sweep_id}`.
    SweepPath { id: WorkspaceId = "workspace id", sweep_id: SweepId = "sweep id" }
    /// `/workspaces/{id}/checkpoints/{checkpoint_id}`.
    CheckpointPath { id: WorkspaceId = "workspace id", checkpoint_id: CheckpointId = "checkpoint id" }
    /// `/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations/{evaluation_id}`.
    EvaluationPath {
        id: WorkspaceId = "workspace id",
        checkpoint_id: CheckpointId = "checkpoint id",
        evaluation_id: EvaluationId = "evaluation id",
    }
    /// `/workspaces/{id}/pretrained-models/{model_id}`.
    PretrainedPath { id: WorkspaceId = "workspace id", model_id: PretrainedId = "pretrained model id" }
    /// `/workspaces/{id}/endpoints/{endpoint_id}`.
    EndpointPath { id: WorkspaceId = "workspace id", endpoint_id: EndpointId = "endpoint id" }
    /// `/workspaces/{id}/endpoints/{endpoint_id}/canary/{action}`.
    CanaryPath {
        id: WorkspaceId = "workspace id",
        endpoint_id: EndpointId = "endpoint id",
        action: contracts::scaling::CanaryAction = "`promote`, `pause`, `resume` or `roll_back`",
    }
    /// `/workspaces/{id}/endpoints/{endpoint_id}/keys/{key_id}`.
    KeyPath { id: WorkspaceId = "workspace id", endpoint_id: EndpointId = "endpoint id", key_id: KeyId = "key id" }
    /// `/v1/endpoints/{slug}`: the gateway's public name of an endpoint.
    SlugPath { slug: String = "the endpoint's slug" }
    /// `/tokens/{id}`.
    TokenPath { id: TokenId = "token id" }
    /// `/admin/users/{id}`.
    UserPath { id: UserId = "user id" }
}

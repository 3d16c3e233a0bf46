//! The path parameters of the REST routes, one struct per kind of resource: the handler's extractor
//! and the parameters its OpenAPI entry lists are the same type, so a route cannot document a
//! parameter it does not read (or read one under another name). Field names are the `{…}` names of
//! the route templates.

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
    WorkspacePath { id: i64 = "workspace id" }
    /// `/workspaces/{id}/members/{user_id}`.
    MemberPath { id: i64 = "workspace id", user_id: i64 = "member's user id" }
    /// `/workspaces/{id}/datasets/{dataset_id}`.
    DatasetPath { id: i64 = "workspace id", dataset_id: i64 = "dataset id" }
    /// `/workspaces/{id}/environments/{env_id}`.
    EnvironmentPath { id: i64 = "workspace id", env_id: i64 = "environment id" }
    /// `/workspaces/{id}/environments/{env_id}/versions/{version}`.
    VersionPath { id: i64 = "workspace id", env_id: i64 = "environment id", version: i64 = "version number" }
    /// `/workspaces/{id}/jobs/{job_id}`.
    JobPath { id: i64 = "workspace id", job_id: i64 = "job id" }
    /// `/workspaces/{id}/checkpoints/{checkpoint_id}`.
    CheckpointPath { id: i64 = "workspace id", checkpoint_id: i64 = "checkpoint id" }
    /// `/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations/{evaluation_id}`.
    EvaluationPath {
        id: i64 = "workspace id",
        checkpoint_id: i64 = "checkpoint id",
        evaluation_id: i64 = "evaluation id",
    }
    /// `/workspaces/{id}/pretrained-models/{model_id}`.
    PretrainedPath { id: i64 = "workspace id", model_id: i64 = "pretrained model id" }
    /// `/workspaces/{id}/endpoints/{endpoint_id}`.
    EndpointPath { id: i64 = "workspace id", endpoint_id: i64 = "endpoint id" }
    /// `/workspaces/{id}/endpoints/{endpoint_id}/keys/{key_id}`.
    KeyPath { id: i64 = "workspace id", endpoint_id: i64 = "endpoint id", key_id: i64 = "key id" }
    /// `/v1/endpoints/{slug}`: the gateway's public name of an endpoint.
    SlugPath { slug: String = "the endpoint's slug" }
    /// `/tokens/{id}`.
    TokenPath { id: i64 = "token id" }
    /// `/admin/users/{id}`.
    UserPath { id: i64 = "user id" }
}

//! The JSON REST API under `/api/v1`: one module per resource, each a set of thin handlers over the
//! domain functions the server functions also call, merged in [`router`]. [`ApiDoc`] is the OpenAPI
//! document generated from the handlers' annotations and served at `/api/v1/openapi.json`.

pub mod admin;
pub mod auth;
pub mod datasets;
pub mod endpoints;
pub mod environments;
pub mod evaluations;
pub mod jobs;
pub mod pretrained;
pub mod tokens;
pub mod workspaces;

use axum::routing::{get, patch, post};
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::http_error::ErrorBody;
use super::AppState;
use crate::error::AppError;
use crate::types::*;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/auth/signup", post(auth::signup))
        .route("/api/v1/auth/signin", post(auth::signin))
        .route("/api/v1/auth/signout", post(auth::signout))
        .route("/api/v1/me", get(auth::me))
        .route(
            "/api/v1/workspaces",
            get(workspaces::list).post(workspaces::create),
        )
        .route(
            "/api/v1/workspaces/{id}",
            get(workspaces::get)
                .patch(workspaces::rename)
                .delete(workspaces::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/members",
            get(workspaces::list_members).post(workspaces::add_member),
        )
        .route(
            "/api/v1/workspaces/{id}/members/{user_id}",
            patch(workspaces::change_member_role).delete(workspaces::remove_member),
        )
        .route(
            "/api/v1/workspaces/{id}/activity",
            get(workspaces::activity),
        )
        .route("/api/v1/workspaces/{id}/datasets", get(datasets::list))
        .route(
            "/api/v1/workspaces/{id}/datasets/sample",
            post(datasets::sample),
        )
        .route(
            "/api/v1/workspaces/{id}/datasets/{dataset_id}",
            get(datasets::get).delete(datasets::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/datasets/{dataset_id}/file",
            get(datasets::download),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs",
            get(jobs::list).post(jobs::submit),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}",
            get(jobs::get).delete(jobs::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}/cancel",
            post(jobs::cancel),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}/retry",
            post(jobs::retry),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}/metrics",
            get(jobs::metrics),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}/logs",
            get(jobs::logs),
        )
        .route(
            "/api/v1/workspaces/{id}/jobs/{job_id}/stream",
            get(jobs::stream),
        )
        .route(
            "/api/v1/workspaces/{id}/checkpoints",
            get(jobs::checkpoints),
        )
        .route(
            "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/download",
            get(jobs::download),
        )
        .route(
            "/api/v1/workspaces/{id}/pretrained-models",
            get(pretrained::list),
        )
        .route(
            "/api/v1/workspaces/{id}/pretrained-models/{model_id}",
            axum::routing::delete(pretrained::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations",
            get(evaluations::list).post(evaluations::start),
        )
        .route(
            "/api/v1/workspaces/{id}/checkpoints/{checkpoint_id}/evaluations/{evaluation_id}",
            get(evaluations::get),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints",
            get(endpoints::list).post(endpoints::deploy),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}",
            get(endpoints::get)
                .patch(endpoints::change)
                .delete(endpoints::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/playground",
            post(endpoints::playground),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/undeploy",
            post(endpoints::undeploy),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/deploy",
            post(endpoints::redeploy),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/keys",
            post(endpoints::create_key),
        )
        .route(
            "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/keys/{key_id}",
            axum::routing::delete(endpoints::revoke_key),
        )
        .route("/v1/endpoints/{slug}/predict", post(endpoints::predict))
        .route("/api/v1/docker", get(environments::docker_status))
        .route(
            "/api/v1/workspaces/{id}/environments",
            get(environments::list).post(environments::create),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}",
            get(environments::get)
                .put(environments::update)
                .delete(environments::delete),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/build",
            post(environments::build),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/up",
            post(environments::up),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/down",
            post(environments::down),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/restart",
            post(environments::restart),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/stats",
            get(environments::stats),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/exec",
            post(environments::exec),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/versions/{version}/log",
            get(environments::build_log),
        )
        .route(
            "/api/v1/workspaces/{id}/environments/{env_id}/terminal",
            get(environments::terminal),
        )
        .route("/api/v1/tokens", get(tokens::list).post(tokens::create))
        .route("/api/v1/tokens/{id}", axum::routing::delete(tokens::revoke))
        .route(
            "/api/v1/admin/settings",
            get(admin::settings).patch(admin::update_settings),
        )
        .route("/api/v1/admin/users", get(admin::users))
        .route("/api/v1/admin/users/{id}", patch(admin::update_user))
        .route(
            "/api/v1/admin/workspaces/{id}/gpu-quota",
            axum::routing::put(admin::set_gpu_quota),
        )
        .route("/api/v1/openapi.json", get(openapi_json))
        // Unknown paths under the API answer in the API's error shape, not with an HTML page.
        .route(
            "/api/v1/{*rest}",
            axum::routing::any(|| async { AppError::NotFound }),
        )
}

async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Paddock API", description = "Self-hosted MLOps for Chinese NLP teams. Authenticate with the session \
        cookie from /api/v1/auth/signin, or with `Authorization: Bearer <personal API token>`. Errors are \
        `{code, message, field?}` with a stable `code`."),
    paths(
        auth::signup, auth::signin, auth::signout, auth::me,
        workspaces::list, workspaces::create, workspaces::get, workspaces::rename, workspaces::delete,
        workspaces::list_members, workspaces::add_member, workspaces::change_member_role, workspaces::remove_member,
        workspaces::activity,
        datasets::list, datasets::upload, datasets::sample, datasets::get, datasets::delete, datasets::download,
        jobs::list, jobs::submit, jobs::get, jobs::delete, jobs::cancel, jobs::retry, jobs::metrics, jobs::logs,
        jobs::stream, jobs::checkpoints, jobs::download,
        evaluations::start, evaluations::list, evaluations::get,
        pretrained::list, pretrained::upload, pretrained::delete,
        endpoints::list, endpoints::deploy, endpoints::get, endpoints::delete, endpoints::undeploy, endpoints::redeploy, endpoints::change, endpoints::playground,
        endpoints::create_key, endpoints::revoke_key, endpoints::predict,
        environments::docker_status, environments::list, environments::create, environments::get,
        environments::update, environments::delete, environments::build, environments::up, environments::down,
        environments::restart, environments::stats, environments::exec, environments::build_log,
        environments::terminal,
        tokens::list, tokens::create, tokens::revoke,
        admin::settings, admin::update_settings, admin::users, admin::update_user, admin::set_gpu_quota,
    ),
    components(schemas(
        ErrorBody, Me, Role, WorkspaceSummary, Member, AuditEntry, ApiToken, NewApiToken, UserAccount,
        InstanceSettings, auth::Credentials, workspaces::WorkspaceBody, workspaces::AddMemberBody,
        workspaces::ChangeRoleBody, crate::types::TokenRequest, crate::types::TokenScope, crate::types::SettingsChange, admin::UserBody, admin::QuotaBody,
        DatasetSummary, DatasetDetail, DatasetPreview,
        EndpointSpec, EndpointStatus, EndpointSummary, EndpointReplica, EndpointKey, NewEndpointKey, EndpointMetrics,
        EndpointDetail, endpoints::KeyBody, EndpointChange, endpoints::PlaygroundBody, PlaygroundPrediction, LabelProbability,
        JobSpec, JobStatus, JobSummary, JobDetail, BaseModel, MetricPoint, LogLine, CheckpointInfo, jobs::RetryBody,
        EvaluationRequest, EvaluationStatus, EvaluationInfo, ClassScore, PretrainedModel,
        EnvironmentSpec, GpuSpec, EnvStatus, BuildStatus, EnvironmentSummary, EnvironmentVersion, EnvironmentEvent,
        EnvironmentDetail, EnvironmentStats, ExecResult, CatalogImage, GpuSummary, DockerStatus,
        environments::BuildBody, environments::ExecBody,
    )),
    modifiers(&SecuritySchemes),
    tags(
        (name = "auth", description = "Accounts and sessions"),
        (name = "workspaces", description = "Team workspaces and their activity log"),
        (name = "members", description = "Workspace members and roles"),
        (name = "datasets", description = "Labelled text files for training, validated on upload"),
        (name = "endpoints", description = "Checkpoints served over HTTP: deployment, keys, and the gateway"),
        (name = "jobs", description = "Fine-tuning jobs: queue, live metrics and logs, control"),
        (name = "checkpoints", description = "Checkpoints jobs wrote, tracked with their metrics and hashes"),
        (name = "pretrained-models", description = "Hugging Face model directories uploaded to fine-tune from"),
        (name = "environments", description = "Reproducible container environments: specs, image builds, lifecycle, terminal"),
        (name = "tokens", description = "Personal API tokens"),
        (name = "admin", description = "Instance administration (admins only)"),
    )
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("pdk_…")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
                crate::ssr::sessions::COOKIE_NAME,
            ))),
        );
    }
}

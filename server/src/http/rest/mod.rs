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
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::*;
use domain::AppState;

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
        workspaces::ChangeRoleBody, contracts::types::TokenRequest, contracts::types::TokenScope, contracts::types::SettingsChange, admin::UserBody, admin::QuotaBody,
        DatasetSummary, DatasetDetail, DatasetPreview,
        EndpointSpec, EndpointStatus, EndpointSummary, EndpointReplica, EndpointKey, NewEndpointKey, EndpointMetrics,
        EndpointDetail, endpoints::KeyBody, EndpointChange, endpoints::PlaygroundBody, PlaygroundPrediction, LabelProbability,
        JobSpec, JobStatus, JobSummary, JobDetail, BaseModel, MetricPoint, LogLine, CheckpointInfo, jobs::RetryBody,
        EvaluationRequest, EvaluationStatus, EvaluationInfo, ClassScore, PretrainedModel,
        EnvironmentSpec, GpuSpec, EnvStatus, BuildStatus, EnvironmentSummary, EnvironmentVersion, EnvironmentEvent,
        EnvironmentDetail, EnvironmentStats, ExecResult, CatalogImage, GpuSummary, DockerStatus,
        environments::BuildBody, environments::ExecBody,
    )),
    modifiers(&SecuritySchemes, &SharedErrors),
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
                domain::sessions::COOKIE_NAME,
            ))),
        );
    }
}

/// Adds to every operation the error answers it can give through what all routes share — the
/// middleware in front of every route and the extractors of the `/api/v1` handlers — so that the
/// document lists every status a route can answer (what a client must handle, and what the
/// schema-driven fuzz in `server/tests/api/fuzz.rs` holds the server to) without each annotation
/// repeating them. An answer an annotation already gives is kept as written: it says more about its
/// route. What only some routes answer (a 409 for a name taken, a 503 for Docker) stays in their own
/// annotations.
///
/// - every route: 403 `host_not_allowed` (`csrf::protect`), and for changes also `csrf_rejected`; 413
///   `body_too_large` for a declared length over the limit (`limits::enforce_body_limit`); 500
///   `internal`.
/// - `/api/v1` routes with a JSON body (`limits::ApiJson`): 400 when it is not JSON, not UTF-8 or not
///   sent as `application/json` (never 415), and 422 naming a field that is unknown, missing or of the
///   wrong type. With path or query parameters (`limits::ApiPath`, `ApiQuery`): 422 for one that does
///   not decode (an id past `i64`, a number where text is due).
/// - `/api/v1` routes that need a caller (`auth::Actor`, the ones with `security`): 401 without a valid
///   session or token; for changes, 403 `token_read_only` and `forbidden`; with path parameters, 404
///   for what does not exist or lies in a workspace the caller is not a member of.
/// - streams (SSE, WebSocket): 409 `limit_reached` when the caller holds the most open streams
///   (`caps::Kind::Stream`).
///
/// The model gateway (`/v1/endpoints/…`) uses none of the `/api/v1` extractors: its own annotation
/// lists what it and the model server behind it answer.
struct SharedErrors;

impl Modify for SharedErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let api = path.starts_with("/api/v1/");
            let operations = [
                (true, item.get.as_mut()),
                (false, item.put.as_mut()),
                (false, item.post.as_mut()),
                (false, item.delete.as_mut()),
                (false, item.patch.as_mut()),
            ];
            for (read, op) in operations {
                let Some(op) = op else { continue };
                let has = |place: ParameterIn| {
                    op.parameters
                        .iter()
                        .flatten()
                        .any(|p| p.parameter_in == place)
                };
                let (in_path, in_query) = (has(ParameterIn::Path), has(ParameterIn::Query));
                let json_body = op
                    .request_body
                    .as_ref()
                    .is_some_and(|b| b.content.contains_key("application/json"));
                let caller = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let stream = op
                    .responses
                    .responses
                    .iter()
                    .any(|(status, answer)| match answer {
                        RefOr::T(r) => {
                            status == "101" || r.content.contains_key("text/event-stream")
                        }
                        RefOr::Ref(_) => false,
                    });

                let mut refused =
                    vec!["`host_not_allowed`: the `Host` is not a name this server answers to"];
                if !read {
                    refused.push(
                        "`csrf_rejected`: a change with the session cookie from another site",
                    );
                }
                if api && caller && !read {
                    refused.push("`token_read_only`: the API token may only read");
                    refused.push("`forbidden`: the caller's role does not allow this");
                }
                add(op, "403", refused.join("; "));
                add(
                    op,
                    "413",
                    "`body_too_large`: the body is larger than the server accepts",
                );
                add(
                    op,
                    "500",
                    "`internal`: a failure on the server, logged there and not told",
                );
                if !api {
                    continue;
                }
                if json_body {
                    add(
                        op,
                        "400",
                        "`invalid_body`: the body is not JSON, not UTF-8, or not sent as \
                        `Content-Type: application/json`",
                    );
                }
                let mut invalid = Vec::new();
                if in_path || in_query {
                    invalid.push("a path or query parameter does not decode");
                }
                if json_body {
                    invalid.push("a JSON field is unknown, missing or of the wrong type (`field`)");
                }
                if !invalid.is_empty() {
                    add(op, "422", format!("`invalid_body`: {}", invalid.join("; ")));
                }
                if caller {
                    add(
                        op,
                        "401",
                        "`unauthenticated`: no session or API token, or one that expired, \
                        was revoked or belongs to a disabled account",
                    );
                    if in_path {
                        add(
                            op,
                            "404",
                            "`not_found`: it does not exist, or it is in a workspace the \
                            caller is not a member of",
                        );
                    }
                }
                if stream {
                    add(
                        op,
                        "409",
                        "`limit_reached`: the caller holds the most open live streams",
                    );
                }
            }
        }

        /// Adds the answer `status` with an [`ErrorBody`] unless the operation already documents it.
        fn add(op: &mut Operation, status: &str, description: impl Into<String>) {
            op.responses
                .responses
                .entry(status.to_string())
                .or_insert_with(|| {
                    ResponseBuilder::new()
                        .description(description)
                        .content(
                            "application/json",
                            Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                        )
                        .into()
                });
        }
    }
}

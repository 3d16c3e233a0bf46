//! The JSON REST API under `/api/v1`: one module per resource, each a set of thin handlers over the
//! domain functions the server functions also call, merged in [`api`]. The OpenAPI document is built
//! from the same annotations that route the handlers ([`ApiDoc`] adds what is not a route: title,
//! tags, security schemes) and is served at `/api/v1/openapi.json`.

/// A module's router: one `routes!` per path, the handlers that share a path separated by commas, the
/// paths by semicolons (`routes_of![list, create; get, delete; build]`). Each handler's path and method
/// come from its `#[utoipa::path]`.
macro_rules! routes_of {
    ($($($handler:ident),+);+ $(;)?) => {
        utoipa_axum::router::OpenApiRouter::new()$(.routes(utoipa_axum::routes!($($handler),+)))+
    };
}

pub mod admin;
pub mod auth;
pub mod datasets;
pub mod endpoints;
pub mod environments;
pub mod evaluations;
pub mod identity;
pub mod jobs;
pub mod paths;
pub mod pretrained;
pub mod sweeps;
pub mod tokens;
pub mod workspaces;

use axum::body::Bytes;
use axum::http::header;
use axum::routing::{any, get};
use axum::Router;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use contracts::error::AppError;
use contracts::error::ErrorBody;
use domain::AppState;

/// The REST API in two parts, both described by the one OpenAPI document `routes` serves: `routes`
/// sits under the general body-size limit, `uploads` (streamed files) under `--max-upload-bytes`. Each
/// route is declared once, by its handler's `#[utoipa::path]`: the path and method axum routes are the
/// ones the document shows (`utoipa_axum::routes!` reads them from the annotation).
pub struct Api {
    pub routes: Router<AppState>,
    pub uploads: Router<AppState>,
}

pub fn api() -> Api {
    let (routes, uploads, document) = documented();
    // Serialised once: the document does not change while the server runs.
    let json = Bytes::from(serde_json::to_vec(&document).unwrap_or_default());
    let routes = routes
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let json = json.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], json) }
            }),
        )
        // Unknown paths under the API answer in the API's error shape, not with an HTML page.
        .route("/api/v1/{*rest}", any(|| async { AppError::NotFound }));
    Api { routes, uploads }
}

/// The two parts of the API and the one document describing both.
fn documented() -> (Router<AppState>, Router<AppState>, utoipa::openapi::OpenApi) {
    let documented = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(auth::routes())
        .merge(workspaces::routes())
        .merge(datasets::routes())
        .merge(jobs::routes())
        .merge(sweeps::routes())
        .merge(pretrained::routes())
        .merge(evaluations::routes())
        .merge(endpoints::routes())
        .merge(environments::routes())
        .merge(tokens::routes())
        .merge(admin::routes())
        .merge(identity::routes());
    let uploads = OpenApiRouter::new()
        .merge(datasets::upload_routes())
        .merge(pretrained::upload_routes())
        .merge(admin::upload_routes());
    let (routes, document) = documented.split_for_parts();
    let (uploads, upload_document) = uploads.split_for_parts();
    let mut document = document.merge_from(upload_document);
    SharedErrors.modify(&mut document);
    ClosedVariants.modify(&mut document);
    (routes, uploads, document)
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Paddock API", description = "Self-hosted MLOps for Chinese NLP teams. Authenticate with the session \
        cookie from /api/v1/auth/signin, or with `Authorization: Bearer <personal API token>`. Errors are \
        `{code, message, field?}` with a stable `code`."),
    // Schemas only a path parameter names (utoipa collects those of bodies and answers by itself).
    components(schemas(ErrorBody, contracts::scaling::CanaryAction)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "auth", description = "Accounts and sessions"),
        (name = "workspaces", description = "Team workspaces and their activity log"),
        (name = "members", description = "Workspace members and roles"),
        (name = "datasets", description = "Labelled text files for training, validated on upload"),
        (name = "endpoints", description = "Checkpoints served over HTTP: deployment, keys, and the gateway"),
        (name = "jobs", description = "Fine-tuning jobs: queue, live metrics and logs, control"),
        (name = "sweeps", description = "Searches over a job's settings: trials queued as jobs, the poor ones stopped early, the best named"),
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

/// Says of the tagged enums in request bodies that their variants refuse unknown fields, as serde's
/// `deny_unknown_fields` on them makes them do: utoipa says `additionalProperties: false` only of
/// structs. Without it the document invites any extra field, which the server then refuses, and a
/// schema-driven client (the fuzz) draws arbitrarily deep JSON for them.
struct ClosedVariants;

/// The enums `ClosedVariants` closes. Each must refuse an unknown field in serde: the test below checks
/// the document for all of them, and serde for each one it names.
const CLOSED_VARIANTS: &[&str] = &["ClusterReach"];

impl Modify for ClosedVariants {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{AdditionalProperties, Schema};
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for name in CLOSED_VARIANTS {
            let Some(RefOr::T(Schema::OneOf(one_of))) = components.schemas.get_mut(*name) else {
                continue;
            };
            for variant in &mut one_of.items {
                if let RefOr::T(Schema::Object(object)) = variant {
                    object.additional_properties =
                        Some(Box::new(AdditionalProperties::FreeForm(false)));
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` in the served document names something the document holds: a dangling one makes
    /// generated clients fail, and made schemathesis' coverage phase raise an internal `KeyError`.
    #[test]
    fn every_reference_in_the_document_resolves() {
        fn refs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(serde_json::Value::String(target)) = map.get("$ref") {
                        found.push(target);
                    }
                    map.values().for_each(|v| refs(v, found));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
                _ => {}
            }
        }
        let document = serde_json::to_value(documented().2).unwrap();
        let mut found = Vec::new();
        refs(&document, &mut found);
        assert!(
            found.len() > 100,
            "only {} references: {found:?}",
            found.len()
        );
        let dangling: Vec<&str> = found
            .into_iter()
            .filter(|target| {
                let pointer = target.strip_prefix('#').unwrap_or("not a local reference");
                document.pointer(pointer).is_none()
            })
            .collect();
        assert!(dangling.is_empty(), "references to nothing: {dangling:?}");
    }

    #[test]
    fn the_closed_enums_are_closed_in_the_document_and_in_serde() {
        let document = serde_json::to_value(documented().2).unwrap();
        for name in CLOSED_VARIANTS {
            let variants = document["components"]["schemas"][name]["oneOf"]
                .as_array()
                .unwrap_or_else(|| panic!("{name} is not a oneOf in the document"));
            for variant in variants {
                assert_eq!(variant["additionalProperties"], false, "{name}: {variant}");
            }
        }
        // What the document says, serde does.
        let extra = serde_json::json!({ "kind": "local", "slurm_conf": null, "extra": 1 });
        let refused = serde_json::from_value::<contracts::types::ClusterReach>(extra);
        assert!(refused.unwrap_err().to_string().contains("unknown field"));
    }
}

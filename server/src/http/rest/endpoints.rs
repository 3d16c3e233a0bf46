//! `/api/v1/workspaces/{id}/endpoints/...` (thin handlers over `domain::endpoints`) and the public gateway
//! route `POST /v1/endpoints/{slug}/predict`, authenticated with an endpoint API key.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{CanaryPath, EndpointPath, KeyPath, SlugPath, WorkspacePath};
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::ErrorBody;
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;
use domain::endpoints;
use domain::AppState;

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![
        list, deploy; get, change, delete; playground; undeploy; redeploy; set_autoscale, stop_autoscale;
        start_canary; canary_action;
        create_key; revoke_key; predict
    ]
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyBody {
    pub name: String,
    /// Requests per minute this key may make (default 600).
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/endpoints", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(WorkspacePath),
    responses((status = 200, body = Vec<EndpointSummary>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<EndpointSummary>>, AppError> {
    Ok(Json(endpoints::list(&state.db, &actor, id).await?))
}

/// Deploys a checkpoint; it becomes `ready` once its replicas are up and the parity gate passed.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(WorkspacePath), request_body = EndpointSpec,
    responses((status = 201, body = EndpointDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn deploy(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(spec): ApiJson<EndpointSpec>,
) -> Result<(StatusCode, Json<EndpointDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(endpoints::deploy(&state.db, &state.deployer, &actor, id, spec).await?),
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    responses((status = 200, body = EndpointDetail), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::get(&state.db, &state.deployer, &actor, id, endpoint_id).await?,
    ))
}

#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    responses((status = 204, description = "done"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
) -> Result<StatusCode, AppError> {
    endpoints::delete(&state.db, &state.deployer, &actor, id, endpoint_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/undeploy", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    responses((status = 200, body = EndpointDetail), (status = 403, body = ErrorBody)))]
pub async fn undeploy(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::undeploy(&state.db, &state.deployer, &actor, id, endpoint_id).await?,
    ))
}

#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/deploy", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    responses((status = 200, body = EndpointDetail), (status = 409, description = "running", body = ErrorBody)))]
pub async fn redeploy(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::redeploy(&state.db, &state.deployer, &actor, id, endpoint_id).await?,
    ))
}

/// Scales the endpoint or rolls out another checkpoint; a ready endpoint changes in the background
/// without failing a request (progress in `summary.status_message`).
#[utoipa::path(patch, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    request_body = EndpointChange,
    responses((status = 200, body = EndpointDetail), (status = 409, description = "starting, or another change under way", body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn change(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
    ApiJson(change): ApiJson<EndpointChange>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::change(&state.db, &state.deployer, &actor, id, endpoint_id, change).await?,
    ))
}

/// Lets the endpoint size itself between a floor and a ceiling of replicas (a floor of 0: it stops
/// every replica after its idle period and starts one at the next call).
#[utoipa::path(put, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/autoscale", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    request_body = contracts::scaling::Autoscale,
    responses((status = 200, body = EndpointDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn set_autoscale(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
    ApiJson(policy): ApiJson<contracts::scaling::Autoscale>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::set_autoscale(
            &state.db,
            &state.deployer,
            &actor,
            id,
            endpoint_id,
            Some(policy),
        )
        .await?,
    ))
}

/// Turns autoscaling off: the endpoint keeps the replicas it runs now (one, if it was at zero).
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/autoscale", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    responses((status = 200, body = EndpointDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn stop_autoscale(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::set_autoscale(&state.db, &state.deployer, &actor, id, endpoint_id, None).await?,
    ))
}

/// Starts a canary: the checkpoint's replicas start beside the stable ones, pass the parity gate, then
/// take the steps' shares of calls, judged against the stable version on each step.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/canary", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    request_body = contracts::scaling::CanarySpec,
    responses((status = 200, body = EndpointDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn start_canary(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
    ApiJson(spec): ApiJson<contracts::scaling::CanarySpec>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::canary::start(&state.db, &state.deployer, &actor, id, endpoint_id, spec).await?,
    ))
}

/// Promotes, pauses, resumes or rolls back the canary under way.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/canary/{action}", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(CanaryPath),
    responses((status = 200, body = EndpointDetail), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn canary_action(
    Caller { state, actor }: Caller,
    Path(CanaryPath {
        id,
        endpoint_id,
        action,
    }): Path<CanaryPath>,
) -> Result<Json<EndpointDetail>, AppError> {
    Ok(Json(
        endpoints::canary::act(&state.db, &state.deployer, &actor, id, endpoint_id, action).await?,
    ))
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundBody {
    /// Texts, or for a matching endpoint pairs `{"text_a": …, "text_b": …}`.
    pub inputs: Vec<contracts::serving::Input>,
}

/// The dashboard's playground: members try a ready endpoint with their session, without an API key.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/playground", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    request_body = PlaygroundBody,
    responses((status = 200, body = Vec<PlaygroundPrediction>), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn playground(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
    ApiJson(body): ApiJson<PlaygroundBody>,
) -> Result<Json<Vec<PlaygroundPrediction>>, AppError> {
    Ok(Json(
        endpoints::try_predict(
            &state.db,
            &state.deployer,
            &actor,
            id,
            endpoint_id,
            body.inputs,
        )
        .await?,
    ))
}

/// Creates an API key for the endpoint; `secret` is returned once.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/keys", tag = "endpoints", security(("session" = []), ("token" = [])),
    params(EndpointPath),
    request_body = KeyBody,
    responses((status = 201, body = NewEndpointKey), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create_key(
    Caller { state, actor }: Caller,
    Path(EndpointPath { id, endpoint_id }): Path<EndpointPath>,
    ApiJson(body): ApiJson<KeyBody>,
) -> Result<(StatusCode, Json<NewEndpointKey>), AppError> {
    let key = endpoints::create_key(
        &state.db,
        &actor,
        id,
        endpoint_id,
        &body.name,
        body.rate_limit_per_minute,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(key)))
}

#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/endpoints/{endpoint_id}/keys/{key_id}", tag = "endpoints",
    security(("session" = []), ("token" = [])),
    params(KeyPath),
    responses((status = 204, description = "revoked"), (status = 404, body = ErrorBody)))]
pub async fn revoke_key(
    Caller { state, actor }: Caller,
    Path(key): Path<KeyPath>,
) -> Result<StatusCode, AppError> {
    endpoints::revoke_key(&state.db, &actor, key.id, key.endpoint_id, key.key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Classifies texts: `{"inputs": ["…", …]}` (or one text), `"return_logits": true` for logits. Needs
/// `Authorization: Bearer <endpoint key>`. 429 when the key's rate limit or the model's queue is full,
/// 503 when no replica is ready or the model does not answer in time. During a canary rollout the
/// canary answers its share of calls; `X-Paddock-Canary: always` (or `never`) picks it (or not) for a
/// tester, and `X-Paddock-Version` says which version answered.
#[utoipa::path(post, path = "/v1/endpoints/{slug}/predict", tag = "endpoints",
    params(SlugPath),
    request_body(content = Object, description = "{\"inputs\": [\"…\"], \"return_logits\"?: bool}"),
    responses((status = 200, description = "{\"labels\": [the model's labels in id order], \"predictions\": [{label, label_id, probabilities (one per label, in that order), logits?}]}"),
              (status = 401, body = ErrorBody),
              (status = 422, description = "`invalid_body` or `invalid_inputs`: the model server refused the inputs", body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn predict(
    State(state): State<AppState>,
    Path(SlugPath { slug }): Path<SlugPath>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AppError> {
    let secret = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .ok_or_else(|| AppError::KeyRefused {
            code: ErrorCode::KeyMissing,
            message: "calling an endpoint needs its key: `Authorization: Bearer <endpoint key>`"
                .into(),
        })?;
    let pick = endpoints::gateway::Pick::from_header(
        headers
            .get("x-paddock-canary")
            .and_then(|v| v.to_str().ok()),
    );
    let answered = endpoints::predict(
        &state.db,
        &state.deployer.gateway,
        &slug,
        secret.trim(),
        body,
        pick,
    )
    .await?;
    // Which version answered, for testers of a canary and for callers comparing answers.
    let version = [("x-paddock-version", answered.version.as_str())];
    let (status, bytes) = match answered.outcome {
        Ok(answer) => answer,
        Err(e) => return Ok((version, e).into_response()),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    Ok((
        status,
        version,
        [(header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response())
}

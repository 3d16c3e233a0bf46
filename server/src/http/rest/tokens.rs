//! `/api/v1/tokens`: the caller's personal API tokens. The secret is in the creation response only.

use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;

use super::paths::TokenPath;
use crate::http::caller::Caller;
use crate::http::limits::{ApiJson, ApiPath as Path};
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::{ApiToken, NewApiToken, TokenRequest};
use domain::{tokens, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![list, create; revoke]
}

#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<ApiToken>), (status = 401, body = ErrorBody)))]
pub async fn list(Caller { state, actor }: Caller) -> Result<Json<Vec<ApiToken>>, AppError> {
    Ok(Json(tokens::list(&state.db, &actor).await?))
}

/// Creates a token; `secret` in the response is shown this once. `scope` is `write` (default) or
/// `read` (GET only); it expires after `expires_in_days` (default 90; 0: never).
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", security(("session" = []), ("token" = [])),
    request_body = TokenRequest,
    responses((status = 201, body = NewApiToken), (status = 401, body = ErrorBody),
              (status = 403, description = "a read-only token cannot create tokens", body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    Caller { state, actor }: Caller,
    ApiJson(body): ApiJson<TokenRequest>,
) -> Result<(StatusCode, Json<NewApiToken>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(tokens::create(&state.db, &actor, &body).await?),
    ))
}

/// Revokes one of the caller's tokens.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens", security(("session" = []), ("token" = [])),
    params(TokenPath),
    responses((status = 204, description = "done"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    Caller { state, actor }: Caller,
    Path(TokenPath { id }): Path<TokenPath>,
) -> Result<StatusCode, AppError> {
    tokens::revoke(&state.db, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

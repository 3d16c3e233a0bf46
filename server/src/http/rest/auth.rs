//! `/api/v1/auth/*` and `/api/v1/me`: sign up, sign in and out with a session cookie, and who am I.
//! API clients that prefer tokens sign in once in the browser and create a token there.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use domain::sessions::Session;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use crate::http::caller::{Caller, ClientIp};
use crate::http::limits::ApiJson;
use contracts::error::AppError;
use contracts::error::ErrorBody;
use contracts::types::Me;
use domain::accounts::{self, Attempt, Door};
use domain::{sessions, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![signup; signin; signout; me]
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// 3–32 characters of a-z, 0-9, `_`, `.`, `-` (case-insensitive).
    pub username: String,
    /// 10–128 characters.
    pub password: String,
}

/// Creates an account and signs it in (sets the session cookie). The first account is the instance admin.
#[utoipa::path(post, path = "/api/v1/auth/signup", tag = "auth", request_body = Credentials,
    responses((status = 201, body = Me), (status = 403, description = "sign-up disabled", body = ErrorBody),
              (status = 409, description = "username taken", body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 429, description = "too many sign-ups from this address, or its failed sign-ins used up; see Retry-After", body = ErrorBody)))]
pub async fn signup(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    session: Session,
    ApiJson(body): ApiJson<Credentials>,
) -> Result<(StatusCode, Json<Me>), AppError> {
    let me = enter(&state, &session, Door::SignUp, &body, ip.as_deref()).await?;
    Ok((StatusCode::CREATED, Json(me)))
}

/// Signs in (sets the session cookie). Repeated failures for one account from one address, or
/// from one address across accounts, answer 429.
#[utoipa::path(post, path = "/api/v1/auth/signin", tag = "auth", request_body = Credentials,
    responses((status = 200, body = Me), (status = 401, description = "wrong username or password", body = ErrorBody),
              (status = 403, description = "account disabled", body = ErrorBody),
              (status = 429, description = "too many failed attempts; see Retry-After", body = ErrorBody)))]
pub async fn signin(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    session: Session,
    ApiJson(body): ApiJson<Credentials>,
) -> Result<Json<Me>, AppError> {
    let me = enter(&state, &session, Door::SignIn, &body, ip.as_deref()).await?;
    Ok(Json(me))
}

/// [`accounts::enter`] with the typed credentials.
async fn enter(
    state: &AppState,
    session: &Session,
    door: Door,
    body: &Credentials,
    ip: Option<&str>,
) -> Result<Me, AppError> {
    let (username, password) = (body.username.as_str(), body.password.as_str());
    let attempt = Attempt {
        username,
        password,
        ip,
    };
    accounts::enter(state, session, door, attempt).await
}

/// Ends the session. Succeeds also when not signed in.
#[utoipa::path(post, path = "/api/v1/auth/signout", tag = "auth", responses((status = 204, description = "done")))]
pub async fn signout(session: Session) -> Result<StatusCode, AppError> {
    sessions::sign_out(&session).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's account.
#[utoipa::path(get, path = "/api/v1/me", tag = "auth", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Me), (status = 401, body = ErrorBody)))]
pub async fn me(Caller { actor, .. }: Caller) -> Json<Me> {
    Json(Me {
        id: actor.user_id,
        username: actor.username,
        is_admin: actor.is_admin,
    })
}

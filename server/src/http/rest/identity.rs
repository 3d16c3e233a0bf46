//! Company sign-in over REST: the sign-in page's provider buttons and the LDAP sign-in (public), and
//! for instance admins the providers, their group mappings, "test this provider" and the e-mail an
//! existing account may be claimed by. The rules are in `domain::identity`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Redirect;
use axum::Json;
use domain::sessions::Session;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{MappingPath, ProviderNamePath, ProviderPath, UserPath};
use super::workspaces::ActivityQuery;
use crate::http::caller::{Caller, ClientIp};
use crate::http::limits::{ApiJson, ApiPath as Path, ApiQuery as Query};
use contracts::error::{AppError, ErrorBody};
use contracts::identity::{
    CheckOutcome, CheckRequest, DirectorySignIn, GroupMapping, MappingInput, Provider,
    ProviderButton, ProviderInput,
};
use contracts::types::{AuditEntry, Me};
use domain::identity::{ldap, oidc, providers};
use domain::{audit, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![buttons; ldap_signin; oidc_start; oidc_callback; list, create; get, replace, delete; add_mapping; remove_mapping; check; link_email; audit_log]
}

/// The enabled company sign-in providers, for the sign-in page's buttons. Anyone may read this.
#[utoipa::path(get, path = "/api/v1/auth/providers", tag = "auth",
    responses((status = 200, body = Vec<ProviderButton>)))]
pub async fn buttons(State(state): State<AppState>) -> Result<Json<Vec<ProviderButton>>, AppError> {
    Ok(Json(providers::buttons(&state.db).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StartQuery {
    /// Where to go once signed in: a path of this site (anything else: the dashboard).
    pub next: Option<String>,
}

/// The callback's query as an OpenID provider sends it (other parameters, such as `iss` or
/// `session_state`, are ignored).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The provider's refusal (`access_denied`).
    pub error: Option<String>,
}

/// Starts a sign-in through an OpenID Connect provider: a 303 to its authorization page, with PKCE,
/// `state` and `nonce` kept in this browser's session. A failure (the provider down, no such
/// provider) is a 303 back to the sign-in page with `?error=<code>`.
#[utoipa::path(get, path = "/api/v1/auth/oidc/{provider}/start", tag = "auth", params(ProviderNamePath, StartQuery),
    responses((status = 303, description = "to the provider's sign-in page, or back to /signin?error=<code>")))]
pub async fn oidc_start(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    session: Session,
    headers: axum::http::HeaderMap,
    Path(ProviderNamePath { provider }): Path<ProviderNamePath>,
    Query(q): Query<StartQuery>,
) -> Redirect {
    let next = local_path(q.next.as_deref());
    let redirect_uri = callback_uri(&state, &headers, &provider);
    let started = oidc::start(&state.db, &provider, &redirect_uri, &next, ip.as_deref()).await;
    let kept = match started {
        Ok((url, pending)) => domain::sessions::keep_pending_sign_in(&session, &pending)
            .await
            .map(|()| url),
        Err(e) => Err(e),
    };
    match kept {
        Ok(url) => Redirect::to(&url),
        Err(e) => back_to_sign_in(&e),
    }
}

/// Where an OpenID provider sends the browser back: the code exchanged, the ID token checked, the
/// person signed in (a 303 to where they were going), or a 303 to the sign-in page with
/// `?error=<code>` (a replayed `state`, a token with a bad signature or expired, …), audited.
#[utoipa::path(get, path = "/api/v1/auth/oidc/{provider}/callback", tag = "auth", params(ProviderNamePath, CallbackQuery),
    responses((status = 303, description = "signed in: to `next`; refused: to /signin?error=<code>")))]
pub async fn oidc_callback(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    session: Session,
    headers: axum::http::HeaderMap,
    Path(ProviderNamePath { provider }): Path<ProviderNamePath>,
    Query(q): Query<CallbackQuery>,
) -> Redirect {
    let redirect_uri = callback_uri(&state, &headers, &provider);
    let callback = oidc::Callback {
        code: q.code,
        state: q.state,
        error: q.error,
    };
    let done = async {
        // Taken out whatever happens next: a state is good for one try.
        let pending = domain::sessions::take_pending_sign_in(&session).await?;
        let (signed, next) = oidc::finish(
            &state.db,
            &provider,
            pending,
            &callback,
            &redirect_uri,
            ip.as_deref(),
        )
        .await?;
        domain::sessions::sign_in(&session, signed.me.id, signed.session_epoch).await?;
        Ok::<_, AppError>(next)
    };
    match done.await {
        Ok(next) => Redirect::to(&next),
        Err(e) => back_to_sign_in(&e),
    }
}

/// This server's callback URL for `provider`, as the browser reaches it: the request's `Host` (one
/// the server answers to: `csrf::protect` refused any other before this runs), `https` when cookies
/// are marked secure (the server is behind TLS).
fn callback_uri(state: &AppState, headers: &axum::http::HeaderMap, provider: &str) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = if state.security.secure_cookies {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}/api/v1/auth/oidc/{provider}/callback")
}

/// `next` if it is a path of this site (`/w/3`), else `/`: never another site (`//evil`, `https:`).
fn local_path(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n.to_string()
        }
        _ => "/".to_string(),
    }
}

fn back_to_sign_in(e: &AppError) -> Redirect {
    Redirect::to(&format!("/signin?error={}", e.code().as_str()))
}

/// Signs in through an LDAP / Active Directory provider (sets the session cookie). Failed attempts
/// count against the same budgets as passwords.
#[utoipa::path(post, path = "/api/v1/auth/ldap/{provider}/signin", tag = "auth", params(ProviderNamePath),
    request_body = DirectorySignIn,
    responses((status = 200, body = Me), (status = 401, description = "wrong username or password", body = ErrorBody),
              (status = 403, description = "`account_disabled`, `account_not_provisioned`", body = ErrorBody),
              (status = 404, description = "no enabled LDAP provider of this name", body = ErrorBody),
              (status = 422, description = "`password_required`", body = ErrorBody),
              (status = 429, description = "too many failed attempts; see Retry-After", body = ErrorBody),
              (status = 503, description = "`identity_provider_unavailable`: the directory cannot be used", body = ErrorBody)))]
pub async fn ldap_signin(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    session: Session,
    Path(ProviderNamePath { provider }): Path<ProviderNamePath>,
    ApiJson(body): ApiJson<DirectorySignIn>,
) -> Result<Json<Me>, AppError> {
    let me = ldap::enter(
        &state,
        &session,
        &provider,
        &body.username,
        &body.password,
        ip.as_deref(),
    )
    .await?;
    Ok(Json(me))
}

#[utoipa::path(get, path = "/api/v1/admin/identity-providers", tag = "admin", security(("session" = []), ("token" = [])),
    responses((status = 200, body = Vec<Provider>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(Caller { state, actor }: Caller) -> Result<Json<Vec<Provider>>, AppError> {
    Ok(Json(providers::list(&state.db, &actor).await?))
}

/// Adds a provider. Its secret (the OIDC client secret, the LDAP service password) is sealed and is
/// never sent back.
#[utoipa::path(post, path = "/api/v1/admin/identity-providers", tag = "admin", security(("session" = []), ("token" = [])),
    request_body = ProviderInput,
    responses((status = 201, body = Provider), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 409, description = "`identity_provider_name_taken`", body = ErrorBody),
              (status = 422, description = "`identity_provider_invalid`, each broken rule at its field", body = ErrorBody)))]
pub async fn create(
    Caller { state, actor }: Caller,
    ApiJson(body): ApiJson<ProviderInput>,
) -> Result<(StatusCode, Json<Provider>), AppError> {
    let provider = providers::create(&state.db, &actor, body).await?;
    Ok((StatusCode::CREATED, Json(provider)))
}

#[utoipa::path(get, path = "/api/v1/admin/identity-providers/{id}", tag = "admin", security(("session" = []), ("token" = [])),
    params(ProviderPath),
    responses((status = 200, body = Provider), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(ProviderPath { id }): Path<ProviderPath>,
) -> Result<Json<Provider>, AppError> {
    Ok(Json(providers::get(&state.db, &actor, id).await?))
}

/// Replaces a provider's settings; without `secret`, the stored one is kept.
#[utoipa::path(put, path = "/api/v1/admin/identity-providers/{id}", tag = "admin", security(("session" = []), ("token" = [])),
    params(ProviderPath), request_body = ProviderInput,
    responses((status = 200, body = Provider), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn replace(
    Caller { state, actor }: Caller,
    Path(ProviderPath { id }): Path<ProviderPath>,
    ApiJson(body): ApiJson<ProviderInput>,
) -> Result<Json<Provider>, AppError> {
    Ok(Json(providers::update(&state.db, &actor, id, body).await?))
}

/// Deletes a provider: the memberships and admin flags its mappings granted go with it, and its
/// people's sessions and tokens stop.
#[utoipa::path(delete, path = "/api/v1/admin/identity-providers/{id}", tag = "admin", security(("session" = []), ("token" = [])),
    params(ProviderPath),
    responses((status = 204, description = "deleted"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(ProviderPath { id }): Path<ProviderPath>,
) -> Result<StatusCode, AppError> {
    providers::delete(&state.db, &actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Maps a group to a role in a workspace, or to instance admin; applied at each person's next
/// sign-in (and LDAP's directory re-check).
#[utoipa::path(post, path = "/api/v1/admin/identity-providers/{id}/mappings", tag = "admin", security(("session" = []), ("token" = [])),
    params(ProviderPath), request_body = MappingInput,
    responses((status = 201, body = GroupMapping), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 422, description = "`group_mapping_invalid`", body = ErrorBody)))]
pub async fn add_mapping(
    Caller { state, actor }: Caller,
    Path(ProviderPath { id }): Path<ProviderPath>,
    ApiJson(body): ApiJson<MappingInput>,
) -> Result<(StatusCode, Json<GroupMapping>), AppError> {
    let mapping = providers::add_mapping(&state.db, &actor, id, body).await?;
    Ok((StatusCode::CREATED, Json(mapping)))
}

#[utoipa::path(delete, path = "/api/v1/admin/identity-providers/{id}/mappings/{mapping_id}", tag = "admin",
    security(("session" = []), ("token" = [])), params(MappingPath),
    responses((status = 204, description = "removed"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn remove_mapping(
    Caller { state, actor }: Caller,
    Path(MappingPath { id, mapping_id }): Path<MappingPath>,
) -> Result<StatusCode, AppError> {
    providers::remove_mapping(&state.db, &actor, id, mapping_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// "Test this provider": each step (connect with TLS, the service bind, the search for `username`,
/// their groups) passed or failed, with what was found.
#[utoipa::path(post, path = "/api/v1/admin/identity-providers/{id}/check", tag = "admin", security(("session" = []), ("token" = [])),
    params(ProviderPath), request_body = CheckRequest,
    responses((status = 200, body = Vec<CheckOutcome>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn check(
    Caller { state, actor }: Caller,
    Path(ProviderPath { id }): Path<ProviderPath>,
    ApiJson(body): ApiJson<CheckRequest>,
) -> Result<Json<Vec<CheckOutcome>>, AppError> {
    Ok(Json(
        providers::check_provider(&state.db, &actor, id, body).await?,
    ))
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkEmailBody {
    /// The address a company identity must have (verified by its provider) to claim this account at
    /// its first sign-in; `null` clears it.
    pub email: Option<String>,
}

/// Lets a company identity with this verified e-mail claim an existing account (once).
#[utoipa::path(put, path = "/api/v1/admin/users/{id}/link-email", tag = "admin", security(("session" = []), ("token" = [])),
    params(UserPath), request_body = LinkEmailBody,
    responses((status = 204, description = "set"), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn link_email(
    Caller { state, actor }: Caller,
    Path(UserPath { id }): Path<UserPath>,
    ApiJson(body): ApiJson<LinkEmailBody>,
) -> Result<StatusCode, AppError> {
    providers::set_link_email(&state.db, &actor, id, body.email.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The instance's own audit log, newest first: accounts, sign-ins through providers and their
/// refusals, providers and mappings changed, settings.
#[utoipa::path(get, path = "/api/v1/admin/audit", tag = "admin", security(("session" = []), ("token" = [])),
    params(ActivityQuery),
    responses((status = 200, body = Vec<AuditEntry>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn audit_log(
    Caller { state, actor }: Caller,
    Query(q): Query<ActivityQuery>,
) -> Result<Json<Vec<AuditEntry>>, AppError> {
    Ok(Json(audit::instance(&state.db, &actor, q.before).await?))
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(local_path(Some("/w/3/jobs?x=1")), "/w/3/jobs?x=1");
        for away in [
            "//evil.example",
            "https://evil.example",
            "/\\evil.example",
            "evil",
            "",
        ] {
            assert_eq!(local_path(Some(away)), "/", "{away}");
        }
        assert_eq!(local_path(None), "/");
    }
}

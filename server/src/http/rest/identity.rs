//! Company sign-in over REST: the sign-in page's provider buttons and the LDAP sign-in (public), and
//! for instance admins the providers, their group mappings, "test this provider" and the e-mail an
//! existing account may be claimed by. The rules are in `domain::identity`.

use axum::extract::State;
use axum::http::StatusCode;
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
use domain::identity::{ldap, providers};
use domain::{audit, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![buttons; ldap_signin; list, create; get, replace, delete; add_mapping; remove_mapping; check; link_email; audit_log]
}

/// The enabled company sign-in providers, for the sign-in page's buttons. Anyone may read this.
#[utoipa::path(get, path = "/api/v1/auth/providers", tag = "auth",
    responses((status = 200, body = Vec<ProviderButton>)))]
pub async fn buttons(State(state): State<AppState>) -> Result<Json<Vec<ProviderButton>>, AppError> {
    Ok(Json(providers::buttons(&state.db).await?))
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
    let signed = ldap::sign_in(
        &state.db,
        &state.throttle,
        &provider,
        &body.username,
        &body.password,
        ip.as_deref(),
    )
    .await?;
    domain::sessions::sign_in(&session, signed.me.id, signed.session_epoch).await?;
    Ok(Json(signed.me))
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
    Ok(Json(providers::check_provider(&state.db, &actor, id, body).await?))
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

//! Extractors for REST handlers: the caller ([`Caller`], resolved by `domain::auth` as for server
//! functions) and the client's address. Wrappers, because axum's extractor trait can only be implemented
//! here for types of this crate.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use contracts::error::AppError;
use domain::auth::{self, Actor};
use domain::AppState;

/// The signed-in caller of a REST request, with the server's state every such handler works on (one
/// extractor instead of `State` + the caller in each handler); anonymous requests are refused with 401.
pub struct Caller {
    pub state: AppState,
    pub actor: Actor,
}

impl<S> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        let actor = auth::require(&state, parts).await?;
        Ok(Caller { state, actor })
    }
}

/// A [`Caller`] who holds one of their upload slots (`max_uploads_per_user`) for as long as the
/// handler runs: taken before a byte of the body is read, given back when the extractor is dropped,
/// so no upload route can forget the cap.
pub struct Uploader {
    pub state: AppState,
    pub actor: Actor,
    _slot: domain::caps::Permit,
}

impl FromRequestParts<AppState> for Uploader {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let Caller { state, actor } = Caller::from_request_parts(parts, state).await?;
        let kind = domain::caps::Kind::Upload;
        let _slot = state.open.take(&state.db, kind, actor.user_id).await?;
        Ok(Uploader {
            state,
            actor,
            _slot,
        })
    }
}

/// The client's address (`None` when the server was not started with connect info).
pub struct ClientIp(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(auth::client_ip(parts)))
    }
}

/// Records the connection's peer address in the request as `domain`'s [`auth::ClientAddr`], where the
/// domain (audit log, sign-in budgets) and server functions read it.
pub async fn record_client_addr(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    if let Some(ip) = peer {
        request.extensions_mut().insert(auth::ClientAddr(ip));
    }
    next.run(request).await
}

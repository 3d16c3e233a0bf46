//! Who is calling: a signed-in session or an `Authorization: Bearer` API token, resolved from the
//! request's parts the same way for REST handlers (the server's extractor) and server functions (the
//! app's `context`). A disabled account, one a company identity provider no longer vouches for
//! ([`crate::identity::VOUCHED`]), or a session older than the account's last password reset,
//! counts as not signed in. Only the `http` vocabulary is used here, not a web framework: the server
//! puts the connection's address into the request as a [`ClientAddr`].

use contracts::ids::{TokenId, UserId};
use std::net::IpAddr;

use http::request::Parts;
use http::{header, Method};
use tower_sessions::Session;

use super::{sessions, tokens, AppState};
use contracts::error::{AppError, ErrorCode};
use contracts::types::TokenScope;

/// An authenticated caller, as every domain function that acts on someone's behalf receives it.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user_id: UserId,
    pub username: String,
    pub is_admin: bool,
    /// The client's address, recorded in the audit log.
    pub ip: Option<String>,
    /// Authenticated by a `read` token: may read, never change (refused in [`caller`] for anything
    /// but `GET`/`HEAD`, and by handlers such as the terminal whose `GET` is not a read).
    pub read_only: bool,
    /// What the caller proved who they are with.
    pub credential: Credential,
}

/// How a caller signed in: what a connection that stays open (the terminal) checks again, so that a
/// password reset, a sign-out everywhere or a revoked token ends it too, not only the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A browser session of the account's `session_epoch` at sign-in (a reset bumps it).
    Session { epoch: i64 },
    /// The API token with this id.
    Token { id: TokenId },
    /// No one signed in: the sweep with this id queues its next trial as the account that made it,
    /// with that account's present rights (`crate::sweeps::driver`), for as long as the sweep is not
    /// cancelled.
    Sweep { id: contracts::ids::SweepId },
}

impl Credential {
    /// Whether the credential still lets `user_id` in; the account's own state (disabled) is checked
    /// apart.
    pub async fn still_valid(
        &self,
        db: &sqlx::SqlitePool,
        user_id: UserId,
    ) -> Result<bool, AppError> {
        match *self {
            Credential::Session { epoch } => {
                let current: Option<i64> =
                    sqlx::query_scalar("SELECT session_epoch FROM users WHERE id = ?")
                        .bind(user_id)
                        .fetch_optional(db)
                        .await?;
                Ok(current == Some(epoch))
            }
            Credential::Token { id } => tokens::still_valid(db, id).await,
            Credential::Sweep { id } => {
                let status: Option<String> =
                    sqlx::query_scalar("SELECT status FROM sweeps WHERE id = ?")
                        .bind(id)
                        .fetch_optional(db)
                        .await?;
                Ok(status.is_some_and(|s| s != "cancelled"))
            }
        }
    }
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: UserId,
    username: String,
    is_admin: bool,
    disabled: bool,
    session_epoch: i64,
}

/// The address of the connection a request came on, as a request extension (the server adds it from
/// the listener's peer address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The client address of the request, when the server recorded it.
pub fn client_ip(parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<ClientAddr>()
        .map(|addr| addr.0.to_string())
}

/// The bearer token of the request: `Ok(None)` without an `Authorization` header, an error for any
/// other scheme or a malformed value.
pub fn bearer_token(parts: &Parts) -> Result<Option<&str>, AppError> {
    let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| AppError::Unauthenticated)?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(Some(token.trim()))
        }
        _ => Err(AppError::Unauthenticated),
    }
}

/// The caller, or `None` when anonymous. A request with an `Authorization` header is judged by its
/// token alone: a bad token is an error, never a fallback to the cookie.
pub async fn caller(state: &AppState, parts: &Parts) -> Result<Option<Actor>, AppError> {
    let ip = client_ip(parts);
    if let Some(secret) = bearer_token(parts)? {
        let grant = tokens::authenticate(&state.db, secret)
            .await?
            .ok_or(AppError::Unauthenticated)?;
        let read_only = grant.scope == TokenScope::Read;
        if read_only && !matches!(parts.method, Method::GET | Method::HEAD) {
            return Err(AppError::denied(
                ErrorCode::TokenReadOnly,
                "this API token may only read (GET); use a token with the write scope to change things",
            ));
        }
        let user = load(state, grant.user_id)
            .await?
            .filter(|u| !u.disabled)
            .ok_or(AppError::Unauthenticated)?;
        return Ok(Some(Actor {
            user_id: user.id,
            username: user.username,
            is_admin: user.is_admin,
            ip,
            read_only,
            credential: Credential::Token { id: grant.token_id },
        }));
    }
    let Some(session) = parts.extensions.get::<Session>() else {
        return Ok(None);
    };
    let Some((user_id, epoch)) = sessions::signed_in_user(session).await? else {
        return Ok(None);
    };
    match load(state, user_id).await? {
        Some(user) if !user.disabled && user.session_epoch == epoch => Ok(Some(Actor {
            user_id: user.id,
            username: user.username,
            is_admin: user.is_admin,
            ip,
            read_only: false,
            credential: Credential::Session { epoch },
        })),
        // Disabled, reset or deleted since signing in: the session is dead; clean it up.
        _ => {
            sessions::sign_out(session).await?;
            Ok(None)
        }
    }
}

/// The caller, or `Unauthenticated`.
pub async fn require(state: &AppState, parts: &Parts) -> Result<Actor, AppError> {
    caller(state, parts).await?.ok_or(AppError::Unauthenticated)
}

async fn load(state: &AppState, user_id: UserId) -> Result<Option<UserRow>, AppError> {
    // An account a company provider no longer vouches for (its last check too old, its entry gone
    // from the directory, its provider disabled) is as good as disabled until it signs in there again.
    let sql = format!(
        "SELECT u.id, u.username, u.is_admin, u.disabled OR NOT {} AS disabled, u.session_epoch
         FROM users u WHERE u.id = ?",
        crate::identity::VOUCHED
    );
    Ok(sqlx::query_as::<_, UserRow>(&sql)
        .bind(user_id)
        .fetch_optional(&state.db)
        .await?)
}

impl Actor {
    /// The account as the UI sees it.
    pub fn me(&self) -> contracts::types::Me {
        contracts::types::Me {
            id: self.user_id,
            username: self.username.clone(),
            is_admin: self.is_admin,
        }
    }
}

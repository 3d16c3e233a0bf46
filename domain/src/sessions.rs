//! Server-side sessions: the cookie holds only a random id; the data (user id and the user's session
//! epoch) lives in SQLite through `tower-sessions` and its sqlx store. Cookies are HttpOnly and
//! SameSite=Lax, Secure when configured, and expire [`IDLE_EXPIRY_DAYS`] days after they were last
//! changed (sign-in); then the person signs in again.

use contracts::ids::UserId;
use sqlx::SqlitePool;
use tower_sessions::cookie::time::Duration;
use tower_sessions::cookie::SameSite;
pub use tower_sessions::Session;
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::SqliteStore;

use contracts::error::AppError;

pub const COOKIE_NAME: &str = "paddock_session";
/// Sessions end two weeks after sign-in. (Renewing on every request would mean a database write per
/// request; `with_always_save` can be turned on if sliding expiry is wanted.)
pub const IDLE_EXPIRY_DAYS: i64 = 14;

const USER_ID: &str = "user_id";
const EPOCH: &str = "session_epoch";

pub fn store(pool: &SqlitePool) -> SqliteStore {
    SqliteStore::new(pool.clone())
}

pub fn layer(pool: &SqlitePool, secure: bool) -> SessionManagerLayer<SqliteStore> {
    SessionManagerLayer::new(store(pool))
        .with_name(COOKIE_NAME)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(Duration::days(IDLE_EXPIRY_DAYS)))
}

/// Binds the session to a user. A new session id is issued so an id planted before sign-in
/// (session fixation) is worthless afterwards.
pub async fn sign_in(session: &Session, user_id: UserId, epoch: i64) -> Result<(), AppError> {
    session.cycle_id().await.map_err(store_error)?;
    session
        .insert(USER_ID, user_id)
        .await
        .map_err(store_error)?;
    session.insert(EPOCH, epoch).await.map_err(store_error)?;
    Ok(())
}

/// Ends the session: its row is deleted and the cookie cleared.
pub async fn sign_out(session: &Session) -> Result<(), AppError> {
    session.flush().await.map_err(store_error)?;
    Ok(())
}

/// The user id and epoch stored in the session, if it is signed in.
pub async fn signed_in_user(session: &Session) -> Result<Option<(UserId, i64)>, AppError> {
    let user_id: Option<UserId> = session.get(USER_ID).await.map_err(store_error)?;
    let epoch: Option<i64> = session.get(EPOCH).await.map_err(store_error)?;
    Ok(user_id.zip(epoch))
}

/// The session store failed (it is the database): logged, and `Internal` for the caller.
fn store_error(e: tower_sessions::session::Error) -> AppError {
    contracts::error::internal("session store", e)
}

/// How often expired session rows are deleted (expired sessions are already refused on use; this only
/// keeps the table small).
pub const SWEEP_PERIOD: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// Deletes expired sessions every [`SWEEP_PERIOD`], forever; the server runs it beside the listener.
pub async fn sweep_expired(pool: SqlitePool) {
    use tower_sessions::ExpiredDeletion;
    let store = store(&pool);
    let mut tick = tokio::time::interval(SWEEP_PERIOD);
    loop {
        tick.tick().await;
        if let Err(e) = store.delete_expired().await {
            tracing::warn!(error = %e, "deleting expired sessions failed");
        }
    }
}

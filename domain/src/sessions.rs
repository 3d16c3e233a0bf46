//! Server-side sessions: the cookie holds only a random id; the data (user id and the user's session
//! epoch) lives in SQLite through `tower-sessions` and its sqlx store. Cookies are HttpOnly and
//! SameSite=Lax, Secure when configured, and expire [`IDLE_EXPIRY_DAYS`] days after they were last
//! changed (sign-in); then the person signs in again.
//!
//! The database keeps a hash of each id, never the id ([`HashedStore`]), as it does for API tokens and
//! endpoint keys: a copy of the database (a backup, a leaked file) signs nobody in.

use contracts::ids::UserId;
use sqlx::SqlitePool;
use tower_sessions::cookie::time::Duration;
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
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

/// The session store the server uses: SQLite rows keyed by the SHA-256 of the cookie's id (its first
/// 128 bits, the id's own width). The ids are 128 random bits, so an unsalted hash is as good as the id
/// is random; a row names no cookie. Sessions stored before ids were hashed are never found again
/// (their holders sign in once more) and are swept when they expire.
#[derive(Debug, Clone)]
pub struct HashedStore(SqliteStore);

impl HashedStore {
    pub fn new(pool: &SqlitePool) -> HashedStore {
        HashedStore(store(pool))
    }
}

/// The key a session with this id is stored under.
fn hashed(id: &Id) -> Id {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.0.to_le_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    Id(i128::from_le_bytes(first))
}

#[async_trait::async_trait]
impl SessionStore for HashedStore {
    /// A new id for the record until none is stored under its hash (with 128 random bits, the first).
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        while self.0.load(&hashed(&record.id)).await?.is_some() {
            record.id = Id::default();
        }
        self.save(record).await
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let mut stored = record.clone();
        stored.id = hashed(&record.id);
        self.0.save(&stored).await
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        Ok(self.0.load(&hashed(id)).await?.map(|mut record| {
            record.id = *id;
            record
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.0.delete(&hashed(id)).await
    }
}

pub fn layer(pool: &SqlitePool, secure: bool) -> SessionManagerLayer<HashedStore> {
    SessionManagerLayer::new(HashedStore::new(pool))
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

const PENDING_OIDC: &str = "oidc_pending";

/// Keeps a company sign-in under way in this browser's session (one at a time: a new one replaces it).
pub async fn keep_pending_sign_in(
    session: &Session,
    pending: &crate::identity::oidc::Pending,
) -> Result<(), AppError> {
    session
        .insert(PENDING_OIDC, pending)
        .await
        .map_err(store_error)
}

/// Takes the company sign-in under way out of this browser's session: it can be finished once.
pub async fn take_pending_sign_in(
    session: &Session,
) -> Result<Option<crate::identity::oidc::Pending>, AppError> {
    session.remove(PENDING_OIDC).await.map_err(store_error)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the table holds is the hash: the cookie's id finds the session, the stored key does not,
    /// and no row's key is the id.
    #[tokio::test]
    async fn the_table_keeps_hashes_of_ids_never_ids() {
        let (_dir, pool) = crate::testing::test_db().await;
        let store = HashedStore::new(&pool);
        let mut record = Record {
            id: Id::default(),
            data: Default::default(),
            expiry_date: tower_sessions::cookie::time::OffsetDateTime::now_utc()
                + Duration::days(1),
        };
        record.data.insert("user_id".into(), serde_json::json!(7));
        store.create(&mut record).await.unwrap();
        let found = store.load(&record.id).await.unwrap().unwrap();
        assert_eq!((found.id, &found.data), (record.id, &record.data));
        let keys: Vec<String> = sqlx::query_scalar("SELECT id FROM tower_sessions")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(keys.len(), 1);
        assert_ne!(keys[0], record.id.to_string(), "the id itself is stored");
        assert_eq!(keys[0], hashed(&record.id).to_string());
        assert!(store.load(&hashed(&record.id)).await.unwrap().is_none());
        store.delete(&record.id).await.unwrap();
        assert!(store.load(&record.id).await.unwrap().is_none());
    }
}

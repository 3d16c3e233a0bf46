//! Test helpers for the domain modules: a fresh SQLite file per test in its own temporary directory.

use sqlx::SqlitePool;

use super::auth::Actor;

/// A migrated database in a new temporary directory (kept alive by the returned guard).
pub async fn test_db() -> (tempfile::TempDir, SqlitePool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = super::db::default_url(&dir.path().join("data"));
    let pool = super::db::open(&url).await.expect("open test database");
    (dir, pool)
}

/// Signs up `username` and returns them as an actor (the first one is the instance admin).
pub async fn actor(db: &SqlitePool, username: &str) -> Actor {
    let me = super::accounts::create_user(db, username, "password123", false, None)
        .await
        .expect("create user");
    Actor {
        user_id: me.id,
        username: me.username,
        is_admin: me.is_admin,
        ip: Some("127.0.0.1".into()),
        read_only: false,
        credential: super::auth::Credential::Session { epoch: 0 },
    }
}

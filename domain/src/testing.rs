//! Test helpers for the domain modules: a fresh SQLite file per test in its own temporary directory,
//! and the rows most tests start from (people in a workspace, a dataset, a job runner).

use contracts::ids::{DatasetId, WorkspaceId};
use std::sync::Arc;

use sqlx::SqlitePool;

use super::auth::Actor;
use super::jobs::Jobs;
use super::storage::Storage;

/// A migrated database in a new temporary directory (kept alive by the returned guard).
pub async fn test_db() -> (tempfile::TempDir, SqlitePool) {
    // One secrets key for the whole test binary (the key's path is process-wide).
    static KEY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let keys = tempfile::tempdir().expect("tempdir");
        crate::sealing::install(&keys.path().join("secrets.key")).expect("a secrets key");
        keys
    });
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

/// A fresh database (as [`test_db`]) with each of `usernames` signed up in order, so the first is
/// the instance admin.
pub async fn people<const N: usize>(
    usernames: [&str; N],
) -> (tempfile::TempDir, SqlitePool, [Actor; N]) {
    let (dir, db) = test_db().await;
    let mut out = Vec::with_capacity(N);
    for username in usernames {
        out.push(actor(&db, username).await);
    }
    let people = out
        .try_into()
        .unwrap_or_else(|_| unreachable!("one actor per name"));
    (dir, db, people)
}

/// A workspace (`nlp`) made by its owner, the first account and so the instance admin, with a
/// second person who may only read it.
pub struct Team {
    pub owner: Actor,
    pub viewer: Actor,
    pub ws: WorkspaceId,
}

pub async fn team(db: &SqlitePool) -> Team {
    let owner = actor(db, "owner").await;
    let viewer = actor(db, "viewer").await;
    let ws = super::workspaces::create(db, &owner, "nlp")
        .await
        .expect("create workspace")
        .id;
    super::members::add(db, &owner, ws, "viewer", "viewer")
        .await
        .expect("add viewer");
    Team { owner, viewer, ws }
}

/// The job runner of a server without Docker and without its `paddock` binary: whatever it starts
/// fails to start, which is what the database tests want.
pub async fn jobs(dir: &tempfile::TempDir, db: &SqlitePool) -> Arc<Jobs> {
    let storage = Arc::new(Storage::new(
        dir.path(),
        1 << 20,
        "/nonexistent/paddock".into(),
    ));
    let engine = super::engine::EngineConfig {
        docker_host: Some("unix:///nonexistent.sock".into()),
        ..Default::default()
    };
    let engine = Arc::new(super::engine::Engine::start(db, engine).await.unwrap());
    Arc::new(Jobs::new(db.clone(), storage, engine, 1, 0))
}

/// A validated dataset row (its file is never read) whose labels are `labels`.
pub async fn dataset(
    db: &SqlitePool,
    workspace_id: WorkspaceId,
    name: &str,
    labels: &[&str],
) -> DatasetId {
    let distribution: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|l| (l.to_string(), 1.into())).collect();
    let report =
        serde_json::json!({ "ok": true, "rows": labels.len(), "label_distribution": distribution });
    sqlx::query_scalar(
        "INSERT INTO datasets (workspace_id, name, file_name, format, path, bytes, sha256, rows, text_column, label_column,
             report_json, preview_json, created_at)
         VALUES (?, ?, 'r.tsv', 'tsv', 'datasets/1/r.tsv', 10, 'abc', 3, 'text', 'label', ?, '{}', '2026-01-01T00:00:00Z')
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(report.to_string())
    .fetch_one(db)
    .await
    .unwrap()
}

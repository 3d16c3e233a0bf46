//! The SQLite pool and the embedded migrations. One pool is shared by the whole server; WAL lets readers
//! run alongside the single writer, and the busy timeout makes concurrent writers wait instead of failing.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

/// How long a writer waits for another writer's lock before giving up with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Migrations from the repository's `migrations/` directory, compiled into the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// The database URL used when none is configured: `sqlite://<data_dir>/paddock.db`.
pub fn default_url(data_dir: &Path) -> String {
    format!("sqlite://{}", data_dir.join("paddock.db").display())
}

/// Opens (creating if needed) the database at `url`, creating the parent directory of the file.
pub async fn connect(url: &str) -> Result<SqlitePool, OpenError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| OpenError(format!("invalid database URL {url:?}: {e}")))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    let file = options.get_filename().to_path_buf();
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            OpenError(format!(
                "cannot create data directory {}: {e}",
                dir.display()
            ))
        })?;
    }
    SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .map_err(|e| OpenError(format!("cannot open database {}: {e}", file.display())))
}

/// Applies pending migrations (ours, then the session store's table).
pub async fn migrate(pool: &SqlitePool) -> Result<(), OpenError> {
    MIGRATOR
        .run(pool)
        .await
        .map_err(|e| OpenError(format!("migrating the database failed: {e}")))?;
    super::sessions::store(pool)
        .migrate()
        .await
        .map_err(|e| OpenError(format!("creating the session table failed: {e}")))?;
    Ok(())
}

/// Opens and migrates: what the server and the CLI do at start.
pub async fn open(url: &str) -> Result<SqlitePool, OpenError> {
    let pool = connect(url).await?;
    migrate(&pool).await?;
    Ok(pool)
}

/// Why the database could not be opened or migrated, in words for the operator.
#[derive(Debug)]
pub struct OpenError(pub String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenError {}

/// A transaction that takes SQLite's write lock at once. Checks made inside it (membership, "is this
/// the last owner?") cannot be invalidated by another writer before the change commits; a deferred
/// transaction would instead fail with SQLITE_BUSY when upgrading to a writer.
pub async fn write_tx(
    db: &SqlitePool,
) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
    db.begin_with("BEGIN IMMEDIATE").await
}

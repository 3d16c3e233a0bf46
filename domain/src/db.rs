//! The SQLite pool and the embedded migrations. One pool is shared by the whole server; WAL lets readers
//! run alongside the single writer, and the busy timeout makes concurrent writers wait instead of failing.

use contracts::ids::WorkspaceId;
use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{SqliteConnection, SqlitePool};

use contracts::error::{AppError, ErrorCode};

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
    rebuild_tables(pool)
        .await
        .map_err(|e| OpenError(format!("rebuilding tables failed: {e}")))?;
    super::sessions::store(pool)
        .migrate()
        .await
        .map_err(|e| OpenError(format!("creating the session table failed: {e}")))?;
    Ok(())
}

/// Tables whose ids name something outside the row: files and logs keyed by id, processes and
/// containers, GPU leases, links in the UI. SQLite without AUTOINCREMENT hands out max(id) + 1, so
/// deleting the newest workspace or job gave its id to the next one, which inherited whatever was
/// still keyed by it. (High-volume log tables are left out: their ids are only cursors.)
pub const NEVER_REUSED: &[&str] = &[
    "users",
    "workspaces",
    "api_tokens",
    "environments",
    "environment_versions",
    "datasets",
    "jobs",
    "checkpoints",
    "endpoints",
    "endpoint_replicas",
    "endpoint_keys",
    "evaluations",
    "pretrained_models",
];

/// A change to a table's definition that ALTER TABLE cannot make: the stored definition's body (from
/// its first parenthesis) changed, or `None` when the change is already made.
type Edit = fn(&str) -> Option<String>;

/// The changes [`rebuild_tables`] makes, per table.
fn edits_of(table: &str) -> Vec<Edit> {
    let mut edits: Vec<Edit> = Vec::new();
    if NEVER_REUSED.contains(&table) {
        edits.push(with_autoincrement);
    }
    if table == "endpoints" {
        edits.push(endpoint_precision_takes_auto);
    }
    edits
}

/// Rebuilds each table whose definition lacks one of its [`edits_of`] — AUTOINCREMENT on the tables of
/// [`NEVER_REUSED`], a widened CHECK — which SQLite can change no other way: the documented procedure
/// (foreign keys off, new table from the edited current definition, copy, drop, rename, indexes,
/// `foreign_key_check`) in one transaction. It is code rather than a migration because sqlx runs every
/// SQLite migration inside a transaction, where `PRAGMA foreign_keys` cannot change — and a DROP with
/// foreign keys on would cascade. Working from the stored definition keeps columns added by any
/// migration; copying the rows seeds `sqlite_sequence` with each table's largest id. A no-op once done.
async fn rebuild_tables(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    use sqlx::{Connection, Executor};
    let mut conn = pool.acquire().await?.detach();
    let tables: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL",
    )
    .fetch_all(&mut conn)
    .await?;
    let mut pending: Vec<(String, String)> = Vec::new();
    for (table, sql) in tables {
        let Some(open) = sql.find('(') else { continue };
        let mut body = sql[open..].to_string();
        let mut changed = false;
        for edit in edits_of(&table) {
            if let Some(edited) = edit(&body) {
                body = edited;
                changed = true;
            }
        }
        if changed {
            pending.push((table.clone(), format!("CREATE TABLE {table}__new {body}")));
        }
    }
    if pending.is_empty() {
        return conn.close().await;
    }
    conn.execute("PRAGMA foreign_keys = OFF").await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    for (table, new) in &pending {
        let extras: Vec<String> = sqlx::query_scalar(
            "SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name = ? AND sql IS NOT NULL",
        )
        .bind(table)
        .fetch_all(&mut *tx)
        .await?;
        tx.execute(new.as_str()).await?;
        tx.execute(format!("INSERT INTO {table}__new SELECT * FROM {table}").as_str())
            .await?;
        tx.execute(format!("DROP TABLE {table}").as_str()).await?;
        tx.execute(format!("ALTER TABLE {table}__new RENAME TO {table}").as_str())
            .await?;
        for extra in extras {
            tx.execute(extra.as_str()).await?;
        }
    }
    let broken: Vec<(String,)> = sqlx::query_as("PRAGMA foreign_key_check")
        .fetch_all(&mut *tx)
        .await?;
    if !broken.is_empty() {
        return Err(sqlx::Error::Protocol(format!(
            "foreign keys broken after the rebuild in {broken:?}; nothing was changed"
        )));
    }
    tx.commit().await?;
    conn.execute("PRAGMA foreign_keys = ON").await?;
    tracing::info!(
        tables = pending.len(),
        "tables rebuilt with their new definitions"
    );
    conn.close().await
}

/// The body with its `id INTEGER PRIMARY KEY` made AUTOINCREMENT (the id must be the first column).
fn with_autoincrement(body: &str) -> Option<String> {
    if body.contains("AUTOINCREMENT") || !body[1..].trim_start().starts_with("id ") {
        return None;
    }
    let pk = body.find("INTEGER PRIMARY KEY")? + "INTEGER PRIMARY KEY".len();
    Some(format!("{} AUTOINCREMENT{}", &body[..pk], &body[pk..]))
}

/// An endpoint may ask for `auto` precision (issue 34): the CHECK the column was added with
/// (`20261205000001_endpoint_precision.sql`) did not know it.
fn endpoint_precision_takes_auto(body: &str) -> Option<String> {
    const BEFORE: &str = "CHECK (precision IN ('fp32', 'bf16', 'fp16'))";
    body.contains(BEFORE).then(|| {
        body.replace(
            BEFORE,
            "CHECK (precision IN ('auto', 'fp32', 'bf16', 'fp16'))",
        )
    })
}

/// Opens and migrates: what the server and the CLI do at start.
pub async fn open(url: &str) -> Result<SqlitePool, OpenError> {
    let pool = connect(url).await?;
    migrate(&pool).await?;
    Ok(pool)
}

/// How often [`guard_files`] looks at the database's files.
const GUARD_EVERY: Duration = Duration::from_secs(1);

/// Watches the database file and its write-ahead log for as long as the server runs, and returns
/// (with the reason) when either was deleted or replaced. SQLite keeps using the files it opened, so
/// after an outside process deleted the `-wal` (an `sqlite3` session closing does), every write the
/// server acknowledges goes to a file nobody will ever read again, and a restart loses it. Before
/// returning, what the server's still-open log holds is checkpointed into the database file (when
/// that is intact), so nothing acknowledged is lost; the caller then stops the server.
///
/// It holds a connection of its own for its whole life: while one connection is open SQLite never
/// deletes the log itself, so the log's identity is stable and any change is someone else's. The
/// files' identities are taken when this is awaited, so await it before serving anything; the
/// returned future does the watching.
pub async fn guard_files(url: &str) -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> {
    let pending = || -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> {
        Box::pin(std::future::pending())
    };
    use sqlx::{ConnectOptions, Connection};
    use std::os::unix::fs::MetadataExt;
    let identity = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let Ok(options) = SqliteConnectOptions::from_str(url) else {
        return pending();
    };
    let options = options.journal_mode(SqliteJournalMode::Wal);
    let file = options.get_filename().to_path_buf();
    let mut wal = file.clone().into_os_string();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    let mut conn = match options.connect().await {
        Ok(conn) => conn,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the database files");
            return pending();
        }
    };
    // A read makes sure the log exists before its identity is taken.
    let _ = sqlx::query("SELECT COUNT(*) FROM sqlite_master")
        .execute(&mut conn)
        .await;
    let (Some(db_id), Some(wal_id)) = (identity(&file), identity(&wal)) else {
        // Not a file in WAL mode (an in-memory database): nothing to watch.
        return pending();
    };
    Box::pin(async move {
        loop {
            tokio::time::sleep(GUARD_EVERY).await;
            let db_now = identity(&file);
            let wal_now = identity(&wal);
            if db_now == Some(db_id) && wal_now == Some(wal_id) {
                continue;
            }
            let what = if db_now != Some(db_id) {
                format!("{} was deleted or replaced", file.display())
            } else {
                format!("{} was deleted or replaced", wal.display())
            };
            let saved = if db_now == Some(db_id) {
                match sqlx::query("PRAGMA wal_checkpoint(FULL)")
                    .execute(&mut conn)
                    .await
                {
                    Ok(_) => "its log was written into the database file first",
                    Err(e) => {
                        tracing::error!(error = %e, "checkpointing the log of a replaced database");
                        "checkpointing its log failed"
                    }
                }
            } else {
                "the database file itself is gone"
            };
            let _ = conn.close().await;
            return format!("{what} by another process ({saved})");
        }
    })
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

/// The row `sql` selects by the workspace and the id it binds, in that order (a workspace's thing is read by the
/// workspace and its own id, so an id from another workspace is not found), or `NotFound`.
pub(crate) async fn found<T, Id>(
    conn: &mut SqliteConnection,
    sql: &str,
    workspace_id: WorkspaceId,
    id: Id,
) -> Result<T, AppError>
where
    T: for<'r> sqlx::FromRow<'r, SqliteRow> + Send + Unpin,
    Id: for<'q> sqlx::Encode<'q, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send,
{
    sqlx::query_as(sql)
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .ok_or(AppError::NotFound)
}

/// Declares `$name!(TAIL, args…)`: the `$row`s that `$select` followed by `TAIL` (a `WHERE` or
/// `ORDER BY` literal) returns, as one `sqlx::query_as!` checked at compile time against the schema the
/// migrations make (`domain/.sqlx`). The query macros take literals only, so each kind of row states its
/// columns once, here, and each use adds its own condition. `$d` is a `$` handed in for the variables of
/// the macro this one writes. (Not formatted by rustfmt, which indents a nested `macro_rules!` deeper
/// on every run.)
#[rustfmt::skip]
macro_rules! row_query {
    ($d:tt $name:ident, $row:ident, $select:literal) => {
        macro_rules! $name {
            ($d tail:literal $d(, $d arg:expr)* $d(,)?) => {
                sqlx::query_as!($row, $select + " " + $d tail $d(, $d arg)*)
            };
        }
        #[allow(unused_imports)]
        pub(crate) use $name;
    };
}
pub(crate) use row_query;

/// True when `e` is a violation of a UNIQUE constraint (turned into a 409 by the caller, which knows
/// which field was duplicated).
fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// The one mapping of a unique-constraint violation: `Conflict` at `field` (a name or slug already in
/// use, said by `code` and `message`); any other database error stays internal.
pub fn taken(
    field: &'static str,
    code: ErrorCode,
    message: &'static str,
) -> impl FnOnce(sqlx::Error) -> AppError {
    move |e| {
        if is_unique_violation(&e) {
            AppError::conflict(field, code, message)
        } else {
            e.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ids_are_never_reused_and_rows_survive_the_rebuild() {
        let (_dir, db) = crate::testing::test_db().await;
        for table in NEVER_REUSED {
            let sql: String = sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = ?")
                .bind(table)
                .fetch_one(&db)
                .await
                .unwrap();
            assert!(sql.contains("AUTOINCREMENT"), "{table}: {sql}");
        }
        let insert = "INSERT INTO workspaces (name, created_at) VALUES ('w', 't') RETURNING id";
        let first: i64 = sqlx::query_scalar(insert).fetch_one(&db).await.unwrap();
        sqlx::query("DELETE FROM workspaces WHERE id = ?")
            .bind(first)
            .execute(&db)
            .await
            .unwrap();
        let second: i64 = sqlx::query_scalar(insert).fetch_one(&db).await.unwrap();
        assert!(second > first);
        // Foreign keys are still enforced afterwards.
        let orphan = sqlx::query("INSERT INTO members (workspace_id, user_id, role, added_at) VALUES (999, 999, 'owner', 't')")
            .execute(&db)
            .await;
        assert!(orphan.is_err());
    }

    #[tokio::test]
    async fn a_database_made_before_the_change_is_rebuilt_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let url = default_url(dir.path());
        let pool = connect(&url).await.unwrap();
        MIGRATOR.run(&pool).await.unwrap();
        sqlx::query(
            "INSERT INTO users (username, password_hash, created_at) VALUES ('a', 'x', 't')",
        )
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO workspaces (name, created_at) VALUES ('kept', 't')")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO members (workspace_id, user_id, role, added_at) VALUES (1, 1, 'owner', 't')")
            .execute(&pool)
            .await
            .unwrap();
        rebuild_tables(&pool).await.unwrap();
        let members: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM members")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(members, 1, "the rebuild cascaded nothing");
        let name: String = sqlx::query_scalar("SELECT name FROM workspaces WHERE id = 1")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(name, "kept");
        rebuild_tables(&pool).await.unwrap();
    }

    /// The endpoints table takes `auto` after the rebuild, and still refuses what is no precision.
    #[tokio::test]
    async fn endpoints_take_auto_precision_after_the_rebuild() {
        let (_dir, db) = crate::testing::test_db().await;
        let sql: String =
            sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = 'endpoints'")
                .fetch_one(&db)
                .await
                .unwrap();
        assert!(
            sql.contains("'auto'") && sql.contains("AUTOINCREMENT"),
            "{sql}"
        );
        assert_eq!(endpoint_precision_takes_auto(&sql), None, "done once");
        let body = "(id INTEGER PRIMARY KEY, precision TEXT CHECK (precision IN ('fp32', 'bf16', 'fp16')))";
        let edited = endpoint_precision_takes_auto(body).unwrap();
        assert!(
            edited.contains("('auto', 'fp32', 'bf16', 'fp16')"),
            "{edited}"
        );
        assert_eq!(
            with_autoincrement(body).as_deref(),
            Some("(id INTEGER PRIMARY KEY AUTOINCREMENT, precision TEXT CHECK (precision IN ('fp32', 'bf16', 'fp16')))")
        );
    }
}

//! Image builds in the background. A version moves queued → building → built | failed, and back to
//! queued for a rebuild or after an interrupted build: its state machine is [`Build`], every move goes
//! through `Build::transition` (see `crate::transitions`). The move into `building` is a compare-and-set, so
//! two triggers (a user's "rebuild" and recovery at start-up) never run the same build twice. Build output goes to the database in batches (the SSE log stream reads it
//! from there), capped so a chatty `apt-get` cannot fill the disk. The resulting image ID is the
//! version's lock; a rebuild that yields a different ID keeps the old one in `previous_image_id`, visible
//! on the environment's page.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use containers::build::BuildOptions;
use sqlx::SqlitePool;
use tokio::sync::mpsc;

use super::spec::{runtime_binary, to_env_spec, LOCAL_BASE};
use super::VersionRow;
use crate::engine::Engine;
use crate::transitions::{machine, reasons, Machine};
use contracts::error::{AppError, ErrorCode};
use contracts::types::{BuildStatus, EnvironmentSpec};

reasons! {
    /// Why a build's status changed, in `environment_versions.build_reason`.
    pub enum Reason {
        /// A person asked for the image to be built again.
        RebuildRequested => "rebuild_requested",
        /// The builder took it (queued → building).
        Started => "started",
        /// The image exists; its ID is the version's lock.
        Built => "built",
        /// Docker refused the build; `build_error` says why.
        BuildFailed => "build_failed",
        /// The server stopped while it was building; it is built again.
        Interrupted => "interrupted",
    }
}

machine! {
    /// An environment version's build, in `environment_versions` (`build_status`, `build_reason`,
    /// `build_error`).
    pub struct Build {
        kind: "build",
        table: "environment_versions",
        id: i64,
        status_column: "build_status",
        reason_column: "build_reason",
        message_column: "build_error",
        status: BuildStatus,
        reason: Reason,
        moves: moves,
    }
}

fn moves(from: BuildStatus, to: BuildStatus) -> bool {
    use BuildStatus::*;
    match from {
        Queued => to == Building,
        Building => matches!(to, Built | Failed | Queued),
        Built | Failed => to == Queued,
    }
}

/// Build output kept per version. Beyond it lines are dropped and a note says so; the tail of a failed
/// build is also in `build_error`.
const LOG_LIMIT_BYTES: usize = 2 << 20;
/// How often buffered output is written to the database (and so reaches the browser).
const FLUSH_EVERY: Duration = Duration::from_millis(300);

/// Starts building version `version_id` in the background.
pub fn spawn(db: SqlitePool, engine: Arc<Engine>, version_id: i64, force: bool) {
    tokio::spawn(async move {
        if let Err(e) = run(&db, &engine, version_id, force).await {
            tracing::error!(version_id, error = %e, "environment build could not be recorded");
        }
    });
}

/// Marks a finished or failed version queued again (for "rebuild"); `build_in_progress` while one runs.
pub async fn requeue(db: &SqlitePool, version_id: i64) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let moved = Build::transition(
        &mut tx,
        version_id,
        BuildStatus::Queued,
        Reason::RebuildRequested,
        None,
    )
    .await?;
    if moved.is_none() {
        return Err(AppError::conflict(
            "version",
            ErrorCode::BuildInProgress,
            "this version is already being built",
        ));
    }
    sqlx::query("UPDATE environment_versions SET build_error = NULL WHERE id = ?")
        .bind(version_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

async fn run(
    db: &SqlitePool,
    engine: &Engine,
    version_id: i64,
    force: bool,
) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let claimed = Build::transition(
        &mut tx,
        version_id,
        BuildStatus::Building,
        Reason::Started,
        None,
    )
    .await?;
    if claimed.is_none() {
        return Ok(()); // someone else runs it, or it is not queued any more
    }
    sqlx::query(
        "UPDATE environment_versions SET build_log = '', build_error = NULL, build_started_at = ?,
             build_finished_at = NULL
         WHERE id = ?",
    )
    .bind(crate::now())
    .bind(version_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    let row = super::version_rows!("WHERE v.id = ?", version_id)
        .fetch_one(db)
        .await?;
    let spec: EnvironmentSpec = row.spec()?;

    let (lines, receiver) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(write_log(db.clone(), version_id, receiver));
    let mirror = crate::admin::registry_mirror(db).await?;
    let result = build(engine, &spec, mirror, force, lines).await;
    // The sender is gone once `build` returns: the writer drains what is left and stops.
    let _ = writer.await;

    let now = crate::now();
    match result {
        Ok(built) => {
            let mut tx = crate::db::write_tx(db).await?;
            Build::transition(&mut tx, version_id, BuildStatus::Built, Reason::Built, None).await?;
            sqlx::query(
                "UPDATE environment_versions SET build_finished_at = ?, build_hash = ?,
                     previous_image_id = CASE WHEN image_id IS NOT NULL AND image_id <> ? THEN image_id
                                              ELSE previous_image_id END,
                     image_id = ?, image_tag = ?, dockerfile = ?
                 WHERE id = ?",
            )
            .bind(&now)
            .bind(&built.build_hash)
            .bind(&built.image_id)
            .bind(&built.image_id)
            .bind(&built.tag)
            .bind(&built.dockerfile)
            .bind(version_id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            tracing::info!(version_id, image = %built.image_id, cached = built.cached, "environment image built");
        }
        Err(message) => {
            let mut tx = crate::db::write_tx(db).await?;
            Build::transition(
                &mut tx,
                version_id,
                BuildStatus::Failed,
                Reason::BuildFailed,
                Some(&message),
            )
            .await?;
            sqlx::query("UPDATE environment_versions SET build_finished_at = ? WHERE id = ?")
                .bind(&now)
                .bind(version_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            tracing::warn!(version_id, error = %message, "environment build failed");
        }
    }
    Ok(())
}

/// The build itself; the error is the sentence shown to the user.
async fn build(
    engine: &Engine,
    spec: &EnvironmentSpec,
    mirror: Option<containers::mirror::Mirror>,
    force: bool,
    lines: mpsc::UnboundedSender<String>,
) -> Result<containers::build::BuiltImage, String> {
    let docker = engine.docker().await.map_err(|e| e.to_string())?;
    let binary = runtime_binary(engine).map_err(|e| e.to_string())?;
    let env_spec = to_env_spec(spec, Path::new(&binary));
    let mut log = move |line: &str| {
        let _ = lines.send(line.to_string());
    };
    if env_spec.base_image == LOCAL_BASE {
        docker
            .ensure_busybox_base(&mut log)
            .await
            .map_err(|e| describe(&e))?;
    }
    let options = BuildOptions {
        force,
        instance: Some(engine.instance.clone()),
        mirror,
        ..Default::default()
    };
    docker
        .build_env_image(&env_spec, &options, &mut log)
        .await
        .map_err(|e| describe(&e))
}

/// A failed build in words for the workspace: its own steps' output as it is; the engine's and a
/// registry's words (a mirror's error page, host paths) in the server log under an incident.
fn describe(err: &containers::Error) -> String {
    use containers::Error as E;
    match err {
        E::BuildFailed { message, log_tail } if !log_tail.is_empty() => {
            format!("{message}\n{}", log_tail.join("\n"))
        }
        E::Docker { context, .. } | E::Host { context, .. } => format!(
            "Docker could not complete this ({context}); the server's log has the details under incident {}",
            crate::incident("building an environment's image", err)
        ),
        E::PullFailed { image, message } => format!(
            "pulling {image} failed (incident {} in the server log)",
            crate::incident("pulling a base image", message)
        ),
        other => other.to_string(),
    }
}

/// Appends build output to the version's log every [`FLUSH_EVERY`], until the sender is dropped.
async fn write_log(db: SqlitePool, version_id: i64, mut lines: mpsc::UnboundedReceiver<String>) {
    let mut written = 0usize;
    let mut truncated = false;
    let mut open = true;
    while open {
        let mut chunk = String::new();
        let deadline = tokio::time::sleep(FLUSH_EVERY);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                line = lines.recv() => match line {
                    Some(line) => {
                        if written + chunk.len() + line.len() < LOG_LIMIT_BYTES {
                            chunk.push_str(line.trim_end_matches('\n'));
                            chunk.push('\n');
                        } else if !truncated {
                            truncated = true;
                            chunk.push_str("[paddock: build log truncated here; the rest is not kept]\n");
                        }
                    }
                    None => { open = false; break; }
                },
                () = &mut deadline => break,
            }
        }
        if chunk.is_empty() {
            continue;
        }
        written += chunk.len();
        let appended =
            sqlx::query("UPDATE environment_versions SET build_log = build_log || ? WHERE id = ?")
                .bind(&chunk)
                .bind(version_id)
                .execute(&db)
                .await;
        if let Err(e) = appended {
            tracing::warn!(version_id, error = %e, "could not store build output");
        }
    }
}

/// Build log text from byte `offset` on, with the build's status; for the log stream.
pub async fn log_since(
    db: &SqlitePool,
    version_id: i64,
    offset: usize,
) -> Result<(String, String), AppError> {
    let (log, status): (String, String) =
        sqlx::query_as("SELECT build_log, build_status FROM environment_versions WHERE id = ?")
            .bind(version_id)
            .fetch_one(db)
            .await?;
    let start = offset.min(log.len());
    // Offsets come from earlier chunks, which always end on a line break, so this is a char boundary;
    // a forged offset in the middle of a character starts at the next boundary instead.
    let start = (start..=log.len())
        .find(|i| log.is_char_boundary(*i))
        .unwrap_or(log.len());
    Ok((log[start..].to_string(), status))
}

//! Following a run to its end. A supervisor task per running job reads the new complete lines of the
//! event stream and the log, turns them into rows — metric points, log lines, checkpoints, the job's
//! progress and outcome — and commits them together with the new read offsets, so a line is applied
//! exactly once even across restarts. Every log line also goes to the job's rotated log file
//! ([`super::log_file`]). It enforces the time limit, and when the run is over (exit status written, or
//! the process gone) it records how it ended and gives the GPUs back.

use contracts::ids::{CheckpointId, JobId, WorkspaceId};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use contracts::events::{EndStatus, Event, Line, Task};
use sqlx::{SqliteConnection, SqlitePool};

use super::checkpoints::{self, Copied};
use super::log_file::JobLogFile;
use super::status::{self, Reason};
use super::{job_rows, JobRow, Jobs};
use crate::executor::{self, Stop};
use crate::gpus::{self, Holder};
use crate::storage::in_volume;
use crate::transitions::Machine;
use contracts::error::internal;
use contracts::error::AppError;
use contracts::metrics::Metrics;
use contracts::types::{JobStatus, LogNote};

/// How often a supervisor looks for new output.
const POLL: Duration = Duration::from_millis(400);
/// Longest log line kept in the database (the file keeps everything).
const MAX_LOG_LINE: usize = 4000;
/// Log lines kept in the database per job; the rest are only in the job's log file.
const MAX_LOG_LINES: i64 = 100_000;
/// Most bytes read per pass, so one huge burst does not hold the write lock for long.
const READ_CHUNK: u64 = 1 << 20;

/// Starts following job `job_id`.
pub fn spawn(db: SqlitePool, jobs: Arc<Jobs>, job_id: JobId) {
    tokio::spawn(async move {
        if let Err(e) = follow(&db, &jobs, job_id).await {
            tracing::error!(%job_id, error = %e, "job supervisor failed");
        }
        jobs.wake.notify_one();
    });
}

/// After a restart: jobs that were being started go back to the queue (nothing ran), the others are
/// followed again from their recorded offsets — every job with a process or a container whose end was
/// not recorded yet, whatever its status: a run whose `end` event was applied just before the crash is
/// `succeeded` but still needs its exit status, its finish time and its GPUs back.
pub async fn recover(db: &SqlitePool, jobs: &Arc<Jobs>) {
    let result = async {
        let mut tx = crate::db::write_tx(db).await?;
        let never_started: Vec<JobId> = sqlx::query_scalar("SELECT id FROM jobs WHERE status = 'starting' AND pid IS NULL AND container_name IS NULL AND cluster_job IS NULL")
            .fetch_all(&mut *tx)
            .await?;
        for id in &never_started {
            gpus::release(&mut tx, Holder::Job(*id)).await?;
            status::Job::transition(&mut tx, *id, JobStatus::Queued, Reason::Requeued, None).await?;
            sqlx::query("UPDATE jobs SET gpu_indices = NULL, started_at = NULL WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        // Cancelled while starting: stopped before it ran.
        let stopped_before_running: Vec<JobId> = sqlx::query_scalar(
            "SELECT id FROM jobs WHERE status = 'cancelling' AND pid IS NULL AND container_name IS NULL AND cluster_job IS NULL",
        )
        .fetch_all(&mut *tx)
        .await?;
        for id in stopped_before_running {
            let (_, reason) = status::current(&mut tx, id).await?;
            let reason = reason.unwrap_or(Reason::CancelRequested);
            status::finish(&mut tx, id, JobStatus::Cancelled, reason, None).await?;
        }
        let running: Vec<JobId> =
            sqlx::query_scalar("SELECT id FROM jobs WHERE finished_at IS NULL AND (pid IS NOT NULL OR container_name IS NOT NULL OR cluster_job IS NOT NULL)")
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok::<_, AppError>(running)
    }
    .await;
    match result {
        Ok(running) => {
            for job_id in running {
                tracing::info!(
                    %job_id,
                    "re-attaching to a job left running by the previous server"
                );
                spawn(db.clone(), jobs.clone(), job_id);
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot recover jobs"),
    }
}

async fn load(db: &SqlitePool, job_id: JobId) -> Result<Option<JobRow>, AppError> {
    Ok(job_rows!("WHERE j.id = ?", job_id)
        .fetch_optional(db)
        .await?)
}

async fn follow(db: &SqlitePool, jobs: &Jobs, job_id: JobId) -> Result<(), AppError> {
    let mut time_limit_hit = false;
    // When this follower first saw the job asked to stop, and whether it was killed since.
    let mut stopping_since: Option<std::time::Instant> = None;
    let mut killed = false;
    let mut refused = None;
    let mut log_file = JobLogFile::open(&jobs.storage.job_logs_dir(job_id));
    loop {
        let Some(job) = load(db, job_id).await? else {
            return Ok(());
        }; // deleted
        let dir = super::job_rel(job_id);
        // The exit status is read before the last ingest, so output written just before it is not missed.
        let exit = {
            let (root, dir) = (
                jobs.executor(job.executor).run_root(job.workspace_id),
                dir.clone(),
            );
            let read = in_volume("the job's exit status", move || {
                executor::exit_code(&root?, &dir)
            })
            .await;
            match read {
                Ok(exit) => exit,
                Err(e) => {
                    refuse(db, job_id, &e, &mut refused, &mut log_file).await?;
                    None
                }
            }
        };
        let alive = match job.handle() {
            // The executor cannot say (Docker unreachable): nothing can be concluded; keep watching.
            Some(handle) => jobs.executors.is_running(&handle).await.unwrap_or(true),
            None => false,
        };
        let gone = exit.is_none() && !alive;
        if ingest(db, jobs, &job, &mut refused, &mut log_file).await? {
            jobs.changed();
        }
        if exit.is_some() || gone {
            let job = load(db, job_id).await?.unwrap_or(job);
            if let Some(handle) = job.handle() {
                jobs.executors.clean_up(&handle).await;
            }
            drop_run_checkpoints(jobs, &job).await;
            // A job that did not end on its own terms (no last word of the trainer): what ran it may
            // know better than the run folder why (a cluster that lost its node).
            let ended_how = match (job.status()?.is_final(), job.handle()) {
                (false, Some(handle)) => jobs.executors.ended_how(&handle).await,
                _ => None,
            };
            finish(db, &job, exit, ended_how, &mut log_file).await?;
            jobs.changed();
            return Ok(());
        }
        if let (Some(limit), Some(started)) = (job.time_limit_secs, job.started_at.as_deref()) {
            let elapsed = chrono::DateTime::parse_from_rfc3339(started)
                .map(|t| (chrono::Utc::now() - t.to_utc()).num_seconds());
            if !time_limit_hit
                && elapsed.is_ok_and(|s| s >= limit)
                && job.status()? == JobStatus::Running
            {
                time_limit_hit = true;
                let minutes = limit / 60;
                note(db, job_id, LogNote::TimeLimit { minutes }, &mut log_file).await?;
                let mut conn = db.acquire().await?;
                status::Job::transition(
                    &mut conn,
                    job_id,
                    JobStatus::Cancelling,
                    Reason::TimeLimit,
                    Some("time limit reached"),
                )
                .await?;
                jobs.changed();
                if let Some(handle) = job.handle() {
                    jobs.executors.stop(&handle, Stop::Ask).await;
                }
            }
        }
        // A run asked to stop that has not ended within the grace — a command that ignores TERM, or one
        // that overwrote its own `trainer.pid` so the wrapper's TERM went elsewhere — is killed whole:
        // the server started its process group (or container, or cluster job) and needs no pid file.
        if job.status()? == JobStatus::Cancelling {
            let since = *stopping_since.get_or_insert_with(std::time::Instant::now);
            if !killed && since.elapsed() >= jobs.stop_grace {
                killed = true;
                let grace_secs = jobs.stop_grace.as_secs();
                note(db, job_id, LogNote::Killed { grace_secs }, &mut log_file).await?;
                if let Some(handle) = job.handle() {
                    jobs.executors.stop(&handle, Stop::Kill).await;
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Reads what is new in `events.jsonl` and `train.log` and applies it in one transaction; then appends
/// the log lines to the job's log file. True when there was something new.
async fn ingest(
    db: &SqlitePool,
    jobs: &Jobs,
    job: &JobRow,
    refused: &mut Option<String>,
    log_file: &mut Option<JobLogFile>,
) -> Result<bool, AppError> {
    let read = {
        let root = jobs.executor(job.executor).run_root(job.workspace_id);
        let dir = super::job_rel(job.id);
        let offsets = (job.events_offset as u64, job.log_offset as u64);
        in_volume("the job's output", move || {
            let root = root?;
            Ok((
                read_lines(&root, &dir.join("events.jsonl"), offsets.0)?,
                read_lines(&root, &dir.join("train.log"), offsets.1)?,
            ))
        })
        .await
    };
    let ((events, events_end), (logs, log_end)) = match read {
        Ok(read) => read,
        Err(e) => {
            refuse(db, job.id, &e, refused, log_file).await?;
            return Ok(false);
        }
    };
    if events.is_empty() && logs.is_empty() {
        return Ok(false);
    }
    let events: Vec<Result<Line, (&String, serde_json::Error)>> = events
        .iter()
        .map(|line| Line::parse(line).map_err(|e| (line, e)))
        .collect();
    // Checkpoints are copied into the store before the transaction: a copy can take seconds.
    let mut registered = Vec::new();
    for line in events.iter().flatten() {
        if let Event::Checkpoint { path, .. } = &line.event {
            registered.push(register(jobs, job, path).await);
        }
    }
    let mut registered = registered.into_iter();
    let mut tx = crate::db::write_tx(db).await?;
    // The lines for the file: the platform's notes and every line of `train.log`.
    let mut lines = Vec::new();
    let mut retired = Vec::new();
    for event in &events {
        match event {
            Ok(line) => {
                let copy = if let Event::Checkpoint { .. } = line.event {
                    registered.next()
                } else {
                    None
                };
                apply(&mut tx, jobs, job, line, copy, &mut lines, &mut retired).await?
            }
            Err((line, why)) => {
                let note = LogNote::NotAnEvent {
                    why: why.to_string(),
                    line: line.to_string(),
                };
                lines.push(insert_note(&mut tx, job.id, &note).await?);
            }
        }
    }
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM job_logs WHERE job_id = ?")
        .bind(job.id)
        .fetch_one(&mut *tx)
        .await?;
    for (i, line) in logs.iter().enumerate() {
        let n = kept + i as i64;
        if n < MAX_LOG_LINES {
            insert_log(&mut tx, job.id, line, LogNote::in_train_log(line).as_ref()).await?;
        } else if n == MAX_LOG_LINES {
            insert_note(&mut tx, job.id, &LogNote::LinesBeyond).await?;
        }
    }
    lines.extend(logs);
    sqlx::query("UPDATE jobs SET events_offset = ?, log_offset = ? WHERE id = ?")
        .bind(events_end as i64)
        .bind(log_end as i64)
        .bind(job.id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if let Some(file) = log_file {
        file.append(&crate::now(), &lines);
    }
    remove_copies(jobs, job.workspace_id, retired).await;
    Ok(true)
}

/// What became of a `checkpoint` event's folder: copied into the store (with the folder it came from,
/// relative to the run root), gone before it could be copied (retention is quick), or refused.
enum Registered {
    Copied {
        copy: Copied,
        run_path: String,
    },
    /// `copy` says where it would have been, with no bytes.
    Gone {
        copy: Copied,
        run_path: String,
    },
    Refused(String),
}

/// Copies the checkpoint folder an event reports into the store (see [`checkpoints`]).
async fn register(jobs: &Jobs, job: &JobRow, reported: &str) -> Registered {
    let executor = jobs.executor(job.executor);
    let seen = executor.run_roots_seen(job.workspace_id);
    let roots: Vec<&Path> = seen.iter().map(|p| p.as_path()).collect();
    let rel = match checkpoints::reported_rel(reported, job.id, &roots) {
        Ok(rel) => rel,
        Err(why) => return Registered::Refused(why),
    };
    let run_path = rel.to_string_lossy().into_owned();
    let (root, storage, job_id, workspace_id) = (
        executor.run_root(job.workspace_id),
        jobs.storage.clone(),
        job.id,
        job.workspace_id,
    );
    // No deadline: every file is checked to be regular and bounded before a byte is read, so the copy
    // ends; a large checkpoint only delays this job's own supervisor.
    let copied = tokio::task::spawn_blocking(move || {
        storage.store(workspace_id)?;
        let store = storage.store_dir(workspace_id);
        checkpoints::copy_to_store(&root?, &rel, &store, job_id)
    })
    .await;
    match copied {
        Ok(Ok(copy)) => Registered::Copied { copy, run_path },
        Ok(Err(e)) if e.is_missing() => Registered::Gone {
            copy: Copied {
                path: checkpoints::store_rel(job_id)
                    .join(Path::new(&run_path).file_name().unwrap_or_default())
                    .to_string_lossy()
                    .into_owned(),
                bytes: 0,
                sha256: String::new(),
            },
            run_path,
        },
        Ok(Err(e)) => Registered::Refused(e.to_string()),
        Err(e) => Registered::Refused(e.to_string()),
    }
}

/// A local run's own checkpoint folders, once its last output is read: every checkpoint it recorded was
/// copied into the store when registered, and no retention is followed any more, so they would only take
/// the disk twice. A container run's folder is in the team's volume: theirs to keep or remove.
async fn drop_run_checkpoints(jobs: &Jobs, job: &JobRow) {
    let executor = jobs.executor(job.executor);
    if executor.run_folder_is_theirs() {
        return;
    }
    let (root, dir) = (
        executor.run_root(job.workspace_id),
        super::job_rel(job.id).join("output").join("checkpoints"),
    );
    let removed = in_volume("removing the run's checkpoints", move || {
        root?.remove_all(&dir)
    })
    .await;
    if let Err(e) = removed {
        tracing::warn!(job_id = %job.id, error = %e, "could not remove a finished run's checkpoints");
    }
}

/// Removes the store's copies of checkpoints that retention retired (after their rows say so).
async fn remove_copies(jobs: &Jobs, workspace_id: WorkspaceId, retired: Vec<String>) {
    for path in retired {
        crate::storage::remove_from_store(&jobs.storage, workspace_id, path.into()).await;
    }
}

/// Complete lines of `file` (relative to `volume`) from byte `offset` (at most [`READ_CHUNK`] bytes),
/// and the offset after them; none while the file does not exist.
fn read_lines(
    volume: &beneath::Dir,
    file: &Path,
    offset: u64,
) -> beneath::Result<(Vec<String>, u64)> {
    let buf = match volume.read_from(file, offset, READ_CHUNK) {
        Ok(buf) => buf,
        Err(e) if e.is_missing() => return Ok((Vec::new(), offset)),
        Err(e) => return Err(e),
    };
    let Some(last_newline) = buf.iter().rposition(|b| *b == b'\n') else {
        return Ok((Vec::new(), offset));
    };
    let complete = &buf[..=last_newline];
    let lines = complete
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            String::from_utf8_lossy(l)
                .trim_end_matches('\r')
                .to_string()
        })
        .collect();
    Ok((lines, offset + complete.len() as u64))
}

/// Notes in the job's log that its files in the volume were refused (once per reason), so the team
/// sees why the job's progress stopped showing.
async fn refuse(
    db: &SqlitePool,
    job_id: JobId,
    e: &AppError,
    refused: &mut Option<String>,
    log_file: &mut Option<JobLogFile>,
) -> Result<(), AppError> {
    let reason = match e {
        AppError::Conflict { message, .. } | AppError::Unavailable { message, .. } => {
            message.clone()
        }
        other => other.to_string(),
    };
    if refused.as_deref() == Some(reason.as_str()) {
        return Ok(());
    }
    let refusal = LogNote::FilesRefused {
        reason: reason.clone(),
    };
    note(db, job_id, refusal, log_file).await?;
    *refused = Some(reason);
    Ok(())
}

async fn insert_log(
    conn: &mut SqliteConnection,
    job_id: JobId,
    line: &str,
    note: Option<&LogNote>,
) -> Result<(), AppError> {
    let line: String = line.chars().take(MAX_LOG_LINE).collect();
    let note = note
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| internal("a log note", e))?;
    sqlx::query("INSERT INTO job_logs (job_id, line, at, note) VALUES (?, ?, ?, ?)")
        .bind(job_id)
        .bind(line)
        .bind(crate::now())
        .bind(note)
        .execute(conn)
        .await?;
    Ok(())
}

/// Adds Paddock's note to the job's log; returns its English line, for the log file.
async fn insert_note(
    conn: &mut SqliteConnection,
    job_id: JobId,
    note: &LogNote,
) -> Result<String, AppError> {
    let line = note.english();
    insert_log(conn, job_id, &line, Some(note)).await?;
    Ok(line)
}

async fn note(
    db: &SqlitePool,
    job_id: JobId,
    note: LogNote,
    log_file: &mut Option<JobLogFile>,
) -> Result<(), AppError> {
    let line = insert_note(&mut *db.acquire().await?, job_id, &note).await?;
    if let Some(file) = log_file {
        file.append(&crate::now(), &[line]);
    }
    Ok(())
}

/// Applies one trainer event (`contracts::events`); log lines it adds also go to `lines`.
async fn apply(
    conn: &mut SqliteConnection,
    jobs: &Jobs,
    job: &JobRow,
    line: &Line,
    registered: Option<Registered>,
    lines: &mut Vec<String>,
    retired: &mut Vec<String>,
) -> Result<(), AppError> {
    let at = &line.ts;
    match &line.event {
        Event::Start(start) => {
            let resumed_from = match start.task {
                Task::Train {
                    resumed_from_step, ..
                } => resumed_from_step,
                Task::Pretrain { .. } => 0,
            };
            let precision_choice = start
                .precision_choice
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| internal("precision choice", e))?;
            sqlx::query(
                "UPDATE jobs SET total_steps = ?, step = MAX(step, ?), precision_choice = ? WHERE id = ?",
            )
            .bind(start.total_steps as i64)
            .bind(resumed_from as i64)
            .bind(precision_choice)
            .bind(job.id)
                .execute(&mut *conn)
                .await?;
        }
        Event::Step { step, epoch, .. } => {
            // What the loss chart plots, as the job's metrics API answers it: the step's own fields
            // (loss, lr, throughput, gradient norm) as the contract names them.
            let mut data =
                serde_json::to_value(&line.event).map_err(|e| internal("step metrics", e))?;
            if let Some(flat) = data.as_object_mut() {
                for key in ["event", "step", "epoch"] {
                    flat.remove(key);
                }
            }
            insert_metrics(conn, job.id, "step", *step, *epoch, &data, at).await?;
            sqlx::query("UPDATE jobs SET step = ?, epoch = ? WHERE id = ?")
                .bind(*step as i64)
                .bind(epoch)
                .bind(job.id)
                .execute(&mut *conn)
                .await?;
        }
        Event::Eval {
            step,
            epoch,
            split,
            metrics,
        } => {
            // An eval's metrics are the point; kept flat like a step's fields, with the split.
            let mut data =
                serde_json::to_value(metrics).map_err(|e| internal("eval metrics", e))?;
            if let Some(flat) = data.as_object_mut() {
                flat.insert("split".into(), split.as_str().into());
            }
            insert_metrics(conn, job.id, "eval", *step, *epoch, &data, at).await?;
            if split.as_str() == "dev" {
                keep_best(conn, job, *step, metrics).await?;
            }
        }
        Event::Checkpoint {
            step,
            epoch,
            metrics,
            best,
            ..
        } => {
            let (copy, run_path, deleted_at) = match registered {
                Some(Registered::Copied { copy, run_path }) => (copy, run_path, None),
                // Retention removed it before it was copied: its row keeps the history, marked deleted.
                Some(Registered::Gone { copy, run_path }) => (copy, run_path, Some(at.clone())),
                refused => {
                    let why = match refused {
                        Some(Registered::Refused(why)) => why,
                        _ => "it was not copied".to_string(),
                    };
                    let step = *step as u64;
                    let note = LogNote::CheckpointNotRecorded { step, why };
                    lines.push(insert_note(conn, job.id, &note).await?);
                    return Ok(());
                }
            };
            let metrics = metrics
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| internal("checkpoint metrics", e))?;
            let (step, bytes) = (*step as i64, copy.bytes as i64);
            // An older trainer did not say: its last logged step's epoch is the nearest there is.
            let epoch = epoch.or(job.epoch);
            sqlx::query!(
                "INSERT INTO checkpoints (job_id, workspace_id, step, epoch, metrics, path, run_path, bytes, sha256,
                     best, created_at, deleted_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, step) DO NOTHING",
                job.id,
                job.workspace_id,
                step,
                epoch,
                metrics,
                copy.path,
                run_path,
                bytes,
                copy.sha256,
                best,
                at,
                deleted_at,
            )
            .execute(&mut *conn)
            .await?;
            retire_checkpoints(conn, jobs, job, retired).await?;
        }
        Event::Error { message } => {
            sqlx::query("UPDATE jobs SET status_message = ? WHERE id = ?")
                .bind(message)
                .bind(job.id)
                .execute(&mut *conn)
                .await?;
            let note = LogNote::TrainerError {
                message: message.clone(),
            };
            lines.push(insert_note(conn, job.id, &note).await?);
        }
        Event::End { status, .. } => {
            let (current, reason) = status::current(conn, job.id).await?;
            let stopping = current == JobStatus::Cancelling;
            let (to, reason, message) = match status {
                EndStatus::Completed => (JobStatus::Succeeded, Reason::Completed, None),
                EndStatus::EarlyStopped => (
                    JobStatus::Succeeded,
                    Reason::EarlyStopped,
                    Some("stopped early: the dev metric stopped improving"),
                ),
                EndStatus::Stopped if stopping && reason == Some(Reason::TimeLimit) => (
                    JobStatus::Failed,
                    Reason::TimeLimit,
                    Some("stopped at its time limit (a checkpoint was written)"),
                ),
                // Stopped by its sweep at a rung: a run that ended as asked; the sweep's figures stay.
                EndStatus::Stopped if stopping && reason == Some(Reason::Pruned) => {
                    (JobStatus::Succeeded, Reason::Pruned, None)
                }
                EndStatus::Stopped if stopping => {
                    (JobStatus::Cancelled, Reason::CancelRequested, None)
                }
                // Not asked by this server: on a cluster, the cluster stopped it (a node lost, a
                // preemption); how is known once it has ended, from the cluster (see `finish`).
                EndStatus::Stopped if job.cluster.is_some() => {
                    lines.push(insert_note(conn, job.id, &LogNote::StoppedByCluster).await?);
                    return Ok(());
                }
                EndStatus::Stopped => (
                    JobStatus::Cancelled,
                    Reason::Signal,
                    Some("stopped by a signal"),
                ),
                EndStatus::Failed => (JobStatus::Failed, Reason::TrainerFailed, None),
            };
            // `finished_at` waits for the exit status (`finish`): a finished job is one with nothing left to record.
            status::Job::transition(conn, job.id, to, reason, message).await?;
        }
        // A newer trainer's event: nothing here to record.
        Event::Unknown => {}
    }
    Ok(())
}

/// Keeps the job's best dev score (of the metric its checkpoints are ranked by) beside it, for the
/// runs table; the first evaluation to reach a value keeps it.
async fn keep_best(
    conn: &mut SqliteConnection,
    job: &JobRow,
    step: usize,
    metrics: &Metrics,
) -> Result<(), AppError> {
    let metric = job.spec()?.task.default_metric();
    let Some(value) = metrics.get(metric).filter(|v| v.is_finite()) else {
        return Ok(());
    };
    sqlx::query(
        "UPDATE jobs SET best_metric = ?, best_value = ?, best_step = ?
         WHERE id = ? AND (best_value IS NULL OR best_value < ?)",
    )
    .bind(metric)
    .bind(value)
    .bind(step as i64)
    .bind(job.id)
    .bind(value)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn insert_metrics(
    conn: &mut SqliteConnection,
    job_id: JobId,
    kind: &str,
    step: usize,
    epoch: f64,
    data: &serde_json::Value,
    at: &str,
) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO job_metrics (job_id, kind, step, epoch, data, at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(job_id)
    .bind(kind)
    .bind(step as i64)
    .bind(epoch)
    .bind(data.to_string())
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Follows the trainer's best-k retention: a checkpoint whose folder it removed from the run keeps its
/// row, marked deleted, and its copy in the store goes too (pushed to `retired`, removed after the
/// commit). The run folder is the job's own, so only the job's own checkpoints can be retired this way.
async fn retire_checkpoints(
    conn: &mut SqliteConnection,
    jobs: &Jobs,
    job: &JobRow,
    retired: &mut Vec<String>,
) -> Result<(), AppError> {
    let kept: Vec<(CheckpointId, String, Option<String>)> = sqlx::query_as(
        "SELECT id, path, run_path FROM checkpoints WHERE job_id = ? AND deleted_at IS NULL",
    )
    .bind(job.id)
    .fetch_all(&mut *conn)
    .await?;
    // A run root that cannot be opened says nothing about which are gone.
    let Ok(root) = jobs.executor(job.executor).run_root(job.workspace_id) else {
        return Ok(());
    };
    for (id, path, run_path) in kept {
        let Some(run_path) = run_path else { continue };
        // A link put in the checkpoint's place is not its files either.
        if root.open_dir(Path::new(&run_path)).is_err() {
            sqlx::query("UPDATE checkpoints SET deleted_at = ? WHERE id = ?")
                .bind(crate::now())
                .bind(id)
                .execute(&mut *conn)
                .await?;
            retired.push(path);
        }
    }
    Ok(())
}

/// Records the end: exit code, a status if the trainer never said how it ended, GPUs released.
async fn finish(
    db: &SqlitePool,
    job: &JobRow,
    exit: Option<i64>,
    ended_how: Option<String>,
    log_file: &mut Option<JobLogFile>,
) -> Result<(), AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let mut lines = Vec::new();
    let (status, reason) = status::current(&mut tx, job.id).await?;
    if !status.is_final() {
        let ended = LogNote::Ended {
            code: exit,
            how: ended_how,
        };
        // Asked to stop (by a person, or at its time limit) and gone without a last word: it ended as
        // asked; anything else ended early.
        let (to, reason) = match (status, reason) {
            (JobStatus::Cancelling, Some(Reason::TimeLimit)) => {
                (JobStatus::Failed, Reason::TimeLimit)
            }
            (JobStatus::Cancelling, Some(Reason::Pruned)) => (JobStatus::Succeeded, Reason::Pruned),
            (JobStatus::Cancelling, _) => (JobStatus::Cancelled, Reason::CancelRequested),
            _ => (JobStatus::Failed, Reason::Exited),
        };
        status::Job::transition(&mut tx, job.id, to, reason, Some(&ended.words())).await?;
        lines.push(insert_note(&mut tx, job.id, &ended).await?);
    }
    sqlx::query("UPDATE jobs SET exit_code = ?, finished_at = ? WHERE id = ?")
        .bind(exit)
        .bind(crate::now())
        .bind(job.id)
        .execute(&mut *tx)
        .await?;
    gpus::release(&mut tx, Holder::Job(job.id)).await?;
    tx.commit().await?;
    if let Some(file) = log_file {
        file.append(&crate::now(), &lines);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{dataset, jobs, team, test_db, Team};
    use contracts::runs::{JobQuery, JobSort, ModelFilter};
    use contracts::types::JobSpec;

    /// A dev (or test) evaluation of job `id` with this macro-F1 at `step`, applied as the trainer's
    /// event would be.
    async fn evaluated(db: &SqlitePool, jobs: &Jobs, id: JobId, step: usize, f1: f64, split: &str) {
        let job = job_rows!("WHERE j.id = ?", id).fetch_one(db).await.unwrap();
        let labels = ["negative".to_string(), "positive".to_string()];
        let mut metrics = Metrics::compute(&labels, &[0, 1], &[0, 1], Some(0.5));
        metrics.macro_f1 = f1;
        let line = Line {
            ts: "2026-12-07T10:00:00.000Z".into(),
            event: Event::Eval {
                step,
                epoch: 0.5,
                split: split.into(),
                metrics,
            },
        };
        let mut conn = db.acquire().await.unwrap();
        let (mut lines, mut retired) = (Vec::new(), Vec::new());
        apply(&mut conn, jobs, &job, &line, None, &mut lines, &mut retired)
            .await
            .unwrap();
    }

    /// (id, best value, best step) of every job of `ws`, as `query` lists them.
    async fn listed(
        db: &SqlitePool,
        team: &Team,
        query: JobQuery,
    ) -> Vec<(JobId, Option<f64>, Option<i64>)> {
        super::super::list(db, &team.viewer, team.ws, &query)
            .await
            .unwrap()
            .into_iter()
            .map(|j| {
                (
                    j.id,
                    j.best.as_ref().map(|b| b.value),
                    j.best.map(|b| b.step),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn each_run_keeps_its_best_dev_score_and_the_list_sorts_and_filters_by_it() {
        let (dir, db) = test_db().await;
        let jobs = jobs(&dir, &db).await;
        let team = team(&db).await;
        let reviews = dataset(&db, team.ws, "reviews", &["negative", "positive"]).await;
        let other = dataset(&db, team.ws, "other", &["negative", "positive"]).await;
        let mut submitted = Vec::new();
        for (name, preset, ds) in [
            ("a", "tiny", reviews),
            ("b", "nano", reviews),
            ("c", "tiny", other),
        ] {
            let mut spec = JobSpec::new(name, ds);
            spec.preset = preset.into();
            let job = super::super::submit(&db, &jobs, &team.owner, team.ws, spec)
                .await
                .unwrap();
            submitted.push(job.summary.id);
        }
        let [a, b, c] = submitted[..] else {
            unreachable!()
        };
        evaluated(&db, &jobs, a, 10, 0.5, "dev").await;
        evaluated(&db, &jobs, a, 20, 0.7, "dev").await;
        evaluated(&db, &jobs, a, 30, 0.7, "dev").await;
        evaluated(&db, &jobs, a, 30, 0.99, "test").await;
        evaluated(&db, &jobs, b, 10, 0.8, "dev").await;

        let all = listed(&db, &team, JobQuery::default()).await;
        assert_eq!(
            all,
            [(c, None, None), (b, Some(0.8), Some(10)), (a, Some(0.7), Some(20))],
            "newest first; the first evaluation to reach the best keeps it; the test split never counts"
        );
        let best = JobQuery {
            sort: Some(JobSort::Best),
            ..JobQuery::default()
        };
        let order = |rows: Vec<(JobId, Option<f64>, Option<i64>)>| {
            rows.into_iter().map(|r| r.0).collect::<Vec<_>>()
        };
        assert_eq!(order(listed(&db, &team, best.clone()).await), [b, a, c]);
        let worst_first = JobQuery {
            reverse: Some(true),
            ..best
        };
        assert_eq!(
            order(listed(&db, &team, worst_first).await),
            [a, b, c],
            "unscored last either way"
        );
        let tiny = JobQuery {
            model: Some(ModelFilter::Scratch(Some("tiny".into()))),
            ..JobQuery::default()
        };
        assert_eq!(order(listed(&db, &team, tiny).await), [c, a]);
        let on_reviews = JobQuery {
            dataset_id: Some(reviews),
            sort: Some(JobSort::Name),
            ..JobQuery::default()
        };
        assert_eq!(order(listed(&db, &team, on_reviews).await), [a, b]);
        let queued = JobQuery {
            status: Some(JobStatus::Queued),
            since: Some("2026-01-01".into()),
            ..JobQuery::default()
        };
        assert_eq!(listed(&db, &team, queued).await.len(), 3);
        let future = JobQuery {
            since: Some("2999-01-01".into()),
            ..JobQuery::default()
        };
        assert!(listed(&db, &team, future).await.is_empty());
        let bad = JobQuery {
            until: Some("2026-02-30x".into()),
            ..JobQuery::default()
        };
        let refused = super::super::list(&db, &team.viewer, team.ws, &bad)
            .await
            .unwrap_err();
        assert_eq!(
            (refused.field(), refused.code().as_str()),
            (Some("until"), "runs_query_invalid")
        );

        // The migration's backfill, run again over the same evaluations, finds what ingestion kept.
        let migration = include_str!("../../../migrations/20261222000001_job_best.sql");
        let start = migration.find("WITH scored").unwrap();
        let end = start + migration[start..].find(';').unwrap() + 1;
        let kept = listed(&db, &team, JobQuery::default()).await;
        sqlx::query("UPDATE jobs SET best_metric = NULL, best_value = NULL, best_step = NULL")
            .execute(&db)
            .await
            .unwrap();
        sqlx::raw_sql(&migration[start..end])
            .execute(&db)
            .await
            .unwrap();
        assert_eq!(listed(&db, &team, JobQuery::default()).await, kept);
    }

    #[test]
    fn only_complete_lines_are_read_and_the_offset_moves_past_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("events.jsonl"),
            "{\"a\":1}\n{\"b\":2}\n{\"c\":",
        )
        .unwrap();
        let dir = beneath::Dir::open(tmp.path()).unwrap();
        let file = Path::new("events.jsonl");
        let (lines, end) = read_lines(&dir, file, 0).unwrap();
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(end, 16);
        let (lines, end2) = read_lines(&dir, file, end).unwrap();
        assert!(lines.is_empty() && end2 == end, "a half-written line waits");
        assert_eq!(
            read_lines(&dir, Path::new("missing"), 7).unwrap(),
            (Vec::new(), 7)
        );
        std::os::unix::fs::symlink("events.jsonl", tmp.path().join("link.jsonl")).unwrap();
        assert!(read_lines(&dir, Path::new("link.jsonl"), 0).is_err_and(|e| e.is_refusal()));
    }
}

//! The loop that runs sweeps: at every change of the jobs' rows (an evaluation ingested, a trial
//! ended) and every few seconds, for each running or paused sweep it judges the trials that reached a
//! rung, stops those that fell behind, starts trials up to the sweep's parallelism (a running sweep
//! only), and marks a sweep finished once its last trial has ended. Everything it knows is in the
//! database, so a restart changes nothing: a trial is numbered by a counter moved in the transaction
//! that queues its job, and a rung's decision is a row written in the one that stops it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use contracts::error::AppError;
use contracts::ids::{JobId, SweepId, UserId};
use contracts::sweeps::{EarlyStopping, SweepReason, SweepSpec, SweepStatus};
use contracts::types::JobStatus;
use sqlx::SqlitePool;

use super::{search, Sweep, SweepRow, SWEEP_ROWS};
use crate::auth::{Actor, Credential};
use crate::executor::Stop;
use crate::jobs::Jobs;
use crate::transitions::Machine;

/// How often sweeps are looked at when nothing happens (a trial's end is seen sooner, as activity).
const PERIOD: Duration = Duration::from_secs(5);

pub async fn run(db: SqlitePool, jobs: Arc<Jobs>) {
    let mut activity = jobs.activity.subscribe();
    loop {
        if let Err(err) = tick(&db, &jobs).await {
            tracing::warn!(%err, "sweeps: a round failed; trying again");
        }
        tokio::select! {
            _ = activity.changed() => {}
            _ = tokio::time::sleep(PERIOD) => {}
        }
    }
}

/// One round over every running or paused sweep.
pub async fn tick(db: &SqlitePool, jobs: &Jobs) -> Result<(), AppError> {
    let rows: Vec<SweepRow> = sqlx::query_as(&format!(
        "{SWEEP_ROWS} WHERE s.status IN ('running', 'paused') ORDER BY s.id"
    ))
    .fetch_all(db)
    .await?;
    for row in rows {
        // One sweep's trouble (a spec a newer server wrote, say) must not stop the others.
        if let Err(err) = advance(db, jobs, &row).await {
            tracing::warn!(%err, sweep = %row.id, "sweeps: could not advance");
        }
    }
    Ok(())
}

async fn advance(db: &SqlitePool, jobs: &Jobs, row: &SweepRow) -> Result<(), AppError> {
    let spec = row.spec()?;
    if let EarlyStopping::Asha { .. } = spec.early_stopping {
        judge(db, jobs, row, &spec).await?;
    }
    let trials: Vec<(JobId, JobStatus)> =
        sqlx::query_as("SELECT id, status FROM jobs WHERE sweep_id = ?")
            .bind(row.id)
            .fetch_all(db)
            .await?;
    let active = trials.iter().filter(|(_, s)| !s.is_final()).count() as u32;
    if row.status != SweepStatus::Running {
        return Ok(());
    }
    let mut started = row.trials_started as u32;
    let max_trials = row.max_trials as u32;
    if started >= max_trials && active == 0 {
        let mut tx = crate::db::write_tx(db).await?;
        let done = Sweep::transition(
            &mut tx,
            row.id,
            SweepStatus::Finished,
            SweepReason::Completed,
            Some("every trial has ended"),
        )
        .await?;
        if done.is_some() {
            crate::transitions::stamp::<Sweep>(&mut tx, row.id, "finished_at").await?;
        }
        tx.commit().await?;
        jobs.changed();
        return Ok(());
    }
    let mut room = spec.parallelism.saturating_sub(active);
    while room > 0 && started < max_trials {
        if let Err(err) = start_trial(db, jobs, row, &spec, started).await {
            // The trial cannot be queued (its account lost the right, a dataset was deleted, the
            // quota shrank): the sweep waits, saying why, until someone resumes it.
            let message = format!("trial {} could not be queued: {err}", started + 1);
            let mut conn = db.acquire().await?;
            Sweep::transition(
                &mut conn,
                row.id,
                SweepStatus::Paused,
                SweepReason::TrialRefused,
                Some(&message),
            )
            .await?;
            jobs.changed();
            return Ok(());
        }
        started += 1;
        room -= 1;
    }
    Ok(())
}

/// Queues trial `index` (0 for the first) as the sweep's creator, who must still be an editor of the
/// workspace: a sweep acts for the person who made it, never beyond their rights.
async fn start_trial(
    db: &SqlitePool,
    jobs: &Jobs,
    row: &SweepRow,
    spec: &SweepSpec,
    index: u32,
) -> Result<(), AppError> {
    let actor = creator(db, row.created_by_id, row.id).await?;
    let values = search::trial_values(spec, index)
        .ok_or_else(|| contracts::error::internal("sweep", "a trial past the grid"))?;
    let mut job = search::with_values(&spec.job, &values).map_err(|(field, why)| {
        contracts::error::internal("sweep trial", format!("{field}: {why}"))
    })?;
    job.name = format!("{} #{}", spec.job.name.trim(), index + 1);
    crate::jobs::submit_trial(db, jobs, &actor, row.workspace_id, job, row.id, index + 1).await
}

/// The sweep's creator as the one acting, or why they no longer can.
async fn creator(db: &SqlitePool, user: Option<UserId>, sweep: SweepId) -> Result<Actor, AppError> {
    let account: Option<(UserId, String, bool, bool)> =
        sqlx::query_as("SELECT id, username, is_admin, disabled FROM users WHERE id = ?")
            .bind(user)
            .fetch_optional(db)
            .await?;
    match account {
        Some((user_id, username, is_admin, false)) => Ok(Actor {
            user_id,
            username,
            is_admin,
            ip: None,
            read_only: false,
            credential: Credential::Sweep { id: sweep },
        }),
        _ => Err(AppError::Forbidden),
    }
}

/// How far a trial has got: its dev evaluations with the objective, in the order they were ingested
/// (row id, step, value), its last step once known, and its status.
struct Progress {
    evals: Vec<(i64, i64, f64)>,
    total: Option<i64>,
    status: JobStatus,
}

/// Records a decision for every trial that reached a rung since the last round, in the order they
/// reached it (so a trial is compared with those that were there first, as ASHA does, whatever the
/// rounds' timing), and stops the running trials that fell behind.
async fn judge(
    db: &SqlitePool,
    jobs: &Jobs,
    row: &SweepRow,
    spec: &SweepSpec,
) -> Result<(), AppError> {
    let EarlyStopping::Asha {
        reduction_factor, ..
    } = spec.early_stopping
    else {
        return Ok(());
    };
    let goal = spec.objective.goal();
    // Read, then decide, and only then write: most rounds find nothing new, and must not hold the
    // database's write lock while they look. Only this loop writes decisions, and a stop is a
    // compare-and-set on the job's status, so nothing read here can be overtaken meanwhile.
    // Each dev evaluation with the objective, in the order it was ingested (ids grow as rows are read
    // from the runs): (row id, step, value), by job, with the job's last step and status.
    let rows: Vec<(JobId, i64, i64, String, Option<i64>, JobStatus)> = sqlx::query_as(
        "SELECT m.job_id, m.id, m.step, m.data, j.total_steps, j.status FROM job_metrics m
         JOIN jobs j ON j.id = m.job_id WHERE j.sweep_id = ? AND m.kind = 'eval' ORDER BY m.id",
    )
    .bind(row.id)
    .fetch_all(db)
    .await?;
    let mut trials: BTreeMap<JobId, Progress> = BTreeMap::new();
    for (job_id, id, step, data, total, status) in rows {
        if let Some(value) = super::dev_value(&data, &spec.objective.metric) {
            let trial = trials.entry(job_id).or_insert(Progress {
                evals: Vec::new(),
                total,
                status,
            });
            trial.evals.push((id, step, value));
        }
    }
    let decided: Vec<(JobId, i64, f64, bool)> = sqlx::query_as(
        "SELECT job_id, rung_step, value, continued FROM sweep_rungs WHERE sweep_id = ?",
    )
    .bind(row.id)
    .fetch_all(db)
    .await?;
    let stopped = |job: JobId| decided.iter().any(|d| d.0 == job && !d.3);
    // (when reached, job, rung, value at the rung, whether it still runs)
    let mut pending: Vec<(i64, JobId, i64, f64, bool)> = Vec::new();
    for (
        job_id,
        Progress {
            evals,
            total,
            status,
        },
    ) in &trials
    {
        if stopped(*job_id) {
            continue;
        }
        let by_step: Vec<(i64, f64)> = evals
            .iter()
            .map(|&(_, step, value)| (step, value))
            .collect();
        let last = total.map_or(u64::MAX, |t| t.max(0) as u64);
        for rung in spec.early_stopping.rungs(last) {
            let rung = rung as i64;
            if decided.iter().any(|d| d.0 == *job_id && d.1 == rung) {
                continue;
            }
            // The first evaluation at or past the rung: when the trial got there.
            let Some(&(at, step, _)) = evals.iter().find(|e| e.1 >= rung) else {
                break;
            };
            let Some((_, value)) = search::best_until(&by_step, step, goal) else {
                break;
            };
            let runs = matches!(status, JobStatus::Starting | JobStatus::Running);
            pending.push((at, *job_id, rung, value, runs));
        }
    }
    if pending.is_empty() {
        return Ok(());
    }
    let mut tx = crate::db::write_tx(db).await?;
    pending.sort_by_key(|p| (p.0, p.2));
    let mut at_rung: Vec<(i64, f64)> = decided.iter().map(|d| (d.1, d.2)).collect();
    let mut pruned: Vec<JobId> = Vec::new();
    for (_, job_id, rung, value, runs) in pending {
        if pruned.contains(&job_id) {
            continue;
        }
        let earlier: Vec<f64> = at_rung
            .iter()
            .filter(|r| r.0 == rung)
            .map(|r| r.1)
            .collect();
        // A trial that has already ended (or is being stopped) ran past the rung: recorded, so later
        // trials are compared with it, but as gone on.
        let continued = !runs || search::continues(value, &earlier, goal, reduction_factor);
        let peers = earlier.len() as i64 + 1;
        sqlx::query(
            "INSERT INTO sweep_rungs (sweep_id, job_id, rung_step, value, peers, continued, at)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(row.id)
        .bind(job_id)
        .bind(rung)
        .bind(value)
        .bind(peers)
        .bind(continued)
        .bind(crate::now())
        .execute(&mut *tx)
        .await?;
        at_rung.push((rung, value));
        if !continued {
            let keep = (peers as usize).div_ceil(reduction_factor as usize);
            let message = format!(
                "stopped by its sweep at step {rung}: {} {value:.4} was not among the best {keep} of the {peers} trials that reached this step",
                spec.objective.metric
            );
            crate::jobs::prune(&mut tx, job_id, &message).await?;
            pruned.push(job_id);
        }
    }
    let mut handles = Vec::new();
    for job_id in &pruned {
        handles.extend(crate::jobs::handle_of(&mut tx, *job_id).await?);
    }
    tx.commit().await?;
    for handle in handles {
        // Not in this round: a cluster job's stop may first wait for its command to start.
        let executors = jobs.executors.clone();
        tokio::spawn(async move { executors.stop(&handle, Stop::Ask).await });
    }
    if !pruned.is_empty() {
        jobs.changed();
    }
    Ok(())
}

//! Sweeps: a job spec tried with several settings. A sweep is a row with its spec; its trials are
//! ordinary jobs of the workspace's queue (each row says its sweep and trial number), placed by the
//! scheduler like any other within the workspace's quota. The [`driver`] starts trials as others end,
//! judges running ones at their rungs and stops the poor ones (keeping their checkpoints), from what
//! the database says: a restarted server goes on where it stopped. Viewers read; editors and owners
//! create, pause, resume, extend and cancel.
//!
//! # Layout
//! - this file: create, list, read, pause, resume, extend, cancel.
//! - [`search`]: the arithmetic: checks, each trial's values, the decision at a rung.
//! - [`driver`]: the loop that runs sweeps.

pub mod driver;
pub mod search;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use contracts::error::{internal, AppError, ErrorCode, FieldProblem};
use contracts::ids::{CheckpointId, JobId, SweepId, UserId, WorkspaceId};
use contracts::metrics::Metrics;
use contracts::sweeps::*;
use contracts::types::{JobReason, JobSpec, JobStatus, Role};
use sqlx::{SqliteConnection, SqlitePool};

use crate::access::{self, authorize};
use crate::audit::{self, Entry};
use crate::auth::Actor;
use crate::jobs::Jobs;
use crate::transitions::{machine, Machine};

machine! {
    /// The sweeps table's machine.
    pub struct Sweep {
        kind: "sweep",
        table: "sweeps",
        id: SweepId,
        status: SweepStatus,
        reason: SweepReason,
        moves: SweepStatus::can_become,
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct SweepRow {
    id: SweepId,
    workspace_id: WorkspaceId,
    name: String,
    spec_json: String,
    max_trials: i64,
    trials_started: i64,
    status: SweepStatus,
    status_reason: Option<SweepReason>,
    status_message: Option<String>,
    created_by_id: Option<UserId>,
    created_by: Option<String>,
    created_at: String,
    finished_at: Option<String>,
}

const SWEEP_ROWS: &str =
    "SELECT s.id, s.workspace_id, s.name, s.spec_json, s.max_trials, s.trials_started,
        s.status, s.status_reason, s.status_message, s.created_by AS created_by_id,
        u.username AS created_by, s.created_at, s.finished_at
      FROM sweeps s LEFT JOIN users u ON u.id = s.created_by";

impl SweepRow {
    pub(crate) fn spec(&self) -> Result<SweepSpec, AppError> {
        serde_json::from_str(&self.spec_json).map_err(|e| internal("stored sweep spec", e))
    }

    fn entry<'a>(&'a self, actor: &'a Actor, action: &'a str) -> Entry<'a> {
        Entry::in_workspace(actor, self.workspace_id, action, &self.name)
            .detail(serde_json::json!({ "sweep_id": self.id }))
    }
}

async fn sweep_row(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepRow, AppError> {
    sqlx::query_as(&format!(
        "{SWEEP_ROWS} WHERE s.workspace_id = ? AND s.id = ?"
    ))
    .bind(workspace_id)
    .bind(sweep_id)
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)
}

/// Checks a sweep, every trial it can make included, and starts it. Editors and owners.
pub async fn create(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    mut spec: SweepSpec,
) -> Result<SweepDetail, AppError> {
    let problems = check(&spec);
    if let Some(refused) = AppError::invalid_fields(ErrorCode::SweepSpecInvalid, problems) {
        return Err(refused);
    }
    spec.name = spec.name.trim().to_string();
    spec.objective.goal = Some(spec.objective.goal());
    spec.max_trials = Some(search::max_trials(&spec));
    // What only the server and the workspace can say (the host's GPUs, the datasets, the starting
    // models): the first trial and every listed starting model, checked as their jobs will be when
    // they are queued. Each error is placed where the sweep's spec holds what it is about.
    let first =
        search::trial_values(&spec, 0).ok_or_else(|| internal("sweep", "no first trial"))?;
    // The listed models first: a model that is not here is then named by its place in the list.
    let mut tries: Vec<_> = search::values_to_check(&spec)
        .into_iter()
        .filter(|(_, values)| {
            values
                .keys()
                .any(|k| k == "pretrained_model_id" || k == "base_checkpoint_id")
        })
        .map(|(at, values)| (Some(at), values))
        .collect();
    tries.push((None, first));
    let mut checked = Vec::with_capacity(tries.len());
    for (at, values) in tries {
        let varied: Vec<String> = values.keys().cloned().collect();
        let place = move |field: &str| match (&at, varied.iter().any(|k| k == field)) {
            (Some(at), true) => at.clone(),
            (None, true) => format!("parameters.{field}"),
            _ => format!("job.{field}"),
        };
        let job = search::with_values(&spec.job, &values).map_err(|(field, why)| {
            AppError::invalid(place(&field), ErrorCode::SweepSpecInvalid, why)
        })?;
        let cluster = crate::jobs::host_checks(jobs, &job)
            .await
            .map_err(|e| relocate(e, &place))?;
        checked.push((job, cluster, place));
    }
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    for (job, cluster, place) in checked {
        crate::jobs::dry_run(&mut tx, jobs, workspace_id, &job, cluster)
            .await
            .map_err(|e| relocate(e, &place))?;
    }
    let spec_json = serde_json::to_string(&spec).map_err(|e| internal("sweep spec", e))?;
    let max_trials = i64::from(spec.max_trials.unwrap_or_default());
    let sweep_id: SweepId = sqlx::query_scalar(
        "INSERT INTO sweeps (workspace_id, name, spec_json, max_trials, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(workspace_id)
    .bind(&spec.name)
    .bind(&spec_json)
    .bind(max_trials)
    .bind(actor.user_id)
    .bind(crate::now())
    .fetch_one(&mut *tx)
    .await?;
    let entry = Entry::in_workspace(actor, workspace_id, "sweep.create", &spec.name)
        .detail(serde_json::json!({ "sweep_id": sweep_id, "max_trials": max_trials }));
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    // The driver follows the jobs' activity: this starts the first trials at once.
    jobs.changed();
    get(db, actor, workspace_id, sweep_id).await
}

/// Every problem of a sweep's own fields, its job's and its values' (each value checked in the job
/// as its trials will be), by their paths in the spec.
fn check(spec: &SweepSpec) -> Vec<FieldProblem> {
    let mut out = search::problems(spec, spec.job.task.metric_names());
    let varied = |field: &str| spec.parameters.keys().any(|p| p == field);
    // The job's own fields, but for those the trials replace (a sweep of batch sizes needs none).
    out.extend(
        crate::jobs::spec::problems_here(&spec.job)
            .into_iter()
            .filter(|p| !varied(&p.field))
            .map(|p| FieldProblem {
                field: format!("job.{}", p.field),
                ..p
            }),
    );
    if out.iter().any(|p| p.field.starts_with("parameters.")) {
        return out;
    }
    for (at, values) in search::values_to_check(spec) {
        match search::with_values(&spec.job, &values) {
            Err((_, why)) => out.push(FieldProblem::said(at, why)),
            Ok(job) => out.extend(
                crate::jobs::spec::problems_here(&job)
                    .into_iter()
                    .filter(|p| values.keys().any(|k| p.is_at(k)))
                    .map(|p| FieldProblem {
                        field: at.clone(),
                        ..p
                    }),
            ),
        }
    }
    out
}

/// `err` with the fields it names moved by `to` (a job's field to where the sweep's spec holds it).
fn relocate(err: AppError, to: impl Fn(&str) -> String) -> AppError {
    match err {
        AppError::Invalid {
            field,
            code,
            message,
            problems,
        } => AppError::Invalid {
            field: field.map(|f| to(&f)),
            code,
            message,
            problems: problems
                .into_iter()
                .map(|p| FieldProblem {
                    field: to(&p.field),
                    ..p
                })
                .collect(),
        },
        other => other,
    }
}

pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<SweepSummary>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows: Vec<SweepRow> = sqlx::query_as(&format!(
        "{SWEEP_ROWS} WHERE s.workspace_id = ? ORDER BY s.id DESC"
    ))
    .bind(workspace_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let spec = row.spec()?;
        let trials = trials(&mut conn, &row, &spec).await?;
        out.push(summary(&mut conn, &row, &spec, &trials).await?);
    }
    Ok(out)
}

pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let row = sweep_row(&mut conn, workspace_id, sweep_id).await?;
    let spec = row.spec()?;
    let mut trials = trials(&mut conn, &row, &spec).await?;
    let summary = summary(&mut conn, &row, &spec, &trials).await?;
    let goal = spec.objective.goal();
    trials.sort_by(|a, b| match (a.objective, b.objective) {
        (Some(x), Some(y)) if goal.better(x.value, y.value) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) if goal.better(y.value, x.value) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        _ => b.trial.cmp(&a.trial),
    });
    Ok(SweepDetail {
        summary,
        spec,
        trials,
        can_edit: role.can_edit(),
    })
}

/// The objective's value at each dev evaluation of each of the sweep's trials, in step order: job →
/// (step, value).
async fn objective_values(
    conn: &mut SqliteConnection,
    sweep_id: SweepId,
    metric: &str,
) -> Result<BTreeMap<JobId, Vec<(i64, f64)>>, AppError> {
    let rows: Vec<(JobId, i64, String)> = sqlx::query_as(
        "SELECT m.job_id, m.step, m.data FROM job_metrics m JOIN jobs j ON j.id = m.job_id
         WHERE j.sweep_id = ? AND m.kind = 'eval' ORDER BY m.step, m.id",
    )
    .bind(sweep_id)
    .fetch_all(conn)
    .await?;
    let mut out: BTreeMap<JobId, Vec<(i64, f64)>> = BTreeMap::new();
    for (job_id, step, data) in rows {
        if let Some(value) = dev_value(&data, metric) {
            out.entry(job_id).or_default().push((step, value));
        }
    }
    Ok(out)
}

/// `metric` of a stored eval row, when it is a dev evaluation that has it (the test split is scored
/// once at the end, on data no choice may look at).
pub(crate) fn dev_value(data: &str, metric: &str) -> Option<f64> {
    let json: serde_json::Value = serde_json::from_str(data).ok()?;
    if json
        .get("split")
        .and_then(|s| s.as_str())
        .is_some_and(|s| s != "dev")
    {
        return None;
    }
    serde_json::from_value::<Metrics>(json).ok()?.get(metric)
}

async fn trials(
    conn: &mut SqliteConnection,
    row: &SweepRow,
    spec: &SweepSpec,
) -> Result<Vec<Trial>, AppError> {
    let goal = spec.objective.goal();
    let values = objective_values(conn, row.id, &spec.objective.metric).await?;
    let decisions: Vec<(JobId, i64, f64, i64, bool)> = sqlx::query_as(
        "SELECT job_id, rung_step, value, peers, continued FROM sweep_rungs WHERE sweep_id = ? ORDER BY rung_step",
    )
    .bind(row.id)
    .fetch_all(&mut *conn)
    .await?;
    let jobs = crate::jobs::of_sweep(conn, row.workspace_id, row.id).await?;
    Ok(jobs
        .into_iter()
        .map(|(job, trial, job_spec)| {
            let parameters = trial_parameters(&job_spec, spec);
            let objective = values
                .get(&job.id)
                .and_then(|evals| search::best_until(evals, i64::MAX, goal))
                .map(|(step, value)| ObjectiveValue { value, step });
            let rungs = decisions
                .iter()
                .filter(|d| d.0 == job.id)
                .map(|&(_, step, value, peers, continued)| RungDecision {
                    step,
                    value,
                    peers: peers as u32,
                    continued,
                })
                .collect();
            Trial {
                trial,
                pruned: job.status_reason == Some(JobReason::Pruned),
                job,
                parameters,
                objective,
                rungs,
            }
        })
        .collect())
}

/// The values a trial's job ran with, for the parameters its sweep varies.
fn trial_parameters(job: &JobSpec, spec: &SweepSpec) -> BTreeMap<String, serde_json::Value> {
    let json = serde_json::to_value(job).unwrap_or_default();
    spec.parameters
        .keys()
        .map(|name| (name.clone(), json.get(name).cloned().unwrap_or_default()))
        .collect()
}

async fn summary(
    conn: &mut SqliteConnection,
    row: &SweepRow,
    spec: &SweepSpec,
    trials: &[Trial],
) -> Result<SweepSummary, AppError> {
    let goal = spec.objective.goal();
    let mut counts = TrialCounts::default();
    for t in trials {
        let slot = match t.job.status {
            s if !s.is_final() => &mut counts.active,
            _ if t.pruned => &mut counts.pruned,
            JobStatus::Succeeded => &mut counts.completed,
            _ => &mut counts.failed,
        };
        *slot += 1;
    }
    let best = trials
        .iter()
        .filter_map(|t| t.objective.map(|o| (t, o)))
        .fold(
            None,
            |best: Option<(&Trial, ObjectiveValue)>, (t, o)| match best {
                Some((_, b)) if !goal.better(o.value, b.value) => best,
                _ => Some((t, o)),
            },
        );
    let best = match best {
        Some((trial, objective)) => {
            let checkpoint_id: Option<CheckpointId> = sqlx::query_scalar(
                "SELECT id FROM checkpoints WHERE job_id = ? AND best = 1 AND deleted_at IS NULL
                 ORDER BY step DESC LIMIT 1",
            )
            .bind(trial.job.id)
            .fetch_optional(&mut *conn)
            .await?;
            Some(BestTrial {
                trial: trial.trial,
                job_id: trial.job.id,
                objective,
                checkpoint_id,
            })
        }
        None => None,
    };
    Ok(SweepSummary {
        id: row.id,
        workspace_id: row.workspace_id,
        name: row.name.clone(),
        status: row.status,
        status_reason: row.status_reason,
        status_message: row.status_message.clone(),
        method: spec.method,
        objective: spec.objective.clone(),
        early_stopping: spec.early_stopping,
        max_trials: row.max_trials as u32,
        parallelism: spec.parallelism,
        trials: row.trials_started as u32,
        counts,
        best,
        steps_run: trials.iter().map(|t| t.job.step).sum(),
        created_by: row.created_by.clone(),
        created_at: row.created_at.clone(),
        finished_at: row.finished_at.clone(),
    })
}

/// Moves sweep `sweep_id` for `actor` (an editor) to `to` for `reason`, audited as `action`: unchanged
/// when it is there already (asking twice is no error), refused when its machine does not allow the
/// move from where it is.
async fn change(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
    (to, reason, action): (SweepStatus, SweepReason, &str),
) -> Result<SweepDetail, AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let row = sweep_row(&mut tx, workspace_id, sweep_id).await?;
    if row.status == to {
        drop(tx);
        return get(db, actor, workspace_id, sweep_id).await;
    }
    let message = format!(
        "{} by {}",
        reason.as_str().replace('_', " "),
        actor.username
    );
    if Sweep::transition(&mut tx, sweep_id, to, reason, Some(&message))
        .await?
        .is_none()
    {
        return Err(AppError::conflict(
            "status",
            ErrorCode::SweepStatusConflict,
            format!("the sweep is {}", row.status.as_str()),
        ));
    }
    audit::record(&mut tx, row.entry(actor, action)).await?;
    tx.commit().await?;
    jobs.changed();
    get(db, actor, workspace_id, sweep_id).await
}

/// Starts no new trial until resumed; those queued or running go on.
pub async fn pause(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepDetail, AppError> {
    let to = (
        SweepStatus::Paused,
        SweepReason::PauseRequested,
        "sweep.pause",
    );
    change(db, jobs, actor, workspace_id, sweep_id, to).await
}

pub async fn resume(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepDetail, AppError> {
    let to = (
        SweepStatus::Running,
        SweepReason::ResumeRequested,
        "sweep.resume",
    );
    change(db, jobs, actor, workspace_id, sweep_id, to).await
}

/// Allows more trials (a grid: up to its size); a finished sweep runs again.
pub async fn extend(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
    extend: SweepExtend,
) -> Result<SweepDetail, AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let row = sweep_row(&mut tx, workspace_id, sweep_id).await?;
    let spec = row.spec()?;
    if row.status == SweepStatus::Cancelled {
        return Err(AppError::conflict(
            "status",
            ErrorCode::SweepStatusConflict,
            "the sweep is cancelled",
        ));
    }
    let limit = match spec.method {
        Method::Grid => search::grid_size(&spec.parameters).unwrap_or_default(),
        Method::Random => MAX_TRIALS,
    };
    let from = row.max_trials + 1;
    if !(from..=i64::from(limit)).contains(&i64::from(extend.max_trials)) {
        let problem = match from > i64::from(limit) {
            true => FieldProblem::new(
                "max_trials",
                contracts::error::Rule::AtMost {
                    max: i64::from(limit),
                },
                format!("the sweep already has every trial it can ({limit})"),
            ),
            false => FieldProblem::new(
                "max_trials",
                contracts::error::Rule::Between {
                    min: from,
                    max: i64::from(limit),
                },
                format!("must be between {from} and {limit}"),
            ),
        };
        return Err(
            AppError::invalid_fields(ErrorCode::SweepSpecInvalid, vec![problem])
                .expect("one problem"),
        );
    }
    let spec = SweepSpec {
        max_trials: Some(extend.max_trials),
        ..spec
    };
    let spec_json = serde_json::to_string(&spec).map_err(|e| internal("sweep spec", e))?;
    sqlx::query("UPDATE sweeps SET max_trials = ?, spec_json = ?, finished_at = NULL WHERE id = ?")
        .bind(i64::from(extend.max_trials))
        .bind(spec_json)
        .bind(sweep_id)
        .execute(&mut *tx)
        .await?;
    if row.status == SweepStatus::Finished {
        let message = format!(
            "extended to {} trials by {}",
            extend.max_trials, actor.username
        );
        Sweep::transition(
            &mut tx,
            sweep_id,
            SweepStatus::Running,
            SweepReason::Extended,
            Some(&message),
        )
        .await?;
    }
    let entry = row
        .entry(actor, "sweep.extend")
        .detail(serde_json::json!({ "sweep_id": sweep_id, "max_trials": extend.max_trials }));
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    jobs.changed();
    get(db, actor, workspace_id, sweep_id).await
}

/// Cancels the sweep and its queued and running trials (a running one stops gracefully, writing a
/// checkpoint). Idempotent.
pub async fn cancel(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<SweepDetail, AppError> {
    let to = (
        SweepStatus::Cancelled,
        SweepReason::CancelRequested,
        "sweep.cancel",
    );
    let detail = change(db, jobs, actor, workspace_id, sweep_id, to).await?;
    for trial in detail.trials.iter().filter(|t| !t.job.status.is_final()) {
        crate::jobs::cancel(db, jobs, actor, workspace_id, trial.job.id).await?;
    }
    get(db, actor, workspace_id, sweep_id).await
}

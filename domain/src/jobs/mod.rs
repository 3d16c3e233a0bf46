//! Fine-tuning jobs: submitted to a per-workspace queue, placed by the scheduler on free GPUs (or a CPU
//! slot), run by an executor, followed by a supervisor that turns the trainer's JSON-lines events into
//! rows (metrics, logs, checkpoints) and the job's state. Viewers read; editors and owners submit,
//! cancel, retry and delete.
//!
//! The database is the truth. A job's row says where it runs (pid or container) and how far its event
//! stream has been read (`events_offset`, committed with the rows it produced), so a restarted server —
//! even after `kill -9` — re-attaches to what still runs, finishes what ended meanwhile, and neither
//! duplicates nor loses a metric or a checkpoint.
//!
//! # Layout
//! - this file: submit, list, read, cancel, retry, delete; metrics, logs and checkpoints queries.
//! - [`spec`]: the form's checks and the `job.toml` it renders to.
//! - [`status`]: the state machine; every change of a job's status goes through its `transition`.
//! - [`scheduler`]: who runs next (priority with ageing, FIFO, GPU placement, quotas, CPU slots).
//! - [`launch`]: a placed job's run folder and `job.toml`, handed to its executor ([`crate::executor`]).
//!   [`supervise`]: following a run to its end, whichever executor started it, with [`log_file`] keeping
//!   each job's rotated log on disk.

pub mod checkpoints;
pub mod comparison;
pub mod launch;
pub mod log_file;
pub mod scheduler;
pub mod spec;
pub mod status;
pub mod supervise;

use contracts::ids::{CheckpointId, DatasetId, EnvironmentId, JobId, SweepId, WorkspaceId};
use std::sync::Arc;

use sqlx::{SqliteConnection, SqlitePool};

use super::access::{self, authorize};
use super::audit::{self, Entry};
use super::auth::Actor;
use super::executor::{Executor, Executors, Handle, Stop};
use super::storage::{in_volume, Storage};
use crate::children::Failure;
use crate::transitions::Machine;
use contracts::error::internal;
use contracts::error::{AppError, ErrorCode, FieldProblem, Rule};
use contracts::metrics::Metrics;
use contracts::runs::{BestScore, JobQuery, JobSort, StartingModel};
use contracts::task::Task;
use contracts::types::*;
use status::Reason;

/// Metric points and log lines returned per request.
pub const PAGE: i64 = 2000;

/// 64 MiB of raw trainer output: about half a million progress lines, far more than a run prints, so
/// the limit only stops a runaway.
pub const DEFAULT_TRAIN_LOG_MAX_BYTES: u64 = 64 << 20;

/// What the job machinery shares: where files are, and how to wake the scheduler.
pub struct Jobs {
    pub storage: Arc<Storage>,
    /// Docker, for jobs that run in an environment's image.
    pub engine: Arc<super::engine::Engine>,
    /// Concurrent CPU-only jobs (each uses every core it is given; more would only thrash).
    pub cpu_slots: usize,
    /// libtorch threads per CPU job; 0 lets libtorch use every core.
    pub cpu_threads: usize,
    pub wake: tokio::sync::Notify,
    /// Bumped whenever a job's rows change (output ingested, status changed), so live streams query
    /// when there is something new instead of polling on a timer. One counter for all jobs: a wake-up
    /// costs a stream one cheap query, and there are few streams.
    pub activity: tokio::sync::watch::Sender<u64>,
    /// Where jobs (and evaluations) run.
    pub executors: Executors,
    /// The most bytes of the trainer's stderr kept in a job's raw `train.log`.
    pub train_log_max_bytes: u64,
    /// Evaluations (`crate::evaluations`) run one at a time: each uses the CPU threads a job would, and
    /// several at once would only slow each other and the jobs down.
    pub evaluations: tokio::sync::Semaphore,
    /// How long a run asked to stop (cancelled, out of time) has to end on its own — finish its step and
    /// write its checkpoint — before its whole process group, container or cluster job is killed.
    pub stop_grace: std::time::Duration,
}

/// Long enough for a base-sized model to finish a step and write a checkpoint on a slow disk.
pub const DEFAULT_STOP_GRACE_SECS: u64 = 120;

impl Jobs {
    pub fn new(
        db: SqlitePool,
        storage: Arc<Storage>,
        engine: Arc<super::engine::Engine>,
        cpu_slots: usize,
        cpu_threads: usize,
    ) -> Jobs {
        Jobs {
            executors: Executors::new(storage.clone(), engine.clone(), db),
            storage,
            engine,
            cpu_slots: cpu_slots.max(1),
            cpu_threads,
            wake: tokio::sync::Notify::new(),
            activity: tokio::sync::watch::Sender::new(0),
            train_log_max_bytes: DEFAULT_TRAIN_LOG_MAX_BYTES,
            evaluations: tokio::sync::Semaphore::new(1),
            stop_grace: std::time::Duration::from_secs(DEFAULT_STOP_GRACE_SECS),
        }
    }

    /// Tells the live streams that some job changed.
    pub fn changed(&self) {
        self.activity.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The executor of `kind`, where a job of that kind runs (see [`crate::executor`]).
    pub fn executor(&self, kind: ExecutorKind) -> Arc<dyn Executor> {
        self.executors.get(kind)
    }
}

/// A job's run folder relative to its executor's [`Executor::run_root`]: `jobs/<id>`.
pub fn job_rel(job_id: JobId) -> std::path::PathBuf {
    std::path::Path::new("jobs").join(job_id.to_string())
}

#[derive(Clone)]
pub(crate) struct JobRow {
    id: JobId,
    workspace_id: WorkspaceId,
    name: String,
    spec_json: String,
    config_toml: String,
    executor: ExecutorKind,
    cluster: Option<String>,
    cluster_job: Option<String>,
    priority: i64,
    gpus: i64,
    status: String,
    status_reason: Option<contracts::types::JobReason>,
    status_message: Option<String>,
    exit_code: Option<i64>,
    gpu_indices: Option<String>,
    pid: Option<i64>,
    container_name: Option<String>,
    events_offset: i64,
    log_offset: i64,
    step: i64,
    total_steps: Option<i64>,
    epoch: Option<f64>,
    time_limit_secs: Option<i64>,
    retry_of: Option<JobId>,
    sweep_id: Option<SweepId>,
    trial: Option<i64>,
    dataset_id: Option<DatasetId>,
    dataset_name: Option<String>,
    pretrained_name: Option<String>,
    base_job_id: Option<JobId>,
    best_metric: Option<String>,
    best_value: Option<f64>,
    best_step: Option<i64>,
    created_by: Option<String>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
}

/// A checkpoint's job, step, folder and deletion time, by workspace and checkpoint id (`db::found`).
pub(crate) const CHECKPOINT_FILES: &str =
    "SELECT job_id, step, path, deleted_at FROM checkpoints WHERE workspace_id = ? AND id = ?";

// `job_rows!("WHERE …", args…)`: jobs, with the name of who submitted them (see `db::row_query!`).
crate::db::row_query!(
    $ job_rows,
    JobRow,
    r#"SELECT j.id AS "id!: contracts::ids::JobId", j.workspace_id AS "workspace_id: contracts::ids::WorkspaceId", j.name, j.spec_json, j.config_toml,
        j.executor AS "executor: contracts::types::ExecutorKind", j.cluster, j.cluster_job, j.priority, j.gpus, j.status, j.status_reason AS "status_reason: contracts::types::JobReason", j.status_message,
        j.exit_code, j.gpu_indices, j.pid, j.container_name, j.events_offset, j.log_offset, j.step,
        j.total_steps, j.epoch, j.time_limit_secs, j.retry_of AS "retry_of: contracts::ids::JobId",
        j.sweep_id AS "sweep_id: contracts::ids::SweepId", j.trial,
        j.dataset_id AS "dataset_id: contracts::ids::DatasetId", d.name AS "dataset_name?", p.name AS "pretrained_name?",
        c.job_id AS "base_job_id?: contracts::ids::JobId", j.best_metric, j.best_value, j.best_step,
        u.username AS "created_by?", j.created_at, j.started_at, j.finished_at
      FROM jobs j LEFT JOIN users u ON u.id = j.created_by
        LEFT JOIN datasets d ON d.id = j.dataset_id
        LEFT JOIN pretrained_models p ON p.id = json_extract(j.spec_json, '$.pretrained_model_id')
        LEFT JOIN checkpoints c ON c.id = json_extract(j.spec_json, '$.base_checkpoint_id')"#
);

impl JobRow {
    /// `actor`'s `action` on this job, for the audit log (named by id too).
    fn entry<'a>(&'a self, actor: &'a Actor, action: &'a str) -> Entry<'a> {
        let entry = Entry::in_workspace(actor, self.workspace_id, action, &self.name);
        entry.detail(serde_json::json!({ "job_id": self.id }))
    }

    pub(crate) fn spec(&self) -> Result<JobSpec, AppError> {
        serde_json::from_str(&self.spec_json).map_err(|e| internal("stored job spec", e))
    }

    pub(crate) fn status(&self) -> Result<JobStatus, AppError> {
        JobStatus::parse(&self.status).ok_or_else(|| internal("stored job status", &self.status))
    }

    /// Where it runs, once started.
    pub(crate) fn handle(&self) -> Option<Handle> {
        Handle::of(
            self.pid,
            self.container_name.as_deref(),
            self.cluster.as_deref(),
            self.cluster_job.as_deref(),
        )
    }

    pub(crate) fn gpu_list(&self) -> Vec<u32> {
        self.gpu_indices
            .as_deref()
            .and_then(|g| serde_json::from_str(g).ok())
            .unwrap_or_default()
    }

    fn summary(&self, queue_position: Option<i64>) -> Result<JobSummary, AppError> {
        let spec = self.spec()?;
        let start = match (spec.pretrained_model_id, spec.base_checkpoint_id) {
            (Some(id), _) => StartingModel::Pretrained {
                id,
                name: self.pretrained_name.clone(),
            },
            (None, Some(id)) => StartingModel::Checkpoint {
                id,
                job_id: self.base_job_id,
            },
            (None, None) => StartingModel::Scratch {
                preset: spec.preset,
            },
        };
        let best = match (&self.best_metric, self.best_value, self.best_step) {
            (Some(metric), Some(value), Some(step)) => Some(BestScore {
                metric: metric.clone(),
                value,
                step,
            }),
            _ => None,
        };
        Ok(JobSummary {
            id: self.id,
            workspace_id: self.workspace_id,
            name: self.name.clone(),
            status: self.status()?,
            status_reason: self.status_reason,
            status_message: self.status_message.clone(),
            exit_code: self.exit_code,
            executor: self.executor,
            cluster: self.cluster.clone(),
            cluster_job: self.cluster_job.clone(),
            priority: self.priority as i32,
            gpus: self.gpus as u32,
            gpu_indices: self.gpu_list(),
            step: self.step,
            total_steps: self.total_steps,
            epoch: self.epoch,
            queue_position,
            sweep_id: self.sweep_id,
            trial: self.trial.map(|t| t as u32),
            task: spec.task,
            dataset_id: self.dataset_id,
            dataset_name: self.dataset_name.clone(),
            start: Some(start),
            best,
            duration_secs: running_time(self.started_at.as_deref(), self.finished_at.as_deref()),
            created_by: self.created_by.clone(),
            created_at: self.created_at.clone(),
            started_at: self.started_at.clone(),
            finished_at: self.finished_at.clone(),
        })
    }
}

/// Seconds from `started` to `finished`, or to now while it runs; none before it started.
fn running_time(started: Option<&str>, finished: Option<&str>) -> Option<f64> {
    let at = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let started = at(started?)?;
    let ended = match finished {
        Some(finished) => at(finished)?,
        None => chrono::Utc::now().fixed_offset(),
    };
    Some((ended - started).num_milliseconds().max(0) as f64 / 1000.0)
}

pub(crate) async fn job_row(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<JobRow, AppError> {
    job_rows!(
        "WHERE j.workspace_id = ? AND j.id = ?",
        workspace_id,
        job_id
    )
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)
}

/// The trials of sweep `sweep_id`: each job with its trial number and spec.
pub(crate) async fn of_sweep(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<Vec<(JobSummary, u32, JobSpec)>, AppError> {
    let queue = queue_positions(conn, workspace_id).await?;
    let rows = job_rows!(
        "WHERE j.workspace_id = ? AND j.sweep_id = ? ORDER BY j.trial",
        workspace_id,
        sweep_id
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|j| {
            let position = queue
                .iter()
                .position(|id| *id == j.id)
                .map(|p| p as i64 + 1);
            let spec = j.spec()?;
            Ok((
                j.summary(position)?,
                j.trial.unwrap_or_default() as u32,
                spec,
            ))
        })
        .collect()
}

/// Asks running job `job_id` to stop for its sweep (`message`: the figures that decided it): it ends
/// as a cancelled run does, finishing its step and writing a checkpoint, and then as succeeded with
/// reason `pruned`. The caller stops its run ([`handle_of`]) once the change is committed.
pub(crate) async fn prune(
    conn: &mut SqliteConnection,
    job_id: JobId,
    message: &str,
) -> Result<(), AppError> {
    let to = JobStatus::Cancelling;
    status::Job::transition(conn, job_id, to, Reason::Pruned, Some(message)).await?;
    Ok(())
}

/// Where job `job_id` runs, once it was started.
pub(crate) async fn handle_of(
    conn: &mut SqliteConnection,
    job_id: JobId,
) -> Result<Option<Handle>, AppError> {
    let job = job_rows!("WHERE j.id = ?", job_id)
        .fetch_optional(conn)
        .await?;
    Ok(job.and_then(|j| j.handle()))
}

/// Queue positions of the workspace's queued jobs, in the order the scheduler considers them.
async fn queue_positions(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
) -> Result<Vec<JobId>, AppError> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM jobs WHERE workspace_id = ? AND status = 'queued' ORDER BY priority DESC, id",
    )
    .bind(workspace_id)
    .fetch_all(conn)
    .await?)
}

/// The workspace's jobs that pass `query`'s filters, in its order. Any member; a bad day is a 422 at
/// its field.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    query: &JobQuery,
) -> Result<Vec<JobSummary>, AppError> {
    let problems = query.problems();
    if let Some((field, message)) = problems.first() {
        return Err(AppError::invalid(
            *field,
            ErrorCode::RunsQueryInvalid,
            message,
        ));
    }
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let queue = queue_positions(&mut conn, workspace_id).await?;
    let status = query.status.map(JobStatus::as_str);
    let rows = job_rows!(
        "WHERE j.workspace_id = ? AND (?2 IS NULL OR j.status = ?2) AND (?3 IS NULL OR j.dataset_id = ?3)
           AND (?4 IS NULL OR j.sweep_id = ?4) AND (?5 IS NULL OR substr(j.created_at, 1, 10) >= ?5)
           AND (?6 IS NULL OR substr(j.created_at, 1, 10) <= ?6)
         ORDER BY j.id DESC",
        workspace_id,
        status,
        query.dataset_id,
        query.sweep_id,
        query.since,
        query.until,
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut jobs = Vec::with_capacity(rows.len());
    for j in &rows {
        let position = queue.iter().position(|id| *id == j.id);
        let job = j.summary(position.map(|p| p as i64 + 1))?;
        let admitted = match (&query.model, &job.start) {
            (None, _) => true,
            (Some(filter), Some(start)) => filter.admits(start),
            (Some(_), None) => false,
        };
        if admitted {
            jobs.push(job);
        }
    }
    sort_runs(
        &mut jobs,
        query.sort.unwrap_or_default(),
        query.reverse.unwrap_or(false),
    );
    Ok(jobs)
}

/// Orders runs by `sort` — newest, best, longest first, names A to Z — or the other way round when
/// `reverse`; runs without the value (never evaluated, never started) stay last either way, since a
/// user sorting by score wants the scores, not the blanks.
fn sort_runs(jobs: &mut [JobSummary], sort: JobSort, reverse: bool) {
    use std::cmp::Ordering;
    let key = |j: &JobSummary| match sort {
        JobSort::Best => j.best.as_ref().map(|b| b.value),
        JobSort::Duration => j.duration_secs,
        JobSort::Created | JobSort::Name => None,
    };
    jobs.sort_by(|a, b| {
        let natural = match sort {
            JobSort::Created => b.id.cmp(&a.id),
            JobSort::Name => a.name.cmp(&b.name).then(b.id.cmp(&a.id)),
            JobSort::Best | JobSort::Duration => match (key(a), key(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x).then(b.id.cmp(&a.id)),
                (Some(_), None) => return Ordering::Less,
                (None, Some(_)) => return Ordering::Greater,
                (None, None) => b.id.cmp(&a.id),
            },
        };
        if reverse {
            natural.reverse()
        } else {
            natural
        }
    });
}

pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<JobDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let job = job_row(&mut conn, workspace_id, job_id).await?;
    let queue = queue_positions(&mut conn, workspace_id).await?;
    let checkpoints = checkpoints_of(&mut conn, Some(job_id), workspace_id).await?;
    let spec = job.spec()?;
    let base_model = match spec.base_checkpoint_id {
        Some(id) => Some(base_model(&mut conn, workspace_id, id).await?),
        None => None,
    };
    let pretrained_model = match spec.pretrained_model_id {
        Some(id) => super::pretrained::get(&mut conn, workspace_id, id).await?,
        None => None,
    };
    let precision_choice: Option<String> =
        sqlx::query_scalar("SELECT precision_choice FROM jobs WHERE id = ?")
            .bind(job_id)
            .fetch_one(&mut *conn)
            .await?;
    // Written by this server from a `start` event it parsed: a row that does not read back is shown as
    // not said rather than failing the page.
    let precision_choice = precision_choice.and_then(|json| serde_json::from_str(&json).ok());
    Ok(JobDetail {
        summary: job.summary(
            queue
                .iter()
                .position(|id| *id == job.id)
                .map(|p| p as i64 + 1),
        )?,
        spec,
        config_toml: job.config_toml.clone(),
        retry_of: job.retry_of,
        checkpoints,
        can_edit: role.can_edit(),
        base_model,
        pretrained_model,
        precision_choice,
    })
}

/// Lineage: checkpoint `checkpoint_id` and the job that wrote it, as far as they still exist.
async fn base_model(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
) -> Result<BaseModel, AppError> {
    let row: Option<(JobId, String, i64)> = sqlx::query_as(
        "SELECT c.job_id, j.name, c.step FROM checkpoints c JOIN jobs j ON j.id = c.job_id
         WHERE c.workspace_id = ? AND c.id = ?",
    )
    .bind(workspace_id)
    .bind(checkpoint_id)
    .fetch_optional(conn)
    .await?;
    Ok(BaseModel {
        checkpoint_id,
        job_id: row.as_ref().map(|r| r.0),
        job_name: row.as_ref().map(|r| r.1.clone()),
        step: row.map(|r| r.2),
    })
}

/// Checks a spec and queues it. Editors and owners.
pub async fn submit(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    spec: JobSpec,
) -> Result<JobDetail, AppError> {
    submit_as(db, jobs, actor, workspace_id, spec, Origin::default()).await
}

/// Where a submission comes from, beyond its spec.
#[derive(Default)]
struct Origin {
    /// The job it is a retry of.
    retry_of: Option<JobId>,
    /// A checkpoint of that job's lineage to continue from.
    resume_from: Option<String>,
    /// The sweep it is a trial of, and its number there.
    trial: Option<(SweepId, u32)>,
}

async fn submit_as(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    spec: JobSpec,
    origin: Origin,
) -> Result<JobDetail, AppError> {
    let cluster = host_checks(jobs, &spec).await?;
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let resume_from = origin.resume_from.as_deref();
    let prepared = prepare(&mut tx, jobs, workspace_id, spec, cluster, resume_from).await?;
    let job_id = insert(&mut tx, actor, workspace_id, prepared, &origin).await?;
    tx.commit().await?;
    jobs.wake.notify_one();
    get(db, actor, workspace_id, job_id).await
}

/// Queues trial `trial` of sweep `sweep_id` as `actor` (the sweep's creator, with their present
/// rights): moves the sweep's count of trials in the same transaction, so a trial is queued once.
pub(crate) async fn submit_trial(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    spec: JobSpec,
    sweep_id: SweepId,
    trial: u32,
) -> Result<(), AppError> {
    let origin = Origin {
        trial: Some((sweep_id, trial)),
        ..Origin::default()
    };
    submit_as(db, jobs, actor, workspace_id, spec, origin)
        .await
        .map(|_| ())
}

/// The checks of a submission against this server (the spec's own rules, its cluster, the host's
/// GPUs), made before any transaction (they may ask Docker or a cluster): the cluster it runs on, if
/// any.
pub(crate) async fn host_checks(
    jobs: &Jobs,
    spec: &JobSpec,
) -> Result<Option<Arc<dyn Executor>>, AppError> {
    spec::check(spec)?;
    let cluster = match spec.cluster.as_deref() {
        Some(name) => Some(cluster_for(jobs, name, spec).await?),
        None if spec.partition.is_some() => {
            return Err(crate::executor::partition_without_cluster())
        }
        None => None,
    };
    let detected = jobs.engine.detected(true).await;
    let host_gpus = detected.gpus.len();
    if cluster.is_none() && spec.gpus as usize > host_gpus {
        let asks = format!("the job asks for {} GPU(s)", spec.gpus);
        return Err(if detected.left_out.is_empty() {
            never_starts(
                Rule::MoreGpusThanHost {
                    host: host_gpus as i64,
                },
                format!("{asks} but this host has {host_gpus}; it would never start"),
            )
        } else {
            never_starts(
                Rule::MoreGpusThanUsable {
                    host: host_gpus as i64,
                    left_out: detected.left_out.clone(),
                },
                format!(
                    "{asks} but this host can use {host_gpus} ({}); it would never start",
                    detected.left_out.join("; ")
                ),
            )
        });
    }
    if cluster.is_none() && spec.gpus > 0 && spec.precision == "bf16" {
        bf16_on_gpus(&detected.gpus, spec.gpus)?;
    }
    Ok(cluster)
}

/// A spec checked against the workspace and rendered for its run: what a job's row is made of.
pub(crate) struct Prepared {
    spec: JobSpec,
    executor: ExecutorKind,
    image_id: Option<String>,
    config_toml: String,
}

/// Checks `spec` against workspace `workspace_id` in the caller's transaction (quota, environment,
/// datasets and their task and labels, the starting model) and renders its job file; writes nothing.
/// `cluster`: from [`host_checks`].
pub(crate) async fn prepare(
    tx: &mut SqliteConnection,
    jobs: &Jobs,
    workspace_id: WorkspaceId,
    mut spec: JobSpec,
    cluster: Option<Arc<dyn Executor>>,
    resume_from: Option<&str>,
) -> Result<Prepared, AppError> {
    spec.name = spec.name.trim().to_string();
    let quota: Option<i64> =
        sqlx::query_scalar("SELECT max_gpus FROM workspace_quotas WHERE workspace_id = ?")
            .bind(workspace_id)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some(quota) = quota.filter(|q| i64::from(spec.gpus_in_all()) > *q) {
        return Err(never_starts(
            Rule::MoreGpusThanQuota { quota },
            format!(
                "the job asks for {} GPU(s) but this workspace's GPU quota is {quota} (this server and clusters together); it would never start",
                spec.gpus_in_all()
            ),
        ));
    }
    let (executor, image_id) = match spec.environment_id {
        Some(env_id) => (
            ExecutorKind::Docker,
            Some(environment_image(&mut *tx, workspace_id, env_id).await?),
        ),
        None => (ExecutorKind::Local, None),
    };
    let train = dataset_input(&mut *tx, workspace_id, spec.dataset_id, "dataset_id").await?;
    let dev = match spec.dev_dataset_id {
        Some(id) => Some(dataset_input(&mut *tx, workspace_id, id, "dev_dataset_id").await?),
        None => None,
    };
    let pretrained = match (spec.base_checkpoint_id, spec.pretrained_model_id) {
        (Some(id), _) => {
            Some(checkpoint_path(&mut *tx, workspace_id, id, "base_checkpoint_id").await?)
        }
        (None, Some(id)) => Some(
            super::pretrained::model_path(&mut *tx, workspace_id, id, "pretrained_model_id")
                .await?,
        ),
        (None, None) => None,
    };
    // A job learns its data's task: sentiment rows cannot teach a matching model, nor pairs a classifier.
    let for_task = |field: &str, data: &DatasetInput| {
        (data.task != spec.task).then(|| {
            FieldProblem::new(
                field,
                Rule::DataForTask { data: data.task },
                format!(
                    "this dataset is for {}, the job is {}",
                    data.task, spec.task
                ),
            )
        })
    };
    let wrong_task: Vec<FieldProblem> = std::iter::once(for_task("dataset_id", &train))
        .chain(dev.iter().map(|d| for_task("dev_dataset_id", d)))
        .flatten()
        .collect();
    if let Some(refused) = AppError::invalid_fields(ErrorCode::JobSpecInvalid, wrong_task) {
        return Err(refused);
    }
    // An entity model learns BIO tags over the entity types the data's distribution counts.
    let labels: Vec<String> = match spec.task {
        Task::Ner => contracts::data::bio_labels(&train.labels),
        _ => train.labels.clone(),
    };
    if labels.len() < 2 {
        return Err(AppError::invalid(
            "dataset_id",
            ErrorCode::JobSpecInvalid,
            "the training data needs at least two labels",
        ));
    }
    // The training set's label names are read into the dev set too (its own values are the same),
    // so a dev set named otherwise would be scored against other labels.
    if let Some(dev) = dev.as_ref().filter(|d| !d.label_names.is_empty()) {
        if dev.label_names != train.label_names {
            return Err(AppError::invalid(
                "dev_dataset_id",
                ErrorCode::LabelNamesInvalid,
                format!(
                    "the dev set names its labels {} but the training set {}; give both the same names",
                    contracts::data::format_label_names(&dev.label_names),
                    match train.label_names.is_empty() {
                        true => "names none".to_string(),
                        false => contracts::data::format_label_names(&train.label_names),
                    }
                ),
            ));
        }
    }
    let runs_on = cluster.unwrap_or_else(|| jobs.executor(executor));
    let inputs = spec::Inputs {
        store: runs_on.store_seen(workspace_id),
        train: train.path,
        dev: dev.map(|d| d.path),
        pretrained,
        resume_from: resume_from.map(str::to_string),
        text_column: train.text_column,
        pair_column: train.pair_column,
        label_column: train.label_column,
        label_names: train.label_names,
        labels,
        gpu_device: runs_on.gpu_device(),
    };
    // The server's CPU threads for jobs are shared out between a CPU run's ranks.
    let threads = match (spec.gpus, jobs.cpu_threads) {
        (0, cores) if cores > 0 => (cores / spec.ranks() as usize).max(1),
        _ => 0,
    };
    let config_toml = spec::render_toml(&spec, &inputs, threads)?;
    Ok(Prepared {
        spec,
        executor,
        image_id,
        config_toml,
    })
}

/// Writes a prepared job's row and its audit entry: its id.
async fn insert(
    tx: &mut SqliteConnection,
    actor: &Actor,
    workspace_id: WorkspaceId,
    prepared: Prepared,
    origin: &Origin,
) -> Result<JobId, AppError> {
    let Prepared {
        spec,
        executor,
        image_id,
        config_toml,
    } = prepared;
    let now = super::now();
    let spec_json = serde_json::to_string(&spec).map_err(|e| internal("job spec", e))?;
    let time_limit_secs = spec.time_limit_minutes.map(|m| i64::from(m) * 60);
    let nodes = spec.nodes();
    let (retry_of, resume_from) = (origin.retry_of, origin.resume_from.as_deref());
    let (sweep_id, trial) = origin.trial.unzip();
    if let Some((sweep_id, trial)) = origin.trial {
        // The count moves from the trial before, of a sweep still running: otherwise another round
        // queued this trial first, or the sweep was paused or cancelled meanwhile.
        let previous = i64::from(trial) - 1;
        let moved = sqlx::query!(
            "UPDATE sweeps SET trials_started = ? WHERE id = ? AND trials_started = ? AND status = 'running'",
            trial,
            sweep_id,
            previous,
        )
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() != 1 {
            return Err(AppError::conflict(
                "status",
                ErrorCode::SweepStatusConflict,
                format!("sweep {sweep_id} is not running, or its trial {trial} is queued already"),
            ));
        }
    }
    let job_id = sqlx::query_scalar!(
        r#"INSERT INTO jobs (workspace_id, name, spec_json, config_toml, executor, cluster, environment_id,
             image_id, dataset_id, dev_dataset_id, priority, gpus, nodes, time_limit_secs, retry_of, created_by,
             created_at, sweep_id, trial)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id AS "id!: JobId""#,
        workspace_id,
        spec.name,
        spec_json,
        config_toml,
        executor,
        spec.cluster,
        spec.environment_id,
        image_id,
        spec.dataset_id,
        spec.dev_dataset_id,
        spec.priority,
        spec.gpus,
        nodes,
        time_limit_secs,
        retry_of,
        actor.user_id,
        now,
        sweep_id,
        trial,
    )
    .fetch_one(&mut *tx)
    .await?;
    let action = if retry_of.is_some() {
        "job.retry"
    } else {
        "job.submit"
    };
    let entry = Entry::in_workspace(actor, workspace_id, action, &spec.name);
    let detail = serde_json::json!({ "job_id": job_id, "retry_of": retry_of, "resume_from": resume_from,
                                     "sweep_id": sweep_id, "trial": trial });
    audit::record(tx, entry.detail(detail)).await?;
    Ok(job_id)
}

/// The checks a sweep's trial will meet at its submission, made at the sweep's creation in its
/// transaction: writes nothing. `cluster`: from [`host_checks`].
pub(crate) async fn dry_run(
    tx: &mut SqliteConnection,
    jobs: &Jobs,
    workspace_id: WorkspaceId,
    spec: &JobSpec,
    cluster: Option<Arc<dyn Executor>>,
) -> Result<(), AppError> {
    prepare(tx, jobs, workspace_id, spec.clone(), cluster, None)
        .await
        .map(|_| ())
}

/// Refuses bf16 for a job asking for `asked` GPUs of a host with fewer from Ampere on (compute
/// capability 8.0): before it bfloat16 is emulated, and the trainer refuses it once placed. A GPU whose
/// compute capability its driver does not report (before R510) is not held against the job.
fn bf16_on_gpus(gpus: &[containers::preflight::GpuInfo], asked: u32) -> Result<(), AppError> {
    let ampere = hostcaps::cuda::Version::from_parts(&[8, 0]);
    let native = gpus
        .iter()
        .filter(|g| g.compute_capability.as_ref().is_none_or(|cc| *cc >= ampere))
        .count();
    if native >= asked as usize {
        return Ok(());
    }
    let problem = FieldProblem::new(
        "precision",
        Rule::Bf16NeedsAmpere {
            ampere: native as i64,
        },
        format!(
            "bf16 on a GPU needs compute capability 8.0 (Ampere) or newer, and this host has {native} such GPU(s) for the {asked} asked; use fp16 or fp32"
        ),
    );
    Err(
        AppError::invalid_fields(ErrorCode::JobSpecInvalid, vec![problem])
            .unwrap_or(AppError::Internal),
    )
}

/// A job refused at its `gpus` field because it asks for more than it could ever get.
fn never_starts(rule: Rule, message: String) -> AppError {
    let problem = FieldProblem::new("gpus", rule, message);
    AppError::invalid_fields(ErrorCode::JobSpecInvalid, vec![problem]).unwrap_or(AppError::Internal)
}

/// The cluster a job asks for by `name`, when it can run there (see `Executors::runs_on`): natively
/// (the `paddock` runtime on the nodes), or in its environment's image, which the node checks it has
/// before it starts anything.
async fn cluster_for(
    jobs: &Jobs,
    name: &str,
    spec: &JobSpec,
) -> Result<Arc<dyn Executor>, AppError> {
    let kind = match spec.environment_id {
        Some(_) => ExecutorKind::Docker,
        None => ExecutorKind::Local,
    };
    let partition = spec.partition.as_deref();
    let cluster = jobs
        .executors
        .runs_on(name, partition, kind, spec.gpus)
        .await?;
    jobs.executors
        .holds_nodes(name, partition, spec.nodes())
        .await?;
    Ok(cluster)
}

/// The image a job in environment `env_id` runs: its current version's, which must be built and carry
/// Paddock's runtime (the `paddock` binary that runs the training).
async fn environment_image(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<String, AppError> {
    let row: Option<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT v.spec_json, v.build_status, v.image_id FROM environments e
         JOIN environment_versions v ON v.environment_id = e.id AND v.version = e.current_version
         WHERE e.workspace_id = ? AND e.id = ?",
    )
    .bind(workspace_id)
    .bind(env_id)
    .fetch_optional(conn)
    .await?;
    let Some((spec_json, build_status, image_id)) = row else {
        return Err(AppError::invalid(
            "environment_id",
            ErrorCode::EnvironmentNotFound,
            format!("environment {env_id} is not in this workspace"),
        ));
    };
    let spec: EnvironmentSpec =
        serde_json::from_str(&spec_json).map_err(|e| internal("stored environment spec", e))?;
    if !spec.runtime {
        return Err(AppError::invalid(
            "environment_id",
            ErrorCode::EnvironmentWithoutRuntime,
            "this environment's image has no Paddock runtime; edit it, tick \"include the Paddock runtime\", and let it build",
        ));
    }
    match (build_status.as_str(), image_id) {
        ("built", Some(image)) => Ok(image),
        _ => Err(AppError::invalid(
            "environment_id",
            ErrorCode::NotBuilt,
            "the environment's image is not built yet",
        )),
    }
}

struct DatasetInput {
    path: String,
    task: Task,
    text_column: String,
    pair_column: Option<String>,
    label_column: String,
    label_names: std::collections::BTreeMap<String, String>,
    /// By name where the dataset names them.
    labels: Vec<String>,
}

async fn dataset_input(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    id: DatasetId,
    field: &str,
) -> Result<DatasetInput, AppError> {
    type Row = (
        String,
        Task,
        String,
        Option<String>,
        String,
        Option<String>,
        String,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT path, task, text_column, pair_column, label_column, label_names_json, report_json
         FROM datasets WHERE workspace_id = ? AND id = ?",
    )
    .bind(workspace_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    let Some((path, task, text_column, pair_column, label_column, label_names, report)) = row
    else {
        return Err(AppError::invalid(
            field,
            ErrorCode::DatasetNotFound,
            format!("dataset {id} is not in this workspace"),
        ));
    };
    let labels = crate::datasets::stored_report(&report)?
        .label_distribution
        .into_keys()
        .collect();
    Ok(DatasetInput {
        path,
        task,
        text_column,
        pair_column,
        label_column,
        label_names: crate::datasets::stored_label_names(label_names.as_deref())?,
        labels,
    })
}

async fn checkpoint_path(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    id: CheckpointId,
    field: &str,
) -> Result<String, AppError> {
    let row: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT path, deleted_at FROM checkpoints WHERE workspace_id = ? AND id = ?",
    )
    .bind(workspace_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    match row {
        Some((path, None)) => Ok(path),
        Some((_, Some(_))) => Err(AppError::invalid(
            field,
            ErrorCode::CheckpointDeleted,
            format!("checkpoint {id}'s files were removed by retention"),
        )),
        None => Err(AppError::invalid(
            field,
            ErrorCode::CheckpointNotFound,
            format!("checkpoint {id} is not in this workspace"),
        )),
    }
}

/// Cancels a job: a queued one at once; a running one gracefully (the trainer finishes its step, writes
/// a checkpoint and ends as `cancelled`). Editors and owners; idempotent.
pub async fn cancel(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<JobDetail, AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let job = job_row(&mut tx, workspace_id, job_id).await?;
    let status = job.status()?;
    match status {
        JobStatus::Queued => {
            let message = format!("cancelled by {} before it started", actor.username);
            status::finish(
                &mut tx,
                job_id,
                JobStatus::Cancelled,
                Reason::CancelRequested,
                Some(&message),
            )
            .await?;
        }
        JobStatus::Starting | JobStatus::Running => {
            let message = format!("cancel requested by {}", actor.username);
            status::Job::transition(
                &mut tx,
                job_id,
                JobStatus::Cancelling,
                Reason::CancelRequested,
                Some(&message),
            )
            .await?;
        }
        _ => return get(db, actor, workspace_id, job_id).await,
    }
    audit::record(&mut tx, job.entry(actor, "job.cancel")).await?;
    tx.commit().await?;
    // A job still being launched has no handle yet: the launch stops it once it runs.
    if let (true, Some(handle)) = (status != JobStatus::Queued, job.handle()) {
        // Not in the request: a cluster job's stop may first wait for its command to start.
        let executors = jobs.executors.clone();
        tokio::spawn(async move { executors.stop(&handle, Stop::Ask).await });
    }
    jobs.changed();
    jobs.wake.notify_one();
    get(db, actor, workspace_id, job_id).await
}

/// Queues the same spec again; with `resume`, continuing exactly from the job's latest checkpoint.
pub async fn retry(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
    resume: bool,
) -> Result<JobDetail, AppError> {
    let (spec, resume_from) = {
        let mut conn = access::connect(db, actor, workspace_id, Role::Editor).await?;
        let job = job_row(&mut conn, workspace_id, job_id).await?;
        if !job.status()?.is_final() {
            return Err(AppError::conflict(
                "status",
                ErrorCode::JobNotFinished,
                "the job is still queued or running",
            ));
        }
        let spec = job.spec()?;
        let resume_from = if resume {
            let latest: Option<String> = sqlx::query_scalar(
                "SELECT path FROM checkpoints WHERE job_id = ? AND deleted_at IS NULL ORDER BY step DESC LIMIT 1",
            )
            .bind(job_id)
            .fetch_optional(&mut *conn)
            .await?;
            Some(latest.ok_or_else(|| {
                AppError::conflict(
                    "resume",
                    ErrorCode::NoCheckpoint,
                    "the job wrote no checkpoint to resume from",
                )
            })?)
        } else {
            None
        };
        (spec, resume_from)
    };
    let origin = Origin {
        retry_of: Some(job_id),
        resume_from,
        trial: None,
    };
    submit_as(db, jobs, actor, workspace_id, spec, origin).await
}

/// Deletes a finished job with its files (checkpoints included), unless an endpoint serves one of its
/// checkpoints (the endpoint would lose its model). Editors and owners.
pub async fn delete(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<(), AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let job = job_row(&mut tx, workspace_id, job_id).await?;
    if !job.status()?.is_final() {
        return Err(AppError::conflict(
            "status",
            ErrorCode::JobNotFinished,
            "cancel the job before deleting it",
        ));
    }
    let serving: Vec<String> = sqlx::query_scalar(
        "SELECT e.name FROM endpoints e JOIN checkpoints c ON c.id = e.checkpoint_id \
         WHERE c.job_id = ? ORDER BY e.name",
    )
    .bind(job_id)
    .fetch_all(&mut *tx)
    .await?;
    if !serving.is_empty() {
        return Err(AppError::conflict(
            "job_id",
            ErrorCode::JobServed,
            format!(
                "endpoint(s) {} serve a checkpoint of this job; delete them, or deploy another \
                 checkpoint to them, first",
                serving.join(", ")
            ),
        ));
    }
    sqlx::query("DELETE FROM jobs WHERE id = ?")
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    audit::record(&mut tx, job.entry(actor, "job.delete")).await?;
    tx.commit().await?;
    remove_run(jobs, job.executor, workspace_id, job_id).await;
    if let Err(e) = tokio::fs::remove_dir_all(jobs.storage.job_logs_dir(job_id)).await {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(%job_id, error = %e, "could not remove a deleted job's log");
        }
    }
    Ok(())
}

/// Removes a deleted job's files: its run folder and its checkpoints' copies in the store. A failure is
/// logged, not answered: the row is what counts.
pub(crate) async fn remove_run(
    jobs: &Jobs,
    executor: ExecutorKind,
    workspace_id: WorkspaceId,
    job_id: JobId,
) {
    let (root, storage) = (
        jobs.executor(executor).run_root(workspace_id),
        jobs.storage.clone(),
    );
    let removed = in_volume("removing the job's files", move || {
        root?.remove_all(&job_rel(job_id))?;
        storage
            .store(workspace_id)?
            .remove_all(&checkpoints::store_rel(job_id))
    })
    .await;
    if let Err(e) = removed {
        tracing::warn!(%job_id, error = %e, "could not remove a deleted job's files");
    }
}

/// Metric points after `after` (an id), oldest first. Any member.
pub async fn metrics(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
    after: i64,
) -> Result<Vec<MetricPoint>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    job_row(&mut conn, workspace_id, job_id).await?;
    metrics_after(&mut conn, job_id, after).await
}

pub async fn metrics_after(
    conn: &mut SqliteConnection,
    job_id: JobId,
    after: i64,
) -> Result<Vec<MetricPoint>, AppError> {
    let rows: Vec<(i64, String, i64, Option<f64>, String, String)> = sqlx::query_as(
        "SELECT id, kind, step, epoch, data, at FROM job_metrics WHERE job_id = ? AND id > ? ORDER BY id LIMIT ?",
    )
    .bind(job_id)
    .bind(after)
    .bind(PAGE)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, step, epoch, data, at)| MetricPoint {
            id,
            kind,
            step,
            epoch,
            data: serde_json::from_str(&data).unwrap_or(serde_json::Value::Null),
            at,
        })
        .collect())
}

/// Log lines after `after`, optionally only those containing `contains`. Any member.
pub async fn logs(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
    after: i64,
    contains: Option<&str>,
) -> Result<Vec<LogLine>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    job_row(&mut conn, workspace_id, job_id).await?;
    logs_after(&mut conn, job_id, after, contains).await
}

pub async fn logs_after(
    conn: &mut SqliteConnection,
    job_id: JobId,
    after: i64,
    contains: Option<&str>,
) -> Result<Vec<LogLine>, AppError> {
    let pattern = contains.map(|c| {
        format!(
            "%{}%",
            c.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        )
    });
    let rows: Vec<(i64, String, String, Option<String>)> = sqlx::query_as(
        "SELECT id, line, at, note FROM job_logs WHERE job_id = ? AND id > ? AND (? IS NULL OR line LIKE ? ESCAPE '\\')
         ORDER BY id LIMIT ?",
    )
    .bind(job_id)
    .bind(after)
    .bind(&pattern)
    .bind(&pattern)
    .bind(PAGE)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, line, at, note)| LogLine {
            id,
            line,
            at,
            // A note this server cannot read (written by a newer one) shows as its English line.
            note: note.and_then(|n| serde_json::from_str(&n).ok()),
        })
        .collect())
}

/// The workspace's checkpoints (or one job's), newest first.
pub async fn checkpoints(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: Option<JobId>,
) -> Result<Vec<CheckpointInfo>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    checkpoints_of(&mut conn, job_id, workspace_id).await
}

struct CheckpointRow {
    id: CheckpointId,
    job_id: JobId,
    step: i64,
    epoch: Option<f64>,
    metrics: Option<String>,
    path: String,
    bytes: i64,
    sha256: String,
    best: bool,
    created_at: String,
    deleted_at: Option<String>,
}

impl CheckpointRow {
    fn info(self) -> CheckpointInfo {
        let metrics: Option<Metrics> = self.metrics.and_then(|m| serde_json::from_str(&m).ok());
        CheckpointInfo {
            id: self.id,
            job_id: self.job_id,
            step: self.step,
            epoch: self.epoch,
            metrics: metrics.clone(),
            degenerate: metrics.as_ref().and_then(Metrics::degenerate),
            container_path: format!("{}/{}", containers::build::STORE_DIR, self.path),
            bytes: self.bytes as u64,
            sha256: self.sha256,
            best: self.best,
            created_at: self.created_at,
            deleted_at: self.deleted_at,
        }
    }
}

async fn checkpoints_of(
    conn: &mut SqliteConnection,
    job_id: Option<JobId>,
    workspace_id: WorkspaceId,
) -> Result<Vec<CheckpointInfo>, AppError> {
    let rows = sqlx::query_as!(
        CheckpointRow,
        r#"SELECT id AS "id!: CheckpointId", job_id AS "job_id: JobId", step, epoch, metrics, path, bytes, sha256, best AS "best: bool",
             created_at, deleted_at
           FROM checkpoints WHERE workspace_id = ? AND (? IS NULL OR job_id = ?) ORDER BY id DESC"#,
        workspace_id,
        job_id,
        job_id
    )
    .fetch_all(conn)
    .await?;
    let mut list: Vec<CheckpointInfo> = rows.into_iter().map(CheckpointRow::info).collect();
    only_the_last_best(&mut list);
    Ok(list)
}

/// A checkpoint is stored as "best" when it was the best so far as it was written, so a run that
/// kept improving has several; the job's best is the newest of them, and only it is called best
/// (`list`: newest first, as listed).
fn only_the_last_best(list: &mut [CheckpointInfo]) {
    let mut seen = std::collections::HashSet::new();
    for c in list.iter_mut().filter(|c| c.best) {
        c.best = seen.insert(c.job_id);
    }
}

/// The most a checkpoint's `config.json` may weigh.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The task a checkpoint's `config.json` records (`paddock_task`); a model from elsewhere classifies.
pub(crate) fn config_task(config: &serde_json::Value) -> Task {
    serde_json::from_value(config["paddock_task"].clone()).unwrap_or_default()
}

/// A checkpoint's `config.json` (`path` is the checkpoint's, relative to the workspace's store): a
/// regular file of bounded size, reached through no link.
pub async fn checkpoint_config(
    storage: &Storage,
    workspace_id: WorkspaceId,
    path: &str,
) -> Result<serde_json::Value, AppError> {
    let storage = storage.clone();
    let file = std::path::Path::new(path).join("config.json");
    let bytes = in_volume("the checkpoint's config.json", move || {
        storage.store(workspace_id)?.read(&file, MAX_CONFIG_BYTES)
    })
    .await?;
    serde_json::from_slice(&bytes).map_err(|e| {
        AppError::conflict(
            "checkpoint",
            ErrorCode::CheckpointConfigInvalid,
            format!("the checkpoint's config.json is not valid JSON: {e}"),
        )
    })
}

/// The files of a checkpoint that still exists, open, with a name for its archive. Any member. Its copy
/// in the store holds directories and regular files only; anything else would refuse the download
/// rather than be followed.
pub async fn checkpoint_files(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
) -> Result<(Vec<beneath::Entry>, String), AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let (job_id, step, path, deleted): (i64, i64, String, Option<String>) =
        crate::db::found(&mut conn, CHECKPOINT_FILES, workspace_id, checkpoint_id).await?;
    if deleted.is_some() {
        return Err(AppError::conflict(
            "checkpoint",
            ErrorCode::CheckpointDeleted,
            "this checkpoint's files were removed by retention",
        ));
    }
    drop(conn);
    let storage = storage.clone();
    let files = in_volume("the checkpoint's files", move || {
        storage
            .store(workspace_id)?
            .open_dir(std::path::Path::new(&path))?
            .files(checkpoints::MAX_ENTRIES)
    })
    .await?;
    Ok((files, format!("job{job_id}-step{step}")))
}

/// The clusters jobs may run on, as their schedulers see them now. Any signed-in user: the job form
/// offers them, and what its partitions hold is no workspace's secret; how the cluster is reached and
/// its nodes are for instance admins ([`for_members`]).
pub async fn clusters(jobs: &Jobs, actor: &Actor) -> Vec<ClusterView> {
    let views = jobs.executors.cluster_views().await;
    if actor.is_admin {
        return views;
    }
    views.into_iter().map(for_members).collect()
}

/// What a member who is not an instance admin sees of a cluster: what a job form needs (its name, its
/// partitions with their free GPUs, whether it can be asked now), not how it is reached, which files
/// it reads, its nodes or the words its tools failed with.
fn for_members(view: ClusterView) -> ClusterView {
    ClusterView {
        problem: view.problem.map(|_| {
            "its scheduler could not be asked now; an instance admin sees why".to_string()
        }),
        nodes: Vec::new(),
        shared_dir: None,
        reached_by: String::new(),
        registered: false,
        ..view
    }
}

/// Where a job handed to a cluster is now, as the cluster's scheduler says: waiting in its queue (and
/// why), running on which nodes, or ended. `None` for a job of this server, one not handed over yet, or
/// one the scheduler no longer knows. Viewers.
pub async fn placement(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    workspace_id: WorkspaceId,
    job_id: JobId,
) -> Result<Option<ClusterPlacement>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let sql = "SELECT cluster, cluster_job FROM jobs WHERE workspace_id = ? AND id = ?";
    let (cluster, job): (Option<String>, Option<String>) =
        crate::db::found(&mut conn, sql, workspace_id, job_id).await?;
    drop(conn);
    Ok(match (cluster, job) {
        (Some(cluster), Some(job)) => jobs.executors.placement(&cluster, &job).await,
        _ => None,
    })
}

/// A checkpoint as a PaddleNLP directory (`paddock export-paddle`, in its own process, checked against
/// PaddleNLP's computation on sample texts), its files open for an archive, with the archive's name.
/// The checkpoint's files are copied out of the store through their open handles first, so the exporter
/// reads a private copy and never follows a path into the store; the working directory is gone by the
/// time the caller streams (the open files keep their data). Any member.
pub async fn checkpoint_as_paddle(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
) -> Result<(Vec<beneath::Entry>, String), AppError> {
    let (files, name) = checkpoint_files(db, storage, actor, workspace_id, checkpoint_id).await?;
    let work = crate::pretrained::TempDir(
        storage
            .tmp_dir()
            .join(format!("export-{}", hex::encode(rand::random::<[u8; 8]>()))),
    );
    let (source, out) = (work.0.join("checkpoint"), work.0.join("paddlenlp"));
    let to = source.clone();
    let input_bytes = files.iter().map(|f| f.bytes).sum();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        for mut entry in files {
            let path = to.join(&entry.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::io::copy(&mut entry.file, &mut std::fs::File::create(&path)?)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| internal("copying a checkpoint", e))?
    .map_err(|e| internal("copying a checkpoint", e))?;
    let args = [
        "export-paddle".as_ref(),
        "--checkpoint".as_ref(),
        source.as_os_str(),
        "--output-dir".as_ref(),
        out.as_os_str(),
    ];
    storage
        .run_trainer(args, input_bytes)
        .await?
        .map_err(|failure| match failure {
            Failure::Refused(why) => {
                AppError::conflict("checkpoint", ErrorCode::PaddleExportRefused, why)
            }
            other => other.invalid(
                "checkpoint",
                ErrorCode::PaddleExportRefused,
                "the checkpoint cannot be exported",
            ),
        })?;
    let exported = tokio::task::spawn_blocking(move || beneath::Dir::open(&out)?.files(64))
        .await
        .map_err(|e| internal("reading an export", e))?
        .map_err(|e| internal("reading an export", e))?;
    drop(work);
    Ok((exported, format!("{name}-paddlenlp")))
}

#[cfg(test)]
mod tests;

//! Evaluations: a checkpoint measured on any dataset of its workspace — accuracy, macro-F1, per-class
//! precision/recall/F1 and the confusion matrix — by the trainer's own `paddock eval`, the numbers a user
//! gets from the command line for the same files. Editors and owners start one; every member reads the
//! results. A dataset whose labels the checkpoint was not trained on is refused up front, naming them.
//!
//! The evaluator is a background process started by the local executor ([`crate::executor`]), like a
//! local job's trainer: in `runs/evaluations/<id>/` (removed once its outcome is recorded) the run-file
//! wrapper writes the metrics to `metrics.json`, messages to `eval.log` and finally its exit status to
//! `exit_code`. The row is the truth: it records the wrapper's pid, so a restarted server follows a run that outlived it, finishes one that ended
//! meanwhile, and starts again one that was still waiting. One evaluation runs at a time
//! ([`Jobs::evaluations`]); the others wait as `queued`.

use contracts::ids::{CheckpointId, DatasetId, EvaluationId, JobId, WorkspaceId};
use contracts::task::Task;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;

use super::access;
use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use super::executor::{self, ExecutorKind, Handle, Unit, Work};
use super::jobs::Jobs;
use super::storage::in_volume;
use crate::transitions::Machine;
use contracts::error::internal;
use contracts::error::{AppError, ErrorCode};
use contracts::types::{EvaluationInfo, EvaluationRequest, EvaluationStatus, Role};
use status::Reason;

/// How often a running evaluation is looked at.
const POLL: Duration = Duration::from_millis(300);
/// Longest failure message kept (the tail of the evaluator's stderr).
const MESSAGE_CHARS: usize = 2000;

struct Row {
    id: EvaluationId,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    job_id: JobId,
    checkpoint_step: i64,
    dataset_id: Option<DatasetId>,
    dataset_name: String,
    dataset_sha256: String,
    status: String,
    status_message: Option<String>,
    rows: Option<i64>,
    accuracy: Option<f64>,
    macro_f1: Option<f64>,
    loss: Option<f64>,
    labels_json: Option<String>,
    per_class_json: Option<String>,
    confusion_json: Option<String>,
    entities_json: Option<String>,
    created_by: Option<String>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    cluster: Option<String>,
    cluster_job: Option<String>,
}

// `evaluation_rows!("WHERE …", args…)`: evaluations, with their checkpoint's job and step and who
// ran them (see `db::row_query!`).
crate::db::row_query!(
    $ evaluation_rows,
    Row,
    r#"SELECT e.id AS "id!: contracts::ids::EvaluationId", e.workspace_id AS "workspace_id: contracts::ids::WorkspaceId",
        e.checkpoint_id AS "checkpoint_id: contracts::ids::CheckpointId", c.job_id AS "job_id: contracts::ids::JobId", c.step AS checkpoint_step,
        e.dataset_id AS "dataset_id: contracts::ids::DatasetId", e.dataset_name, e.dataset_sha256, e.status, e.status_message, e.rows, e.accuracy,
        e.macro_f1, e.loss, e.labels_json, e.per_class_json, e.confusion_json, e.entities_json,
        u.username AS "created_by?", e.created_at, e.started_at, e.finished_at, e.cluster, e.cluster_job
      FROM evaluations e JOIN checkpoints c ON c.id = e.checkpoint_id
      LEFT JOIN users u ON u.id = e.created_by"#
);

impl Row {
    fn info(self) -> Result<EvaluationInfo, AppError> {
        fn parsed<T: serde::de::DeserializeOwned + Default>(json: Option<&str>) -> T {
            json.and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_default()
        }
        Ok(EvaluationInfo {
            status: EvaluationStatus::parse(&self.status)
                .ok_or_else(|| internal("stored evaluation status", &self.status))?,
            labels: parsed(self.labels_json.as_deref()),
            per_class: parsed(self.per_class_json.as_deref()),
            confusion: parsed(self.confusion_json.as_deref()),
            entities: self
                .entities_json
                .as_deref()
                .and_then(|j| serde_json::from_str(j).ok()),
            id: self.id,
            workspace_id: self.workspace_id,
            checkpoint_id: self.checkpoint_id,
            job_id: self.job_id,
            checkpoint_step: self.checkpoint_step,
            dataset_id: self.dataset_id,
            dataset_name: self.dataset_name,
            dataset_sha256: self.dataset_sha256,
            status_message: self.status_message,
            rows: self.rows.map(|r| r as u64),
            accuracy: self.accuracy,
            macro_f1: self.macro_f1,
            loss: self.loss,
            created_by: self.created_by,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            cluster: self.cluster,
            cluster_job: self.cluster_job,
        })
    }
}

/// The workspace's evaluations, newest first: all of them, one checkpoint's, or one job's. Any member.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    checkpoint_id: Option<CheckpointId>,
    job_id: Option<JobId>,
) -> Result<Vec<EvaluationInfo>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    evaluation_rows!(
        "WHERE e.workspace_id = ? AND (? IS NULL OR e.checkpoint_id = ?) AND (? IS NULL OR c.job_id = ?)
         ORDER BY e.id DESC",
        workspace_id,
        checkpoint_id,
        checkpoint_id,
        job_id,
        job_id
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(Row::info)
    .collect()
}

/// One evaluation of a checkpoint. Any member.
pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    evaluation_id: EvaluationId,
) -> Result<EvaluationInfo, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    evaluation_rows!(
        "WHERE e.workspace_id = ? AND e.checkpoint_id = ? AND e.id = ?",
        workspace_id,
        checkpoint_id,
        evaluation_id
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(AppError::NotFound)?
    .info()
}

/// Checks that `dataset_id` can be evaluated with checkpoint `checkpoint_id` (files still there, labels
/// known to the checkpoint), records the evaluation and starts it. Editors and owners.
pub async fn start(
    db: &SqlitePool,
    jobs: &Arc<Jobs>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    request: EvaluationRequest,
) -> Result<EvaluationInfo, AppError> {
    let EvaluationRequest {
        dataset_id,
        cluster,
    } = request;
    if let Some(name) = &cluster {
        jobs.executors
            .runs_on(name, None, ExecutorKind::Local, 0)
            .await?;
    }
    let (resource, dataset_name, dataset_sha256) = {
        let mut conn = access::connect(db, actor, workspace_id, Role::Editor).await?;
        let (job_id, step, path, deleted): (JobId, i64, String, Option<String>) = crate::db::found(
            &mut conn,
            crate::jobs::CHECKPOINT_FILES,
            workspace_id,
            checkpoint_id,
        )
        .await?;
        if deleted.is_some() {
            return Err(AppError::conflict(
                "checkpoint_id",
                ErrorCode::CheckpointDeleted,
                "this checkpoint's files were removed by retention; it can no longer be evaluated",
            ));
        }
        let dataset: Option<(String, String, String, Task)> = sqlx::query_as(
            "SELECT name, sha256, report_json, task FROM datasets WHERE workspace_id = ? AND id = ?",
        )
        .bind(workspace_id)
        .bind(dataset_id)
        .fetch_optional(&mut *conn)
        .await?;
        let Some((name, sha256, report, data_task)) = dataset else {
            return Err(AppError::invalid(
                "dataset_id",
                ErrorCode::DatasetNotFound,
                format!("dataset {dataset_id} is not in this workspace"),
            ));
        };
        let config = crate::jobs::checkpoint_config(&jobs.storage, workspace_id, &path).await?;
        let model_task = crate::jobs::config_task(&config);
        if model_task != data_task {
            return Err(AppError::invalid(
                "dataset_id",
                ErrorCode::LabelsMismatch,
                format!(
                    "dataset {name:?} is for {data_task}, this checkpoint is a {model_task} model"
                ),
            ));
        }
        let known = checkpoint_labels(&config);
        // An entity dataset counts entity types; the model knows them as `B-`/`I-` tags.
        let known: Vec<String> = match data_task {
            Task::Ner => known
                .iter()
                .filter_map(|l| l.strip_prefix("B-").map(str::to_string))
                .collect(),
            _ => known,
        };
        let labels: Vec<String> = crate::datasets::stored_report(&report)?
            .label_distribution
            .into_keys()
            .collect();
        let unknown = unknown_labels(&labels, &known);
        if !unknown.is_empty() {
            return Err(AppError::invalid(
                "dataset_id",
                ErrorCode::LabelsMismatch,
                format!(
                    "dataset {name:?} has label(s) this checkpoint was not trained on: {} (the checkpoint knows {})",
                    unknown.join(", "),
                    known.join(", ")
                ),
            ));
        }
        // The audit log names the checkpoint by its job and step; the activity page words the step
        // in the reader's language from the detail.
        let job: String = sqlx::query_scalar("SELECT name FROM jobs WHERE id = ?")
            .bind(job_id)
            .fetch_optional(&mut *conn)
            .await?
            .unwrap_or_else(|| format!("#{job_id}"));
        ((job, job_id, step), name, sha256)
    };

    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let id: EvaluationId = sqlx::query_scalar(
        "INSERT INTO evaluations (workspace_id, checkpoint_id, dataset_id, dataset_name, dataset_sha256, cluster, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(workspace_id)
    .bind(checkpoint_id)
    .bind(dataset_id)
    .bind(&dataset_name)
    .bind(&dataset_sha256)
    .bind(&cluster)
    .bind(actor.user_id)
    .bind(super::now())
    .fetch_one(&mut *tx)
    .await?;
    let (job, job_id, step) = resource;
    let entry = Entry::in_workspace(actor, workspace_id, "checkpoint.evaluate", &job);
    let detail = serde_json::json!({
        "evaluation_id": id, "checkpoint_id": checkpoint_id, "job_id": job_id, "step": step,
        "dataset_id": dataset_id, "dataset": dataset_name, "cluster": cluster,
    });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    spawn(db.clone(), jobs.clone(), id);
    get(db, actor, workspace_id, checkpoint_id, id).await
}

/// The label names of a checkpoint in id order, read from its `config.json` the way the trainer reads
/// them (`num_labels`, else as many as `id2label` has, else transformers' default of 2; a missing name is
/// `LABEL_<i>`). The app does not link the trainer (libtorch), hence this small copy of the rule.
fn checkpoint_labels(config: &serde_json::Value) -> Vec<String> {
    let id2label = config["id2label"].as_object();
    let count = config["num_labels"]
        .as_u64()
        .filter(|n| *n > 0)
        .map(|n| n as usize)
        .or_else(|| id2label.map(|m| m.len()).filter(|n| *n > 0))
        .unwrap_or(2);
    (0..count)
        .map(|i| {
            id2label
                .and_then(|m| m.get(&i.to_string()))
                .and_then(|v| v.as_str())
                .map_or_else(|| format!("LABEL_{i}"), str::to_string)
        })
        .collect()
}

/// The dataset labels the checkpoint cannot score. A label is known by name, or — like the trainer's
/// `LabelMap::id` — as an integer id in range (data labelled 0/1 against names negative/positive).
fn unknown_labels(dataset: &[String], known: &[String]) -> Vec<String> {
    dataset
        .iter()
        .filter(|l| !known.contains(l) && !l.parse::<usize>().is_ok_and(|i| i < known.len()))
        .cloned()
        .collect()
}

/// After a restart: evaluations still waiting are started again, running ones followed to their end.
pub async fn recover(db: &SqlitePool, jobs: &Arc<Jobs>) {
    match sqlx::query_scalar::<_, EvaluationId>(
        "SELECT id FROM evaluations WHERE status IN ('queued', 'running') ORDER BY id",
    )
    .fetch_all(db)
    .await
    {
        Ok(ids) => {
            for id in ids {
                spawn(db.clone(), jobs.clone(), id);
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot recover evaluations"),
    }
}

/// Runs (or follows) evaluation `id` in the background, once an evaluator slot of this server is free
/// (one on a cluster takes none: its scheduler queues it).
fn spawn(db: SqlitePool, jobs: Arc<Jobs>, id: EvaluationId) {
    tokio::spawn(async move {
        let on_cluster: Option<Option<String>> =
            sqlx::query_scalar("SELECT cluster FROM evaluations WHERE id = ?")
                .bind(id)
                .fetch_optional(&db)
                .await
                .unwrap_or(None);
        let _slot = match on_cluster.flatten() {
            Some(_) => None,
            None => match jobs.evaluations.acquire().await {
                Ok(slot) => Some(slot),
                Err(_) => return,
            },
        };
        if let Err(e) = run(&db, &jobs, id).await {
            tracing::error!(evaluation_id = %id, error = %e, "evaluation failed to run");
            let _ = fail(
                &db,
                id,
                Reason::StartFailed,
                "the evaluation could not be run; see the server log",
            )
            .await;
        }
    });
}

/// What the evaluator needs, read when it starts (the dataset may have gone meanwhile).
#[derive(sqlx::FromRow)]
struct Launch {
    workspace_id: WorkspaceId,
    status: String,
    pid: Option<i64>,
    cluster: Option<String>,
    cluster_job: Option<String>,
    checkpoint_path: String,
    checkpoint_deleted: Option<String>,
    dataset_path: Option<String>,
    format: Option<String>,
    text_column: Option<String>,
    pair_column: Option<String>,
    label_column: Option<String>,
    label_names_json: Option<String>,
}

#[tracing::instrument(skip(db, jobs))]
async fn run(db: &SqlitePool, jobs: &Jobs, id: EvaluationId) -> Result<(), AppError> {
    let Some(l) = sqlx::query_as::<_, Launch>(
        "SELECT e.workspace_id, e.status, e.pid, e.cluster, e.cluster_job, c.path AS checkpoint_path, c.deleted_at AS checkpoint_deleted,
             d.path AS dataset_path, d.format, d.text_column, d.pair_column, d.label_column, d.label_names_json
         FROM evaluations e JOIN checkpoints c ON c.id = e.checkpoint_id LEFT JOIN datasets d ON d.id = e.dataset_id
         WHERE e.id = ?",
    )
    .bind(id)
    .fetch_optional(db)
    .await?
    else {
        return Ok(()); // its job (and with it the checkpoint and this row) was deleted
    };
    if EvaluationStatus::parse(&l.status).is_some_and(EvaluationStatus::is_final) {
        return Ok(());
    }
    // The evaluator runs as the server, so everything it touches is the server's: the checkpoint's copy
    // and the dataset in the workspace's store, and its own folder under `runs/` (removed once its
    // outcome is recorded).
    let store = jobs.storage.store_dir(l.workspace_id);
    let dir = run_rel(id);
    let handle = match Handle::of(l.pid, None, l.cluster.as_deref(), l.cluster_job.as_deref()) {
        Some(handle) => handle,
        None => {
            let (Some(data), Some(format), Some(text), Some(label)) =
                (&l.dataset_path, &l.format, &l.text_column, &l.label_column)
            else {
                return fail(
                    db,
                    id,
                    Reason::InputsGone,
                    "the dataset was deleted before the evaluation started",
                )
                .await;
            };
            let model = store.join(&l.checkpoint_path);
            let present = {
                let (storage, path) = (jobs.storage.clone(), l.checkpoint_path.clone());
                in_volume("the checkpoint", move || {
                    storage.store(l.workspace_id)?.open_dir(Path::new(&path))
                })
                .await
                .is_ok()
            };
            if l.checkpoint_deleted.is_some() || !present {
                return fail(
                    db,
                    id,
                    Reason::InputsGone,
                    "the checkpoint's files were removed before the evaluation started",
                )
                .await;
            }
            let names = crate::datasets::stored_label_names(l.label_names_json.as_deref())?;
            let args = eval_args(
                &model,
                &store.join(data),
                format,
                (text, l.pair_column.as_deref(), label, &names),
                jobs.cpu_threads,
            );
            let handle = launch(
                db,
                jobs,
                l.workspace_id,
                id,
                l.cluster.as_deref(),
                &dir,
                args,
            )
            .await?;
            let mut tx = write_tx(db).await?;
            status::Evaluation::transition(
                &mut tx,
                id,
                EvaluationStatus::Running,
                Reason::Started,
                None,
            )
            .await?;
            sqlx::query(
                "UPDATE evaluations SET pid = ?, cluster_job = ?, started_at = ? WHERE id = ?",
            )
            .bind(handle.pid())
            .bind(handle.cluster_job())
            .bind(super::now())
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            handle
        }
    };
    // A refused `exit_code` (a link, a FIFO) counts as none: the evaluator's end is then seen as it
    // disappearing.
    let exit_code = || {
        let (storage, dir) = (jobs.storage.clone(), dir.clone());
        async move {
            in_volume("the evaluation's exit status", move || {
                executor::exit_code(&storage.runs()?, &dir)
            })
            .await
            .unwrap_or(None)
        }
    };
    loop {
        // The exit status is read before liveness: a wrapper that just ended has written it.
        if let Some(code) = exit_code().await {
            return finish(db, jobs, id, &dir, code).await;
        }
        if jobs.executors.is_running(&handle).await == Some(false) {
            if let Some(code) = exit_code().await {
                return finish(db, jobs, id, &dir, code).await;
            }
            let message = match jobs.executors.ended_how(&handle).await {
                Some(how) => format!("the evaluator did not finish: {how}"),
                None => "the evaluator disappeared (the machine restarted?) before finishing"
                    .to_string(),
            };
            return fail(db, id, Reason::Exited, &message).await;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `paddock eval`'s arguments: the checkpoint on the CPU (GPUs belong to the jobs the scheduler placed
/// there), the dataset as it was validated and read with its label names (`columns`: text, the pair's
/// second text where it has one, label, names), metrics as one JSON object.
fn eval_args(
    model: &Path,
    data: &Path,
    format: &str,
    columns: (&str, Option<&str>, &str, &BTreeMap<String, String>),
    threads: usize,
) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let (text_column, pair_column, label_column, names) = columns;
    let pair = pair_column
        .map(|column| vec!["--text-pair-column".to_string(), column.to_string()])
        .unwrap_or_default();
    let args: Vec<String> = [
        "--model",
        &path(model),
        "--data",
        &path(data),
        "--format",
        format,
        "--text-column",
        text_column,
        "--label-column",
        label_column,
        "--label-names",
        &contracts::data::format_label_names(names),
        "--device",
        "cpu",
        "--threads",
        &threads.to_string(),
        "--json",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    args.into_iter().chain(pair).collect()
}

/// An evaluation's run folder relative to the server's `runs/`.
pub(crate) fn run_rel(id: EvaluationId) -> std::path::PathBuf {
    Path::new("evaluations").join(id.to_string())
}

/// Starts the evaluator in a fresh `dir` (under `runs/`), on the CPU (GPUs belong to the jobs the
/// scheduler placed there): a process of the server, or a batch job on `cluster` (whose nodes share
/// `runs/`); returns where it runs.
async fn launch(
    db: &SqlitePool,
    jobs: &Jobs,
    workspace_id: WorkspaceId,
    id: EvaluationId,
    cluster: Option<&str>,
    dir: &Path,
    args: Vec<String>,
) -> Result<Handle, AppError> {
    let (executor, placement) = match cluster {
        Some(name) => (
            jobs.executors
                .runs_on(name, None, ExecutorKind::Local, 0)
                .await?,
            crate::admin::cluster_placement(db, workspace_id, name, None).await?,
        ),
        None => (jobs.executor(ExecutorKind::Local), Default::default()),
    };
    let (root, rel) = (executor.run_root(workspace_id), dir.to_path_buf());
    let folder = in_volume("the evaluation's directory", move || {
        let runs = root?;
        // Left by an attempt that crashed between starting and recording its pid.
        runs.remove_all(&rel)?;
        runs.create_dir_all(&rel, 0o755)
    })
    .await?;
    let mut command = vec!["eval".to_string()];
    command.extend(args);
    let work = Work {
        unit: Unit::Evaluation(id),
        workspace_id,
        folder,
        rel: dir.to_path_buf(),
        args: command,
        stdout: "metrics.json",
        log: "eval.log",
        log_limit: MAX_OUTPUT_READ,
        devices: Vec::new(),
        gpus: 0,
        nodes: 1,
        image: None,
        time_limit: None,
        placement,
    };
    executor
        .start(work)
        .await
        .map_err(|e| internal("starting the evaluator", e))
}

/// The most of the evaluator's metrics and log read back (the end of the log, where its error is).
const MAX_OUTPUT_READ: u64 = 1 << 20;

/// Records how the evaluator ended, then removes its folder.
async fn finish(
    db: &SqlitePool,
    jobs: &Jobs,
    id: EvaluationId,
    dir: &Path,
    code: i64,
) -> Result<(), AppError> {
    // What the evaluator wrote: bounded, through no link.
    let read = |name: &str, what: &'static str| {
        let (storage, file) = (jobs.storage.clone(), dir.join(name));
        async move {
            in_volume(what, move || {
                storage.runs()?.read_tail(&file, MAX_OUTPUT_READ)
            })
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
        }
    };
    let printed = read("metrics.json", "the evaluation's metrics").await;
    let log = read("eval.log", "the evaluation's log").await;
    let outcome = record(db, id, code, &printed, &log).await;
    // The outcome is in the database now (or could not be, and the next start tries again).
    if outcome.is_ok() {
        let (storage, dir) = (jobs.storage.clone(), dir.to_path_buf());
        if let Err(e) = in_volume("removing the evaluation's folder", move || {
            storage.runs()?.remove_all(&dir)
        })
        .await
        {
            tracing::warn!(evaluation_id = %id, error = %e, "could not remove an evaluation's folder");
        }
    }
    outcome
}

/// Records the evaluator's metrics (`printed`: what `paddock eval --json` printed), or the last words
/// of its stderr (`log`).
async fn record(
    db: &SqlitePool,
    id: EvaluationId,
    code: i64,
    printed: &str,
    log: &str,
) -> Result<(), AppError> {
    let metrics = serde_json::from_str::<contracts::metrics::Metrics>(printed.trim());
    match (code, metrics) {
        (0, Ok(m)) => {
            // An entity evaluation's confusion has a last row and column for "no entity".
            let none = m.entities.is_some().then_some("O");
            let labels: Vec<&str> = m
                .per_class
                .iter()
                .map(|c| c.label.as_str())
                .chain(none)
                .collect();
            let mut tx = write_tx(db).await?;
            let moved = status::Evaluation::transition(
                &mut tx,
                id,
                EvaluationStatus::Succeeded,
                Reason::Completed,
                None,
            )
            .await?;
            if moved.is_none() {
                return Ok(()); // ended meanwhile (its workspace deleted)
            }
            sqlx::query(
                "UPDATE evaluations SET status_message = NULL, rows = ?, accuracy = ?, macro_f1 = ?,
                     loss = ?, labels_json = ?, per_class_json = ?, confusion_json = ?, entities_json = ?,
                     finished_at = ?
                 WHERE id = ?",
            )
            .bind(m.count as i64)
            .bind(m.accuracy)
            .bind(m.macro_f1)
            .bind(m.loss)
            .bind(json(&labels))
            .bind(json(&m.per_class))
            .bind(json(&m.confusion))
            .bind(m.entities.as_ref().map(json))
            .bind(super::now())
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }
        (code, _) => {
            let message = failure_message(log).unwrap_or_else(|| {
                format!("the evaluator exited with code {code} without a message")
            });
            fail(db, id, Reason::EvaluatorFailed, &message).await
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The evaluator's own explanation: its `error: …` paragraph (the message may span lines, as the
/// validator's list of bad lines does), else its last lines; without log noise, cut to a readable size.
fn failure_message(log: &str) -> Option<String> {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let start = lines
        .iter()
        .rposition(|l| l.starts_with("error: "))
        .unwrap_or(lines.len().saturating_sub(5));
    let text = lines[start..].join("\n");
    let text = text.strip_prefix("error: ").unwrap_or(&text).trim();
    (!text.is_empty()).then(|| text.chars().take(MESSAGE_CHARS).collect())
}

async fn fail(
    db: &SqlitePool,
    id: EvaluationId,
    reason: Reason,
    message: &str,
) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    status::fail(&mut tx, id, reason, message).await?;
    tx.commit().await?;
    Ok(())
}

pub mod status;

#[cfg(test)]
mod tests;

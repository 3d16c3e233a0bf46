//! `paddock job …` and `paddock ckpt …`: fine-tuning jobs and their checkpoints from a shell, through the
//! REST API like the dashboard. `job logs -f` follows the live stream until the job ends and exits with
//! 0 only when it succeeded, so scripts can wait for a job; `ckpt eval` likewise waits for an evaluation.

use contracts::ids::{CheckpointId, JobId, SweepId, WorkspaceId};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use contracts::runs::{JobQuery, JobSort, ModelFilter};
use contracts::types::{
    CheckpointInfo, EvaluationInfo, EvaluationStatus, JobDetail, JobSpec, JobStatus, JobSummary,
    LogLine,
};
use reqwest::Method;

use crate::client::{number, print_json, print_list, resolve, text, Api, Connection};

#[derive(Debug, Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: JobCommand,
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Queue a job from a spec file (JSON or TOML: the fields of the REST body) and/or flags.
    Submit(Box<SubmitArgs>),
    /// The workspace's jobs as runs: newest first, or sorted and filtered.
    List(ListArgs),
    /// One job: status, progress, its job.toml and checkpoints.
    Show(JobTarget),
    /// The job's log; `-f` follows it live until the job ends.
    Logs(LogsArgs),
    /// Cancel: a queued job at once, a running one gracefully (with a final checkpoint).
    Cancel(JobTarget),
}

#[derive(Debug, Args)]
pub struct WorkspaceArg {
    /// Workspace id or name.
    #[arg(long, short = 'w', env = "PADDOCK_WORKSPACE")]
    pub workspace: String,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Only jobs in this status (queued, running, succeeded, failed, cancelled…).
    #[arg(long)]
    pub status: Option<String>,
    /// Only jobs trained on this dataset (id or name).
    #[arg(long)]
    pub dataset: Option<String>,
    /// Only jobs that started from `scratch[:PRESET]`, `pretrained[:ID]` or `checkpoint[:ID]`.
    #[arg(long)]
    pub model: Option<ModelFilter>,
    /// Only the trials of this sweep.
    #[arg(long)]
    pub sweep: Option<SweepId>,
    /// Only jobs queued on or after / on or before this day (YYYY-MM-DD, UTC).
    #[arg(long)]
    pub since: Option<String>,
    #[arg(long)]
    pub until: Option<String>,
    /// Order: created (newest first, the default), best (best dev score first), duration, name.
    #[arg(long)]
    pub sort: Option<JobSort>,
    /// The other way round (runs without the value stay last).
    #[arg(long)]
    pub reverse: bool,
}

#[derive(Debug, Args)]
pub struct JobTarget {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Job id.
    pub job: JobId,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub target: JobTarget,
    /// Follow until the job ends; the exit code is 0 only if it succeeded.
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// A spec file (`.json` or `.toml`); flags override it.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    #[arg(long)]
    pub name: Option<String>,
    /// What the job learns: classification, matching or ner. By default the training dataset's task
    /// (a dataset of another task is refused by the server, saying so).
    #[arg(long)]
    pub task: Option<contracts::task::Task>,
    /// Training dataset (id or name).
    #[arg(long)]
    pub dataset: Option<String>,
    /// Dev dataset (id or name).
    #[arg(long)]
    pub dev_dataset: Option<String>,
    /// Model shape: base, medium, mini, micro, nano, tiny.
    #[arg(long)]
    pub preset: Option<String>,
    #[arg(long)]
    pub epochs: Option<u32>,
    #[arg(long)]
    pub batch_size: Option<u32>,
    #[arg(long)]
    pub lr: Option<f64>,
    #[arg(long)]
    pub max_steps: Option<u32>,
    #[arg(long)]
    pub max_seq_len: Option<u32>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Processes that train it together (data parallelism): one per GPU by default; on the CPU, as
    /// many as given.
    #[arg(long)]
    pub ranks: Option<u32>,
    /// Run on this cluster of the server (`slurm`) instead of on the server itself.
    #[arg(long)]
    pub cluster: Option<String>,
    /// On the cluster: the partition (queue) to run in.
    #[arg(long)]
    pub partition: Option<String>,
    /// On the cluster: the nodes the run spans, each with `--gpus` GPUs and `--ranks` ranks.
    #[arg(long)]
    pub nodes: Option<u32>,
    #[arg(long)]
    pub priority: Option<i32>,
    /// Follow the job's log until it ends (exit code 0 only if it succeeded).
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct CkptArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: CkptCommand,
}

#[derive(Debug, Subcommand)]
pub enum CkptCommand {
    /// The workspace's checkpoints, newest first.
    List(CkptList),
    /// Download a checkpoint as a tar archive of its Hugging Face directory (or, `--format paddlenlp`, of
    /// a PaddleNLP one).
    Download(CkptDownload),
    /// Evaluate a checkpoint on a workspace dataset (accuracy, macro-F1, per class, confusion matrix);
    /// waits for the result and exits 0 only when the evaluation succeeded.
    Eval(CkptEval),
}

#[derive(Debug, Args)]
pub struct CkptList {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Only this job's.
    #[arg(long)]
    pub job: Option<JobId>,
}

#[derive(Debug, Args)]
pub struct CkptDownload {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    pub checkpoint: CheckpointId,
    /// Where to write the archive [default: `job<J>-step<S>.tar` in the current directory].
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// `hf`: the Hugging Face directory as kept; `paddlenlp`: converted for PaddleNLP's
    /// `from_pretrained` (checked against PaddleNLP's computation first).
    #[arg(long, default_value = "hf", value_parser = ["hf", "paddlenlp"])]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct CkptEval {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    pub checkpoint: CheckpointId,
    /// The dataset to evaluate on (id or name); its labels must be ones the checkpoint was trained on.
    #[arg(long, short = 'd')]
    pub dataset: String,
    /// Run the evaluator on this cluster of the server (`slurm`) instead of on the server itself.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Print the evaluation's id and return at once instead of waiting for the result.
    #[arg(long)]
    pub no_wait: bool,
}

pub async fn run(args: JobArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    let json = args.connection.json;
    match &args.command {
        JobCommand::Submit(s) => {
            let ws = api.workspace(&s.workspace.workspace).await?;
            let spec = submit_spec(&api, ws, s).await?;
            let job: JobDetail = api
                .send(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/jobs"),
                    Some(&spec),
                )
                .await?;
            eprintln!("queued job {} ({})", job.summary.id, job.summary.name);
            if s.follow {
                return follow(&api, ws, job.summary.id).await;
            }
            if json {
                print_json(&job)?;
            } else {
                println!("{}", job.summary.id);
            }
            Ok(0)
        }
        JobCommand::List(l) => {
            let ws = api.workspace(&l.workspace.workspace).await?;
            let status = match &l.status {
                Some(s) => Some(JobStatus::parse(s).ok_or_else(|| {
                    let all: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
                    anyhow::anyhow!("--status `{s}` is not one of {}", all.join(", "))
                })?),
                None => None,
            };
            let dataset_id = match &l.dataset {
                Some(d) => Some(api.dataset(ws, d).await?),
                None => None,
            };
            let query = JobQuery {
                status,
                dataset_id,
                model: l.model.clone(),
                sweep_id: l.sweep,
                since: l.since.clone(),
                until: l.until.clone(),
                sort: l.sort,
                reverse: l.reverse.then_some(true),
            };
            let jobs: Vec<JobSummary> = api
                .get_query(&format!("/api/v1/workspaces/{ws}/jobs"), &query)
                .await?;
            let columns = [
                text("ID", 6),
                text("NAME", 24),
                text("STATUS", 11),
                number("STEP", 12),
                text("BEST", 18),
                text("GPUS", 8),
                text("CREATED", 20),
            ];
            print_list(json, &jobs, &columns, |j| {
                let progress = match j.total_steps {
                    Some(total) => format!("{}/{total}", j.step),
                    None => j.step.to_string(),
                };
                let gpus = if j.gpu_indices.is_empty() {
                    j.gpus.to_string()
                } else {
                    format!("{:?}", j.gpu_indices)
                };
                let (id, status) = (j.id.to_string(), j.status.as_str().to_string());
                let best = j.best.as_ref().map_or_else(String::new, |b| {
                    format!("{} {:.4} @{}", b.metric, b.value, b.step)
                });
                vec![
                    id,
                    j.name.clone(),
                    status,
                    progress,
                    best,
                    gpus,
                    j.created_at.clone(),
                ]
            })?;
            Ok(0)
        }
        JobCommand::Show(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            let job: JobDetail = api
                .get(&format!("/api/v1/workspaces/{ws}/jobs/{}", t.job))
                .await?;
            if json {
                print_json(&job)?;
            } else {
                let s = &job.summary;
                println!("job {} ({}) — {}", s.id, s.name, s.status.as_str());
                if let Some(m) = &s.status_message {
                    println!("  message   {m}");
                }
                println!(
                    "  step      {}{}",
                    s.step,
                    s.total_steps
                        .map(|t| format!(" of {t}"))
                        .unwrap_or_default()
                );
                println!(
                    "  executor  {} (GPUs {:?})",
                    s.executor.as_str(),
                    s.gpu_indices
                );
                for c in &job.checkpoints {
                    let state = c.state().as_str();
                    println!(
                        "  checkpoint {} step {} {} {} bytes sha256 {}",
                        c.id,
                        c.step,
                        state,
                        c.bytes,
                        &c.sha256[..c.sha256.len().min(12)]
                    );
                }
                println!("\n{}", job.config_toml);
            }
            Ok(0)
        }
        JobCommand::Logs(l) => {
            let ws = api.workspace(&l.target.workspace.workspace).await?;
            if l.follow {
                return follow(&api, ws, l.target.job).await;
            }
            let mut after = 0;
            loop {
                let lines: Vec<LogLine> = api
                    .get(&format!(
                        "/api/v1/workspaces/{ws}/jobs/{}/logs?after={after}",
                        l.target.job
                    ))
                    .await?;
                let Some(last) = lines.last() else { break };
                after = last.id;
                let mut out = std::io::stdout().lock();
                for line in &lines {
                    writeln!(out, "{}", line.line)?;
                }
            }
            Ok(0)
        }
        JobCommand::Cancel(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            let job: JobDetail = api
                .send::<(), _>(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/jobs/{}/cancel", t.job),
                    None,
                )
                .await?;
            println!("{}", job.summary.status.as_str());
            Ok(0)
        }
    }
}

pub async fn run_ckpt(args: CkptArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    match &args.command {
        CkptCommand::List(l) => {
            let ws = api.workspace(&l.workspace.workspace).await?;
            let all: Vec<CheckpointInfo> = api
                .get(&format!("/api/v1/workspaces/{ws}/checkpoints"))
                .await?;
            let all: Vec<CheckpointInfo> = all
                .into_iter()
                .filter(|c| l.job.is_none_or(|j| c.job_id == j))
                .collect();
            let columns = [
                text("ID", 6),
                text("JOB", 6),
                number("STEP", 7),
                text("STATE", 10),
                number("BYTES", 12),
                text("SHA256", 14),
                text("METRICS", 0),
            ];
            print_list(args.connection.json, &all, &columns, |c| {
                let state = c.state().as_str();
                let metrics = (c.metrics.as_ref())
                    .map(|m| format!("acc {:.4} f1 {:.4}", m.accuracy, m.macro_f1));
                let numbers = [c.id.get(), c.job_id.get(), c.step].map(|n| n.to_string());
                let [id, job, step] = numbers;
                let sha = c.sha256[..c.sha256.len().min(12)].to_string();
                let (bytes, metrics) = (c.bytes.to_string(), metrics.unwrap_or_default());
                vec![id, job, step, state.to_string(), bytes, sha, metrics]
            })?;
            Ok(0)
        }
        CkptCommand::Download(d) => {
            let ws = api.workspace(&d.workspace.workspace).await?;
            let mut response = api
                .request::<()>(
                    Method::GET,
                    &format!(
                        "/api/v1/workspaces/{ws}/checkpoints/{}/download?format={}",
                        d.checkpoint, d.format
                    ),
                    None,
                )
                .await?;
            let default_name = response
                .headers()
                .get("content-disposition")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split("filename=\"").nth(1))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_else(|| format!("checkpoint-{}.tar", d.checkpoint));
            let path = d
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from(default_name));
            // Written under a temporary name and renamed when complete: an interrupted download leaves
            // no archive that looks whole.
            let partial = path.with_extension("tar.partial");
            let mut file = std::fs::File::create(&partial)
                .with_context(|| format!("cannot write {}", partial.display()))?;
            let mut bytes = 0u64;
            while let Some(chunk) = response.chunk().await.context("the download broke")? {
                file.write_all(&chunk)?;
                bytes += chunk.len() as u64;
            }
            file.sync_all()?;
            std::fs::rename(&partial, &path)?;
            eprintln!("wrote {} ({bytes} bytes)", path.display());
            Ok(0)
        }
        CkptCommand::Eval(e) => evaluate(&api, e, args.connection.json).await,
    }
}

/// How often `ckpt eval` asks whether the evaluation is over.
const EVAL_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// `ckpt eval`: starts the evaluation, waits for it and prints the metrics; 0 when it succeeded.
async fn evaluate(api: &Api, e: &CkptEval, json: bool) -> anyhow::Result<i32> {
    let ws = api.workspace(&e.workspace.workspace).await?;
    let dataset_id = api.dataset(ws, &e.dataset).await?;
    let base = format!(
        "/api/v1/workspaces/{ws}/checkpoints/{}/evaluations",
        e.checkpoint
    );
    let mut evaluation: EvaluationInfo = api
        .send(
            Method::POST,
            &base,
            Some(&contracts::types::EvaluationRequest {
                dataset_id,
                cluster: e.cluster.clone(),
            }),
        )
        .await?;
    eprintln!(
        "evaluation {} of checkpoint {} on {:?}: {}",
        evaluation.id,
        e.checkpoint,
        evaluation.dataset_name,
        evaluation.status.as_str()
    );
    if e.no_wait {
        println!("{}", evaluation.id);
        return Ok(0);
    }
    while !evaluation.status.is_final() {
        tokio::time::sleep(EVAL_POLL).await;
        evaluation = api.get(&format!("{base}/{}", evaluation.id)).await?;
    }
    if json {
        print_json(&evaluation)?;
    } else if evaluation.status == EvaluationStatus::Succeeded {
        print!("{}", evaluation_text(&evaluation));
    }
    if evaluation.status == EvaluationStatus::Failed {
        eprintln!(
            "evaluation failed: {}",
            evaluation
                .status_message
                .as_deref()
                .unwrap_or("no reason given")
        );
        return Ok(1);
    }
    Ok(0)
}

/// The metrics as `paddock eval` prints them, and the confusion matrix (rows: gold, columns: predicted).
fn evaluation_text(e: &EvaluationInfo) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "rows      {}", e.rows.unwrap_or(0));
    let _ = writeln!(out, "accuracy  {:.4}", e.accuracy.unwrap_or(f64::NAN));
    let _ = writeln!(out, "macro-F1  {:.4}", e.macro_f1.unwrap_or(f64::NAN));
    if let Some(l) = e.loss {
        let _ = writeln!(out, "loss      {l:.4}");
    }
    let _ = writeln!(
        out,
        "{:<20} {:>9} {:>9} {:>9} {:>8}",
        "label", "precision", "recall", "f1", "support"
    );
    for c in &e.per_class {
        let _ = writeln!(
            out,
            "{:<20} {:>9.4} {:>9.4} {:>9.4} {:>8}",
            c.label, c.precision, c.recall, c.f1, c.support
        );
    }
    let _ = writeln!(out, "\nconfusion (rows: gold, columns: predicted)");
    let _ = write!(out, "{:<20}", "");
    for label in &e.labels {
        let _ = write!(out, " {label:>10}");
    }
    out.push('\n');
    for (label, row) in e.labels.iter().zip(&e.confusion) {
        let _ = write!(out, "{label:<20}");
        for n in row {
            let _ = write!(out, " {n:>10}");
        }
        out.push('\n');
    }
    out
}

/// The spec from `--spec` (JSON or TOML) with flags on top; datasets by id or name.
/// A spec file as the JSON the REST API takes: `.toml` read as TOML, anything else as JSON.
pub fn read_spec_file(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "toml") {
        let table = toml::from_str::<toml::Value>(&text)
            .with_context(|| format!("{} is not TOML", path.display()))?;
        Ok(serde_json::to_value(table)?)
    } else {
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
    }
}

async fn submit_spec(api: &Api, ws: WorkspaceId, s: &SubmitArgs) -> anyhow::Result<JobSpec> {
    let mut value: serde_json::Value = match &s.spec {
        Some(path) => read_spec_file(path)?,
        None => serde_json::json!({}),
    };
    let datasets: Vec<contracts::types::DatasetSummary> = api
        .get(&format!("/api/v1/workspaces/{ws}/datasets"))
        .await?;
    let dataset_id = |key: &str| {
        resolve(
            key,
            datasets.iter().map(|d| (d.id, d.name.as_str())),
            "dataset",
        )
    };
    let object = value
        .as_object_mut()
        .context("the spec file must be a table/object")?;
    let dataset = |v: &Option<String>| v.as_deref().map(dataset_id).transpose();
    // Each flag given replaces the spec file's value (`Value::from` keeps its JSON type).
    let flags: [(&str, Option<serde_json::Value>); 17] = [
        ("name", s.name.clone().map(Into::into)),
        ("task", s.task.map(|t| t.as_str().into())),
        ("dataset_id", dataset(&s.dataset)?.map(|d| d.get().into())),
        (
            "dev_dataset_id",
            dataset(&s.dev_dataset)?.map(|d| d.get().into()),
        ),
        ("preset", s.preset.clone().map(Into::into)),
        ("epochs", s.epochs.map(Into::into)),
        ("batch_size", s.batch_size.map(Into::into)),
        ("learning_rate", s.lr.map(Into::into)),
        ("max_steps", s.max_steps.map(Into::into)),
        ("max_seq_len", s.max_seq_len.map(Into::into)),
        ("seed", s.seed.map(Into::into)),
        ("gpus", s.gpus.map(Into::into)),
        ("ranks", s.ranks.map(Into::into)),
        ("cluster", s.cluster.clone().map(Into::into)),
        ("partition", s.partition.clone().map(Into::into)),
        ("nodes", s.nodes.map(Into::into)),
        ("priority", s.priority.map(Into::into)),
    ];
    for (key, v) in flags {
        if let Some(v) = v {
            object.insert(key.to_string(), v);
        }
    }
    // A job learns its data's task: unless the spec says otherwise, the training dataset's.
    if !object.contains_key("task") {
        let trains = object.get("dataset_id").and_then(serde_json::Value::as_i64);
        if let Some(d) = datasets.iter().find(|d| Some(d.id.get()) == trains) {
            object.insert("task".into(), serde_json::to_value(d.task)?);
        }
    }
    serde_path_to_error::deserialize(value)
        .map_err(|e| anyhow::anyhow!("job spec: field {}: {}", e.path(), e.inner()))
}

/// Prints the job's log live until it ends; 0 when it succeeded, 1 otherwise.
async fn follow(api: &Api, ws: WorkspaceId, job: JobId) -> anyhow::Result<i32> {
    let mut last: Option<JobSummary> = None;
    api.follow::<()>(
        &format!("/api/v1/workspaces/{ws}/jobs/{job}/stream"),
        |event, data| {
            match event {
                "log" => {
                    if let Ok(line) = serde_json::from_str::<LogLine>(data) {
                        println!("{}", line.line);
                    }
                }
                "metric" => {
                    if let Ok(point) = serde_json::from_str::<contracts::types::MetricPoint>(data) {
                        let figure = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
                        match (point.kind.as_str(), point.data.get("entities")) {
                            ("eval", Some(e)) if e.is_object() => eprintln!(
                                "[eval] step {} entity_f1 {:.4} precision {:.4} recall {:.4}",
                                point.step,
                                figure(&e["f1"]),
                                figure(&e["precision"]),
                                figure(&e["recall"])
                            ),
                            ("eval", _) => eprintln!(
                                "[eval] step {} accuracy {:.4} macro_f1 {:.4}",
                                point.step,
                                figure(&point.data["accuracy"]),
                                figure(&point.data["macro_f1"])
                            ),
                            _ => {}
                        }
                    }
                }
                "status" => {
                    if let Ok(summary) = serde_json::from_str::<JobSummary>(data) {
                        if last.as_ref().map(|l| l.status) != Some(summary.status) {
                            eprintln!("[status] {}", summary.status.as_str());
                        }
                        last = Some(summary);
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        },
    )
    .await?;
    match last {
        Some(s) if s.status == contracts::types::JobStatus::Succeeded => Ok(0),
        Some(s) => {
            eprintln!(
                "job {job} ended {}{}",
                s.status.as_str(),
                s.status_message
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            );
            Ok(1)
        }
        None => Ok(1),
    }
}

//! `paddock sweep …`: sweeps from a shell, through the REST API like the dashboard. `create --wait`
//! prints each trial as it ends and exits 0 once the sweep finished with a best trial, so a script can
//! start a search and then use its winner.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use contracts::ids::{SweepId, WorkspaceId};
use contracts::sweeps::{SweepDetail, SweepExtend, SweepStatus, SweepSummary, Trial};
use reqwest::Method;

use crate::client::{print_json, print_list, text, Api, Connection};
use crate::jobs::{read_spec_file, WorkspaceArg};

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: SweepCommand,
}

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Start a sweep from a spec file (JSON or TOML: the fields of the REST body).
    Create(CreateArgs),
    /// The workspace's sweeps, newest first.
    List(WorkspaceArg),
    /// One sweep: its best trial and every trial with its values, objective and rungs.
    Show(SweepTarget),
    /// Start no new trial until resumed (queued and running trials go on).
    Pause(SweepTarget),
    Resume(SweepTarget),
    /// Allow more trials in all; a finished sweep runs again.
    Extend(ExtendArgs),
    /// Cancel the sweep and its queued and running trials (running ones stop with a checkpoint).
    Cancel(SweepTarget),
}

#[derive(Debug, Args)]
pub struct SweepTarget {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Sweep id.
    pub sweep: SweepId,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// The sweep's spec (`.json` or `.toml`).
    #[arg(long)]
    pub spec: PathBuf,
    /// The trials' training dataset (id or name), in place of the spec's `job.dataset_id`.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Wait until the sweep ends, printing each trial as it ends; exit 0 only when it finished with a
    /// best trial.
    #[arg(long)]
    pub wait: bool,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    #[command(flatten)]
    pub target: SweepTarget,
    /// The new total of trials.
    #[arg(long)]
    pub max_trials: u32,
}

/// How often `create --wait` looks at the sweep.
const WAIT_POLL: Duration = Duration::from_secs(2);

pub async fn run(args: SweepArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    let json = args.connection.json;
    let path = |ws: WorkspaceId, sweep: SweepId, action: &str| {
        format!("/api/v1/workspaces/{ws}/sweeps/{sweep}{action}")
    };
    match &args.command {
        SweepCommand::Create(c) => {
            let ws = api.workspace(&c.workspace.workspace).await?;
            let mut spec = read_spec_file(&c.spec)?;
            if let Some(dataset) = &c.dataset {
                let id = api.dataset(ws, dataset).await?;
                let job = spec
                    .as_object_mut()
                    .and_then(|s| s.get_mut("job"))
                    .and_then(|j| j.as_object_mut())
                    .context("the spec needs a `job` table/object")?;
                job.insert("dataset_id".into(), id.get().into());
            }
            let sweep: SweepDetail = api
                .send(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/sweeps"),
                    Some(&spec),
                )
                .await?;
            let s = &sweep.summary;
            eprintln!(
                "sweep {} ({}): up to {} trials, {} at once",
                s.id, s.name, s.max_trials, s.parallelism
            );
            if c.wait {
                return wait(&api, ws, s.id, json).await;
            }
            if json {
                print_json(&sweep)?;
            } else {
                println!("{}", s.id);
            }
            Ok(0)
        }
        SweepCommand::List(w) => {
            let ws = api.workspace(&w.workspace).await?;
            let sweeps: Vec<SweepSummary> =
                api.get(&format!("/api/v1/workspaces/{ws}/sweeps")).await?;
            let columns = [
                text("ID", 6),
                text("NAME", 24),
                text("STATUS", 10),
                text("TRIALS", 8),
                text("OBJECTIVE", 18),
                text("BEST", 0),
            ];
            print_list(json, &sweeps, &columns, |s| {
                let best = s.best.as_ref().map(|b| {
                    format!(
                        "{:.4} (trial {}, job {})",
                        b.objective.value, b.trial, b.job_id
                    )
                });
                vec![
                    s.id.to_string(),
                    s.name.clone(),
                    s.status.as_str().to_string(),
                    format!("{}/{}", s.trials, s.max_trials),
                    objective(s),
                    best.unwrap_or_default(),
                ]
            })?;
            Ok(0)
        }
        SweepCommand::Show(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            let sweep: SweepDetail = api.get(&path(ws, t.sweep, "")).await?;
            if json {
                print_json(&sweep)?;
            } else {
                print!("{}", sweep_text(&sweep));
            }
            Ok(0)
        }
        SweepCommand::Pause(t) | SweepCommand::Resume(t) | SweepCommand::Cancel(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            let action = match &args.command {
                SweepCommand::Pause(_) => "/pause",
                SweepCommand::Resume(_) => "/resume",
                _ => "/cancel",
            };
            let sweep: SweepDetail = api
                .send::<(), _>(Method::POST, &path(ws, t.sweep, action), None)
                .await?;
            println!("{}", sweep.summary.status.as_str());
            Ok(0)
        }
        SweepCommand::Extend(e) => {
            let ws = api.workspace(&e.target.workspace.workspace).await?;
            let body = SweepExtend {
                max_trials: e.max_trials,
            };
            let sweep: SweepDetail = api
                .send(
                    Method::POST,
                    &path(ws, e.target.sweep, "/extend"),
                    Some(&body),
                )
                .await?;
            println!(
                "{} ({} trials)",
                sweep.summary.status.as_str(),
                sweep.summary.max_trials
            );
            Ok(0)
        }
    }
}

fn objective(s: &SweepSummary) -> String {
    format!(
        "{} {}",
        s.objective.metric,
        match s.objective.goal() {
            contracts::sweeps::Goal::Maximize => "max",
            contracts::sweeps::Goal::Minimize => "min",
        }
    )
}

/// Waits for the sweep to end, printing each trial once it has ended.
async fn wait(api: &Api, ws: WorkspaceId, id: SweepId, json: bool) -> anyhow::Result<i32> {
    let mut printed = std::collections::BTreeSet::new();
    loop {
        let sweep: SweepDetail = api
            .get(&format!("/api/v1/workspaces/{ws}/sweeps/{id}"))
            .await?;
        let mut ended: Vec<&Trial> = sweep
            .trials
            .iter()
            .filter(|t| t.job.status.is_final() && !printed.contains(&t.trial))
            .collect();
        ended.sort_by_key(|t| t.trial);
        for t in ended {
            printed.insert(t.trial);
            eprintln!("{}", trial_line(t));
        }
        match sweep.summary.status {
            SweepStatus::Running => {}
            SweepStatus::Paused => {
                eprintln!(
                    "the sweep is paused: {}",
                    sweep
                        .summary
                        .status_message
                        .as_deref()
                        .unwrap_or("no reason given")
                );
                return Ok(1);
            }
            SweepStatus::Finished | SweepStatus::Cancelled => {
                if json {
                    print_json(&sweep)?;
                } else {
                    print!("{}", sweep_text(&sweep));
                }
                let finished = sweep.summary.status == SweepStatus::Finished;
                return Ok(if finished && sweep.summary.best.is_some() {
                    0
                } else {
                    1
                });
            }
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

fn trial_line(t: &Trial) -> String {
    let values = t
        .parameters
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let objective = t
        .objective
        .map(|o| format!("{:.4} at step {}", o.value, o.step))
        .unwrap_or_else(|| "—".into());
    let how = match t.pruned {
        true => "stopped early".to_string(),
        false => t.job.status.as_str().to_string(),
    };
    format!(
        "trial {:>3}  job {:>5}  {how:<13} steps {:>6}  objective {objective}  {values}",
        t.trial, t.job.id, t.job.step
    )
}

/// `sweep show`'s text: the sweep, its best trial, and every trial best first.
fn sweep_text(sweep: &SweepDetail) -> String {
    use std::fmt::Write as _;
    let s = &sweep.summary;
    let mut out = String::new();
    let _ = writeln!(out, "sweep {} ({}) — {}", s.id, s.name, s.status.as_str());
    if let Some(m) = &s.status_message {
        let _ = writeln!(out, "  message    {m}");
    }
    let _ = writeln!(out, "  objective  {}", objective(s));
    let _ = writeln!(
        out,
        "  trials     {} of {} ({} running, {} completed, {} stopped early, {} failed)",
        s.trials,
        s.max_trials,
        s.counts.active,
        s.counts.completed,
        s.counts.pruned,
        s.counts.failed
    );
    let _ = writeln!(out, "  steps run  {}", s.steps_run);
    if let Some(b) = &s.best {
        let checkpoint = b
            .checkpoint_id
            .map(|c| format!(", checkpoint {c}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  best       trial {} (job {}): {:.4} at step {}{checkpoint}",
            b.trial, b.job_id, b.objective.value, b.objective.step
        );
    }
    for t in &sweep.trials {
        let _ = writeln!(out, "{}", trial_line(t));
    }
    out
}

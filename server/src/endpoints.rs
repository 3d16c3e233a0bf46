//! `paddock endpoint …`: how endpoints run, from a shell, through the REST API like the dashboard: list
//! and show them (with the canary's figures and the history of what they decided), set or turn off
//! autoscaling, start a canary and promote, pause, resume or roll it back.

use anyhow::Context;
use app::i18n::Locale;
use app::pages::workspace::endpoints::scaling::{event_text, figures_text};
use clap::{Args, Subcommand, ValueEnum};
use contracts::ids::{CheckpointId, EndpointId, WorkspaceId};
use contracts::scaling::{Autoscale, CanaryAction, CanaryRule, CanarySpec, ScaleMetric};
use contracts::types::{EndpointDetail, EndpointSummary};
use reqwest::Method;

use crate::client::{print_json, print_list, text, Api, Connection};
use crate::jobs::WorkspaceArg;

#[derive(Debug, Args)]
pub struct EndpointArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: EndpointCommand,
}

#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// The workspace's endpoints, newest first.
    List(WorkspaceArg),
    /// One endpoint: its replicas, autoscaling, canary (both versions' figures) and history.
    Show(EndpointTarget),
    /// Let the endpoint size itself between a floor and a ceiling of replicas.
    Autoscale(AutoscaleArgs),
    /// Fix the endpoint at the replicas it runs now (one, if it was at zero).
    AutoscaleOff(EndpointTarget),
    /// A canary rollout: start one, or steer the one under way.
    #[command(subcommand)]
    Canary(CanaryCommand),
}

#[derive(Debug, Args)]
pub struct EndpointTarget {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Endpoint id.
    pub endpoint: EndpointId,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MetricArg {
    InFlight,
    Qps,
}

#[derive(Debug, Args)]
pub struct AutoscaleArgs {
    #[command(flatten)]
    pub target: EndpointTarget,
    /// The fewest replicas; 0 stops them all after `--idle-after` without a call.
    #[arg(long)]
    pub min: u32,
    #[arg(long)]
    pub max: u32,
    /// What each replica's load is measured in.
    #[arg(long, value_enum, default_value = "in-flight")]
    pub metric: MetricArg,
    /// The load one replica should carry.
    #[arg(long)]
    pub target_per_replica: f64,
    #[arg(long, default_value_t = 10)]
    pub up_after: u32,
    #[arg(long, default_value_t = 120)]
    pub down_after: u32,
    #[arg(long, default_value_t = 600)]
    pub idle_after: u32,
    #[arg(long, default_value_t = 60)]
    pub cold_start_wait: u32,
}

#[derive(Debug, Subcommand)]
pub enum CanaryCommand {
    /// Start a canary of another checkpoint of the workspace.
    Start(CanaryStartArgs),
    Promote(EndpointTarget),
    Pause(EndpointTarget),
    Resume(EndpointTarget),
    RollBack(EndpointTarget),
}

#[derive(Debug, Args)]
pub struct CanaryStartArgs {
    #[command(flatten)]
    pub target: EndpointTarget,
    #[arg(long)]
    pub checkpoint: CheckpointId,
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// The share of calls at each step, in percent (`10,50`).
    #[arg(long, value_delimiter = ',', default_value = "10,50")]
    pub steps: Vec<u32>,
    #[arg(long, default_value_t = 60)]
    pub step_secs: u32,
    /// Calls the canary must answer in a step before it is judged.
    #[arg(long)]
    pub min_requests: Option<u32>,
    #[arg(long)]
    pub max_p95_ratio: Option<f64>,
    #[arg(long)]
    pub max_error_rate_increase: Option<f64>,
}

pub async fn run(args: EndpointArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    let json = args.connection.json;
    let path = |ws: WorkspaceId, endpoint: EndpointId, rest: &str| {
        format!("/api/v1/workspaces/{ws}/endpoints/{endpoint}{rest}")
    };
    let detail = match &args.command {
        EndpointCommand::List(w) => {
            let ws = api.workspace(&w.workspace).await?;
            let endpoints: Vec<EndpointSummary> = api
                .get(&format!("/api/v1/workspaces/{ws}/endpoints"))
                .await?;
            let columns = [
                text("ID", 6),
                text("SLUG", 24),
                text("STATUS", 9),
                text("REPLICAS", 9),
                text("CHECKPOINT", 11),
                text("AUTOSCALE", 0),
            ];
            print_list(json, &endpoints, &columns, |e| {
                vec![
                    e.id.to_string(),
                    e.slug.clone(),
                    e.status.as_str().to_string(),
                    format!("{}/{}", e.ready_replicas, e.replicas),
                    e.checkpoint_id.to_string(),
                    e.autoscale.map(|p| policy_text(&p)).unwrap_or_default(),
                ]
            })?;
            return Ok(0);
        }
        EndpointCommand::Show(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            api.get(&path(ws, t.endpoint, "")).await?
        }
        EndpointCommand::Autoscale(a) => {
            let ws = api.workspace(&a.target.workspace.workspace).await?;
            let policy = Autoscale {
                min_replicas: a.min,
                max_replicas: a.max,
                metric: match a.metric {
                    MetricArg::InFlight => ScaleMetric::InFlight,
                    MetricArg::Qps => ScaleMetric::Qps,
                },
                target_per_replica: a.target_per_replica,
                scale_up_after_secs: a.up_after,
                scale_down_after_secs: a.down_after,
                idle_after_secs: a.idle_after,
                cold_start_wait_secs: a.cold_start_wait,
            };
            api.send(
                Method::PUT,
                &path(ws, a.target.endpoint, "/autoscale"),
                Some(&policy),
            )
            .await?
        }
        EndpointCommand::AutoscaleOff(t) => {
            let ws = api.workspace(&t.workspace.workspace).await?;
            api.send::<(), _>(Method::DELETE, &path(ws, t.endpoint, "/autoscale"), None)
                .await?
        }
        EndpointCommand::Canary(CanaryCommand::Start(c)) => {
            let ws = api.workspace(&c.target.workspace.workspace).await?;
            let defaults = CanaryRule::default();
            let spec = CanarySpec {
                checkpoint_id: c.checkpoint,
                replicas: c.replicas,
                steps: c.steps.clone(),
                step_secs: c.step_secs,
                rule: CanaryRule {
                    min_requests: c.min_requests.unwrap_or(defaults.min_requests),
                    max_p95_ratio: c.max_p95_ratio.unwrap_or(defaults.max_p95_ratio),
                    max_error_rate_increase: c
                        .max_error_rate_increase
                        .unwrap_or(defaults.max_error_rate_increase),
                    ..defaults
                },
            };
            api.send(
                Method::POST,
                &path(ws, c.target.endpoint, "/canary"),
                Some(&spec),
            )
            .await?
        }
        EndpointCommand::Canary(step) => {
            let (t, action) = match step {
                CanaryCommand::Promote(t) => (t, CanaryAction::Promote),
                CanaryCommand::Pause(t) => (t, CanaryAction::Pause),
                CanaryCommand::Resume(t) => (t, CanaryAction::Resume),
                CanaryCommand::RollBack(t) => (t, CanaryAction::RollBack),
                CanaryCommand::Start(_) => unreachable!("matched above"),
            };
            let ws = api.workspace(&t.workspace.workspace).await?;
            let action = serde_json::to_value(action)?
                .as_str()
                .context("a canary action is a word")?
                .to_string();
            api.send::<(), _>(
                Method::POST,
                &path(ws, t.endpoint, &format!("/canary/{action}")),
                None,
            )
            .await?
        }
    };
    if json {
        print_json(&detail)?;
    } else {
        print!("{}", detail_text(&detail));
    }
    Ok(0)
}

fn policy_text(p: &Autoscale) -> String {
    format!(
        "{}–{} replicas, {} {} per replica",
        p.min_replicas,
        p.max_replicas,
        p.target_per_replica,
        p.metric.as_str()
    )
}

/// `show`'s text: status, replicas, autoscaling, canary and history.
fn detail_text(d: &EndpointDetail) -> String {
    let s = &d.summary;
    let mut out = format!(
        "endpoint   {} ({})\nstatus     {}\nreplicas   {}/{} ready\ncheckpoint {}\n",
        s.id,
        s.slug,
        s.status.as_str(),
        s.ready_replicas,
        s.replicas,
        s.checkpoint_id
    );
    match &s.autoscale {
        Some(p) => out.push_str(&format!("autoscale  {}\n", policy_text(p))),
        None => out.push_str("autoscale  off\n"),
    }
    if let Some(ms) = s.cold_start_ms {
        out.push_str(&format!("cold start {ms} ms (last)\n"));
    }
    if let Some(message) = &s.status_message {
        out.push_str(&format!("message    {message}\n"));
    }
    if let Some(c) = &d.canary {
        out.push_str(&format!(
            "canary     checkpoint {} · {:?} · {}% of calls · step {}/{}\n",
            c.spec.checkpoint_id,
            c.phase,
            c.share_percent(),
            c.step + 1,
            c.spec.steps.len()
        ));
    }
    if let Some(f) = &d.canary_figures {
        out.push_str(&format!("           {}\n", figures_text(Locale::en, f)));
    }
    if !d.history.is_empty() {
        out.push_str("history\n");
        for h in &d.history {
            let by = h.by.as_deref().unwrap_or("automatic");
            out.push_str(&format!(
                "  {}  {:<10} {}\n",
                h.at,
                by,
                event_text(Locale::en, &h.event)
            ));
        }
    }
    out
}

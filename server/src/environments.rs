//! `paddock env …`: environments from a shell. A client of the REST API (with a personal API token), not
//! of the database: the server owns Docker, the GPU inventory and the audit log, so the CLI goes through
//! the same rules as the dashboard. Workspaces and environments are named by id or by name.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use contracts::types::{
    EnvironmentDetail, EnvironmentSpec, EnvironmentSummary, ExecResult, GpuSpec,
};
use reqwest::Method;

use crate::client::{print_json, print_list, resolve, text, Api, Connection};
use serde_json::Value;

#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: EnvCommand,
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// The workspace's environments.
    List(WorkspaceArg),
    /// One environment with its versions, lock and recent events.
    Show(Target),
    /// Create an environment from a spec file (JSON or TOML) and/or flags, and follow its image build.
    Create(CreateArgs),
    /// Start (provision) an environment's container.
    Up(Target),
    /// Stop and remove the container (files under /workspace stay).
    Down(Target),
    /// Delete the environment and its container.
    Rm(Target),
    /// Run a command in a running environment; exits with the command's exit code.
    Exec(ExecArgs),
}

#[derive(Debug, Args)]
pub struct WorkspaceArg {
    /// Workspace id or name.
    #[arg(long, short = 'w', env = "PADDOCK_WORKSPACE")]
    pub workspace: String,
}

#[derive(Debug, Args)]
pub struct Target {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// Environment id or name.
    pub environment: String,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub target: Target,
    /// The command and its arguments (after `--`), run without a shell.
    #[arg(last = true, required = true)]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// A spec file (`.json` or `.toml`) with the fields of the REST body; flags override it.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    #[arg(long)]
    pub name: Option<String>,
    /// Base image reference.
    #[arg(long)]
    pub image: Option<String>,
    #[arg(long)]
    pub cpus: Option<f64>,
    /// Memory limit, like 8g.
    #[arg(long)]
    pub memory: Option<String>,
    /// Size of /dev/shm, like 1g.
    #[arg(long)]
    pub shm: Option<String>,
    /// GPUs: `none`, a count (`2`) or device indices (`0,3`).
    #[arg(long)]
    pub gpus: Option<String>,
    #[arg(long)]
    pub shared_gpus: bool,
    /// Include Paddock's runtime (binary + libtorch) in the image.
    #[arg(long)]
    pub runtime: bool,
    /// Extra OS package (repeatable).
    #[arg(long = "package")]
    pub packages: Vec<String>,
    /// Environment variable KEY=VALUE (repeatable).
    #[arg(long = "env")]
    pub env: Vec<String>,
    /// Workspace volume name.
    #[arg(long)]
    pub volume: Option<String>,
    /// Return once the environment is created, without following the build.
    #[arg(long)]
    pub no_wait: bool,
}

/// Runs `paddock env …`; returns the process exit code.
pub async fn run(args: EnvArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    let json = args.connection.json;
    match &args.command {
        EnvCommand::List(w) => {
            let ws = api.workspace(&w.workspace).await?;
            let envs: Vec<EnvironmentSummary> = api
                .get(&format!("/api/v1/workspaces/{ws}/environments"))
                .await?;
            let columns = [
                text("ID", 6),
                text("NAME", 24),
                text("STATUS", 12),
                text("BUILD", 9),
                text("IMAGE", 30),
                text("LOCK", 14),
            ];
            print_list(json, &envs, &columns, |e| {
                let lock = e.image_id.as_deref().map(short_id).unwrap_or("-");
                let (status, build) = (e.status.as_str(), e.build_status.as_str());
                let cells = [
                    &e.id.to_string(),
                    &e.name,
                    status,
                    build,
                    &e.base_image,
                    lock,
                ];
                cells.map(str::to_string).to_vec()
            })?;
            Ok(0)
        }
        EnvCommand::Show(t) => {
            let (ws, env) = target(&api, t).await?;
            let detail: EnvironmentDetail = api
                .get(&format!("/api/v1/workspaces/{ws}/environments/{env}"))
                .await?;
            show(&detail, json)?;
            Ok(0)
        }
        EnvCommand::Create(c) => {
            let ws = api.workspace(&c.workspace.workspace).await?;
            let spec = create_spec(c)?;
            let detail: EnvironmentDetail = api
                .send(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/environments"),
                    Some(&spec),
                )
                .await?;
            eprintln!(
                "created environment {} (id {}), building its image…",
                detail.summary.name, detail.summary.id
            );
            if c.no_wait {
                show(&detail, json)?;
                return Ok(0);
            }
            let status =
                follow_log(&api, ws, detail.summary.id, detail.summary.current_version).await?;
            let detail: EnvironmentDetail = api
                .get(&format!(
                    "/api/v1/workspaces/{ws}/environments/{}",
                    detail.summary.id
                ))
                .await?;
            show(&detail, json)?;
            Ok(if status == "built" { 0 } else { 1 })
        }
        EnvCommand::Up(t) | EnvCommand::Down(t) => {
            let verb = if matches!(args.command, EnvCommand::Up(_)) {
                "up"
            } else {
                "down"
            };
            let (ws, env) = target(&api, t).await?;
            let detail: EnvironmentDetail = api
                .send::<(), _>(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/environments/{env}/{verb}"),
                    None,
                )
                .await?;
            show(&detail, json)?;
            Ok(0)
        }
        EnvCommand::Rm(t) => {
            let (ws, env) = target(&api, t).await?;
            api.request::<()>(
                Method::DELETE,
                &format!("/api/v1/workspaces/{ws}/environments/{env}"),
                None,
            )
            .await?;
            eprintln!("deleted environment {env}");
            Ok(0)
        }
        EnvCommand::Exec(e) => {
            let (ws, env) = target(&api, &e.target).await?;
            let body = serde_json::json!({ "cmd": e.cmd });
            let out: ExecResult = api
                .send(
                    Method::POST,
                    &format!("/api/v1/workspaces/{ws}/environments/{env}/exec"),
                    Some(&body),
                )
                .await?;
            if json {
                print_json(&out)?;
            } else {
                std::io::stdout().write_all(out.stdout.as_bytes())?;
                std::io::stderr().write_all(out.stderr.as_bytes())?;
                if out.truncated {
                    eprintln!("[paddock: output truncated]");
                }
            }
            Ok(i32::try_from(out.exit_code).unwrap_or(1))
        }
    }
}

/// The spec from `--spec` (JSON or TOML, by extension) with the flags applied on top.
fn create_spec(c: &CreateArgs) -> anyhow::Result<EnvironmentSpec> {
    let mut spec = match &c.spec {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let is_toml = path.extension().is_some_and(|e| e == "toml");
            if is_toml {
                toml_spec(&text)
                    .with_context(|| format!("{} is not a valid spec", path.display()))?
            } else {
                let mut de = serde_json::Deserializer::from_str(&text);
                serde_path_to_error::deserialize(&mut de).map_err(|e| {
                    anyhow::anyhow!("{}: field {}: {}", path.display(), e.path(), e.inner())
                })?
            }
        }
        None => EnvironmentSpec::default(),
    };
    if let Some(v) = &c.name {
        spec.name = v.clone();
    }
    if let Some(v) = &c.image {
        spec.base_image = v.clone();
    }
    if let Some(v) = c.cpus {
        spec.cpus = v;
    }
    if let Some(v) = &c.memory {
        spec.memory = v.clone();
    }
    if let Some(v) = &c.shm {
        spec.shm_size = v.clone();
    }
    if let Some(v) = &c.gpus {
        spec.gpus = parse_gpus(v)?;
    }
    if let Some(v) = &c.volume {
        spec.workspace_volume = v.clone();
    }
    spec.shared_gpus |= c.shared_gpus;
    spec.runtime |= c.runtime;
    spec.os_packages.extend(c.packages.iter().cloned());
    for pair in &c.env {
        let Some((k, v)) = pair.split_once('=') else {
            bail!("--env {pair:?}: use KEY=VALUE")
        };
        spec.env.insert(k.to_string(), v.to_string());
    }
    if spec.name.trim().is_empty() {
        bail!("the environment needs a name: --name or `name` in the spec file");
    }
    Ok(spec)
}

fn toml_spec(text: &str) -> anyhow::Result<EnvironmentSpec> {
    let value: toml::Value = toml::from_str(text)?;
    let json = serde_json::to_value(value)?;
    serde_path_to_error::deserialize(json)
        .map_err(|e| anyhow::anyhow!("field {}: {}", e.path(), e.inner()))
}

fn parse_gpus(text: &str) -> anyhow::Result<GpuSpec> {
    let text = text.trim();
    if text.is_empty() || text == "none" || text == "0" {
        return Ok(GpuSpec::None);
    }
    if text.contains(',') || text.starts_with("device") {
        let list = text
            .trim_start_matches("devices=")
            .trim_start_matches("device=");
        let devices = list
            .split(',')
            .map(|d| d.trim().parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                anyhow::anyhow!("--gpus {text:?}: device indices are numbers, like 0,3")
            })?;
        return Ok(GpuSpec::Devices(devices));
    }
    text.parse::<u32>().map(GpuSpec::Count).map_err(|_| {
        anyhow::anyhow!("--gpus {text:?}: use none, a count like 2, or device indices like 0,3")
    })
}

fn show(detail: &EnvironmentDetail, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(detail);
    }
    let s = &detail.summary;
    println!("{} (id {}) — {}", s.name, s.id, s.status.as_str());
    if let Some(code) = s.exit_code {
        println!("  exit code      {code}");
    }
    if let Some(message) = &detail.status_message {
        println!("  message        {message}");
    }
    println!(
        "  version        {} (build {})",
        s.current_version,
        s.build_status.as_str()
    );
    println!("  base image     {}", s.base_image);
    println!("  image (lock)   {}", s.image_id.as_deref().unwrap_or("-"));
    if let Some(v) = detail
        .versions
        .iter()
        .find(|v| v.version == s.current_version)
    {
        println!("  spec hash      {}", v.spec_hash);
        if let Some(previous) = &v.previous_image_id {
            println!("  previous image {previous} (the last rebuild changed the image)");
        }
        if let Some(error) = &v.build_error {
            println!("  build error    {error}");
        }
    }
    println!(
        "  resources      {} CPU, {} memory, GPUs {:?}",
        s.cpus, s.memory, s.gpus
    );
    if let Some(name) = &detail.container_name {
        println!("  container      {name}");
    }
    Ok(())
}

fn short_id(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    &hex[..hex.len().min(12)]
}

async fn target(api: &Api, t: &Target) -> anyhow::Result<(WorkspaceId, EnvironmentId)> {
    let ws = api.workspace(&t.workspace.workspace).await?;
    let envs: Vec<EnvironmentSummary> = api
        .get(&format!("/api/v1/workspaces/{ws}/environments"))
        .await?;
    let env = resolve(
        &t.environment,
        envs.iter().map(|e| (e.id, e.name.as_str())),
        "environment",
    )?;
    Ok((ws, env))
}

/// Prints the build log (SSE) to stderr until the build ends; returns its final status.
async fn follow_log(
    api: &Api,
    ws: WorkspaceId,
    env: EnvironmentId,
    version: i64,
) -> anyhow::Result<String> {
    let path = format!("/api/v1/workspaces/{ws}/environments/{env}/versions/{version}/log");
    let status = api
        .follow(&path, |event, data| {
            match event {
                "log" => eprintln!("{data}"),
                "end" => {
                    let status: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                    return ControlFlow::Break(
                        status["status"].as_str().unwrap_or("unknown").to_string(),
                    );
                }
                _ => {}
            }
            ControlFlow::Continue(())
        })
        .await?;
    status.ok_or_else(|| anyhow::anyhow!("the build log ended without a final status"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_flags_parse_to_the_spec_forms() {
        assert_eq!(parse_gpus("none").unwrap(), GpuSpec::None);
        assert_eq!(parse_gpus("2").unwrap(), GpuSpec::Count(2));
        assert_eq!(parse_gpus("0,3").unwrap(), GpuSpec::Devices(vec![0, 3]));
        assert_eq!(parse_gpus("device=1").unwrap(), GpuSpec::Devices(vec![1]));
        assert!(parse_gpus("lots").is_err());
    }

    #[test]
    fn toml_spec_files_name_the_bad_field() {
        let ok = toml_spec("name = \"nlp\"\nbase_image = \"paddock/base:busybox\"\ncpus = 1.5\nmemory = \"2g\"\n[gpus]\ncount = 1\n").unwrap();
        assert_eq!((ok.cpus, ok.gpus), (1.5, GpuSpec::Count(1)));
        let err =
            toml_spec("name = \"nlp\"\nbase_image = \"x\"\ncpus = \"many\"\nmemory = \"2g\"\n")
                .unwrap_err();
        assert!(err.to_string().contains("cpus"), "{err}");
    }
}

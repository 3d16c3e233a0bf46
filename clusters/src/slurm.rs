//! Slurm through its command-line tools. Paddock submits a batch script per unit of work and afterwards
//! knows it only by its Slurm job id (recorded in the unit's row) and its job name (made from the unit,
//! so that a restarted server finds its jobs with `squeue -n` even if the row lost the id). Accounting
//! (`slurmdbd`) is not required: a job's state comes from `scontrol show job` while the controller
//! remembers it (`MinJobAge`), and the run folder on the shared directory says how a run ended after that.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::reach::Reach;
use crate::{Error, Result};

/// A Slurm cluster, reached one way.
#[derive(Debug, Clone)]
pub struct Slurm {
    reach: Reach,
}

/// One batch job to submit.
#[derive(Debug, Clone, Default)]
pub struct Submission {
    /// `--job-name`: how the job is found again.
    pub name: String,
    /// `--comment`: Paddock's ids, for people reading `squeue`.
    pub comment: String,
    pub placement: Placement,
    pub resources: Resources,
    /// `--time`, rounded up to whole minutes.
    pub time_limit: Option<Duration>,
    /// `--signal=B:TERM@…`: how long before the time limit the batch script gets TERM, so a trainer ends
    /// with a checkpoint instead of being killed.
    pub term_before_limit: Option<Duration>,
    /// The folder the script starts in and where its output goes (paths on the nodes).
    pub workdir: String,
    pub output: String,
    /// The script's body; it runs under `/bin/sh` with none of the server's environment
    /// (`--export=NONE`): what it needs, it sets.
    pub script: String,
}

/// Where a job may run and who pays for it: a workspace's cluster settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
}

/// What one job asks for on one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// Nodes, one task on each (which starts the work's processes there); 0 counts as 1.
    pub nodes: u32,
    /// GPUs as GRES on each node (`--gres=gpu:N`); 0 asks for none.
    pub gpus: u32,
    /// CPUs and memory on each node.
    pub cpus: u32,
    pub memory_mb: u64,
}

/// How much of something a node has, and how much of it jobs hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub total: u64,
    pub allocated: u64,
}

/// Where a job is in its life, as Slurm says it (`JobState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    /// Ending: its processes are being stopped (`COMPLETING`, `SIGNALING`, `STAGE_OUT`).
    Ending,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    OutOfMemory,
    /// `NODE_FAIL`, `BOOT_FAIL`: the node, not the job.
    NodeFailed,
    Preempted,
    /// Any other state (`SUSPENDED`, `REQUEUED`, `CONFIGURING`, …): taken as still alive.
    Other(String),
}

impl JobState {
    fn parse(word: &str) -> JobState {
        match word {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "COMPLETING" | "SIGNALING" | "STAGE_OUT" => JobState::Ending,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "CANCELLED" => JobState::Cancelled,
            "TIMEOUT" | "DEADLINE" => JobState::Timeout,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            "NODE_FAIL" | "BOOT_FAIL" => JobState::NodeFailed,
            "PREEMPTED" => JobState::Preempted,
            other => JobState::Other(other.to_string()),
        }
    }

    /// Slurm's word for the state (`NODE_FAIL`, `TIMEOUT`, …).
    pub fn word(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Ending => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::NodeFailed => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::Other(word) => word,
        }
    }

    /// Whether the job may still run (or runs): everything but the final states.
    pub fn is_alive(&self) -> bool {
        matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Ending | JobState::Other(_)
        )
    }
}

/// What `scontrol show job` says about a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: String,
    pub name: String,
    pub state: JobState,
    /// Why it waits or why it ended (`Resources`, `Priority`, `QOSMaxGRESPerUser`, …); `None` for `None`.
    pub reason: Option<String>,
    /// The nodes it runs (or ran) on.
    pub nodes: Option<String>,
    /// The batch script's exit status and the signal that ended it (`ExitCode=a:b`).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub comment: Option<String>,
    /// The directory its batch script runs in (`--chdir`), as the controller recorded it at submission:
    /// known to a server that did not submit the job, too.
    pub work_dir: Option<String>,
}

/// How to cancel a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancel {
    /// TERM to the batch script alone (`scancel --batch --signal=TERM`): Paddock's wrapper passes it on,
    /// the trainer writes a checkpoint and the job ends by itself.
    Term,
    /// The whole job, now.
    Kill,
}

/// A node as `sinfo` shows it, merged over the partitions it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    /// `idle`, `mixed`, `allocated`, `drained`, `down`, … (`StateLong`).
    pub state: String,
    pub gpus: Usage,
    pub cpus: Usage,
    pub memory_mb: Usage,
    pub partitions: Vec<String>,
    /// Why it is drained or down, as an admin wrote it.
    pub reason: Option<String>,
}

/// A partition as `scontrol show partition` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub name: String,
    pub default: bool,
    /// `UP`, `DOWN`, `DRAIN`, `INACTIVE`.
    pub state: String,
    pub nodes: String,
    /// How many nodes it has (`TotalNodes`).
    pub total_nodes: u32,
    /// `UNLIMITED` or `[days-]hours:minutes:seconds`.
    pub max_time: String,
}

impl Slurm {
    pub fn new(reach: Reach) -> Slurm {
        Slurm { reach }
    }

    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// Whether the controller answers (`scontrol ping`).
    pub async fn ping(&self) -> Result<()> {
        let out = self.reach.run("scontrol", &["ping".into()], None).await?;
        if out.contains("is UP") {
            Ok(())
        } else {
            Err(Error::Parse {
                command: "scontrol ping".into(),
                message: out.trim().to_string(),
            })
        }
    }

    /// Why the cluster would refuse a job placed at `placement`, if it would: `sbatch --test-only`,
    /// which the controller judges as it judges a submission (with accounting enforced, an account or
    /// QoS it does not know or does not allow the submitting user is refused) and which queues nothing.
    /// `None`: it would take it (a cluster without accounting takes any account).
    pub async fn refusal(&self, placement: &Placement) -> Result<Option<String>> {
        let mut args = vec!["--test-only".to_string()];
        args.extend(placement_args(placement)?);
        args.push("--wrap=true".into());
        match self.reach.run("sbatch", &args, None).await {
            Ok(_) => Ok(None),
            Err(e) => refused_because(&e).map(Some).ok_or(e),
        }
    }

    /// Submits a batch job; its Slurm job id.
    pub async fn submit(&self, job: &Submission) -> Result<String> {
        let args = sbatch_args(job)?;
        let script = format!("#!/bin/sh\n{}\n", job.script);
        let out = self.reach.run("sbatch", &args, Some(&script)).await?;
        // `--parsable`: `id` or `id;cluster`.
        let id = out.trim().split(';').next().unwrap_or_default();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::Parse {
                command: "sbatch".into(),
                message: format!("no job id in {out:?}"),
            });
        }
        Ok(id.to_string())
    }

    /// A job's state while the controller remembers it; `None` once it has forgotten it (or never knew
    /// it).
    pub async fn job(&self, id: &str) -> Result<Option<JobInfo>> {
        check_word("job id", id)?;
        let args = ["show".to_string(), "job".into(), "-o".into(), id.into()];
        match self.reach.run("scontrol", &args, None).await {
            Ok(out) => match out.lines().find(|l| !l.trim().is_empty()) {
                Some(line) => parse_job(line).map(Some),
                None => Ok(None),
            },
            Err(Error::Failed { stderr, .. }) if stderr.contains("Invalid job id") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The jobs the controller knows under this name (every state), oldest first.
    pub async fn find(&self, name: &str) -> Result<Vec<JobInfo>> {
        check_word("job name", name)?;
        let args = ["-h", "-t", "all", "-n", name, "-o", "%i"].map(String::from);
        let out = self.reach.run("squeue", &args, None).await?;
        let mut ids: Vec<u64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
        ids.sort_unstable();
        let mut jobs = Vec::new();
        for id in ids {
            if let Some(job) = self.job(&id.to_string()).await? {
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// Cancels a job. A job that has already ended (or is unknown) is not an error: the caller's next
    /// look at it says how it ended.
    pub async fn cancel(&self, id: &str, how: Cancel) -> Result<()> {
        check_word("job id", id)?;
        let mut args: Vec<String> = match how {
            Cancel::Term => vec!["--batch".into(), "--signal=TERM".into()],
            Cancel::Kill => Vec::new(),
        };
        args.push(id.to_string());
        match self.reach.run("scancel", &args, None).await {
            Err(Error::Failed { stderr, .. })
                if stderr.contains("already completing or completed")
                    || stderr.contains("Invalid job id") =>
            {
                Ok(())
            }
            other => other.map(drop),
        }
    }

    /// Every node with its GPUs, CPUs and memory, total and allocated.
    pub async fn nodes(&self) -> Result<Vec<NodeInfo>> {
        let format = "NodeList:|,StateLong:|,Gres:|,GresUsed:|,CPUsState:|,Memory:|,AllocMem:|,Partition:|,Reason:|";
        let args = ["-h", "-N", "-O", format].map(String::from);
        let out = self.reach.run("sinfo", &args, None).await?;
        parse_nodes(&out)
    }

    /// The address node `name` is reached at (`NodeAddr`): where a service a job runs there answers.
    pub async fn node_address(&self, name: &str) -> Result<String> {
        check_word("node name", name)?;
        let args = ["show", "node", "-o", name].map(String::from);
        let out = self.reach.run("scontrol", &args, None).await?;
        let line = out.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let address = required(&fields(line), "NodeAddr", "scontrol show node")?;
        check_word("node address", &address)?;
        Ok(address)
    }

    pub async fn partitions(&self) -> Result<Vec<PartitionInfo>> {
        let args = ["show", "partition", "-o"].map(String::from);
        let out = self.reach.run("scontrol", &args, None).await?;
        out.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let f = fields(line);
                Ok(PartitionInfo {
                    name: required(&f, "PartitionName", "scontrol show partition")?,
                    default: f.get("Default").is_some_and(|v| v == "YES"),
                    state: f.get("State").cloned().unwrap_or_default(),
                    nodes: f.get("Nodes").cloned().unwrap_or_default(),
                    total_nodes: f
                        .get("TotalNodes")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0),
                    max_time: f.get("MaxTime").cloned().unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// `sbatch`'s arguments for a submission, every value checked to be one line.
fn sbatch_args(job: &Submission) -> Result<Vec<String>> {
    check_word("job name", &job.name)?;
    check_word("comment", &job.comment)?;
    for (what, value) in [("work folder", &job.workdir), ("output file", &job.output)] {
        check_line(what, value)?;
    }
    if job.script.contains('\0') {
        return Err(Error::Invalid("the script contains a NUL byte".into()));
    }
    let mut args = vec![
        "--parsable".to_string(),
        // The server's environment (its secrets among it) never reaches a job.
        "--export=NONE".into(),
        // Paddock decides about retries; a requeued job would run a second time under the same row.
        "--no-requeue".into(),
        format!("--job-name={}", job.name),
        format!("--comment={}", job.comment),
        format!("--chdir={}", job.workdir),
        format!("--output={}", job.output),
        format!("--nodes={}", job.resources.nodes.max(1)),
        "--ntasks-per-node=1".into(),
        format!("--cpus-per-task={}", job.resources.cpus.max(1)),
        format!("--mem={}M", job.resources.memory_mb.max(1)),
    ];
    if job.resources.gpus > 0 {
        args.push(format!("--gres=gpu:{}", job.resources.gpus));
    }
    if let Some(limit) = job.time_limit {
        args.push(format!("--time={}", limit.as_secs().div_ceil(60).max(1)));
    }
    if let Some(before) = job.term_before_limit {
        args.push(format!("--signal=B:TERM@{}", before.as_secs().max(1)));
    }
    args.extend(placement_args(&job.placement)?);
    Ok(args)
}

/// What the controller said when it refused a job, if `e` is its refusal (and not a tool that failed
/// otherwise): `allocation failure: Invalid account or account/partition combination specified` from
/// `--test-only`, or `Batch job submission failed: …` from a submission.
fn refused_because(e: &Error) -> Option<String> {
    let Error::Failed { stderr, .. } = e else {
        return None;
    };
    ["allocation failure:", "submission failed:"]
        .iter()
        .find_map(|marker| {
            Some(
                stderr[stderr.rfind(marker)? + marker.len()..]
                    .trim()
                    .to_string(),
            )
        })
}

/// `--partition`, `--account` and `--qos`, for those set.
fn placement_args(at: &Placement) -> Result<Vec<String>> {
    let mut args = Vec::new();
    for (flag, value) in [
        ("--partition", &at.partition),
        ("--account", &at.account),
        ("--qos", &at.qos),
    ] {
        if let Some(v) = value {
            check_word(flag, v)?;
            args.push(format!("{flag}={v}"));
        }
    }
    Ok(args)
}

/// A value that becomes one word of a command line: no white space, no control characters, not empty.
fn check_word(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::Invalid(format!(
            "{what} {value:?} must be one word without spaces or control characters"
        )));
    }
    Ok(())
}

/// A value that may hold spaces (a path) but must stay on one line.
fn check_line(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(|c| c.is_control()) {
        return Err(Error::Invalid(format!(
            "{what} {value:?} must be one line without control characters"
        )));
    }
    Ok(())
}

/// The `Key=Value` fields of one line of `scontrol … -o`. A value runs up to the next ` Key=`, so values
/// with spaces (a reason, a path) stay whole.
fn fields(line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for token in line.split_whitespace() {
        let key = token.split_once('=').map(|(k, _)| k).filter(|k| {
            !k.is_empty()
                && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_:/".contains(c))
        });
        match (key, current.as_mut()) {
            (Some(k), _) => {
                if let Some((k, v)) = current.take() {
                    out.insert(k, v);
                }
                current = Some((k.to_string(), token[k.len() + 1..].to_string()));
            }
            (None, Some((_, value))) => {
                value.push(' ');
                value.push_str(token);
            }
            (None, None) => {}
        }
    }
    if let Some((k, v)) = current {
        out.insert(k, v);
    }
    out
}

fn required(f: &BTreeMap<String, String>, key: &str, command: &str) -> Result<String> {
    f.get(key).cloned().ok_or_else(|| Error::Parse {
        command: command.into(),
        message: format!("no {key} field"),
    })
}

/// Slurm's "nothing here": `(null)`, `None`, empty.
fn present(value: Option<&String>) -> Option<String> {
    value
        .filter(|v| !v.is_empty() && *v != "(null)" && *v != "None" && *v != "none")
        .cloned()
}

fn parse_job(line: &str) -> Result<JobInfo> {
    let f = fields(line);
    let command = "scontrol show job";
    let (exit_code, signal) = match f.get("ExitCode").and_then(|v| v.split_once(':')) {
        Some((code, signal)) => (code.parse().ok(), signal.parse().ok()),
        None => (None, None),
    };
    Ok(JobInfo {
        id: required(&f, "JobId", command)?,
        name: f.get("JobName").cloned().unwrap_or_default(),
        state: JobState::parse(&required(&f, "JobState", command)?),
        reason: present(f.get("Reason")),
        nodes: present(f.get("NodeList")),
        exit_code,
        signal,
        comment: present(f.get("Comment")),
        work_dir: present(f.get("WorkDir")),
    })
}

/// The GPUs in a GRES list such as `gpu:2`, `gpu:a100:2(S:0-1)`, `gpu:1(IDX:0,2),shard:4`.
fn gpu_count(gres: &str) -> u64 {
    let mut depth = 0;
    let mut entries = vec![String::new()];
    for c in gres.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => entries.push(String::new()),
            _ if depth == 0 => entries.last_mut().expect("one entry").push(c),
            _ => {}
        }
    }
    entries
        .iter()
        .filter(|e| e.split(':').next() == Some("gpu"))
        .filter_map(|e| e.rsplit(':').next()?.parse::<u64>().ok())
        .sum()
}

fn parse_nodes(out: &str) -> Result<Vec<NodeInfo>> {
    let mut nodes: Vec<NodeInfo> = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        let [name, state, gres, used, cpus, memory, allocated, partition, reason, ..] = cols[..]
        else {
            return Err(Error::Parse {
                command: "sinfo".into(),
                message: format!("expected 9 columns in {line:?}"),
            });
        };
        // CPUsState: allocated/idle/other/total.
        let cpu: Vec<u64> = cpus.split('/').filter_map(|n| n.parse().ok()).collect();
        let partition = partition.trim_end_matches('*').to_string();
        if let Some(known) = nodes.iter_mut().find(|n| n.name == name) {
            known.partitions.push(partition);
            continue;
        }
        nodes.push(NodeInfo {
            name: name.to_string(),
            state: state.to_string(),
            gpus: Usage {
                total: gpu_count(gres),
                allocated: gpu_count(used),
            },
            cpus: Usage {
                total: cpu.get(3).copied().unwrap_or(0),
                allocated: cpu.first().copied().unwrap_or(0),
            },
            memory_mb: Usage {
                total: memory.parse().unwrap_or(0),
                allocated: allocated.parse().unwrap_or(0),
            },
            partitions: vec![partition],
            reason: present(Some(&reason.to_string())),
        });
    }
    // `sinfo -N` lists a node once per partition, in no set order.
    for node in &mut nodes {
        node.partitions.sort();
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_the_controllers_words_and_nothing_else_is() {
        let failed = |stderr: &str| Error::Failed {
            command: "sbatch".into(),
            status: "exit status: 1".into(),
            stderr: stderr.into(),
        };
        let test_only =
            "allocation failure: Invalid account or account/partition combination specified";
        assert_eq!(
            refused_because(&failed(test_only)).as_deref(),
            Some("Invalid account or account/partition combination specified")
        );
        let submitted = "sbatch: error: Batch job submission failed: Invalid qos specification";
        assert_eq!(
            refused_because(&failed(submitted)).as_deref(),
            Some("Invalid qos specification")
        );
        assert_eq!(
            refused_because(&failed(
                "sbatch: error: slurm_persist_conn_open_without_init"
            )),
            None
        );
        let timeout = Error::Timeout {
            command: "sbatch".into(),
            seconds: 30,
        };
        assert_eq!(refused_because(&timeout), None);
    }

    #[test]
    fn a_job_line_is_read_with_values_that_hold_spaces() {
        let line = "JobId=17 JobName=paddock-abc-job-3 UserId=root(0) JobState=PENDING \
                    Reason=ReqNodeNotAvail,_UnavailableNodes:node2 Dependency=(null) ExitCode=0:0 \
                    NodeList=(null) Comment=paddock:job:3 WorkDir=/shared/runs/job 3 \
                    StdOut=/shared/runs/job 3/out.txt";
        let job = parse_job(line).unwrap();
        assert_eq!(job.id, "17");
        assert_eq!(job.name, "paddock-abc-job-3");
        assert_eq!(job.state, JobState::Pending);
        assert!(job.state.is_alive());
        assert_eq!(
            job.reason.as_deref(),
            Some("ReqNodeNotAvail,_UnavailableNodes:node2")
        );
        assert_eq!(job.nodes, None);
        assert_eq!(job.comment.as_deref(), Some("paddock:job:3"));
        assert_eq!(fields(line)["StdOut"], "/shared/runs/job 3/out.txt");
        assert_eq!(job.work_dir.as_deref(), Some("/shared/runs/job 3"));

        let ended = parse_job(
            "JobId=18 JobName=x JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=node1",
        )
        .unwrap();
        assert_eq!(ended.state, JobState::Cancelled);
        assert!(!ended.state.is_alive());
        assert_eq!((ended.exit_code, ended.signal), (Some(0), Some(15)));
        assert_eq!(ended.reason, None);
        assert_eq!(ended.nodes.as_deref(), Some("node1"));
        assert!(matches!(parse_job("JobName=x"), Err(Error::Parse { .. })));
    }

    #[test]
    fn gpus_are_counted_in_every_gres_spelling() {
        assert_eq!(gpu_count("gpu:2"), 2);
        assert_eq!(gpu_count("gpu:a100:4(S:0-1)"), 4);
        assert_eq!(gpu_count("gpu:1(IDX:0,2),shard:4"), 1);
        assert_eq!(gpu_count("gpu:a100:1(IDX:0),gpu:v100:2(IDX:1-2)"), 3);
        assert_eq!(gpu_count("(null)"), 0);
        assert_eq!(gpu_count(""), 0);
    }

    #[test]
    fn nodes_in_two_partitions_are_one_node() {
        let out = "node1|mixed|gpu:2|gpu:1(IDX:0)|1/1/0/2|4000|100|gpu*|none|\n\
                   node1|mixed|gpu:2|gpu:1(IDX:0)|1/1/0/2|4000|100|debug|none|\n\
                   node2|drained|gpu:2|gpu:0|0/0/2/2|4000|0|gpu*|disk replaced|\n";
        let nodes = parse_nodes(out).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].partitions, ["debug", "gpu"], "sorted");
        let used = Usage {
            total: 2,
            allocated: 1,
        };
        assert_eq!((nodes[0].gpus, nodes[0].cpus), (used, used));
        assert_eq!(nodes[1].reason.as_deref(), Some("disk replaced"));
        assert!(parse_nodes("node1|idle\n").is_err());
    }

    #[test]
    fn submissions_refuse_values_that_would_change_the_command() {
        let good = Submission {
            name: "paddock-t1-job-4".into(),
            comment: "paddock:job:4".into(),
            placement: Placement {
                partition: Some("gpu".into()),
                ..Default::default()
            },
            resources: Resources {
                nodes: 2,
                gpus: 2,
                cpus: 4,
                memory_mb: 8192,
            },
            time_limit: Some(Duration::from_secs(90)),
            term_before_limit: Some(Duration::from_secs(60)),
            workdir: "/shared/runs/job 4".into(),
            output: "/shared/runs/job 4/slurm.out".into(),
            script: "exec paddock train job.toml".into(),
        };
        let args = sbatch_args(&good).unwrap();
        for want in [
            "--export=NONE",
            "--nodes=2",
            "--ntasks-per-node=1",
            "--gres=gpu:2",
            "--time=2",
            "--signal=B:TERM@60",
            "--partition=gpu",
            "--chdir=/shared/runs/job 4",
            "--mem=8192M",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        for bad in [
            Submission {
                name: "a b".into(),
                ..good.clone()
            },
            Submission {
                placement: Placement {
                    qos: Some("gpu\n#SBATCH --uid=0".into()),
                    ..Default::default()
                },
                ..good.clone()
            },
            Submission {
                workdir: "/x\n".into(),
                ..good.clone()
            },
            Submission {
                comment: String::new(),
                ..good.clone()
            },
        ] {
            assert!(
                matches!(sbatch_args(&bad), Err(Error::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}

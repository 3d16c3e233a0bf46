//! `launch --ranks N -- train …`: one run as N ranks on this machine, as torchrun starts them: each a
//! process of this binary with `WORLD_SIZE`, `RANK` and `LOCAL_RANK`, meeting at a file in the run's
//! folder, with one of the GPUs this process may see (or, on the CPU, its share of the cores).
//!
//! To whoever started it, the launch is the run: rank 0's event stream is its stdout, every rank's
//! stderr its stderr (each line prefixed with the rank that spoke), a TERM it gets is passed to every
//! rank (which stop together, rank 0 writing the checkpoint), and its exit is the run's. When a rank
//! fails, the others are stopped, and the failure reported is the rank that failed first — not the
//! others' "a peer closed the connection" that follows it — with its last words.
//!
//! Across machines (`--nodes M`), one launch runs on each, starting its `--ranks` (ranks
//! `node × ranks …`): given its `--node-rank` by whoever starts it, or, inside a Slurm allocation,
//! spread over the allocation's nodes by this launch itself with `srun` (one task per node, its place
//! from `SLURM_PROCID`). The spreading launch keeps the contract above for the whole run: it relays
//! rank 0's events, and of the failures the nodes report it tells the one that was a rank's own; a
//! stop it gets reaches the nodes' launches as a USR1, which srun passes on (a TERM it would turn into
//! a kill).
//! The ranks meet at the file in the run's folder, which a cluster's nodes share.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Args;

use crate::events::EventSink;
use crate::{Error, Result};

/// The most ranks one machine runs.
pub const MAX_RANKS: usize = contracts::job::MAX_RANKS as usize;
/// The file the ranks meet at, in the folder the launch runs in.
pub const MEETING_FILE: &str = "ranks.meeting";
/// How long the other ranks have to end on their own once one failed, before they are killed.
const GRACE: Duration = Duration::from_secs(10);
/// How many of a rank's last stderr lines are kept for its failure's message.
const LAST_WORDS: usize = 4;
/// The most machines one run spans.
pub const MAX_NODES: usize = contracts::job::MAX_NODES as usize;
/// Set by a spreading launch for the launches `srun` starts on each node: take your place from
/// `SLURM_PROCID`.
const SPREAD: &str = "PADDOCK_LAUNCH_SPREAD";
/// A rank's failure that is a collective's (a peer left), not its own: the words
/// `Error::Collective` starts with.
const PEER_FAILED: &str = "ranks: rank";

#[derive(Debug, Clone, Args)]
pub struct LaunchArgs {
    /// How many ranks to start on this machine (each GPU it may see is one rank's).
    #[arg(long)]
    pub ranks: usize,
    /// How many GPUs this machine gives the run, where `CUDA_VISIBLE_DEVICES` does not name them (a
    /// container sees only its own, counted from 0); 0: the CPU.
    #[arg(long, default_value_t = 0)]
    pub gpus: usize,
    /// How many machines the run spans, each starting `--ranks` ranks.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// This machine's place among them (0 has rank 0). Without it, a launch inside a Slurm allocation
    /// spreads itself over the allocation's nodes.
    #[arg(long)]
    pub node_rank: Option<usize>,
    /// What each rank runs: `train` or `pretrain` and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

/// A rank's process and what it left.
struct RankProcess {
    child: Child,
    ended: Option<ExitStatus>,
    /// Killed by the launch after another rank failed: its end is not a cause.
    killed: bool,
    last_words: Arc<Mutex<VecDeque<String>>>,
}

/// Runs the launch; returns the exit code (0 when every rank ended well).
pub fn run_launch(args: &LaunchArgs) -> Result<i32> {
    let events = EventSink::new(Box::new(std::io::stdout()));
    let (plan, stop, program, meeting) = match prepare(args) {
        Ok(started) => started,
        Err(e) => {
            events.failed(&e.to_string());
            return Err(e);
        }
    };
    if plan.spread {
        return spread(args, &program, &stop, &events);
    }

    let mut ranks: Vec<RankProcess> = Vec::new();
    let mut relays: Vec<JoinHandle<()>> = Vec::new();
    let withheld = Arc::new(Mutex::new(Vec::<String>::new()));
    for local in 0..plan.ranks {
        let rank = plan.rank(local);
        let mut command = Command::new(&program);
        command
            .args(&args.command)
            .envs(plan.env(local, &meeting))
            .stdin(Stdio::null())
            .stdout(if rank == 0 {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                for r in &mut ranks {
                    let _ = r.child.kill();
                    let _ = r.child.wait();
                }
                let e = Error::Config(format!("cannot start rank {rank}: {e}"));
                events.failed(&e.to_string());
                return Err(e);
            }
        };
        let last_words = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            relays.push(relay_stderr(rank, stderr, Arc::clone(&last_words)));
        }
        if let Some(stdout) = child.stdout.take() {
            relays.push(relay_events(stdout, Arc::clone(&withheld)));
        }
        ranks.push(RankProcess {
            child,
            ended: None,
            killed: false,
            last_words,
        });
    }

    let causes = supervise(&mut ranks, &stop);
    for relay in relays {
        let _ = relay.join();
    }
    let withheld = withheld.lock().map(|w| w.clone()).unwrap_or_default();
    // Rank 0's own failure (bad data fails every rank alike), not one a peer caused, is told in its
    // own whole words.
    let rank0_own = plan.node == 0
        && causes.contains(&0)
        && failures(&withheld).iter().any(|m| !m.contains(PEER_FAILED));
    match causes.first() {
        None => {
            release(&withheld);
            Ok(0)
        }
        Some(_) if rank0_own => {
            release(&withheld);
            Ok(exit_code(ranks[0].ended))
        }
        Some(&cause) => {
            let r = &ranks[cause];
            events.failed(&format!(
                "rank {} {}{}",
                plan.rank(cause),
                how(r.ended),
                words(&r.last_words)
            ));
            Ok(exit_code(r.ended))
        }
    }
}

/// The plan, the stop flag signals raise, this program and the meeting file — the meeting file of an
/// earlier launch in this folder removed (the ranks would read its addresses): once, before any rank
/// starts, by the launch of a single machine or the one that spreads a run.
fn prepare(args: &LaunchArgs) -> Result<(Plan, Arc<AtomicBool>, PathBuf, PathBuf)> {
    let plan = Plan::new(args, |name| std::env::var(name).ok())?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in crate::train::signal::STOP_SIGNALS {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Error::Config(format!("cannot handle signals: {e}")))?;
    }
    let program = std::env::current_exe()
        .map_err(|e| Error::Config(format!("cannot find this program: {e}")))?;
    let meeting = std::env::current_dir()
        .map_err(|e| Error::Config(format!("cannot read the working directory: {e}")))?
        .join(MEETING_FILE);
    if plan.spread || plan.nodes == 1 {
        let _ = std::fs::remove_file(&meeting);
    }
    Ok((plan, stop, program, meeting))
}

/// Spreads the run over the Slurm allocation's nodes: `srun` starts this launch once on each, which
/// starts that node's ranks. What the nodes say on stdout comes here: rank 0's events, relayed as
/// they come, and the failures the nodes' launches report, of which the one told is a rank's own
/// failure rather than the "peer left" the others saw after it.
fn spread(args: &LaunchArgs, program: &Path, stop: &AtomicBool, events: &EventSink) -> Result<i32> {
    let mut srun = Command::new("srun");
    srun.args(srun_args(args, std::env::var("SLURM_CPUS_PER_TASK").ok()))
        .arg(program)
        .args(node_launch_args(args))
        .env(SPREAD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = match srun.spawn() {
        Ok(child) => child,
        Err(e) => {
            let e = Error::Config(format!(
                "cannot start srun to spread the run over the nodes: {e}"
            ));
            events.failed(&e.to_string());
            return Err(e);
        }
    };
    let withheld = Arc::new(Mutex::new(Vec::<String>::new()));
    let relay = child
        .stdout
        .take()
        .map(|stdout| relay_events(stdout, Arc::clone(&withheld)));
    let mut passed_on = false;
    let status = loop {
        if stop.load(Ordering::Relaxed) && !passed_on {
            // srun turns a TERM into a kill of every task, but passes USR1 on as it is, to every
            // process of the step: the nodes' launches and their ranks take it as a stop.
            passed_on = true;
            signal(&child, libc::SIGUSR1);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break child.wait().ok(),
        }
    };
    if let Some(relay) = relay {
        let _ = relay.join();
    }
    let withheld = withheld.lock().map(|w| w.clone()).unwrap_or_default();
    let ok = status.is_some_and(|s| s.success());
    match told_failure(&withheld) {
        None if ok => {
            release(&withheld);
            Ok(0)
        }
        None => {
            events.failed(&format!("srun {}", how(status)));
            Ok(exit_code(status))
        }
        Some(message) => {
            events.failed(&message);
            Ok(exit_code(status).max(1))
        }
    }
}

/// `srun`'s options for a spread: one task per node, every node's environment as this one's (the
/// batch job's is the cluster's minimal one), the cores each task asked for, and the other nodes
/// ended when one node's launch fails.
fn srun_args(args: &LaunchArgs, cpus_per_task: Option<String>) -> Vec<String> {
    let mut out = vec![
        format!("--nodes={}", args.nodes),
        format!("--ntasks={}", args.nodes),
        "--ntasks-per-node=1".to_string(),
        "--kill-on-bad-exit=1".to_string(),
        "--export=ALL".to_string(),
    ];
    // Since Slurm 22.05 a step no longer inherits the batch job's --cpus-per-task.
    if let Some(cpus) = cpus_per_task.filter(|c| c.parse::<u32>().is_ok()) {
        out.push(format!("--cpus-per-task={cpus}"));
    }
    out
}

/// The launch each node runs: this one's, its place left to `SLURM_PROCID`.
fn node_launch_args(args: &LaunchArgs) -> Vec<String> {
    let mut out = vec![
        "launch".to_string(),
        "--nodes".into(),
        args.nodes.to_string(),
        "--ranks".into(),
        args.ranks.to_string(),
        "--gpus".into(),
        args.gpus.to_string(),
        "--".into(),
    ];
    out.extend(args.command.iter().cloned());
    out
}

/// The messages of the `error` events among event lines.
fn failures(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "error")
        .filter_map(|e| e["message"].as_str().map(String::from))
        .collect()
}

/// Of the failures the nodes reported, the one to tell: the first that is a rank's own, else the
/// first.
fn told_failure(lines: &[String]) -> Option<String> {
    let errors = failures(lines);
    errors
        .iter()
        .find(|m| !m.contains(PEER_FAILED))
        .or(errors.first())
        .cloned()
}

/// The ranks to start and what each is given.
#[derive(Debug, PartialEq)]
struct Plan {
    /// This launch spreads the run over a Slurm allocation's nodes rather than starting ranks.
    spread: bool,
    nodes: usize,
    /// This machine's place among the nodes.
    node: usize,
    /// Ranks on this machine.
    ranks: usize,
    /// One GPU per rank, as `CUDA_VISIBLE_DEVICES` named them; empty on the CPU.
    gpus: Vec<String>,
    /// Intra-op threads per rank on the CPU, where none were set: the cores shared out.
    threads: Option<usize>,
}

impl Plan {
    fn new(args: &LaunchArgs, var: impl Fn(&str) -> Option<String>) -> Result<Plan> {
        if args.ranks == 0 || args.ranks > MAX_RANKS {
            return Err(Error::Config(format!(
                "--ranks {}: from 1 to {MAX_RANKS} ranks on one machine",
                args.ranks
            )));
        }
        match args.command.first().map(String::as_str) {
            Some("train" | "pretrain") => {}
            other => {
                return Err(Error::Config(format!(
                    "launch runs `train` or `pretrain` as ranks, not {}",
                    other.map_or("nothing".to_string(), |c| format!("`{c}`"))
                )))
            }
        }
        if args.nodes == 0 || args.nodes > MAX_NODES {
            return Err(Error::Config(format!(
                "--nodes {}: from 1 to {MAX_NODES} machines",
                args.nodes
            )));
        }
        let spread_here = var(SPREAD).as_deref() == Some("1");
        let node = match args.node_rank {
            Some(node) => Some(node),
            None if args.nodes == 1 => Some(0),
            None if spread_here => Some(
                var("SLURM_PROCID")
                    .and_then(|p| p.trim().parse::<usize>().ok())
                    .ok_or_else(|| {
                        Error::Config("spread over nodes, but srun gave no SLURM_PROCID".into())
                    })?,
            ),
            None if var("SLURM_JOB_ID").is_some() => None,
            None => {
                return Err(Error::Config(format!(
                    "--nodes {}: give each machine's launch its --node-rank, or launch inside a Slurm allocation to spread over its nodes",
                    args.nodes
                )))
            }
        };
        let Some(node) = node else {
            return Ok(Plan {
                spread: true,
                nodes: args.nodes,
                node: 0,
                ranks: args.ranks,
                gpus: Vec::new(),
                threads: None,
            });
        };
        if node >= args.nodes {
            return Err(Error::Config(format!(
                "node {node} is not one of the {} nodes (0 to {})",
                args.nodes,
                args.nodes - 1
            )));
        }
        let mut visible: Vec<String> = var("CUDA_VISIBLE_DEVICES")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect();
        if visible.is_empty() {
            visible = (0..args.gpus).map(|i| i.to_string()).collect();
        }
        let gpus = match visible.len() {
            0 => Vec::new(),
            n if n >= args.ranks => visible[..args.ranks].to_vec(),
            n => {
                return Err(Error::Config(format!(
                "{} ranks, one GPU each, but only {n} GPU(s) are given (CUDA_VISIBLE_DEVICES, --gpus)",
                args.ranks
            )))
            }
        };
        let threads = (gpus.is_empty() && var("OMP_NUM_THREADS").is_none()).then(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / args.ranks).max(1)
        });
        Ok(Plan {
            spread: false,
            nodes: args.nodes,
            node,
            ranks: args.ranks,
            gpus,
            threads,
        })
    }

    /// The run's rank of this machine's `local`-th.
    fn rank(&self, local: usize) -> usize {
        self.node * self.ranks + local
    }

    /// What this machine's `local`-th rank is given, in torchrun's names.
    fn env(&self, local: usize, meeting: &std::path::Path) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "WORLD_SIZE".to_string(),
                (self.nodes * self.ranks).to_string(),
            ),
            ("RANK".to_string(), self.rank(local).to_string()),
            ("LOCAL_RANK".to_string(), local.to_string()),
            ("LOCAL_WORLD_SIZE".to_string(), self.ranks.to_string()),
            ("GROUP_RANK".to_string(), self.node.to_string()),
            (
                "PADDOCK_MEETING_FILE".to_string(),
                meeting.display().to_string(),
            ),
        ];
        if let Some(gpu) = self.gpus.get(local) {
            env.push(("CUDA_VISIBLE_DEVICES".into(), gpu.clone()));
        }
        if let Some(threads) = self.threads {
            env.push(("OMP_NUM_THREADS".into(), threads.to_string()));
        }
        env
    }
}

/// Waits for every rank; passes a stop on; once one fails, gives the others [`GRACE`] and kills them.
/// Returns the ranks that failed on their own, the first cause first.
fn supervise(ranks: &mut [RankProcess], stop: &AtomicBool) -> Vec<usize> {
    let mut causes = Vec::new();
    let mut stopped = false;
    let mut failed_at: Option<Instant> = None;
    while ranks.iter().any(|r| r.ended.is_none()) {
        if stop.load(Ordering::Relaxed) && !stopped {
            stopped = true;
            for r in ranks.iter().filter(|r| r.ended.is_none()) {
                signal(&r.child, libc::SIGTERM);
            }
        }
        let mut now_failed = Vec::new();
        for (rank, r) in ranks.iter_mut().enumerate() {
            if r.ended.is_some() {
                continue;
            }
            if let Ok(Some(status)) = r.child.try_wait() {
                r.ended = Some(status);
                if !status.success() && !r.killed {
                    now_failed.push(rank);
                }
            }
        }
        // Of ranks seen failing together, one whose collective failed was failed by another.
        now_failed.sort_by_key(|&rank| words(&ranks[rank].last_words).contains(PEER_FAILED));
        causes.extend(now_failed);
        if !causes.is_empty() && failed_at.is_none() {
            failed_at = Some(Instant::now());
        }
        if failed_at.is_some_and(|at| at.elapsed() >= GRACE) {
            for r in ranks.iter_mut().filter(|r| r.ended.is_none()) {
                r.killed = true;
                let _ = r.child.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    causes
}

fn signal(child: &Child, signal: i32) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill takes plain integers; the child is ours and not yet reaped.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// Copies a rank's stderr to ours, each line marked with the rank, keeping its last lines.
fn relay_stderr(
    rank: usize,
    stderr: impl std::io::Read + Send + 'static,
    last: Arc<Mutex<VecDeque<String>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            let _ = writeln!(std::io::stderr().lock(), "[rank {rank}] {line}");
            if !line.trim().is_empty() {
                if let Ok(mut last) = last.lock() {
                    if last.len() == LAST_WORDS {
                        last.pop_front();
                    }
                    last.push_back(line);
                }
            }
        }
    })
}

/// Copies rank 0's events to our stdout as they come, but its `error` and `end`: those wait for every
/// rank's end, when it is known whether rank 0's failure was its own.
fn relay_events(
    stdout: impl std::io::Read + Send + 'static,
    withheld: Arc<Mutex<Vec<String>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let last_word = serde_json::from_str::<serde_json::Value>(&line)
                .is_ok_and(|v| v["event"] == "error" || v["event"] == "end");
            if last_word {
                if let Ok(mut w) = withheld.lock() {
                    w.push(line);
                }
            } else {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}").and_then(|_| out.flush());
            }
        }
    })
}

fn release(lines: &[String]) {
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

/// How a rank ended, in words.
fn how(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => {
                let name = match sig {
                    libc::SIGKILL => " (SIGKILL: killed, perhaps for memory)",
                    libc::SIGSEGV => " (SIGSEGV)",
                    libc::SIGABRT => " (SIGABRT)",
                    libc::SIGTERM => " (SIGTERM)",
                    _ => "",
                };
                format!("was ended by signal {sig}{name}")
            }
            _ => "ended".to_string(),
        },
        None => "did not end".to_string(),
    }
}

/// `: ` and a rank's last words, its own `error:` line where it wrote one.
fn words(last: &Mutex<VecDeque<String>>) -> String {
    let Ok(last) = last.lock() else {
        return String::new();
    };
    match last
        .iter()
        .rev()
        .find(|l| l.starts_with("error: "))
        .or(last.back())
    {
        Some(line) => format!(": {}", line.trim_start_matches("error: ")),
        None => String::new(),
    }
}

fn exit_code(status: Option<ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => s
            .code()
            .or(s.signal().map(|sig| 128 + sig))
            .unwrap_or(1)
            .max(1),
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan for `ranks` running `command`, where `vars` holds the environment and the options
    /// `--gpus`, `--nodes` and `--node-rank`.
    fn plan(ranks: usize, command: &[&str], vars: &[(&str, &str)]) -> Result<Plan> {
        let option = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.parse::<usize>().unwrap())
        };
        let args = LaunchArgs {
            ranks,
            gpus: option("--gpus").unwrap_or(0),
            nodes: option("--nodes").unwrap_or(1),
            node_rank: option("--node-rank"),
            command: command.iter().map(|s| s.to_string()).collect(),
        };
        let vars: std::collections::HashMap<&str, &str> = vars.iter().copied().collect();
        Plan::new(&args, |k| vars.get(k).map(|v| v.to_string()))
    }

    fn has(env: &[(String, String)], pairs: &[(&str, &str)]) {
        for pair in pairs {
            assert!(
                env.contains(&(pair.0.into(), pair.1.into())),
                "{pair:?} in {env:?}"
            );
        }
    }

    #[test]
    fn across_nodes_each_machine_starts_its_ranks_of_the_run() {
        let meeting = std::path::Path::new("/shared/run/ranks.meeting");
        // The second of three machines, two GPUs each: ranks 2 and 3 of 6.
        let second = plan(
            2,
            &["train"],
            &[
                ("--nodes", "3"),
                ("--node-rank", "1"),
                ("CUDA_VISIBLE_DEVICES", "4,5"),
            ],
        )
        .unwrap();
        assert!(!second.spread);
        has(
            &second.env(1, meeting),
            &[
                ("WORLD_SIZE", "6"),
                ("RANK", "3"),
                ("LOCAL_RANK", "1"),
                ("LOCAL_WORLD_SIZE", "2"),
                ("GROUP_RANK", "1"),
                ("CUDA_VISIBLE_DEVICES", "5"),
            ],
        );
        // Inside a Slurm allocation with no place given: this launch spreads the run with srun; the
        // launches srun starts take their place from it.
        let batch = [("--nodes", "2"), ("SLURM_JOB_ID", "77")];
        assert!(plan(1, &["train"], &batch).unwrap().spread);
        let task = [batch.as_slice(), &[(SPREAD, "1"), ("SLURM_PROCID", "1")]].concat();
        let on_node = plan(1, &["train"], &task).unwrap();
        assert_eq!(
            (on_node.spread, on_node.node, on_node.rank(0)),
            (false, 1, 1)
        );
    }

    #[test]
    fn a_spread_asks_srun_for_one_launch_per_node_with_the_cores_asked() {
        let args = LaunchArgs {
            ranks: 2,
            gpus: 2,
            nodes: 3,
            node_rank: None,
            command: ["train", "--config", "job.toml"].map(String::from).to_vec(),
        };
        let srun = srun_args(&args, Some("4".into()));
        for want in [
            "--nodes=3",
            "--ntasks=3",
            "--ntasks-per-node=1",
            "--kill-on-bad-exit=1",
            "--export=ALL",
            "--cpus-per-task=4",
        ] {
            assert!(srun.iter().any(|a| a == want), "{want} in {srun:?}");
        }
        assert!(!srun_args(&args, Some("4; rm".into()))
            .iter()
            .any(|a| a.starts_with("--cpus-per-task")));
        assert_eq!(
            node_launch_args(&args).join(" "),
            "launch --nodes 3 --ranks 2 --gpus 2 -- train --config job.toml"
        );
    }

    #[test]
    fn of_the_nodes_failures_the_one_told_is_a_ranks_own() {
        let error = |m: &str| serde_json::json!({"event": "error", "message": m}).to_string();
        let end = r#"{"event":"end","status":"failed","step":0}"#.to_string();
        let lines = [
            error("rank 0 exited with code 1: ranks: rank 0: summing over the ranks: Connection closed by peer"),
            end.clone(),
            error("rank 3 was ended by signal 9 (SIGKILL: killed, perhaps for memory)"),
            end,
        ];
        assert_eq!(
            told_failure(&lines).as_deref(),
            Some("rank 3 was ended by signal 9 (SIGKILL: killed, perhaps for memory)")
        );
        assert!(told_failure(&lines[..2])
            .unwrap()
            .contains("Connection closed"));
        assert_eq!(told_failure(&[]), None);
    }

    #[test]
    fn each_rank_gets_one_visible_gpu_or_its_share_of_the_cores() {
        let on_gpus = plan(
            2,
            &["train"],
            &[("CUDA_VISIBLE_DEVICES", "GPU-a, GPU-b,GPU-c")],
        )
        .unwrap();
        assert_eq!(on_gpus.gpus, vec!["GPU-a", "GPU-b"]);
        assert_eq!(on_gpus.threads, None);
        has(
            &on_gpus.env(1, std::path::Path::new("/run/ranks.meeting")),
            &[
                ("WORLD_SIZE", "2"),
                ("RANK", "1"),
                ("LOCAL_RANK", "1"),
                ("PADDOCK_MEETING_FILE", "/run/ranks.meeting"),
                ("CUDA_VISIBLE_DEVICES", "GPU-b"),
            ],
        );
        let on_cpu = plan(2, &["train"], &[("CUDA_VISIBLE_DEVICES", "")]).unwrap();
        assert!(on_cpu.gpus.is_empty());
        assert!(on_cpu.threads.is_some_and(|t| t >= 1));
        assert_eq!(
            plan(2, &["train"], &[("OMP_NUM_THREADS", "3")])
                .unwrap()
                .threads,
            None
        );
        // In a container: its own GPUs, counted from 0.
        let in_container = plan(2, &["train"], &[("--gpus", "2")]).unwrap();
        assert_eq!(in_container.gpus, vec!["0", "1"]);
    }

    #[test]
    fn a_launch_that_cannot_run_says_why() {
        for (ranks, command, vars, said) in [
            (
                0,
                vec!["train"],
                vec![],
                "--ranks 0: from 1 to 64 ranks on one machine",
            ),
            (
                65,
                vec!["train"],
                vec![],
                "--ranks 65: from 1 to 64 ranks on one machine",
            ),
            (
                2,
                vec!["eval"],
                vec![],
                "launch runs `train` or `pretrain` as ranks, not `eval`",
            ),
            (
                4,
                vec!["train"],
                vec![("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b")],
                "4 ranks, one GPU each, but only 2 GPU(s) are given (CUDA_VISIBLE_DEVICES, --gpus)",
            ),
            (1, vec!["train"], vec![("--nodes", "0")], "--nodes 0: from 1 to 32 machines"),
            (
                1,
                vec!["train"],
                vec![("--nodes", "2")],
                "--nodes 2: give each machine's launch its --node-rank, or launch inside a Slurm allocation to spread over its nodes",
            ),
            (
                1,
                vec!["train"],
                vec![("--nodes", "2"), ("--node-rank", "2")],
                "node 2 is not one of the 2 nodes (0 to 1)",
            ),
            (
                1,
                vec!["train"],
                vec![("--nodes", "2"), (SPREAD, "1"), ("SLURM_JOB_ID", "7")],
                "spread over nodes, but srun gave no SLURM_PROCID",
            ),
        ] {
            match plan(ranks, &command, &vars) {
                Err(Error::Config(why)) => assert_eq!(why, said),
                other => panic!("{ranks} {command:?}: {other:?}"),
            }
        }
    }
}

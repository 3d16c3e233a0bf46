//! `launch --ranks N -- train …`: one run as N ranks on this machine, as torchrun starts them: each a
//! process of this binary with `WORLD_SIZE`, `RANK` and `LOCAL_RANK`, meeting at a file in the run's
//! folder, with one of the GPUs this process may see (or, on the CPU, its share of the cores).
//!
//! To whoever started it, the launch is the run: rank 0's event stream is its stdout, every rank's
//! stderr its stderr (each line prefixed with the rank that spoke), a TERM it gets is passed to every
//! rank (which stop together, rank 0 writing the checkpoint), and its exit is the run's. When a rank
//! fails, the others are stopped, and the failure reported is the rank that failed first — not the
//! others' "a peer closed the connection" that follows it — with its last words.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
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

#[derive(Debug, Clone, Args)]
pub struct LaunchArgs {
    /// How many ranks to start on this machine (each GPU it may see is one rank's).
    #[arg(long)]
    pub ranks: usize,
    /// How many GPUs this machine gives the run, where `CUDA_VISIBLE_DEVICES` does not name them (a
    /// container sees only its own, counted from 0); 0: the CPU.
    #[arg(long, default_value_t = 0)]
    pub gpus: usize,
    /// What each rank runs: `train` and its arguments.
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
    let plan = match Plan::new(args, |name| std::env::var(name).ok()) {
        Ok(plan) => plan,
        Err(e) => {
            events.failed(&e.to_string());
            return Err(e);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Error::Config(format!("cannot handle signals: {e}")))?;
    }
    let program = std::env::current_exe()
        .map_err(|e| Error::Config(format!("cannot find this program: {e}")))?;
    let meeting = std::env::current_dir()
        .map_err(|e| Error::Config(format!("cannot read the working directory: {e}")))?
        .join(MEETING_FILE);
    // Left by an earlier launch in this folder: the ranks would read its addresses.
    let _ = std::fs::remove_file(&meeting);

    let mut ranks = Vec::new();
    let mut relays: Vec<JoinHandle<()>> = Vec::new();
    let withheld = Arc::new(Mutex::new(Vec::<String>::new()));
    for rank in 0..plan.ranks {
        let mut command = Command::new(&program);
        command
            .args(&args.command)
            .envs(plan.env(rank, &meeting))
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
                    let r: &mut RankProcess = r;
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
    let rank0_own = causes.contains(&0)
        && withheld
            .iter()
            .any(|l| l.contains("\"event\":\"error\"") && !l.contains("ranks: rank"));
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
                "rank {cause} {}{}",
                how(r.ended),
                words(&r.last_words)
            ));
            Ok(exit_code(r.ended))
        }
    }
}

/// The ranks to start and what each is given.
#[derive(Debug, PartialEq)]
struct Plan {
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
            Some("train") => {}
            other => {
                return Err(Error::Config(format!(
                    "launch runs `train` as ranks, not {}",
                    other.map_or("nothing".to_string(), |c| format!("`{c}`"))
                )))
            }
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
            ranks: args.ranks,
            gpus,
            threads,
        })
    }

    fn env(&self, rank: usize, meeting: &std::path::Path) -> Vec<(String, String)> {
        let mut env = vec![
            ("WORLD_SIZE".to_string(), self.ranks.to_string()),
            ("RANK".to_string(), rank.to_string()),
            ("LOCAL_RANK".to_string(), rank.to_string()),
            (
                "PADDOCK_MEETING_FILE".to_string(),
                meeting.display().to_string(),
            ),
        ];
        if let Some(gpu) = self.gpus.get(rank) {
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
        now_failed.sort_by_key(|&rank| words(&ranks[rank].last_words).contains("ranks: rank"));
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

    fn plan(ranks: usize, command: &[&str], vars: &[(&str, &str)]) -> Result<Plan> {
        let args = LaunchArgs {
            ranks,
            gpus: vars
                .iter()
                .find(|(k, _)| *k == "--gpus")
                .map_or(0, |(_, v)| v.parse().unwrap()),
            command: command.iter().map(|s| s.to_string()).collect(),
        };
        let vars: std::collections::HashMap<&str, &str> = vars.iter().copied().collect();
        Plan::new(&args, |k| vars.get(k).map(|v| v.to_string()))
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
        let env = on_gpus.env(1, std::path::Path::new("/run/ranks.meeting"));
        for pair in [
            ("WORLD_SIZE", "2"),
            ("RANK", "1"),
            ("LOCAL_RANK", "1"),
            ("PADDOCK_MEETING_FILE", "/run/ranks.meeting"),
            ("CUDA_VISIBLE_DEVICES", "GPU-b"),
        ] {
            assert!(
                env.contains(&(pair.0.into(), pair.1.into())),
                "{pair:?} in {env:?}"
            );
        }
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
                "launch runs `train` as ranks, not `eval`",
            ),
            (
                4,
                vec!["train"],
                vec![("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b")],
                "4 ranks, one GPU each, but only 2 GPU(s) are given (CUDA_VISIBLE_DEVICES, --gpus)",
            ),
        ] {
            match plan(ranks, &command, &vars) {
                Err(Error::Config(why)) => assert_eq!(why, said),
                other => panic!("{ranks} {command:?}: {other:?}"),
            }
        }
    }
}

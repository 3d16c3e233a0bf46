//! Data parallelism through the real binary: two ranks (processes meeting at a file, Gloo on the CPU)
//! train the run one rank trains — same losses, same metrics, same weights within 1e-4 relative, as
//! PyTorch's own DDP tests compare; a stop asked of one rank reaches the other (rank 0 writes the last
//! checkpoint) and the run resumes with one rank; a run of one rank resumes with two; a rank killed
//! mid-run fails the other with its reason instead of a hang. And the same through `launch`, which
//! starts the ranks as torchrun would: one event stream, the rank that failed first named, a TERM
//! reaching every rank; and through two launches as two machines would run them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{after_first_step, assert_close, signal, two_epochs_of_five_steps};
use trainer::events::EventSink;
use trainer::train::{train, EndStatus, JobConfig, RunControl, TrainOutcome};

/// The resume tests' run without dropout (dropout masks differ with the rows a process draws them for).
fn job(out: &Path) -> JobConfig {
    two_epochs_of_five_steps(out, "hidden_dropout = 0.0\nattention_dropout = 0.0")
}

/// Runs in this process, one at a time: libtorch's generator, which initialises the weights, is the
/// process's, and the tests run side by side.
fn alone(job: &JobConfig, halt: Option<usize>) -> TrainOutcome {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let control = RunControl {
        halt_after_step: halt,
        ..Default::default()
    };
    train(job, &EventSink::memory(), &control).unwrap()
}

/// Starts rank `rank` of `world` on `config`, meeting at `meeting`.
fn rank(config: &Path, meeting: &Path, rank: usize, world: usize, timeout_secs: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_paddock-trainer"))
        .args(["train", "--config"])
        .arg(config)
        .env("WORLD_SIZE", world.to_string())
        .env("RANK", rank.to_string())
        .env("PADDOCK_MEETING_FILE", meeting)
        .env("PADDOCK_COLLECTIVE_TIMEOUT_SECS", timeout_secs.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn write_job(job: &JobConfig, path: &Path) {
    std::fs::write(path, toml::to_string(job).unwrap()).unwrap();
}

/// A finished rank: its exit, its event lines, its stderr.
struct Ended {
    ok: bool,
    events: Vec<serde_json::Value>,
    stderr: String,
}

fn ended(child: Child) -> Ended {
    let out = child.wait_with_output().unwrap();
    Ended {
        ok: out.status.success(),
        events: String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs ranks 0 and 1 of two, side by side, to their end.
fn both(config: &Path, meeting: &Path) -> (Ended, Ended) {
    let (r0, r1) = (
        rank(config, meeting, 0, 2, 120),
        rank(config, meeting, 1, 2, 120),
    );
    (ended(r0), ended(r1))
}

fn step_losses(events: &[serde_json::Value]) -> Vec<(u64, f64)> {
    events
        .iter()
        .filter(|e| e["event"] == "step")
        .map(|e| (e["step"].as_u64().unwrap(), e["loss"].as_f64().unwrap()))
        .collect()
}

fn last_checkpoint(events: &[serde_json::Value]) -> PathBuf {
    let ckpt = events
        .iter()
        .rev()
        .find(|e| e["event"] == "checkpoint")
        .expect("a checkpoint");
    PathBuf::from(ckpt["path"].as_str().unwrap())
}

#[test]
fn two_ranks_train_the_run_one_rank_trains() {
    let tmp = tempfile::tempdir().unwrap();
    let one = alone(&job(&tmp.path().join("one")), None);
    assert_eq!((one.status, one.global_step), (EndStatus::Completed, 10));

    let config = tmp.path().join("two.toml");
    write_job(&job(&tmp.path().join("two")), &config);
    let (r0, r1) = both(&config, &tmp.path().join("meeting"));
    assert!(r0.ok, "rank 0: {}", r0.stderr);
    assert!(r1.ok, "rank 1: {}", r1.stderr);
    // Rank 0 reports for the run; rank 1 says nothing on the event stream.
    assert!(r1.events.is_empty(), "{:?}", r1.events);
    let end = r0.events.last().unwrap();
    assert_eq!(
        (end["event"].as_str(), end["status"].as_str()),
        (Some("end"), Some("completed"))
    );
    assert_eq!(end["step"], 10);

    // The same loss at every step (the mean over the step's 32 rows, whoever computed them).
    let two = step_losses(&r0.events);
    let losses: Vec<(u64, f64)> = one.losses.iter().map(|l| (l.step as u64, l.loss)).collect();
    assert_eq!(two.len(), losses.len());
    for ((s1, l1), (s2, l2)) in losses.iter().zip(&two) {
        assert_eq!(s1, s2);
        assert!(
            (l1 - l2).abs() <= 1e-4 * l1.abs(),
            "step {s1}: {l1} alone, {l2} with two ranks"
        );
    }
    // The same dev metrics, computed from both ranks' shares of the dev set.
    let dev = r0
        .events
        .iter()
        .rev()
        .find(|e| e["event"] == "eval")
        .unwrap();
    let alone_dev = one.dev_metrics.as_ref().unwrap();
    assert_eq!(
        dev["metrics"]["accuracy"].as_f64(),
        alone_dev.get("accuracy")
    );
    // The same weights; the checkpoints (written once, by rank 0) are where they would be.
    let two_last = last_checkpoint(&r0.events);
    assert_eq!(
        two_last.file_name(),
        one.last_checkpoint.as_ref().unwrap().file_name()
    );
    assert_close(one.last_checkpoint.as_ref().unwrap(), &two_last, 1e-4);

    // Launched as two ranks: the same run, one event stream, every rank's stderr marked.
    let launched = tmp.path().join("launched");
    std::fs::create_dir_all(&launched).unwrap();
    write_job(&job(&launched.join("out")), &launched.join("job.toml"));
    let out = launch(&launched, 2).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<_> = events.iter().filter(|e| e["event"] == "end").collect();
    assert_eq!(ends.len(), 1, "{events:?}");
    assert_eq!(ends[0]["status"], "completed");
    assert!(
        stderr.lines().any(|l| l.starts_with("[rank 0] ")),
        "{stderr}"
    );
    assert!(stderr.lines().all(|l| l.starts_with("[rank ")), "{stderr}");
    assert_eq!(step_losses(&events).len(), 10);
    assert_close(
        one.last_checkpoint.as_ref().unwrap(),
        &last_checkpoint(&events),
        1e-4,
    );

    // Launched on two machines of one rank each (here both on this one, linking over the hostname's
    // address as machines do): the same run again, told by the first machine's launch alone.
    let nodes = tmp.path().join("nodes");
    std::fs::create_dir_all(&nodes).unwrap();
    write_job(&job(&nodes.join("out")), &nodes.join("job.toml"));
    let node = |k: &str| launch_with(&nodes, 1, &["--nodes", "2", "--node-rank", k]);
    let (first, second) = (node("0"), node("1"));
    let (first, second) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(second.stdout.is_empty(), "the second machine tells nothing");
    assert!(
        stderr.lines().all(|l| l.starts_with("[rank 1] ")),
        "{stderr}"
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&first.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.last().unwrap()["status"], "completed");
    assert_eq!(step_losses(&events).len(), 10);
    assert_close(
        one.last_checkpoint.as_ref().unwrap(),
        &last_checkpoint(&events),
        1e-4,
    );
}

/// `paddock-trainer launch --ranks N -- train --config job.toml`, in `dir`.
fn launch(dir: &Path, ranks: usize) -> Child {
    launch_with(dir, ranks, &[])
}

/// As [`launch`], with more of launch's options.
fn launch_with(dir: &Path, ranks: usize, options: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_paddock-trainer"))
        .args(["launch", "--ranks", &ranks.to_string()])
        .args(options)
        .args(["--", "train", "--config", "job.toml"])
        .current_dir(dir)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env("PADDOCK_COLLECTIVE_TIMEOUT_SECS", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pid of the launch's rank `rank`, read from its children's environments.
fn rank_pid(launch: u32, rank: usize) -> u32 {
    let children =
        std::fs::read_to_string(format!("/proc/{launch}/task/{launch}/children")).unwrap();
    children
        .split_whitespace()
        .map(|p| p.parse::<u32>().unwrap())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| v == format!("RANK={rank}").as_bytes())
            })
        })
        .unwrap_or_else(|| panic!("no rank {rank} among {children}"))
}

#[test]
fn under_launch_a_killed_rank_fails_the_run_in_its_own_words_and_a_term_stops_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let mut long = job(&tmp.path().join("out"));
    long.train.epochs = 200;
    write_job(&long, &tmp.path().join("job.toml"));

    let mut run = launch(tmp.path(), 2);
    let pid = run.id();
    let events = after_first_step(&mut run, || signal("-KILL", rank_pid(pid, 1)));
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 9), "{stderr}");
    // The cause, not rank 0's "connection closed" that followed it (which stays in the log).
    let errors: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "error")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert!(
        errors[0].starts_with("rank 1 was ended by signal 9 (SIGKILL"),
        "{}",
        errors[0]
    );
    assert_eq!(events.last().unwrap()["status"], "failed");
    assert!(
        stderr.contains("[rank 0] error: ranks: rank 0: "),
        "{stderr}"
    );

    // A TERM to the launch: every rank stops at the same step, rank 0 writing its checkpoint.
    let stop = tmp.path().join("stop");
    std::fs::create_dir_all(&stop).unwrap();
    let mut long = job(&stop.join("out"));
    long.train.epochs = 200;
    write_job(&long, &stop.join("job.toml"));
    let mut run = launch(&stop, 2);
    let pid = run.id();
    let events = after_first_step(&mut run, || signal("-TERM", pid));
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = events.last().unwrap();
    assert_eq!(end["status"], "stopped", "{end}");
    let ckpt = events
        .iter()
        .rev()
        .find(|e| e["event"] == "checkpoint")
        .unwrap();
    assert_eq!(ckpt["step"], end["step"]);
}

#[test]
fn a_stop_asked_of_one_rank_stops_both_and_the_run_resumes_with_one_and_with_two() {
    // Batches of 4: 76 steps, so that the stop, asked after the first, lands well before the end on
    // any machine.
    let job = |out: &Path| {
        let mut j = job(out);
        j.train.batch_size = 4;
        j.train.eval_every_steps = 20;
        j
    };
    let tmp = tempfile::tempdir().unwrap();
    let straight = alone(&job(&tmp.path().join("straight")), None);
    assert_eq!(straight.global_step, 76);

    // Two ranks; SIGTERM to rank 1 alone after rank 0's first step: rank 0 hears of it through the
    // next step's sums and writes the checkpoint that resumes the run.
    let out = tmp.path().join("split");
    let config = tmp.path().join("split.toml");
    write_job(&job(&out), &config);
    let meeting = tmp.path().join("meeting");
    let mut r0 = rank(&config, &meeting, 0, 2, 120);
    let r1 = rank(&config, &meeting, 1, 2, 120);
    let events = after_first_step(&mut r0, || signal("-TERM", r1.id()));
    let (r0, r1) = (ended(r0), ended(r1));
    assert!(
        r0.ok && r1.ok,
        "rank 0: {}\nrank 1: {}",
        r0.stderr,
        r1.stderr
    );
    let end = events.last().unwrap();
    assert_eq!(end["status"], "stopped", "{end}");
    let stopped_at = end["step"].as_u64().unwrap();
    assert!(stopped_at < 76, "stopped at {stopped_at}");
    assert_eq!(
        last_checkpoint(&events),
        out.join(format!("checkpoints/step-{stopped_at:07}"))
    );

    // Resumed by one rank, to the end: the straight run's weights.
    let mut resumed = job(&out);
    resumed.output.resume_from = Some(PathBuf::from("latest"));
    let one = alone(&resumed, None);
    assert_eq!((one.status, one.global_step), (EndStatus::Completed, 76));
    assert_close(
        straight.last_checkpoint.as_ref().unwrap(),
        one.last_checkpoint.as_ref().unwrap(),
        1e-4,
    );

    // And the other way: one rank halted at step 4, two ranks to the end.
    let out = tmp.path().join("grown");
    let part = alone(&job(&out), Some(4));
    assert_eq!((part.status, part.global_step), (EndStatus::Stopped, 4));
    let mut grown = job(&out);
    grown.output.resume_from = Some(PathBuf::from("latest"));
    let config = tmp.path().join("grown.toml");
    write_job(&grown, &config);
    let (r0, r1) = both(&config, &tmp.path().join("grown-meeting"));
    assert!(
        r0.ok && r1.ok,
        "rank 0: {}\nrank 1: {}",
        r0.stderr,
        r1.stderr
    );
    assert_close(
        straight.last_checkpoint.as_ref().unwrap(),
        &last_checkpoint(&r0.events),
        1e-4,
    );
}

#[test]
fn a_rank_killed_mid_run_fails_the_other_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let mut long = job(&tmp.path().join("run"));
    long.train.epochs = 200;
    let config = tmp.path().join("job.toml");
    write_job(&long, &config);
    let meeting = tmp.path().join("meeting");
    let mut r0 = rank(&config, &meeting, 0, 2, 60);
    let mut r1 = rank(&config, &meeting, 1, 2, 60);
    let events = after_first_step(&mut r0, || r1.kill().unwrap());
    let _ = r1.wait();
    let r0 = ended(r0);
    assert!(!r0.ok, "rank 0 went on without rank 1");
    let error = events
        .iter()
        .find(|e| e["event"] == "error")
        .unwrap_or_else(|| panic!("no error event: {events:?}\n{}", r0.stderr));
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("ranks: rank 0: "), "{message}");
    assert_eq!(events.last().unwrap()["status"], "failed");
}

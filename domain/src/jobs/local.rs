//! The local-process executor: `paddock train` as a child of a small `sh` wrapper in the job's run folder
//! under the server's `runs/` (no container can reach it; its inputs are in the workspace's store).
//! Everything a run produces goes to files there — events to `events.jsonl`, stderr to `train.log`
//! (through `paddock log-sink`, which stops copying at a size limit), the trainer's pid to `trainer.pid`
//! and finally its exit status to `exit_code` — so the run does not depend on the server staying up:
//! after a restart (even `kill -9`) the supervisor reads on from where the database says it stopped, and
//! learns how the run ended from `exit_code`.

use std::path::Path;

use super::Jobs;
use crate::storage::{in_volume, Storage};

/// The wrapper (`$1` the binary, `$2` the byte limit of `train.log`): runs the trainer in the background
/// so that its pid can be recorded (a cancel signals the trainer, not the shell), its stderr piped into
/// `paddock log-sink` — or, should that binary not know the command, copied as is — waits for it and
/// writes its exit status atomically once the log is complete.
pub const WRAPPER: &str = r#"paddock="$1"; limit="$2"
{ "$paddock" train --config job.toml 2>&1 >events.jsonl </dev/null &
  echo $! > trainer.pid
  wait $!
  echo $? > exit_code.tmp
} | { "$paddock" log-sink --max-bytes "$limit" train.log || cat >> train.log; }
mv exit_code.tmp exit_code"#;

/// Makes `command` start in `dir`, entered by descriptor in the child just before `exec`, so the folder
/// it runs in is the one that was checked, however its path changes meanwhile.
pub(crate) fn work_in(command: &mut tokio::process::Command, dir: beneath::Dir) {
    use std::os::fd::{AsFd, AsRawFd};
    // SAFETY: the closure runs in the forked child before exec and only calls fchdir(2), which is
    // async-signal-safe; `dir` is owned by the closure, so the descriptor is open until then.
    unsafe {
        command.pre_exec(move || {
            if libc::fchdir(dir.as_fd().as_raw_fd()) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Starts the wrapper in `dir` (job.toml already written) with only `devices` visible; returns its pid.
pub fn launch(jobs: &Jobs, dir: beneath::Dir, devices: &[u32]) -> Result<u32, String> {
    let visible = devices
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(WRAPPER)
        .arg("sh")
        .arg(&jobs.storage.paddock_binary)
        .arg(jobs.train_log_max_bytes.to_string())
        // Only the leased GPUs (none for a CPU job) are visible to the trainer.
        .env("CUDA_VISIBLE_DEVICES", &visible)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group: a Ctrl-C aimed at the server does not reach the job.
        .process_group(0);
    work_in(&mut command, dir);
    let mut child = command.spawn().map_err(|e| format!("running sh: {e}"))?;
    let pid = child.id().ok_or("the wrapper exited at once")?;
    // Reap the wrapper when it ends (after a server restart, init does).
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(pid)
}

/// Waits (up to a second) for the wrapper to record the trainer's pid: a job cancelled while it was
/// starting is signalled right after launch, and a signal sent before `trainer.pid` exists would be lost.
/// Both executors run the same wrapper, so the file is there for containers too (in the volume).
pub(super) async fn wait_for_pid_file(jobs: &Jobs, executor: &str, workspace_id: i64, dir: &Path) {
    for _ in 0..50 {
        let (root, file) = (
            jobs.run_root(executor, workspace_id),
            dir.join("trainer.pid"),
        );
        let written = in_volume("the trainer's pid", move || root?.exists(&file));
        if written.await.unwrap_or(false) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The most `trainer.pid` and `exit_code` may weigh: a number and a newline.
const SMALL_FILE: u64 = 32;

/// Asks the trainer of the local run in `dir` (relative to `runs/`) to stop gracefully (SIGTERM: it
/// finishes the step, writes a checkpoint, ends). The pid comes from `trainer.pid`, which the wrapper
/// wrote; it is still only believed when that process is in `group`, the process group of the wrapper
/// the server started itself ([`launch`] makes it a group leader), so a stale or wrong file signals no
/// stranger.
pub async fn signal_stop(storage: &Storage, dir: &Path, group: Option<i64>) {
    let (storage, file) = (storage.clone(), dir.join("trainer.pid"));
    let read = in_volume("the trainer's pid", move || {
        storage.runs()?.read(&file, SMALL_FILE)
    })
    .await;
    let pid = read
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.trim().parse::<i32>().ok())
        .filter(|p| *p > 1);
    let (Some(pid), Some(group)) = (pid, group) else {
        return;
    };
    // SAFETY: getpgid and kill take plain integers and have no memory effects.
    let pgid = unsafe { libc::getpgid(pid) };
    if i64::from(pgid) != group {
        tracing::warn!(
            pid,
            group,
            "trainer.pid names a process outside the job's process group; not signalled"
        );
        return;
    }
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

/// Kills the process group the server started with leader `pid` (a job's or an evaluation's wrapper,
/// made a group leader at launch), trainer included. Only when `pid` still leads a group: after a
/// restart the number may have been reused by an unrelated process.
pub fn kill_group(pid: i64) {
    let Ok(pid) = i32::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: getpgid and killpg take plain integers and have no memory effects.
    unsafe {
        if libc::getpgid(pid) == pid {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// Whether a process with this pid exists and has not ended (ours or not: EPERM also means it
/// exists).
pub fn is_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let result = unsafe { libc::kill(pid, 0) };
    let exists = result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    // A zombie (ended, not yet reaped) exists but runs nothing.
    exists && !is_zombie(pid)
}

fn is_zombie(pid: i32) -> bool {
    // `pid (comm) S …`: the state follows the last ')', since the command name may hold one.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// The run's exit status once it has ended; `dir` is relative to `root`, and read without following
/// links (see [`beneath`]).
pub fn exit_code(root: &beneath::Dir, dir: &Path) -> beneath::Result<Option<i64>> {
    match root.read(&dir.join("exit_code"), SMALL_FILE) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).trim().parse().ok()),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_but_unreaped_child_is_not_alive() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = i64::from(child.id());
        assert!(is_alive(pid));
        child.kill().unwrap();
        // Not waited for: a zombie until reaped below.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while is_alive(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "a zombie counts as alive"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "still unreaped"
        );
        child.wait().unwrap();
    }
}

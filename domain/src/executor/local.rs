//! The local executor: units run as child processes of the server, each leading its own process group
//! (a Ctrl-C aimed at the server does not reach them; a kill reaches the whole run). Runs keep their
//! folders under the server's `runs/`, which no container can reach, and see the workspace's store at
//! its host path. A run is reaped by a task of its own, so a finished one never lingers as a zombie that
//! looks alive; after a restart, init reaps it. Each run starts under the admin's memory limit for runs
//! ([`crate::children`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::{last_lines, wrapper_args, Executor, Handle, Served, Service, Stop, Work};
use crate::storage::Storage;

pub struct Local {
    storage: Arc<Storage>,
}

impl Local {
    pub fn new(storage: Arc<Storage>) -> Local {
        Local { storage }
    }

    fn paddock(&self) -> String {
        self.storage.paddock_binary.to_string_lossy().into_owned()
    }
}

/// `CUDA_VISIBLE_DEVICES` for these GPUs (their UUIDs, which CUDA accepts and which name the same
/// hardware whatever order CUDA counts in): only the leased ones, none for a CPU unit.
fn visible(devices: &[String]) -> String {
    devices.join(",")
}

#[async_trait::async_trait]
impl Executor for Local {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    async fn start(&self, work: Work) -> Result<Handle, String> {
        let argv = wrapper_args(".", &self.paddock(), &work);
        let mut command = tokio::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env("CUDA_VISIBLE_DEVICES", visible(&work.devices))
            .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        let memory = self.storage.limits.run_memory_bytes();
        crate::children::limit(&mut command, Some(memory), None);
        work_in(&mut command, work.folder);
        let mut child = command.spawn().map_err(|e| format!("running sh: {e}"))?;
        let group = child.id().ok_or("the wrapper exited at once")?;
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(Handle::Process {
            group: i64::from(group),
        })
    }

    /// Ready when it prints the address it listens on (`listening on http://…`).
    async fn serve(&self, service: Service) -> Result<Served, String> {
        if let Some(parent) = service.log.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&service.log)
            .map_err(|e| e.to_string())?;
        let model = self
            .storage
            .store_dir(service.workspace_id)
            .join(&service.model);
        let mut command = tokio::process::Command::new(&self.storage.paddock_binary);
        command
            .args(&service.args)
            .arg("--model")
            .arg(model)
            .args(["--bind", "127.0.0.1:0"])
            .env("CUDA_VISIBLE_DEVICES", visible(&service.devices))
            .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
            .env(super::TOKEN_ENV, &service.token)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::from(log))
            .process_group(0);
        let memory = self.storage.limits.run_memory_bytes();
        crate::children::limit(&mut command, Some(memory), None);
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting serve-model: {e}"))?;
        let group = child
            .id()
            .map(i64::from)
            .ok_or("serve-model exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let first = tokio::time::timeout(service.start_timeout, lines.next_line()).await;
        let base_url = match first {
            Ok(Ok(Some(line))) if line.starts_with("listening on ") => {
                line.trim_start_matches("listening on ").trim().to_string()
            }
            _ => {
                let _ = child.start_kill();
                let tail = std::fs::read_to_string(&service.log).unwrap_or_default();
                return Err(format!("it did not start: {}", last_lines(&tail, 5)));
            }
        };
        // Reaped when it ends (the watcher notices through its pid), its stdout kept drained.
        tokio::spawn(async move {
            while let Ok(Some(_)) = lines.next_line().await {}
            let _ = child.wait().await;
        });
        Ok(Served {
            handle: Handle::Process { group },
            base_url,
        })
    }

    async fn is_running(&self, handle: &Handle) -> Option<bool> {
        Some(handle.pid().is_some_and(is_alive))
    }

    /// Signals only a process that still leads its group: after a restart the recorded number may have
    /// been reused by an unrelated process, which never leads the group of that number.
    async fn stop(&self, handle: &Handle, how: Stop) {
        let Some(group) = handle.pid() else { return };
        match how {
            Stop::Ask => signal_leader(group, libc::SIGTERM),
            Stop::Within(grace) => {
                signal_leader(group, libc::SIGTERM);
                let deadline = tokio::time::Instant::now() + grace;
                while is_alive(group) && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if is_alive(group) {
                    kill_group(group);
                }
            }
            Stop::Kill => kill_group(group),
        }
    }

    async fn clean_up(&self, _handle: &Handle) {}
}

/// Makes `command` start in `dir`, entered by descriptor in the child just before `exec`, so the folder
/// it runs in is the one that was checked, however its path changes meanwhile.
fn work_in(command: &mut tokio::process::Command, dir: beneath::Dir) {
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

/// Whether `pid` is a number the server may have started: positive, not init, an `i32`.
fn plausible(pid: i64) -> Option<i32> {
    i32::try_from(pid).ok().filter(|p| *p > 1)
}

/// Sends `signal` to `pid` when it still leads a process group.
fn signal_leader(pid: i64, signal: i32) {
    let Some(pid) = plausible(pid) else { return };
    // SAFETY: getpgid and kill take plain integers and have no memory effects.
    unsafe {
        if libc::getpgid(pid) == pid {
            libc::kill(pid, signal);
        }
    }
}

/// Kills the process group the server started with leader `pid`, everything in it included, when `pid`
/// still leads a group.
pub fn kill_group(pid: i64) {
    let Some(pid) = plausible(pid) else { return };
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
    let Some(pid) = plausible(pid) else {
        return false;
    };
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

//! Where the scheduler's commands run. Locally they are spawned with their arguments as argv (no
//! shell); over SSH the remote side has a shell, so every word is quoted for it (`shlex`) and a word that
//! cannot be quoted safely (a NUL byte) is refused rather than sent.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::{Error, Result};

/// How long one command may take before the cluster counts as unreachable.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How Paddock reaches a cluster's command-line tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The tools on this host. `slurm_conf`: the configuration they read (`SLURM_CONF`), when not the
    /// host's default `/etc/slurm/slurm.conf`.
    Local { slurm_conf: Option<PathBuf> },
    /// The tools on a login node over SSH: key-based (`identity`), never a password or an agent's other
    /// keys, and the host key checked against `known_hosts` (an unknown or changed key is refused).
    Ssh {
        /// `user@host`.
        destination: String,
        port: u16,
        identity: PathBuf,
        known_hosts: PathBuf,
    },
}

impl Reach {
    /// How the tools are reached, in words for people and errors: `slurm.conf PATH`, or the `ssh`
    /// command's destination and port.
    pub fn shown(&self) -> String {
        match self {
            Reach::Local { slurm_conf: None } => "this host's slurm.conf".to_string(),
            Reach::Local {
                slurm_conf: Some(conf),
            } => format!("slurm.conf {}", conf.display()),
            Reach::Ssh {
                destination, port, ..
            } => format!("ssh {destination} -p {port}"),
        }
    }

    /// Runs `program args…` (with `stdin`, if any) and returns its stdout; a non-zero exit is
    /// [`Error::Failed`] with the command's stderr.
    pub async fn run(&self, program: &str, args: &[String], stdin: Option<&str>) -> Result<String> {
        let shown = format!("{program} {}", args.join(" "));
        let mut command = match self {
            Reach::Local { slurm_conf } => {
                let mut c = Command::new(program);
                c.args(args);
                if let Some(conf) = slurm_conf {
                    c.env("SLURM_CONF", conf);
                }
                c
            }
            Reach::Ssh {
                destination,
                port,
                identity,
                known_hosts,
            } => {
                let words = std::iter::once(program).chain(args.iter().map(String::as_str));
                let remote =
                    shlex::try_join(words).map_err(|e| Error::Invalid(format!("{shown}: {e}")))?;
                let mut c = Command::new("ssh");
                c.args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
                    .args(["-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10"])
                    .arg("-o")
                    .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
                    .arg("-i")
                    .arg(identity)
                    .args(["-p", &port.to_string(), "--", destination.as_str(), &remote]);
                c
            }
        };
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| Error::Spawn {
            command: shown.clone(),
            message: e.to_string(),
        })?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())
                .await
                .map_err(|e| Error::Spawn {
                    command: shown.clone(),
                    message: format!("writing its input: {e}"),
                })?;
        }
        let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| Error::Timeout {
                command: shown.clone(),
                seconds: COMMAND_TIMEOUT.as_secs(),
            })?
            .map_err(|e| Error::Spawn {
                command: shown.clone(),
                message: e.to_string(),
            })?;
        if !output.status.success() {
            return Err(Error::Failed {
                command: shown,
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

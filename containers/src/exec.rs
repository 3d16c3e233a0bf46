//! Running commands in a running container: [`Docker::exec`] collects stdout, stderr and the exit code of a
//! one-off command (health checks, `paddock env exec`); [`Docker::open_terminal`] starts an interactive shell
//! with a TTY and hands back its byte streams plus a [`TerminalControl`] for resizing — the app's WebSocket
//! terminal bridges them to xterm.js.

use std::pin::Pin;
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::ResizeExecOptionsBuilder;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWrite;

use crate::error::{Error, Result};
use crate::Docker;

/// What an attached exec streams back: stdout/stderr frames, or the raw TTY bytes.
type ExecOutputStream =
    Pin<Box<dyn Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Output kept per stream of a one-off command; the rest is dropped and `truncated` set, so a chatty
/// command cannot exhaust the server's memory.
pub const MAX_EXEC_OUTPUT: usize = 8 << 20;

/// How long to wait for Docker to record an exec's exit code after its output has ended. The process has
/// exited by then; the daemon updates its state asynchronously, usually within milliseconds.
const EXIT_CODE_WAIT: Duration = Duration::from_secs(5);

/// The result of a one-off command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i64,
    /// True when output beyond [`MAX_EXEC_OUTPUT`] was dropped.
    pub truncated: bool,
}

/// Optional settings of an exec.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// `uid[:gid]` or name; default: the container's user (1000 for environments).
    pub user: Option<String>,
    pub working_dir: Option<String>,
    /// Extra `KEY=value` variables.
    pub env: Vec<String>,
}

/// An interactive TTY session. `output` yields what the terminal prints; write keystrokes to `input`.
pub struct Terminal {
    pub output: Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>,
    pub input: Pin<Box<dyn AsyncWrite + Send>>,
    pub control: TerminalControl,
}

/// Resizes a terminal and reads its exit code; cloneable, so the WebSocket's reader and writer tasks can
/// both hold one.
#[derive(Clone, Debug)]
pub struct TerminalControl {
    docker: Docker,
    exec_id: String,
}

impl Docker {
    /// Runs `cmd` in a running container and waits for it to finish.
    pub async fn exec(&self, container: &str, cmd: &[&str]) -> Result<ExecOutput> {
        self.exec_with(container, cmd, &ExecOptions::default())
            .await
    }

    pub async fn exec_with(
        &self,
        container: &str,
        cmd: &[&str],
        options: &ExecOptions,
    ) -> Result<ExecOutput> {
        let (exec_id, mut output, _) = self
            .attach_exec(container, cmd, options, false, "exec")
            .await?;
        let (mut stdout, mut stderr, mut truncated) = (Vec::new(), Vec::new(), false);
        while let Some(item) = output.next().await {
            let item = item.map_err(|e| {
                Error::docker(
                    format!("reading exec output in {container}"),
                    "container",
                    container,
                    e,
                )
            })?;
            let (buf, message) = match item {
                LogOutput::StdErr { message } => (&mut stderr, message),
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    (&mut stdout, message)
                }
                LogOutput::StdIn { .. } => continue,
            };
            let room = MAX_EXEC_OUTPUT.saturating_sub(buf.len());
            truncated |= message.len() > room;
            buf.extend_from_slice(&message[..message.len().min(room)]);
        }
        let exit_code = self.wait_exec_exit(&exec_id).await?;
        Ok(ExecOutput {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            exit_code,
            truncated,
        })
    }

    /// Creates an exec of `cmd` and starts it attached; `what` names it in errors ("exec",
    /// "a terminal"). Returns the exec ID with its output and input streams.
    async fn attach_exec(
        &self,
        container: &str,
        cmd: &[&str],
        options: &ExecOptions,
        tty: bool,
        what: &str,
    ) -> Result<(String, ExecOutputStream, Pin<Box<dyn AsyncWrite + Send>>)> {
        let exec_id = self.create_exec(container, cmd, options, tty).await?;
        let started = self
            .api()
            .start_exec(
                &exec_id,
                Some(StartExecOptions {
                    detach: false,
                    tty,
                    output_capacity: None,
                }),
            )
            .await
            .map_err(|e| {
                Error::docker(
                    format!("starting {what} in {container}"),
                    "container",
                    container,
                    e,
                )
            })?;
        match started {
            StartExecResults::Attached { output, input } => Ok((exec_id, output, input)),
            StartExecResults::Detached => Err(Error::Conflict(format!(
                "{what} in {container} started detached"
            ))),
        }
    }

    /// Starts an interactive `cmd` (default `/bin/sh`) with a TTY of `rows` × `cols`.
    pub async fn open_terminal(
        &self,
        container: &str,
        cmd: Option<&[&str]>,
        rows: u16,
        cols: u16,
    ) -> Result<Terminal> {
        let options = ExecOptions {
            env: vec!["TERM=xterm-256color".into()],
            ..Default::default()
        };
        let (exec_id, output, input) = self
            .attach_exec(
                container,
                cmd.unwrap_or(&["/bin/sh"]),
                &options,
                true,
                "a terminal",
            )
            .await?;
        let name = container.to_string();
        let output = output.map(move |item| match item {
            Ok(log) => Ok(log.into_bytes()),
            Err(e) => Err(Error::docker(
                format!("reading the terminal of {name}"),
                "container",
                &name,
                e,
            )),
        });
        let control = TerminalControl {
            docker: self.clone(),
            exec_id,
        };
        control.resize(rows, cols).await?;
        Ok(Terminal {
            output: Box::pin(output),
            input,
            control,
        })
    }

    async fn create_exec(
        &self,
        container: &str,
        cmd: &[&str],
        options: &ExecOptions,
        tty: bool,
    ) -> Result<String> {
        let config = CreateExecOptions {
            cmd: Some(cmd.iter().map(|s| s.to_string()).collect::<Vec<String>>()),
            attach_stdin: Some(tty),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(tty),
            user: options.user.clone(),
            working_dir: options.working_dir.clone(),
            env: (!options.env.is_empty()).then(|| options.env.clone()),
            ..Default::default()
        };
        self.api()
            .create_exec(container, config)
            .await
            .map(|r| r.id)
            .map_err(|e| {
                Error::docker(
                    format!("creating an exec in {container}"),
                    "container",
                    container,
                    e,
                )
            })
    }

    async fn wait_exec_exit(&self, exec_id: &str) -> Result<i64> {
        let deadline = tokio::time::Instant::now() + EXIT_CODE_WAIT;
        loop {
            let info = self
                .api()
                .inspect_exec(exec_id)
                .await
                .map_err(|e| Error::docker("inspecting an exec", "exec", exec_id, e))?;
            if info.running != Some(true) {
                if let Some(code) = info.exit_code {
                    return Ok(code);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Conflict(format!(
                    "exec {exec_id} still running after its output ended"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl TerminalControl {
    /// Resizes the terminal (the shell receives SIGWINCH).
    pub async fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        let options = ResizeExecOptionsBuilder::default()
            .h(rows as i32)
            .w(cols as i32)
            .build();
        self.docker
            .api()
            .resize_exec(&self.exec_id, options)
            .await
            .map_err(|e| Error::docker("resizing a terminal", "exec", &self.exec_id, e))
    }

    /// The shell's exit code once it has exited; None while it runs.
    pub async fn exit_code(&self) -> Result<Option<i64>> {
        let info = self
            .docker
            .api()
            .inspect_exec(&self.exec_id)
            .await
            .map_err(|e| Error::docker("inspecting a terminal", "exec", &self.exec_id, e))?;
        Ok(if info.running == Some(true) {
            None
        } else {
            info.exit_code
        })
    }

    pub fn exec_id(&self) -> &str {
        &self.exec_id
    }
}

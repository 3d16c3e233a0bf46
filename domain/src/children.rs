//! The limits of the processes the server starts on a team's input, and what their failures say.
//!
//! A check or conversion (`paddock import-paddle`, `export-paddle`, `validate`, `predict`) reads an
//! upload of any member: a small file can describe a huge computation, so each runs with a memory
//! limit, a CPU-time limit and a deadline that grow with its input ([`ChildLimits::for_input`]), and
//! only a bounded tail of what it prints is kept. The local runs (`train`, `eval`, `serve-model`) get a
//! memory limit ([`ChildLimits::run_memory_bytes`]); how long they may run is the job's, not the
//! server's, to decide. An admin sets all of them (`paddock serve --child-memory-mib …`).
//!
//! The memory limit is `RLIMIT_DATA`, not `RLIMIT_AS`: libtorch maps gigabytes of CUDA libraries and
//! reserves address space per thread that it never touches, which an address-space limit would count
//! and a data limit does not; what a process allocates (heap, anonymous writable mappings) it counts.
//! A process over it fails its allocation and says so on stderr, which is how its failure is told
//! apart; a process over its CPU time gets `SIGXCPU`; one past its deadline is killed by the server.
//! The failure reaches the client as a rule of [`contracts::error::Rule`] with the limit's value, so it
//! is worded in the reader's language, and never as the child's own panic text or an empty reason.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use contracts::error::{internal, AppError, ErrorCode, FieldProblem, Rule};

/// What an admin sets: the limits of every process the server starts on a team's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLimits {
    /// Memory a check or conversion may use besides four times its input, in MiB: libtorch and a
    /// model's activations need a floor whatever the file's size.
    pub memory_mib: u64,
    /// Seconds a check or conversion may take besides one per MiB of its input.
    pub deadline_secs: u64,
    /// Memory of each local run (`train`, `eval`, `serve-model`), in MiB; 0: three quarters of this
    /// host's memory.
    pub run_memory_mib: u64,
}

impl Default for ChildLimits {
    fn default() -> Self {
        ChildLimits {
            memory_mib: DEFAULT_MEMORY_MIB,
            deadline_secs: DEFAULT_DEADLINE_SECS,
            run_memory_mib: 0,
        }
    }
}

/// Enough for libtorch, a base-sized ERNIE and its parity check on sample texts.
pub const DEFAULT_MEMORY_MIB: u64 = 2048;
/// Enough to load, convert and check a base-sized model on a slow two-core machine.
pub const DEFAULT_DEADLINE_SECS: u64 = 300;

/// The limits of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: u64,
    pub cpu_secs: u64,
    pub wall: Duration,
}

impl ChildLimits {
    /// The limits of a check or conversion whose input weighs `input_bytes`. The CPU time is the
    /// deadline on every core (libtorch uses them all): it bounds a process the deadline no longer
    /// reaches, such as one left behind by a server that was killed.
    pub fn for_input(&self, input_bytes: u64) -> Limits {
        let secs = self.deadline_secs.saturating_add(input_bytes >> 20).max(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        Limits {
            memory_bytes: (self.memory_mib << 20).saturating_add(input_bytes.saturating_mul(4)),
            cpu_secs: secs.saturating_mul(cores),
            wall: Duration::from_secs(secs),
        }
    }

    /// The memory limit of a local run, in bytes.
    pub fn run_memory_bytes(&self) -> u64 {
        if self.run_memory_mib > 0 {
            return self.run_memory_mib << 20;
        }
        // SAFETY: sysconf takes and returns plain integers.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let host = u64::try_from(pages).unwrap_or(0) * u64::try_from(page).unwrap_or(0);
        if host == 0 {
            u64::MAX
        } else {
            host / 4 * 3
        }
    }
}

/// Makes `command`'s process start with these limits (`None`: that one is left as the server's). The
/// CPU limit's hard value is a few seconds above the soft one, so the process gets `SIGXCPU` (which
/// tells the cause) before the kernel's `SIGKILL`.
pub fn limit(
    command: &mut tokio::process::Command,
    memory_bytes: Option<u64>,
    cpu_secs: Option<u64>,
) {
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit(2), which is
    // async-signal-safe; it captures two integers.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, soft: u64, hard: u64| {
                let value = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard as libc::rlim_t,
                };
                if libc::setrlimit(resource, &value) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            if let Some(bytes) = memory_bytes {
                set(libc::RLIMIT_DATA, bytes, bytes)?;
            }
            if let Some(secs) = cpu_secs {
                set(libc::RLIMIT_CPU, secs, secs.saturating_add(5))?;
            }
            Ok(())
        });
    }
}

/// Why a process did not succeed, in words fit for the client who gave its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The process's own `error: ` line: it refused the input and said why.
    Refused(String),
    /// It needed more memory than its limit.
    Memory { mib: u64 },
    /// It used more CPU time than its limit.
    Cpu { secs: u64 },
    /// It ran past its deadline and was killed.
    Deadline { secs: u64 },
    /// It ended otherwise (a crash, a panic, a signal): what it printed is in the server log under
    /// this incident, never in the answer.
    Crashed { incident: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(why) => f.write_str(why),
            Failure::Memory { mib } => write!(f, "it needed more than {mib} MiB of memory"),
            Failure::Cpu { secs } => write!(f, "it used more than {secs} s of CPU time"),
            Failure::Deadline { secs } => write!(f, "it took longer than {secs} s"),
            Failure::Crashed { incident } => write!(
                f,
                "it stopped without saying why (incident {incident} in the server log)"
            ),
        }
    }
}

impl Failure {
    /// The rule the failure broke, for a client to word in its own language; `None` for a refusal,
    /// whose words are the process's.
    pub fn rule(&self) -> Option<Rule> {
        Some(match self {
            Failure::Refused(_) => return None,
            Failure::Memory { mib } => Rule::MemoryLimit { mib: *mib },
            Failure::Cpu { secs } => Rule::CpuLimit { secs: *secs },
            Failure::Deadline { secs } => Rule::TimeLimit { secs: *secs },
            Failure::Crashed { incident } => Rule::Crashed {
                incident: incident.clone(),
            },
        })
    }

    /// A 422 at `field` with `code`, whose message is `lead` and the failure; a limit or a crash is
    /// also its one problem, worded by rule.
    pub fn invalid(self, field: &str, code: ErrorCode, lead: &str) -> AppError {
        let message = format!("{lead}: {self}");
        match self.rule() {
            Some(rule) => AppError::Invalid {
                field: Some(field.to_string()),
                code,
                problems: vec![FieldProblem::new(field, rule, self.to_string())],
                message,
            },
            None => AppError::invalid(field, code, message),
        }
    }
}

/// What a process left: its standard output (up to the caller's limit) and how it ended.
#[derive(Debug)]
pub struct Finished {
    pub stdout: Vec<u8>,
    status: Option<std::process::ExitStatus>,
    stderr: Vec<u8>,
    limits: Limits,
}

impl Finished {
    /// Why it did not succeed; `None` when it did. Asked only when the caller cannot use its output:
    /// a validator that found problems also exits non-zero, with its report.
    pub fn failure(&self) -> Option<Failure> {
        match self.status {
            None => Some(Failure::Deadline {
                secs: self.limits.wall.as_secs(),
            }),
            Some(status) if status.success() => None,
            Some(status) => Some(classify(
                status,
                &String::from_utf8_lossy(&self.stderr),
                self.limits,
            )),
        }
    }
}

/// Why a process with this status and stderr failed.
fn classify(status: std::process::ExitStatus, stderr: &str, limits: Limits) -> Failure {
    // Rust's allocation failure, libtorch's CPU allocator, C++'s, glibc's ENOMEM, bash's, the dynamic
    // loader's (a limit too small to load libtorch at all).
    const OUT_OF_MEMORY: [&str; 6] = [
        "memory allocation of",
        "not enough memory",
        "std::bad_alloc",
        "cannot allocate",
        "out of memory",
        "failed to map segment",
    ];
    let lower = stderr.to_lowercase();
    if OUT_OF_MEMORY.iter().any(|m| lower.contains(m)) {
        return Failure::Memory {
            mib: limits.memory_bytes >> 20,
        };
    }
    if status.signal() == Some(libc::SIGXCPU) {
        return Failure::Cpu {
            secs: limits.cpu_secs,
        };
    }
    let said = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::trim)
        .filter(|l| !l.is_empty());
    match said {
        Some(why) => Failure::Refused(why.to_string()),
        None => {
            let cause = format!("{status}; its stderr ends: {}", stderr.trim());
            let incident =
                crate::incident("a paddock subcommand ended without an error line", cause);
            Failure::Crashed { incident }
        }
    }
}

/// How much of a process's stderr is kept to find its `error: ` line: its end, where that line is.
const STDERR_TAIL: usize = 64 << 10;

/// Runs `command` under `limits`, keeping at most `max_stdout` bytes of its standard output (the rest is
/// read and dropped, so the process never blocks on a full pipe) and the end of its stderr. Starting it
/// at all failing is the server's error.
pub async fn run(
    mut command: tokio::process::Command,
    limits: Limits,
    max_stdout: usize,
) -> Result<Finished, AppError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    limit(
        &mut command,
        Some(limits.memory_bytes),
        Some(limits.cpu_secs),
    );
    let mut child = command
        .spawn()
        .map_err(|e| internal("starting a paddock subcommand", e))?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        let (stdout, stderr) = tokio::join!(head(stdout, max_stdout), tail(stderr, STDERR_TAIL));
        (child.wait().await, stdout, stderr)
    };
    let Ok((status, stdout, stderr)) = tokio::time::timeout(limits.wall, work).await else {
        // Dropping the child killed it.
        return Ok(Finished {
            stdout: Vec::new(),
            status: None,
            stderr: Vec::new(),
            limits,
        });
    };
    let status = status.map_err(|e| internal("waiting for a paddock subcommand", e))?;
    Ok(Finished {
        stdout,
        status: Some(status),
        stderr,
        limits,
    })
}

/// The first `max` bytes of `from`; the rest is read and dropped.
async fn head<R: AsyncRead + Unpin>(from: Option<R>, max: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut from) = from else { return kept };
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        let room = max.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&buf[..room]);
    }
    kept
}

/// The last `max` bytes of `from`.
async fn tail<R: AsyncRead + Unpin>(from: Option<R>, max: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut from) = from else { return kept };
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > 2 * max {
            kept.drain(..kept.len() - max);
        }
    }
    if kept.len() > max {
        kept.drain(..kept.len() - max);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", script]);
        command
    }

    fn limits(memory_mib: u64, cpu_secs: u64, wall_secs: u64) -> Limits {
        Limits {
            memory_bytes: memory_mib << 20,
            cpu_secs,
            wall: Duration::from_secs(wall_secs),
        }
    }

    #[tokio::test]
    async fn each_way_of_failing_is_told_apart_with_its_limit() {
        let generous = limits(512, 60, 60);
        let ok = run(sh("echo fine"), generous, 1024).await.unwrap();
        assert_eq!((ok.stdout.as_slice(), ok.failure()), (&b"fine\n"[..], None));

        let said = run(
            sh("echo 'error: line 3: no label' >&2; exit 1"),
            generous,
            1024,
        );
        assert_eq!(
            said.await.unwrap().failure(),
            Some(Failure::Refused("line 3: no label".into()))
        );

        // A real Rust allocation over the limit (this test binary, running the test below): the data
        // limit refuses it and the process says so as the trainer would.
        let mut allocate = tokio::process::Command::new(std::env::current_exe().unwrap());
        allocate
            .args([
                "--exact",
                "children::tests::allocates_when_asked",
                "--test-threads=1",
            ])
            .env(ALLOCATE, "256");
        let small = run(allocate, limits(64, 60, 60), 1024).await.unwrap();
        assert_eq!(
            small.failure(),
            Some(Failure::Memory { mib: 64 }),
            "{small:?}"
        );

        let spin = run(sh("while :; do :; done"), limits(512, 1, 60), 1024);
        assert_eq!(
            spin.await.unwrap().failure(),
            Some(Failure::Cpu { secs: 1 })
        );

        let slow = run(sh("exec sleep 30"), limits(512, 60, 1), 1024);
        assert_eq!(
            slow.await.unwrap().failure(),
            Some(Failure::Deadline { secs: 1 })
        );

        // A panic's words (or a signal's silence) stay in the server log.
        let panic =
            "echo \"thread 'main' panicked at src/secret/path.rs:1: boom\" >&2; kill -ABRT $$";
        let crashed = run(sh(panic), generous, 1024).await.unwrap();
        let Some(Failure::Crashed { incident }) = crashed.failure() else {
            panic!("{crashed:?}")
        };
        assert_eq!(incident.len(), 8);
    }

    const ALLOCATE: &str = "PADDOCK_TEST_ALLOCATE_MIB";

    /// Does nothing unless started by the test above, which asks it to allocate this many MiB.
    #[test]
    fn allocates_when_asked() {
        if let Some(mib) = std::env::var(ALLOCATE)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            std::hint::black_box(vec![1u8; mib << 20]);
        }
    }

    #[tokio::test]
    async fn only_the_head_of_stdout_and_the_tail_of_stderr_are_kept() {
        let noisy = "head -c 5000000 /dev/zero; head -c 5000000 /dev/zero >&2; printf '\\nerror: the end\\n' >&2; exit 3";
        let done = run(sh(noisy), limits(512, 60, 60), 1000).await.unwrap();
        assert_eq!(done.stdout.len(), 1000);
        assert_eq!(done.failure(), Some(Failure::Refused("the end".into())));
    }

    #[test]
    fn limits_grow_with_the_input() {
        let admin = ChildLimits {
            memory_mib: 100,
            deadline_secs: 10,
            run_memory_mib: 7,
        };
        let small = admin.for_input(0);
        let big = admin.for_input(1 << 30);
        assert_eq!(small.memory_bytes, 100 << 20);
        assert_eq!(big.memory_bytes, (100 << 20) + (4 << 30));
        assert_eq!((small.wall.as_secs(), big.wall.as_secs()), (10, 10 + 1024));
        assert!(big.cpu_secs >= big.wall.as_secs());
        assert_eq!(admin.run_memory_bytes(), 7 << 20);
        assert!(ChildLimits::default().run_memory_bytes() > 0);
    }

    #[test]
    fn a_limit_failure_is_a_rule_a_refusal_the_process_s_words() {
        let err =
            Failure::Memory { mib: 300 }.invalid("file", ErrorCode::PretrainedInvalid, "lead");
        assert_eq!(
            err.to_string(),
            "lead: it needed more than 300 MiB of memory"
        );
        let rule = err.problems_at("file").next().and_then(|p| p.rule.clone());
        assert_eq!(rule, Some(Rule::MemoryLimit { mib: 300 }));
        let err = Failure::Refused("bad vocab".into()).invalid(
            "file",
            ErrorCode::PretrainedInvalid,
            "lead",
        );
        assert!(!err.has_problems());
        assert_eq!(err.to_string(), "lead: bad vocab");
    }
}

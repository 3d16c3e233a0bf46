//! Paddock's cluster schedulers. A team that outgrows one GPU box hands its jobs, evaluations and
//! endpoint replicas to the scheduler it already runs; this crate is how Paddock talks to it. It knows
//! the scheduler, not the database or the web app: the domain's Slurm executor (behind
//! `domain::executor`'s seam) persists what it needs and passes names and ids in.
//!
//! Slurm is driven through its command-line tools (`sbatch`, `scontrol`, `squeue`, `scancel`, `sinfo`),
//! the interface every Slurm site has: `slurmrestd` is optional, and refuses to run as root. The same
//! commands run on Paddock's own host (Paddock on a login node) or over SSH to a login node.
//!
//! # Layout
//! - [`reach`]: where the commands run — [`reach::Reach::Local`] or [`reach::Reach::Ssh`] (key-based,
//!   host key checked) — and the one way to run one, with a time limit and the command's stderr in the
//!   error.
//! - [`slurm`]: submission ([`slurm::Submission`] → `sbatch`), a job's state from `scontrol show job`,
//!   finding jobs again by name, cancelling (a TERM to the batch script, or the whole job), and the
//!   cluster's nodes and partitions for the cluster view.
//! - [`Error`]: the crate's one error type.

pub mod reach;
pub mod slurm;

/// What can go wrong talking to a cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command could not be started (not installed, no `ssh`).
    #[error("cannot run {command}: {message}")]
    Spawn { command: String, message: String },
    /// The command ran and failed; `stderr` is what it said (trimmed).
    #[error("{command} failed ({status}): {stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    /// The command did not answer in time (an unreachable controller or login node).
    #[error("{command} did not answer within {seconds} s")]
    Timeout { command: String, seconds: u64 },
    /// The command answered something this crate cannot read.
    #[error("unexpected output from {command}: {message}")]
    Parse { command: String, message: String },
    /// A submission that cannot be sent as it is (a value with a newline, a NUL byte).
    #[error("invalid submission: {0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;

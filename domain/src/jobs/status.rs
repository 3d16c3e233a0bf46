//! The job's state machine: the moves are [`JobStatus::can_become`], the reasons [`Reason`]; every
//! change of a job's status goes through [`transition`] (see `crate::transitions`).

use contracts::error::AppError;
use contracts::types::JobStatus;
use sqlx::SqliteConnection;

use crate::transitions::{self, Column, Machine};

/// Why a job's status changed: a stable word, what the code decides on (the message is for people).
#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::Type)]
#[sqlx(rename_all = "snake_case")]
pub enum Reason {
    /// The scheduler placed it (queued → starting).
    Scheduled,
    /// Its process or container runs (starting → running).
    Launched,
    /// The server restarted before it ran (starting → queued).
    Requeued,
    /// It could not be started.
    StartFailed,
    /// A person asked it to stop, or cancelled it before it ran.
    CancelRequested,
    /// It reached its time limit: asked to stop with a checkpoint, and it ends as failed.
    TimeLimit,
    /// The trainer finished its epochs.
    Completed,
    /// The trainer stopped early: the dev metric stopped improving.
    EarlyStopped,
    /// The trainer reported a failure.
    TrainerFailed,
    /// Stopped by a signal nobody in Paddock sent.
    Signal,
    /// The process ended without saying how, or disappeared.
    Exited,
    /// Its workspace was deleted.
    WorkspaceDeleted,
    /// The server stopped it to move its data directory to a new layout.
    Interrupted,
}

impl Column for Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Scheduled => "scheduled",
            Reason::Launched => "launched",
            Reason::Requeued => "requeued",
            Reason::StartFailed => "start_failed",
            Reason::CancelRequested => "cancel_requested",
            Reason::TimeLimit => "time_limit",
            Reason::Completed => "completed",
            Reason::EarlyStopped => "early_stopped",
            Reason::TrainerFailed => "trainer_failed",
            Reason::Signal => "signal",
            Reason::Exited => "exited",
            Reason::WorkspaceDeleted => "workspace_deleted",
            Reason::Interrupted => "interrupted",
        }
    }
}

impl Column for JobStatus {
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// The jobs table's machine.
pub struct Job;

impl Machine for Job {
    const KIND: &'static str = "job";
    const TABLE: &'static str = "jobs";
    type Status = JobStatus;
    type Reason = Reason;
    fn can_become(from: JobStatus, to: JobStatus) -> bool {
        from.can_become(to)
    }
}

/// The current status of job `job_id` and the reason of its last move.
pub async fn current(
    conn: &mut SqliteConnection,
    job_id: i64,
) -> Result<(JobStatus, Option<Reason>), AppError> {
    transitions::current::<Job>(conn, job_id).await
}

/// Moves job `job_id` to `to` for `reason` (see [`transitions::transition`]).
pub async fn transition(
    conn: &mut SqliteConnection,
    job_id: i64,
    to: JobStatus,
    reason: Reason,
    message: Option<&str>,
) -> Result<Option<JobStatus>, AppError> {
    transitions::transition::<Job>(conn, job_id, to, reason, message).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_ends_in_final_states_and_only_there() {
        for from in JobStatus::ALL {
            let onward = JobStatus::ALL
                .iter()
                .filter(|to| from.can_become(**to))
                .count();
            assert_eq!(onward == 0, from.is_final(), "{from:?}");
            assert!(!from.can_become(from), "{from:?} to itself");
        }
    }
}

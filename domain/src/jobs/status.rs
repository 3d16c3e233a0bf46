//! The job's state machine, written in one place: [`transition`] checks a move against
//! [`JobStatus::can_become`], writes it as a compare-and-set on the status it read (so the supervisor,
//! the scheduler and a person cancelling cannot both move a job), records the [`Reason`] in its own
//! column (`jobs.status_reason`) and the message beside it, and traces it in one span. Other columns a
//! move goes with (GPUs, pid, times) are written by the caller in the same transaction.

use contracts::error::AppError;
use contracts::types::JobStatus;
use sqlx::SqliteConnection;
use tracing::Instrument;

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

impl Reason {
    pub fn as_str(self) -> &'static str {
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

/// The current status of job `job_id` and the reason of its last move.
pub async fn current(
    conn: &mut SqliteConnection,
    job_id: i64,
) -> Result<(JobStatus, Option<Reason>), AppError> {
    sqlx::query_as("SELECT status, status_reason FROM jobs WHERE id = ?")
        .bind(job_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(AppError::NotFound)
}

/// Moves job `job_id` to `to` for `reason`, when its state machine allows it from the status it is in.
/// `message` replaces the job's message; `None` keeps it. Returns the status it moved from, or `None`
/// when it did not move (already final, a move the machine forbids, or another writer was first).
pub async fn transition(
    conn: &mut SqliteConnection,
    job_id: i64,
    to: JobStatus,
    reason: Reason,
    message: Option<&str>,
) -> Result<Option<JobStatus>, AppError> {
    let span = tracing::info_span!(
        "job_transition",
        job_id,
        to = to.as_str(),
        reason = reason.as_str()
    );
    async move {
        let (from, _) = current(conn, job_id).await?;
        if !from.can_become(to) {
            tracing::debug!(from = from.as_str(), "not allowed from here; unchanged");
            return Ok(None);
        }
        let moved = sqlx::query(
            "UPDATE jobs SET status = ?, status_reason = ?, status_message = COALESCE(?, status_message)
             WHERE id = ? AND status = ?",
        )
        .bind(to)
        .bind(reason)
        .bind(message)
        .bind(job_id)
        .bind(from)
        .execute(&mut *conn)
        .await?;
        if moved.rows_affected() == 0 {
            return Ok(None);
        }
        tracing::info!(from = from.as_str(), "job status changed");
        Ok(Some(from))
    }
    .instrument(span)
    .await
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

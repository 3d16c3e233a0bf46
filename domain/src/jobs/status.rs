//! The job's state machine: the moves are [`JobStatus::can_become`], the reasons [`Reason`]; every
//! change of a job's status goes through `Job::transition` (`crate::transitions`).

use contracts::error::AppError;
use contracts::ids::JobId;
use contracts::types::JobStatus;
use sqlx::SqliteConnection;

use crate::transitions::{self, machine, Machine};

/// Why a job's status changed (declared in `contracts`, which the pages word it from).
pub use contracts::types::JobReason as Reason;

machine! {
    /// The jobs table's machine.
    pub struct Job {
        kind: "job",
        table: "jobs",
        id: JobId,
        status: JobStatus,
        reason: Reason,
        moves: JobStatus::can_become,
    }
}

/// Ends job `id`: moves it to `to` when its machine allows, and stamps the time it finished unless it
/// has one (a job whose end event already made it final still needs the time it stopped).
pub(crate) async fn finish(
    conn: &mut SqliteConnection,
    id: JobId,
    to: JobStatus,
    reason: Reason,
    message: Option<&str>,
) -> Result<(), AppError> {
    Job::transition(conn, id, to, reason, message).await?;
    sqlx::query("UPDATE jobs SET finished_at = COALESCE(finished_at, ?) WHERE id = ?")
        .bind(crate::now())
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The current status of job `job_id` and the reason of its last move.
pub async fn current(
    conn: &mut SqliteConnection,
    job_id: JobId,
) -> Result<(JobStatus, Option<Reason>), AppError> {
    transitions::current::<Job>(conn, job_id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_ends_in_final_states_and_only_there() {
        transitions::assert_ends_only_in_final::<Job>(&JobStatus::ALL, JobStatus::is_final);
    }
}

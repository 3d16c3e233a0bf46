//! The evaluation's state machine: the moves are [`EvaluationStatus::can_become`], the reasons
//! [`Reason`]; every change of an evaluation's status goes through `Evaluation::transition` (see
//! `crate::transitions`).

use contracts::error::AppError;
use contracts::ids::EvaluationId;
use contracts::types::EvaluationStatus;
use sqlx::SqliteConnection;

use crate::transitions::{machine, reasons, Machine};

reasons! {
    /// Why an evaluation's status changed, in `evaluations.status_reason`.
    pub enum Reason {
        /// The evaluator runs (queued → running).
        Started => "started",
        /// It printed its metrics and exited 0.
        Completed => "completed",
        /// It exited with an error of its own.
        EvaluatorFailed => "evaluator_failed",
        /// Its dataset or checkpoint was gone before it started.
        InputsGone => "inputs_gone",
        /// It could not be started at all (see the server log).
        StartFailed => "start_failed",
        /// Its process disappeared without an exit status.
        Exited => "exited",
        /// Its workspace was deleted.
        WorkspaceDeleted => "workspace_deleted",
        /// The server stopped it to move its data directory to a new layout.
        Interrupted => "interrupted",
    }
}

machine! {
    /// The evaluations table's machine.
    pub struct Evaluation {
        kind: "evaluation",
        table: "evaluations",
        id: EvaluationId,
        status: EvaluationStatus,
        reason: Reason,
        moves: EvaluationStatus::can_become,
    }
}

/// Fails evaluation `id` for `reason` and marks it finished, unless it already ended.
pub async fn fail(
    conn: &mut SqliteConnection,
    id: EvaluationId,
    reason: Reason,
    message: &str,
) -> Result<(), AppError> {
    let moved =
        Evaluation::transition(conn, id, EvaluationStatus::Failed, reason, Some(message)).await?;
    if moved.is_some() {
        crate::transitions::stamp::<Evaluation>(conn, id, "finished_at").await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transitions;

    #[test]
    fn the_machine_ends_in_final_states_and_only_there() {
        transitions::assert_ends_only_in_final::<Evaluation>(
            &EvaluationStatus::ALL,
            EvaluationStatus::is_final,
        );
    }
}

//! The one writer of a long-running thing's status. Each kind (a job, an evaluation, …) declares its
//! state machine as a [`Machine`] (with `machine!`, its reasons with `reasons!`): its table, its
//! status type with the allowed moves, and the reasons a move is made for. [`transition`] checks a
//! move against the machine, writes it as a compare-and-set on the status it read (so the supervisor,
//! the scheduler and a person cannot all move the same row), records the reason in its own column
//! (`status_reason` unless the machine names another) and the message beside it, and traces it in one
//! span. Other columns a move goes with (GPUs, pids, times, results) are written by the caller in the
//! same transaction (`stamp` for a time).

use std::fmt::Debug;
use std::future::Future;

use contracts::error::AppError;
use contracts::sweeps::{SweepReason, SweepStatus};
use contracts::types::{
    BuildStatus, EndpointStatus, EnvStatus, EvaluationStatus, JobReason, JobStatus,
};
use sqlx::{Sqlite, SqliteConnection};
use tracing::Instrument;

/// A value stored in a column as text (a status, a reason).
pub trait Column:
    Copy
    + PartialEq
    + Debug
    + Send
    + Sync
    + Unpin
    + sqlx::Type<Sqlite>
    + for<'r> sqlx::Decode<'r, Sqlite>
    + for<'q> sqlx::Encode<'q, Sqlite>
    + 'static
{
    /// The stored word, for logs and traces.
    fn name(self) -> &'static str;
}

/// Declares the reasons of a machine: an enum whose variants are stored as the given words
/// (`Variant => "word"`; its `sqlx::Type` and its [`Column`] name agree because both come from the
/// one word).
macro_rules! reasons {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::Type)]
        $vis enum $name {
            $($(#[$vmeta])* #[sqlx(rename = $word)] $variant,)+
        }

        impl $crate::transitions::Column for $name {
            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }
    };
}
pub(crate) use reasons;

/// The statuses (declared in `contracts`) are stored by their `as_str` word.
macro_rules! stored_by_word {
    ($($status:ty),+) => {
        $(impl Column for $status {
            fn name(self) -> &'static str {
                self.as_str()
            }
        })+
    };
}
stored_by_word!(
    JobStatus,
    JobReason,
    EvaluationStatus,
    EndpointStatus,
    BuildStatus,
    EnvStatus,
    SweepStatus,
    SweepReason
);

/// Declares a [`Machine`]: the type that names it, what traces call it, its table (and the columns
/// when they are not `status`, `status_reason`, `status_message`), and the function that says which
/// moves it allows. Every machine is the same few constants around its own moves, so they are written
/// once here.
macro_rules! machine {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            kind: $kind:literal,
            table: $table:literal,
            id: $id:ty,
            $(status_column: $status_col:literal,)?
            $(reason_column: $reason_col:literal,)?
            $(message_column: $message_col:literal,)?
            status: $status:ty,
            reason: $reason:ty,
            moves: $moves:path,
        }
    ) => {
        $(#[$meta])*
        $vis struct $name;

        impl $crate::transitions::Machine for $name {
            const KIND: &'static str = $kind;
            const TABLE: &'static str = $table;
            $(const STATUS: &'static str = $status_col;)?
            $(const REASON: &'static str = $reason_col;)?
            $(const MESSAGE: &'static str = $message_col;)?
            type Id = $id;
            type Status = $status;
            type Reason = $reason;
            fn can_become(from: $status, to: $status) -> bool {
                $moves(from, to)
            }
        }
    };
}
pub(crate) use machine;

/// What a machine's rows are numbered by: bound to a query, shown in its trace.
pub trait RowId:
    Copy
    + std::fmt::Display
    + Send
    + Sync
    + for<'q> sqlx::Encode<'q, sqlx::Sqlite>
    + sqlx::Type<sqlx::Sqlite>
{
}

impl<T> RowId for T where
    T: Copy
        + std::fmt::Display
        + Send
        + Sync
        + for<'q> sqlx::Encode<'q, sqlx::Sqlite>
        + sqlx::Type<sqlx::Sqlite>
{
}

/// One kind's state machine.
pub trait Machine {
    /// What traces call it (`job`, `evaluation`).
    const KIND: &'static str;
    /// The table, with its status, reason and message columns (named below).
    const TABLE: &'static str;
    const STATUS: &'static str = "status";
    const REASON: &'static str = "status_reason";
    const MESSAGE: &'static str = "status_message";
    /// The type of the table's `id` (`JobId`, or `i64` for rows with no id type of their own).
    type Id: RowId;
    type Status: Column;
    type Reason: Column;
    /// Whether a row in `from` may move to `to`.
    fn can_become(from: Self::Status, to: Self::Status) -> bool;

    /// Moves row `id` of this machine's table ([`transition`]).
    fn transition(
        conn: &mut SqliteConnection,
        id: Self::Id,
        to: Self::Status,
        reason: Self::Reason,
        message: Option<&str>,
    ) -> impl Future<Output = Result<Option<Self::Status>, AppError>> + Send
    where
        Self: Sized,
    {
        transition::<Self>(conn, id, to, reason, message)
    }
}

/// The current status of row `id` and the reason of its last move.
pub async fn current<M: Machine>(
    conn: &mut SqliteConnection,
    id: M::Id,
) -> Result<(M::Status, Option<M::Reason>), AppError> {
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE id = ?",
        M::STATUS,
        M::REASON,
        M::TABLE
    );
    sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(AppError::NotFound)
}

/// Writes the time into `column` of row `id` (a move's `updated_at` or `finished_at`); `column` is a
/// name from the code, never input.
pub(crate) async fn stamp<M: Machine>(
    conn: &mut SqliteConnection,
    id: M::Id,
    column: &str,
) -> Result<(), AppError> {
    let sql = format!("UPDATE {} SET {column} = ? WHERE id = ?", M::TABLE);
    sqlx::query(&sql)
        .bind(crate::now())
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Moves row `id` to `to` for `reason`, when its machine allows it from the status it is in. `message`
/// replaces the row's message; `None` keeps it. Returns the status it moved from, or `None` when it did
/// not move (a move the machine forbids, final included, or another writer was first).
pub async fn transition<M: Machine>(
    conn: &mut SqliteConnection,
    id: M::Id,
    to: M::Status,
    reason: M::Reason,
    message: Option<&str>,
) -> Result<Option<M::Status>, AppError> {
    let span = tracing::info_span!(
        "transition",
        kind = M::KIND,
        %id,
        to = to.name(),
        reason = reason.name()
    );
    async move {
        let (from, _) = current::<M>(conn, id).await?;
        if !M::can_become(from, to) {
            tracing::debug!(from = from.name(), "not allowed from here; unchanged");
            return Ok(None);
        }
        let (table, status_col, reason_col, message_col) =
            (M::TABLE, M::STATUS, M::REASON, M::MESSAGE);
        let sql = format!(
            "UPDATE {table} SET {status_col} = ?, {reason_col} = ?, {message_col} = COALESCE(?, {message_col})
             WHERE id = ? AND {status_col} = ?"
        );
        let moved = sqlx::query(&sql)
            .bind(to)
            .bind(reason)
            .bind(message)
            .bind(id)
            .bind(from)
            .execute(&mut *conn)
            .await?;
        if moved.rows_affected() == 0 {
            return Ok(None);
        }
        tracing::info!(from = from.name(), "status changed");
        Ok(Some(from))
    }
    .instrument(span)
    .await
}

/// A machine's statuses end where its contract says they are final, and only there; no status moves
/// to itself (a move that changes nothing would still be traced and counted).
#[cfg(test)]
pub(crate) fn assert_ends_only_in_final<M: Machine>(
    all: &[M::Status],
    is_final: impl Fn(M::Status) -> bool,
) {
    for &from in all {
        let onward = all.iter().filter(|&&to| M::can_become(from, to)).count();
        assert_eq!(onward == 0, is_final(from), "{from:?}");
        assert!(!M::can_become(from, from), "{from:?} to itself");
    }
}

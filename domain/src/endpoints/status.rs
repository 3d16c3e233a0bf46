//! The state machines of an endpoint and of each of its replicas (both in [`EndpointStatus`]'s words,
//! with moves of their own); every change of either's status goes through [`endpoint`] or `Replica::transition`
//! (see `crate::transitions`).
//!
//! An endpoint is what a person asked for: deployed (starting → ready, or failed when its replicas or
//! its parity gate did not come up), undeployed (stopped), deployed again. A replica is one process or
//! container serving it: starting → ready, failed when it exits or stops answering (the watcher starts it
//! again: failed → starting), stopped when it is retired, after which its row goes.

use contracts::error::AppError;
use contracts::ids::EndpointId;
use contracts::types::EndpointStatus;
use sqlx::SqliteConnection;

use crate::transitions::{self, machine, reasons};

reasons! {
    /// Why an endpoint's status changed, in `endpoints.status_reason`.
    pub enum EndpointReason {
        /// Its replicas answer and passed the parity gate (starting → ready).
        Deployed => "deployed",
        /// Its replicas did not start, or the parity gate refused them.
        DeployFailed => "deploy_failed",
        /// A person stopped it.
        Undeployed => "undeployed",
        /// A person deployed it again (stopped or failed → starting).
        Redeployed => "redeployed",
        /// It is being deleted, with its workspace or on its own.
        Deleted => "deleted",
    }
}

machine! {
    /// The endpoints table's machine.
    pub struct Endpoint {
        kind: "endpoint",
        table: "endpoints",
        id: EndpointId,
        status: EndpointStatus,
        reason: EndpointReason,
        moves: endpoint_moves,
    }
}

/// A replica's moves, but an endpoint is deployed again once stopped, and does not fail once ready: a
/// replica that fails then is the watcher's to restart.
fn endpoint_moves(from: EndpointStatus, to: EndpointStatus) -> bool {
    use EndpointStatus::*;
    match (from, to) {
        (Stopped, Starting) => true,
        (Ready, Failed) => false,
        _ => replica_moves(from, to),
    }
}

/// Moves endpoint `id` to `to` for `reason`, also stamping `updated_at` when it moved (see
/// [`transitions::transition`]).
pub async fn endpoint(
    conn: &mut SqliteConnection,
    id: EndpointId,
    to: EndpointStatus,
    reason: EndpointReason,
    message: Option<&str>,
) -> Result<Option<EndpointStatus>, AppError> {
    let moved = transitions::transition::<Endpoint>(conn, id, to, reason, message).await?;
    if moved.is_some() {
        transitions::stamp::<Endpoint>(conn, id, "updated_at").await?;
    }
    Ok(moved)
}

/// [`endpoint_afresh`] in a write transaction of its own.
pub async fn endpoint_afresh_in(
    db: &sqlx::SqlitePool,
    id: EndpointId,
    to: EndpointStatus,
    reason: EndpointReason,
) -> Result<Option<EndpointStatus>, AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let moved = endpoint_afresh(&mut tx, id, to, reason).await?;
    tx.commit().await?;
    Ok(moved)
}

/// As [`endpoint`], and the endpoint's message (and any change or canary under way) is cleared when it
/// moved: a new state says nothing of the
/// old one's troubles.
pub async fn endpoint_afresh(
    conn: &mut SqliteConnection,
    id: EndpointId,
    to: EndpointStatus,
    reason: EndpointReason,
) -> Result<Option<EndpointStatus>, AppError> {
    let moved = endpoint(conn, id, to, reason, None).await?;
    if moved.is_some() {
        sqlx::query(
            "UPDATE endpoints SET status_message = NULL, pending_change = NULL, canary = NULL WHERE id = ?",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(moved)
}

reasons! {
    /// Why a replica's status changed, in `endpoint_replicas.status_reason`.
    pub enum ReplicaReason {
        /// Started for the first time (the row's first status).
        Created => "created",
        /// It answers (starting → ready).
        Started => "started",
        /// It did not come up.
        StartFailed => "start_failed",
        /// It exited or stopped answering while serving.
        Exited => "exited",
        /// The server restarted while it was starting.
        Interrupted => "interrupted",
        /// The watcher starts it again after a failure (failed → starting).
        Restarted => "restarted",
        /// Taken out of service: undeployed, scaled down, replaced by a rollout.
        Retired => "retired",
    }
}

machine! {
    /// The endpoint_replicas table's machine; its message column is `last_error`.
    pub struct Replica {
        kind: "replica",
        table: "endpoint_replicas",
        id: i64,
        message_column: "last_error",
        status: EndpointStatus,
        reason: ReplicaReason,
        moves: replica_moves,
    }
}

fn replica_moves(from: EndpointStatus, to: EndpointStatus) -> bool {
    use EndpointStatus::*;
    match from {
        Starting => matches!(to, Ready | Failed | Stopped),
        Ready => matches!(to, Failed | Stopped),
        Failed => matches!(to, Starting | Stopped),
        Stopped => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transitions::Machine;
    use EndpointStatus::*;

    const ALL: [EndpointStatus; 4] = EndpointStatus::ALL;

    #[test]
    fn a_retired_replica_is_final_and_every_other_state_can_be_left() {
        transitions::assert_ends_only_in_final::<Replica>(&ALL, |s| s == Stopped);
        for from in ALL {
            assert!(!Endpoint::can_become(from, from), "{from:?} to itself");
        }
        // A serving replica is never restarted in place: it fails first, so its end is recorded.
        assert!(!Replica::can_become(Ready, Starting));
        // An endpoint can always be deployed again once it is not running.
        assert!(Endpoint::can_become(Stopped, Starting) && Endpoint::can_become(Failed, Starting));
        assert!(!Endpoint::can_become(Ready, Starting));
    }

    #[tokio::test]
    async fn replica_moves_are_checked_written_with_their_reason_and_counted_once() {
        let (_dir, db) = crate::testing::test_db().await;
        let mut conn = db.acquire().await.unwrap();
        for statement in [
            "INSERT INTO workspaces (id, name, created_at) VALUES (1, 'nlp', 't')",
            "INSERT INTO jobs (id, workspace_id, name, spec_json, config_toml, executor, created_at)
                 VALUES (1, 1, 'j', '{}', '', 'local', 't')",
            "INSERT INTO checkpoints (id, job_id, workspace_id, step, path, bytes, sha256, created_at)
                 VALUES (1, 1, 1, 1, 'p', 0, 'x', 't')",
            "INSERT INTO endpoints (id, workspace_id, slug, name, checkpoint_id, replicas, max_batch_tokens,
                 max_wait_ms, device, status, created_at, updated_at)
                 VALUES (1, 1, 's', 'e', 1, 1, 1, 1, 'cpu', 'starting', 't', 't')",
            "INSERT INTO endpoint_replicas (id, endpoint_id, ordinal, status) VALUES (1, 1, 0, 'starting')",
        ] {
            sqlx::query(statement).execute(&mut *conn).await.unwrap();
        }

        assert_eq!(
            Replica::transition(&mut conn, 1, Ready, ReplicaReason::Started, None)
                .await
                .unwrap(),
            Some(Starting)
        );
        // Not from ready to starting; and a second writer of the same move finds it made.
        assert_eq!(
            Replica::transition(&mut conn, 1, Starting, ReplicaReason::Restarted, None)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            Replica::transition(&mut conn, 1, Failed, ReplicaReason::Exited, Some("exited"))
                .await
                .unwrap(),
            Some(Ready)
        );
        let row: (String, String, Option<String>) = sqlx::query_as(
            "SELECT status, status_reason, last_error FROM endpoint_replicas WHERE id = 1",
        )
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        assert_eq!(
            row,
            ("failed".into(), "exited".into(), Some("exited".into()))
        );

        assert_eq!(
            endpoint(
                &mut conn,
                EndpointId::new(1),
                Ready,
                EndpointReason::Deployed,
                None
            )
            .await
            .unwrap(),
            Some(Starting)
        );
        assert_eq!(
            endpoint(
                &mut conn,
                EndpointId::new(1),
                Starting,
                EndpointReason::Redeployed,
                None
            )
            .await
            .unwrap(),
            None,
            "a ready endpoint is undeployed before it is deployed again"
        );
    }
}

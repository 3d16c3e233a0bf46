//! An environment's state machine (`environments.status`, `status_reason`, `status_message`): what a
//! person asked for (up, down, restart) and what Docker says about the container since. Every change of
//! an environment's status goes through `set` (see `crate::transitions`).
//!
//! `stopped` (no container) → `provisioning` (one `up` at a time) → `running`, or `failed` when the
//! container could not be made. From then on (and for a container a crashed start left behind) the
//! status mirrors Docker — `running`, `exited` (again,
//! with another code), `oom_killed`, `failed` (dead), `missing` (removed behind Paddock's back) — until
//! a person stops it or starts it again. A stopped environment has no container, so Docker has nothing
//! to say about it, except when a running container of its own is found and taken back (`adopted`).

use contracts::error::{AppError, ErrorCode};
use contracts::ids::EnvironmentId;
use contracts::types::EnvStatus;
use sqlx::{Sqlite, Transaction};

use crate::transitions::{self, machine, reasons};

reasons! {
    /// Why an environment's status changed, in `environments.status_reason`.
    pub enum Reason {
        /// A person started it (`up`).
        UpRequested => "up_requested",
        /// Its container was created and started.
        Provisioned => "provisioned",
        /// Its container could not be made; the message says why.
        ProvisionFailed => "provision_failed",
        /// A person stopped it (`down`).
        Stopped => "stopped",
        /// Nobody used its terminal or exec for longer than the idle limit.
        Idle => "idle",
        /// A person restarted its main process.
        Restarted => "restarted",
        /// Docker says the container runs (again).
        SeenRunning => "seen_running",
        /// The main process ended; `exit_code` says how.
        Exited => "exited",
        /// Killed for using more memory than its limit.
        OomKilled => "oom_killed",
        /// Docker reports the container dead.
        Dead => "dead",
        /// The container is gone, removed outside Paddock.
        Disappeared => "disappeared",
        /// Its container was found running while the row said it had none, and taken back.
        Adopted => "adopted",
    }
}

/// Which moves the environments table's machine allows.
fn moves(from: EnvStatus, to: EnvStatus) -> bool {
    use EnvStatus::*;
    match (from, to) {
        // Stopping is always possible (and idempotent); starting is, unless a start is under way.
        (_, Stopped) => true,
        (_, Provisioning) => from != Provisioning,
        // Without a container there is nothing to report, but a container to take back.
        (Stopped, _) => to == Running,
        // A container exists, or is being made (a start's own outcome, or what Docker says of a
        // container a crashed start left): its status is Docker's.
        (Provisioning | Running | Exited | OomKilled | Failed | Missing, _) => true,
    }
}

machine! {
    /// The environments table's machine.
    pub struct Environment {
        kind: "environment",
        table: "environments",
        id: EnvironmentId,
        status: EnvStatus,
        reason: Reason,
        moves: moves,
    }
}

/// What a move writes besides the status: the main process's exit code, the message (`None` clears
/// it: a new state says nothing of the old one's troubles) and the container (`None`: it has none any
/// more, so its id goes too).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Container<'a> {
    pub name: Option<&'a str>,
    pub exit_code: Option<i64>,
    pub message: Option<&'a str>,
}

impl<'a> Container<'a> {
    /// A container by this name, all well.
    pub fn named(name: &'a str) -> Self {
        Container {
            name: Some(name),
            ..Default::default()
        }
    }

    /// No container (any more), and why.
    pub fn gone(message: &'a str) -> Self {
        Container {
            message: Some(message),
            ..Default::default()
        }
    }
}

/// Moves environment `id` to `to` for `reason` with `container`'s columns; false when the machine does
/// not allow the move from where the environment is (or another writer was first). In a write
/// transaction (`db::write_tx`): the move reads the status before it writes, which in a deferred one
/// fails with SQLITE_BUSY when another writer (the Docker watcher, a person) commits in between.
pub(crate) async fn set(
    tx: &mut Transaction<'_, Sqlite>,
    id: EnvironmentId,
    to: EnvStatus,
    reason: Reason,
    container: Container<'_>,
) -> Result<bool, AppError> {
    let moved =
        transitions::transition::<Environment>(tx, id, to, reason, container.message).await?;
    if moved.is_none() {
        return Ok(false);
    }
    let now = crate::now();
    sqlx::query!(
        "UPDATE environments SET exit_code = ?1, status_message = ?2, container_name = ?3,
             container_id = CASE WHEN ?3 IS NULL THEN NULL ELSE container_id END, updated_at = ?4
         WHERE id = ?5",
        container.exit_code,
        container.message,
        container.name,
        now,
        id,
    )
    .execute(&mut **tx)
    .await?;
    Ok(true)
}

/// The refusal of an `up` while another is provisioning the same environment.
pub(crate) fn starting() -> AppError {
    AppError::conflict(
        "status",
        ErrorCode::EnvironmentStarting,
        "the environment is being started; wait for it to finish",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transitions::Machine;
    use EnvStatus::*;

    const ALL: [EnvStatus; 7] = EnvStatus::ALL;

    #[test]
    fn a_stopped_environment_hears_nothing_from_docker_but_an_adoption() {
        for to in ALL {
            let allowed = matches!(to, Stopped | Provisioning | Running);
            assert_eq!(Environment::can_become(Stopped, to), allowed, "{to:?}");
        }
    }

    #[test]
    fn one_start_at_a_time_and_stopping_always() {
        for from in ALL {
            assert!(Environment::can_become(from, Stopped), "{from:?}");
            assert_eq!(
                Environment::can_become(from, Provisioning),
                from != Provisioning
            );
        }
        for to in [Running, Failed, Exited, Missing] {
            assert!(Environment::can_become(Provisioning, to), "{to:?}");
        }
    }

    /// The Docker watcher and people move the same row at once: every move in its own write transaction
    /// lands (none fails with SQLITE_BUSY), and the row ends in one of the statuses written.
    #[tokio::test]
    async fn concurrent_movers_all_land() {
        let (_dir, db) = crate::testing::test_db().await;
        let owner = crate::testing::actor(&db, "owner").await;
        let ws = crate::workspaces::create(&db, &owner, "team")
            .await
            .unwrap()
            .id;
        let now = crate::now();
        let id: EnvironmentId = sqlx::query_scalar(
            "INSERT INTO environments (workspace_id, name, status, container_name, created_at, updated_at)
             VALUES (?, 'nlp', 'running', 'c', ?, ?) RETURNING id",
        )
        .bind(ws)
        .bind(&now)
        .bind(&now)
        .fetch_one(&db)
        .await
        .unwrap();
        let movers = (0..24).map(|i| {
            let db = db.clone();
            tokio::spawn(async move {
                let (to, reason) = if i % 2 == 0 {
                    (Exited, Reason::Exited)
                } else {
                    (Running, Reason::SeenRunning)
                };
                let mut tx = crate::db::write_tx(&db).await?;
                let seen = Container {
                    name: Some("c"),
                    exit_code: (to == Exited).then_some(i),
                    message: None,
                };
                let moved = set(&mut tx, id, to, reason, seen).await?;
                tx.commit().await?;
                Ok::<_, AppError>(moved)
            })
        });
        for mover in movers {
            assert!(
                mover.await.unwrap().unwrap(),
                "every move is allowed and lands"
            );
        }
        let mut conn = db.acquire().await.unwrap();
        let (status, reason) = crate::transitions::current::<Environment>(&mut conn, id)
            .await
            .unwrap();
        assert!(matches!(
            (status, reason),
            (Exited, Some(Reason::Exited)) | (Running, Some(Reason::SeenRunning))
        ));
    }

    #[test]
    fn a_container_that_exists_reports_what_docker_says() {
        for from in [Running, Exited, OomKilled, Failed, Missing] {
            for to in [Running, Exited, OomKilled, Failed, Missing] {
                assert!(Environment::can_become(from, to), "{from:?} → {to:?}");
            }
        }
    }
}

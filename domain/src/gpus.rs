//! Paddock's GPU inventory: which environment, job or endpoint replica holds which host GPU. Docker itself
//! would happily give one GPU to every container that asks, so the rule "two holders never share a GPU
//! unless both said shared" is kept here, in the `gpu_leases` table, inside the same write transaction
//! that records the holder's new state — two concurrent provisions cannot pick the same device.

use contracts::ids::{EnvironmentId, JobId};
use std::collections::HashMap;

use containers::preflight::GpuInfo;
use sqlx::{SqliteConnection, SqlitePool};

use contracts::error::{AppError, ErrorCode};
use contracts::types::GpuSpec;

/// Who holds GPUs: the `holder_kind` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Environment(EnvironmentId),
    Job(JobId),
    /// An endpoint replica (`endpoint_replicas.id`) serving on a GPU.
    EndpointReplica(i64),
}

impl Holder {
    fn kind(self) -> &'static str {
        match self {
            Holder::Environment(_) => "environment",
            Holder::Job(_) => "job",
            Holder::EndpointReplica(_) => "endpoint_replica",
        }
    }
    fn id(self) -> i64 {
        match self {
            Holder::Environment(id) => id.get(),
            Holder::Job(id) => id.get(),
            Holder::EndpointReplica(id) => id,
        }
    }
}

/// The workspace of every lease, as rows `(workspace_id, holder_kind, holder_id)`: a lease is held
/// by an environment, a job or an endpoint replica, and each kind finds its workspace differently.
pub(crate) const LEASES_BY_WORKSPACE: &str = "
    SELECT j.workspace_id, l.holder_kind, l.holder_id FROM gpu_leases l
        JOIN jobs j ON l.holder_kind = 'job' AND j.id = l.holder_id
    UNION ALL
    SELECT e.workspace_id, l.holder_kind, l.holder_id FROM gpu_leases l
        JOIN environments e ON l.holder_kind = 'environment' AND e.id = l.holder_id
    UNION ALL
    SELECT e.workspace_id, l.holder_kind, l.holder_id FROM gpu_leases l
        JOIN endpoint_replicas r ON l.holder_kind = 'endpoint_replica' AND r.id = l.holder_id
        JOIN endpoints e ON e.id = r.endpoint_id";

/// GPUs each workspace holds, as rows `(workspace_id, gpus)`: its leases of this host's GPUs (one
/// each), and what it holds on a cluster — the GPUs of its jobs handed to one and not ended, and one per
/// starting or ready replica on `cuda` of its endpoints that run there. The GPU quota counts them all
/// alike: a team's quota is one number whichever machines its work runs on.
pub(crate) fn held_by_workspace() -> String {
    format!(
        "SELECT workspace_id, 1 AS gpus FROM ({LEASES_BY_WORKSPACE})
         UNION ALL
         SELECT workspace_id, gpus FROM jobs
             WHERE cluster IS NOT NULL AND gpus > 0 AND status IN ('starting', 'running', 'cancelling')
         UNION ALL
         SELECT e.workspace_id, 1 FROM endpoint_replicas r JOIN endpoints e ON e.id = r.endpoint_id
             WHERE e.cluster IS NOT NULL AND e.device = 'cuda' AND r.status IN ('starting', 'ready')"
    )
}

/// The workspace `holder` belongs to.
async fn workspace_of(
    conn: &mut SqliteConnection,
    holder: Holder,
) -> Result<Option<i64>, AppError> {
    let sql = match holder {
        Holder::Environment(_) => "SELECT workspace_id FROM environments WHERE id = ?",
        Holder::Job(_) => "SELECT workspace_id FROM jobs WHERE id = ?",
        Holder::EndpointReplica(_) => {
            "SELECT e.workspace_id FROM endpoint_replicas r JOIN endpoints e ON e.id = r.endpoint_id WHERE r.id = ?"
        }
    };
    Ok(sqlx::query_scalar(sql)
        .bind(holder.id())
        .fetch_optional(conn)
        .await?)
}

/// Refuses `more` GPUs for `holder` when its workspace would then hold more than its quota: the one
/// check every path that takes GPUs goes through (jobs, environments, endpoint replicas, here or on a
/// cluster). A holder already counted in [`held_by_workspace`] (a cluster replica, recorded as starting
/// before it asks) asks for 0 more.
pub(crate) async fn within_quota(
    conn: &mut SqliteConnection,
    holder: Holder,
    more: usize,
) -> Result<(), AppError> {
    let Some(workspace_id) = workspace_of(&mut *conn, holder).await? else {
        return Ok(());
    };
    let quota: Option<i64> =
        sqlx::query_scalar("SELECT max_gpus FROM workspace_quotas WHERE workspace_id = ?")
            .bind(workspace_id)
            .fetch_optional(&mut *conn)
            .await?;
    let Some(quota) = quota else {
        return Ok(());
    };
    let held: i64 = sqlx::query_scalar(&format!(
        "SELECT COALESCE(SUM(gpus), 0) FROM ({}) WHERE workspace_id = ?",
        held_by_workspace()
    ))
    .bind(workspace_id)
    .fetch_one(&mut *conn)
    .await?;
    let after = held.saturating_add(more as i64);
    if after > quota {
        return Err(AppError::conflict(
            "gpus",
            ErrorCode::GpuQuotaExceeded,
            format!(
                "this workspace's GPU quota is {quota} (this server and clusters together) and it would \
                 then hold {after} (stop an environment, job or endpoint, or ask an admin for a larger quota)"
            ),
        ));
    }
    Ok(())
}

/// Per GPU index: how many holders, and whether every lease on it is shared.
pub async fn holders(db: &SqlitePool) -> Result<HashMap<u32, (u32, bool)>, AppError> {
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT gpu_index, COUNT(*), MIN(shared) FROM gpu_leases GROUP BY gpu_index",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(gpu, n, shared)| (gpu as u32, (n as u32, shared == 1)))
        .collect())
}

/// The GPU indices `holder` holds now.
pub async fn leased(conn: &mut SqliteConnection, holder: Holder) -> Result<Vec<u32>, AppError> {
    let rows: Vec<i64> =
        sqlx::query_scalar("SELECT gpu_index FROM gpu_leases WHERE holder_kind = ? AND holder_id = ? ORDER BY gpu_index")
            .bind(holder.kind())
            .bind(holder.id())
            .fetch_all(conn)
            .await?;
    Ok(rows.into_iter().map(|g| g as u32).collect())
}

/// Picks and records GPUs for `holder` (replacing what it held). Call inside a write transaction.
/// `Count(n)` takes the lowest free indices; `Devices` takes exactly those or fails naming the busy ones.
pub async fn lease(
    conn: &mut SqliteConnection,
    host: &[GpuInfo],
    holder: Holder,
    request: &GpuSpec,
    shared: bool,
) -> Result<Vec<u32>, AppError> {
    release(conn, holder).await?;
    if request.count() == 0 {
        return Ok(Vec::new());
    }
    within_quota(&mut *conn, holder, request.count()).await?;
    // (gpu, shared) of every other lease.
    let taken: Vec<(i64, i64)> = sqlx::query_as("SELECT gpu_index, shared FROM gpu_leases")
        .fetch_all(&mut *conn)
        .await?;
    let free = |gpu: u32| {
        taken
            .iter()
            .filter(|(g, _)| *g as u32 == gpu)
            .all(|(_, other_shared)| shared && *other_shared == 1)
    };
    let chosen: Vec<u32> = match request {
        GpuSpec::None => Vec::new(),
        GpuSpec::Count(n) => {
            let available: Vec<u32> = host.iter().map(|g| g.index).filter(|g| free(*g)).collect();
            if available.len() < *n as usize {
                return Err(busy(format!(
                    "{n} GPU(s) requested but only {} of this host's {} are free; stop another environment or job, or mark both shared",
                    available.len(),
                    host.len()
                )));
            }
            available.into_iter().take(*n as usize).collect()
        }
        GpuSpec::Devices(devices) => {
            let busy_ones: Vec<String> = devices
                .iter()
                .filter(|d| !free(**d))
                .map(u32::to_string)
                .collect();
            if !busy_ones.is_empty() {
                return Err(busy(format!(
                    "GPU {} is held by another environment or job",
                    busy_ones.join(", ")
                )));
            }
            devices.clone()
        }
    };
    let now = super::now();
    for gpu in &chosen {
        sqlx::query("INSERT INTO gpu_leases (gpu_index, holder_kind, holder_id, shared, since) VALUES (?, ?, ?, ?, ?)")
            .bind(*gpu as i64)
            .bind(holder.kind())
            .bind(holder.id())
            .bind(shared)
            .bind(&now)
            .execute(&mut *conn)
            .await?;
    }
    Ok(chosen)
}

/// Gives back every GPU `holder` holds.
pub async fn release(conn: &mut SqliteConnection, holder: Holder) -> Result<(), AppError> {
    sqlx::query("DELETE FROM gpu_leases WHERE holder_kind = ? AND holder_id = ?")
        .bind(holder.kind())
        .bind(holder.id())
        .execute(conn)
        .await?;
    Ok(())
}

fn busy(message: String) -> AppError {
    AppError::conflict("gpus", ErrorCode::GpusBusy, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(id: i64) -> Holder {
        Holder::Environment(EnvironmentId::new(id))
    }

    fn job(id: i64) -> Holder {
        Holder::Job(JobId::new(id))
    }
    use crate::testing::test_db;
    use sqlx::pool::PoolConnection;
    use sqlx::Sqlite;

    fn gpu(index: u32) -> GpuInfo {
        let line = format!("{index}, NVIDIA H200, 570.124.06, 9.0, 143771 MiB, GPU-{index}");
        containers::preflight::gpus::parse(&line)
            .expect("sample nvidia-smi line")
            .remove(0)
    }

    /// A machine with GPUs `0..n` and a fresh database to lease them in.
    struct Host {
        _dir: tempfile::TempDir,
        db: SqlitePool,
        conn: PoolConnection<Sqlite>,
        gpus: Vec<GpuInfo>,
    }

    impl Host {
        async fn with(n: u32) -> Host {
            let (dir, db) = test_db().await;
            let conn = db.acquire().await.unwrap();
            let gpus = (0..n).map(gpu).collect();
            Host {
                _dir: dir,
                db,
                conn,
                gpus,
            }
        }

        async fn lease(&mut self, holder: Holder, request: GpuSpec, shared: bool) -> LeaseResult {
            lease(&mut self.conn, &self.gpus, holder, &request, shared).await
        }

        /// One GPU, not shared.
        async fn one(&mut self, holder: Holder) -> LeaseResult {
            self.lease(holder, GpuSpec::Count(1), false).await
        }
    }

    type LeaseResult = Result<Vec<u32>, AppError>;

    #[tokio::test]
    async fn exclusive_gpus_are_never_given_twice() {
        let mut host = Host::with(2).await;
        let a = host.one(env(1)).await.unwrap();
        let b = host.one(env(2)).await.unwrap();
        assert_eq!((a, b), (vec![0], vec![1]));
        let err = host.one(job(7)).await.unwrap_err();
        assert_eq!(err.code(), "gpus_busy");
        let err = host
            .lease(job(7), GpuSpec::Devices(vec![1]), true)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("GPU 1"), "{err}");
        release(&mut host.conn, env(1)).await.unwrap();
        assert_eq!(host.one(job(7)).await.unwrap(), vec![0]);
    }

    #[tokio::test]
    async fn the_quota_holds_for_environments_jobs_and_replicas_alike() {
        let mut host = Host::with(4).await;
        for statement in [
            "INSERT INTO workspaces (id, name, created_at) VALUES (1, 'limited', 't'), (2, 'free', 't')",
            "INSERT INTO workspace_quotas (workspace_id, max_gpus) VALUES (1, 2)",
            "INSERT INTO environments (id, workspace_id, name, created_at, updated_at) VALUES
                 (10, 1, 'a', 't', 't'), (11, 1, 'b', 't', 't'), (20, 2, 'c', 't', 't')",
            "INSERT INTO jobs (id, workspace_id, name, spec_json, config_toml, executor, created_at)
                 VALUES (30, 1, 'j', '{}', '', 'local', 't'), (31, 1, 'k', '{}', '', 'local', 't')",
            "INSERT INTO checkpoints (id, job_id, workspace_id, step, path, bytes, sha256, created_at)
                 VALUES (40, 30, 1, 1, 'p', 0, 'x', 't')",
            "INSERT INTO endpoints (id, workspace_id, slug, name, checkpoint_id, replicas, max_batch_tokens,
                 max_wait_ms, device, created_at, updated_at) VALUES (50, 1, 's', 'e', 40, 1, 1, 1, 'cuda', 't', 't')",
            "INSERT INTO endpoint_replicas (id, endpoint_id, ordinal, status) VALUES (60, 50, 0, 'starting')",
        ] {
            sqlx::query(statement)
                .execute(&mut *host.conn)
                .await
                .unwrap();
        }
        host.one(env(10)).await.unwrap();
        host.one(job(30)).await.unwrap();
        for holder in [env(11), job(31), Holder::EndpointReplica(60)] {
            let err = host.one(holder).await.unwrap_err();
            assert_eq!(err.code(), "gpu_quota_exceeded", "{holder:?}");
            assert!(err.to_string().contains("quota is 2"), "{err}");
        }
        // Another workspace has its own (no) quota; a holder re-leasing its own GPU is not double-counted.
        host.lease(env(20), GpuSpec::Count(2), false).await.unwrap();
        host.one(env(10)).await.unwrap();
        // What a finished job gives back, a replica may take.
        release(&mut host.conn, job(30)).await.unwrap();
        host.one(Holder::EndpointReplica(60)).await.unwrap();
    }

    #[tokio::test]
    async fn shared_leases_coexist_only_with_shared_ones() {
        let mut host = Host::with(1).await;
        host.lease(env(1), GpuSpec::Devices(vec![0]), true)
            .await
            .unwrap();
        host.lease(env(2), GpuSpec::Count(1), true).await.unwrap();
        assert!(host.one(env(3)).await.is_err());
        assert_eq!(holders(&host.db).await.unwrap().get(&0), Some(&(2, true)));
        // Re-leasing replaces the holder's own lease instead of counting it twice.
        host.lease(env(2), GpuSpec::Count(1), true).await.unwrap();
        assert_eq!(leased(&mut host.conn, env(2)).await.unwrap(), vec![0]);
        assert_eq!(holders(&host.db).await.unwrap().get(&0), Some(&(2, true)));
    }
}

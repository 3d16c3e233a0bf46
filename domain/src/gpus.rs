//! Paddock's GPU inventory: which environment, job or endpoint replica holds which host GPU. Docker itself
//! would happily give one GPU to every container that asks, so the rule "two holders never share a GPU
//! unless both said shared" is kept here, in the `gpu_leases` table, inside the same write transaction
//! that records the holder's new state — two concurrent provisions cannot pick the same device.
//!
//! A lease names its GPU by UUID, and a run is given its GPUs by UUID (`CUDA_VISIBLE_DEVICES`, Docker's
//! device ids): nvidia-smi's index is PCI order and shifts when a GPU falls off the bus, and CUDA's own
//! numbering is fastest-first, so an index alone can name another team's GPU. People still see indices.

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
         SELECT workspace_id, gpus * nodes FROM jobs
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

/// A GPU given to a holder: its UUID, which places it, and its index, which people read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placed {
    pub index: u32,
    pub uuid: String,
}

impl Placed {
    fn of(gpu: &GpuInfo) -> Placed {
        Placed {
            index: gpu.index,
            uuid: gpu.uuid.clone(),
        }
    }
}

/// The UUIDs of `gpus`, as a run is given them.
pub fn uuids(gpus: &[Placed]) -> Vec<String> {
    gpus.iter().map(|g| g.uuid.clone()).collect()
}

/// The indices of `gpus`, as people read them.
pub fn indices(gpus: &[Placed]) -> Vec<u32> {
    gpus.iter().map(|g| g.index).collect()
}

/// Leases taken before GPUs were leased by UUID name theirs `index:N`: each is given the UUID of the GPU
/// at that index now. Called once at start, after detection; a lease whose index matches no GPU keeps
/// its name, which no GPU has (it blocks nothing, and goes when its holder stops).
pub async fn adopt_index_leases(db: &SqlitePool, host: &[GpuInfo]) -> Result<(), AppError> {
    for gpu in host {
        sqlx::query("UPDATE OR IGNORE gpu_leases SET gpu_uuid = ? WHERE gpu_uuid = ?")
            .bind(&gpu.uuid)
            .bind(format!("index:{}", gpu.index))
            .execute(db)
            .await?;
    }
    Ok(())
}

/// Per GPU UUID: how many holders, and whether every lease on it is shared.
pub async fn holders(db: &SqlitePool) -> Result<HashMap<String, (u32, bool)>, AppError> {
    let rows: Vec<(String, i64, i64)> =
        sqlx::query_as("SELECT gpu_uuid, COUNT(*), MIN(shared) FROM gpu_leases GROUP BY gpu_uuid")
            .fetch_all(db)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(gpu, n, shared)| (gpu, (n as u32, shared == 1)))
        .collect())
}

/// The GPUs `holder` holds now, by index.
pub async fn leased(conn: &mut SqliteConnection, holder: Holder) -> Result<Vec<Placed>, AppError> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT gpu_index, gpu_uuid FROM gpu_leases WHERE holder_kind = ? AND holder_id = ? ORDER BY gpu_index",
    )
    .bind(holder.kind())
    .bind(holder.id())
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(index, uuid)| Placed {
            index: index as u32,
            uuid,
        })
        .collect())
}

/// Picks and records GPUs for `holder` (replacing what it held). Call inside a write transaction.
/// `Count(n)` takes the lowest free indices; `Devices` takes exactly those or fails naming the busy ones.
pub async fn lease(
    conn: &mut SqliteConnection,
    host: &[GpuInfo],
    holder: Holder,
    request: &GpuSpec,
    shared: bool,
) -> Result<Vec<Placed>, AppError> {
    release(conn, holder).await?;
    if request.count() == 0 {
        return Ok(Vec::new());
    }
    within_quota(&mut *conn, holder, request.count()).await?;
    // (gpu, shared) of every other lease.
    let taken: Vec<(String, i64)> = sqlx::query_as("SELECT gpu_uuid, shared FROM gpu_leases")
        .fetch_all(&mut *conn)
        .await?;
    let free = |gpu: &GpuInfo| {
        taken
            .iter()
            .filter(|(g, _)| *g == gpu.uuid)
            .all(|(_, other_shared)| shared && *other_shared == 1)
    };
    let chosen: Vec<Placed> = match request {
        GpuSpec::None => Vec::new(),
        GpuSpec::Count(n) => {
            let available: Vec<Placed> = host.iter().filter(|g| free(g)).map(Placed::of).collect();
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
            let mut chosen = Vec::with_capacity(devices.len());
            let (mut busy_ones, mut unknown) = (Vec::new(), Vec::new());
            for index in devices {
                match host.iter().find(|g| g.index == *index) {
                    None => unknown.push(index.to_string()),
                    Some(gpu) if !free(gpu) => busy_ones.push(index.to_string()),
                    Some(gpu) => chosen.push(Placed::of(gpu)),
                }
            }
            if !unknown.is_empty() {
                return Err(AppError::conflict(
                    "gpus",
                    ErrorCode::GpusBusy,
                    format!(
                        "GPU {} is not among this host's usable GPUs now",
                        unknown.join(", ")
                    ),
                ));
            }
            if !busy_ones.is_empty() {
                return Err(busy(format!(
                    "GPU {} is held by another environment or job",
                    busy_ones.join(", ")
                )));
            }
            chosen
        }
    };
    let now = super::now();
    for gpu in &chosen {
        sqlx::query("INSERT INTO gpu_leases (gpu_uuid, gpu_index, holder_kind, holder_id, shared, since) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(&gpu.uuid)
            .bind(gpu.index as i64)
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
        let line = format!(
            "{index}, GPU-{index}, 00000000:0{index}:00.0, 580.95.05, 143771 MiB, Disabled, 9.0, NVIDIA H200"
        );
        containers::preflight::gpus::parse(&line, true)
            .gpus
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
            at(lease(&mut self.conn, &self.gpus, holder, &request, shared).await)
        }

        /// One GPU, not shared.
        async fn one(&mut self, holder: Holder) -> LeaseResult {
            self.lease(holder, GpuSpec::Count(1), false).await
        }
    }

    type LeaseResult = Result<Vec<u32>, AppError>;

    fn at(result: Result<Vec<Placed>, AppError>) -> LeaseResult {
        result.map(|placed| indices(&placed))
    }

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
        assert_eq!(
            holders(&host.db).await.unwrap().get("GPU-0"),
            Some(&(2, true))
        );
        // Re-leasing replaces the holder's own lease instead of counting it twice.
        host.lease(env(2), GpuSpec::Count(1), true).await.unwrap();
        let held = leased(&mut host.conn, env(2)).await.unwrap();
        assert_eq!(uuids(&held), ["GPU-0"]);
        assert_eq!(
            holders(&host.db).await.unwrap().get("GPU-0"),
            Some(&(2, true))
        );
    }

    /// A lease follows its GPU, not its index: when GPU 0 falls off the bus, nvidia-smi renumbers the
    /// others from 0, and the GPU now called 0 is still the one a holder leased as 1.
    #[tokio::test]
    async fn a_lease_follows_its_gpu_when_the_indices_shift() {
        let mut host = Host::with(2).await;
        let held = lease(
            &mut host.conn,
            &host.gpus,
            env(1),
            &GpuSpec::Devices(vec![1]),
            false,
        )
        .await
        .unwrap();
        assert_eq!(uuids(&held), ["GPU-1"]);
        // GPU-0 is lost; GPU-1 is now index 0.
        let mut shifted = gpu(1);
        shifted.index = 0;
        host.gpus = vec![shifted];
        let err = host.one(env(2)).await.unwrap_err();
        assert_eq!(err.code(), "gpus_busy", "{err}");
        let err = host
            .lease(env(2), GpuSpec::Devices(vec![1]), false)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("not among this host's usable GPUs"),
            "{err}"
        );
    }

    /// Leases from before UUIDs take the UUID of the GPU at their index at the next start.
    #[tokio::test]
    async fn leases_by_index_are_adopted_by_uuid() {
        let mut host = Host::with(2).await;
        sqlx::query("INSERT INTO gpu_leases (gpu_uuid, gpu_index, holder_kind, holder_id, shared, since) VALUES ('index:1', 1, 'environment', 5, 0, 't'), ('index:7', 7, 'environment', 5, 0, 't')")
            .execute(&mut *host.conn)
            .await
            .unwrap();
        adopt_index_leases(&host.db, &host.gpus).await.unwrap();
        let held = leased(&mut host.conn, env(5)).await.unwrap();
        assert_eq!(uuids(&held), ["GPU-1", "index:7"]);
        assert_eq!(host.one(env(6)).await.unwrap(), vec![0]);
        assert_eq!(host.one(env(7)).await.unwrap_err().code(), "gpus_busy");
    }
}

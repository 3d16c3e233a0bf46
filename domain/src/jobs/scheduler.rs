//! Who runs next. [`plan`] is a pure function over the queue and the free resources, so its rules are
//! tested on simulated GPU inventories; [`run`] applies it whenever something changes (a submission, a
//! job ending, a cancel) and at least every few seconds.
//!
//! Rules, in order:
//! - Order: effective priority (the job's priority plus one level per [`AGEING_MINUTES`] waited, so a
//!   low-priority job is never starved by a stream of higher ones), then FIFO by submission.
//! - GPUs: a job gets specific free host GPUs; two jobs never share one (GPUs held by environments are
//!   busy too — one inventory, `gpu_leases`). A workspace never holds more GPUs than its quota.
//! - No starvation of big GPU jobs: once the first GPU job in order does not fit, later GPU jobs wait
//!   too (no back-filling past it), so GPUs freed by finishing jobs accumulate for it. A job blocked only
//!   by its own workspace's quota does not hold others back.
//! - CPU jobs run in a fixed number of slots, independently of GPU jobs.
//! - Jobs for a cluster are not placed here: they are handed to it as soon as their workspace's GPU
//!   quota allows (it counts GPUs here and on the cluster alike), and its scheduler queues and places
//!   them; they take no GPU of this host and no CPU slot.

use contracts::ids::{JobId, WorkspaceId};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;

use super::status::{self, Reason};
use super::{launch, supervise, Jobs};
use crate::engine::Engine;
use crate::gpus::{self, Holder};
use crate::transitions::Machine;
use contracts::error::AppError;
use contracts::types::{GpuSpec, JobStatus};

/// Minutes of waiting that raise a queued job's priority by one level.
pub const AGEING_MINUTES: i64 = 10;
/// The scheduler looks at the queue at least this often, even without a wake-up.
const TICK: Duration = Duration::from_secs(5);

/// A queued job as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    pub id: JobId,
    pub workspace_id: WorkspaceId,
    pub priority: i64,
    /// On every node it spans.
    pub gpus: u32,
    /// Minutes since submission.
    pub waited_minutes: i64,
    /// For a cluster, whose scheduler places it: only the quota holds it back here.
    pub on_cluster: bool,
}

/// What is free now.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    /// Host GPU indices nobody holds.
    pub free_gpus: Vec<u32>,
    /// GPUs each workspace holds now (jobs, environments and replicas, here and on a cluster).
    pub held_by_workspace: HashMap<WorkspaceId, u32>,
    /// Per-workspace GPU quotas; absent means no quota.
    pub quotas: HashMap<WorkspaceId, u32>,
    pub free_cpu_slots: usize,
}

/// Jobs to start now, with the GPUs each gets.
pub fn plan(queue: &[Queued], resources: &Resources) -> Vec<(JobId, Vec<u32>)> {
    let mut order: Vec<&Queued> = queue.iter().collect();
    order.sort_by_key(|q| {
        (
            std::cmp::Reverse(q.priority + q.waited_minutes / AGEING_MINUTES),
            q.id,
        )
    });
    let mut free: Vec<u32> = resources.free_gpus.clone();
    free.sort_unstable();
    let mut held = resources.held_by_workspace.clone();
    let mut cpu_slots = resources.free_cpu_slots;
    let mut gpu_blocked = false;
    let mut out = Vec::new();
    for job in order {
        let holds = held.get(&job.workspace_id).copied().unwrap_or(0);
        let over_quota = |gpus: u32| {
            (resources.quotas.get(&job.workspace_id)).is_some_and(|quota| holds + gpus > *quota)
        };
        if job.on_cluster {
            if !over_quota(job.gpus) {
                *held.entry(job.workspace_id).or_insert(0) += job.gpus;
                out.push((job.id, Vec::new()));
            }
            continue;
        }
        if job.gpus == 0 {
            if cpu_slots > 0 {
                cpu_slots -= 1;
                out.push((job.id, Vec::new()));
            }
            continue;
        }
        if over_quota(job.gpus) {
            continue; // waits for its own workspace; holds nobody else back
        }
        if gpu_blocked {
            continue;
        }
        if free.len() < job.gpus as usize {
            gpu_blocked = true;
            continue;
        }
        let taken: Vec<u32> = free.drain(..job.gpus as usize).collect();
        *held.entry(job.workspace_id).or_insert(0) += job.gpus;
        out.push((job.id, taken));
    }
    out
}

/// Runs the scheduler until the process ends: recovers runs left by a previous process, then starts
/// queued jobs as resources allow.
pub async fn run(db: SqlitePool, jobs: Arc<Jobs>, engine: Arc<Engine>) {
    supervise::recover(&db, &jobs).await;
    crate::evaluations::recover(&db, &jobs).await;
    loop {
        if let Err(e) = schedule_once(&db, &jobs, &engine).await {
            tracing::warn!(error = %e, "scheduling failed");
        }
        let _ = tokio::time::timeout(TICK, jobs.wake.notified()).await;
    }
}

/// One scheduling pass: starts what [`plan`] says. Public for tests.
pub async fn schedule_once(
    db: &SqlitePool,
    jobs: &Arc<Jobs>,
    engine: &Engine,
) -> Result<Vec<JobId>, AppError> {
    let mut tx = crate::db::write_tx(db).await?;
    let rows: Vec<(JobId, WorkspaceId, i64, i64, String, Option<String>)> = sqlx::query_as(
        // A workspace being deleted starts nothing (its purge cancels what is queued).
        "SELECT j.id, j.workspace_id, j.priority, j.gpus * j.nodes, j.created_at, j.cluster FROM jobs j
         JOIN workspaces w ON w.id = j.workspace_id
         WHERE j.status = 'queued' AND w.deleting_since IS NULL",
    )
    .fetch_all(&mut *tx)
    .await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let now = chrono::Utc::now();
    let queue: Vec<Queued> = rows
        .into_iter()
        .map(|(id, workspace_id, priority, gpus, created_at, cluster)| {
            let waited = chrono::DateTime::parse_from_rfc3339(&created_at)
                .map(|t| (now - t.to_utc()).num_minutes())
                .unwrap_or(0);
            Queued {
                id,
                workspace_id,
                priority,
                gpus: gpus as u32,
                waited_minutes: waited.max(0),
                on_cluster: cluster.is_some(),
            }
        })
        .collect();
    let host_gpus = engine.gpus().await;
    let busy: HashSet<String> =
        sqlx::query_scalar::<_, String>("SELECT DISTINCT gpu_uuid FROM gpu_leases")
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
    // Every GPU held counts against its workspace's quota: jobs', environments' and replicas', here
    // and on a cluster.
    let held_rows: Vec<(WorkspaceId, i64)> = sqlx::query_as(&format!(
        "SELECT workspace_id, SUM(gpus) FROM ({}) GROUP BY workspace_id",
        gpus::held_by_workspace()
    ))
    .fetch_all(&mut *tx)
    .await?;
    let quotas: Vec<(WorkspaceId, i64)> =
        sqlx::query_as("SELECT workspace_id, max_gpus FROM workspace_quotas")
            .fetch_all(&mut *tx)
            .await?;
    let running_cpu: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE gpus = 0 AND cluster IS NULL AND status IN ('starting', 'running', 'cancelling')")
            .fetch_one(&mut *tx)
            .await?;
    let resources = Resources {
        free_gpus: host_gpus
            .iter()
            .filter(|g| !busy.contains(&g.uuid))
            .map(|g| g.index)
            .collect(),
        held_by_workspace: held_rows.into_iter().map(|(w, n)| (w, n as u32)).collect(),
        quotas: quotas.into_iter().map(|(w, n)| (w, n as u32)).collect(),
        free_cpu_slots: jobs.cpu_slots.saturating_sub(running_cpu as usize),
    };
    let decisions = plan(&queue, &resources);
    for (job_id, devices) in &decisions {
        if !devices.is_empty() {
            gpus::lease(
                &mut tx,
                &host_gpus,
                Holder::Job(*job_id),
                &GpuSpec::Devices(devices.clone()),
                false,
            )
            .await?;
        }
        status::Job::transition(
            &mut tx,
            *job_id,
            JobStatus::Starting,
            Reason::Scheduled,
            None,
        )
        .await?;
        sqlx::query("UPDATE jobs SET gpu_indices = ?, started_at = ? WHERE id = ?")
            .bind(serde_json::to_string(devices).unwrap_or_else(|_| "[]".into()))
            .bind(crate::now())
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    if !decisions.is_empty() {
        jobs.changed();
    }
    for (job_id, _) in &decisions {
        launch::start(db.clone(), jobs.clone(), *job_id);
    }
    Ok(decisions.into_iter().map(|(id, _)| id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: i64, workspace_id: i64, priority: i64, gpus: u32) -> Queued {
        Queued {
            id: JobId::new(id),
            workspace_id: WorkspaceId::new(workspace_id),
            priority,
            gpus,
            waited_minutes: 0,
            on_cluster: false,
        }
    }

    /// The plan, by job number.
    fn planned(queue: &[Queued], resources: &Resources) -> Vec<(i64, Vec<u32>)> {
        let plan = plan(queue, resources);
        plan.into_iter()
            .map(|(id, gpus)| (id.get(), gpus))
            .collect()
    }

    fn gpus(n: u32) -> Resources {
        Resources {
            free_gpus: (0..n).collect(),
            free_cpu_slots: 0,
            ..Default::default()
        }
    }

    #[test]
    fn each_gpu_goes_to_one_job_in_priority_then_fifo_order() {
        let queue = [q(1, 1, 0, 1), q(2, 1, 5, 2), q(3, 2, 0, 1), q(4, 2, 0, 1)];
        assert_eq!(
            planned(&queue, &gpus(4)),
            vec![(2, vec![0, 1]), (1, vec![2]), (3, vec![3])]
        );
    }

    #[test]
    fn a_big_gpu_job_is_not_starved_by_smaller_ones_behind_it() {
        // Job 1 needs 4 GPUs; 2 are free. Job 2 (1 GPU) would fit but must not take one: the head keeps
        // its claim, so GPUs freed later accumulate for it.
        let queue = [q(1, 1, 0, 4), q(2, 1, 0, 1)];
        assert!(planned(&queue, &gpus(2)).is_empty());
        assert_eq!(planned(&queue, &gpus(4)), vec![(1, vec![0, 1, 2, 3])]);
    }

    #[test]
    fn quotas_cap_a_workspace_without_blocking_others() {
        let mut resources = gpus(4);
        resources.quotas.insert(WorkspaceId::new(1), 2);
        resources.held_by_workspace.insert(WorkspaceId::new(1), 1);
        let queue = [q(1, 1, 0, 2), q(2, 2, 0, 2), q(3, 1, 0, 1)];
        // Workspace 1 holds 1 of its 2: job 1 (2 more) waits, job 3 (1 more) runs; workspace 2 is unaffected.
        assert_eq!(
            planned(&queue, &resources),
            vec![(2, vec![0, 1]), (3, vec![2])]
        );
    }

    #[test]
    fn waiting_raises_priority_so_low_jobs_eventually_run() {
        let mut old = q(1, 1, 0, 1);
        old.waited_minutes = 3 * AGEING_MINUTES;
        let fresh = q(2, 1, 2, 1);
        assert_eq!(
            planned(&[fresh.clone(), old.clone()], &gpus(1)),
            vec![(1, vec![0])]
        );
        old.waited_minutes = 0;
        assert_eq!(planned(&[fresh, old], &gpus(1)), vec![(2, vec![0])]);
    }

    /// A cluster job takes no GPU of this host and no CPU slot, but its GPUs count against its
    /// workspace's quota with the ones held here.
    #[test]
    fn cluster_jobs_are_held_back_by_the_quota_alone() {
        let on_cluster = |id, workspace_id, gpus| Queued {
            on_cluster: true,
            ..q(id, workspace_id, 0, gpus)
        };
        let mut resources = Resources::default(); // no free GPU, no CPU slot here
        resources.quotas.insert(WorkspaceId::new(1), 3);
        resources.held_by_workspace.insert(WorkspaceId::new(1), 1);
        let queue = [
            on_cluster(1, 1, 2),
            on_cluster(2, 1, 1),
            on_cluster(3, 2, 8),
            on_cluster(4, 1, 0),
        ];
        // Workspace 1 holds 1 of 3: job 1 (2 more) goes, job 2 would make 4 and waits; a CPU job and
        // another workspace's are not held back.
        assert_eq!(
            planned(&queue, &resources),
            vec![(1, vec![]), (3, vec![]), (4, vec![])]
        );
        // A local GPU job of the same workspace waits for the GPUs its cluster job holds.
        resources.free_gpus = vec![0, 1];
        let queue = [on_cluster(1, 1, 2), q(5, 1, 0, 1)];
        assert_eq!(planned(&queue, &resources), vec![(1, vec![])]);
    }

    #[test]
    fn cpu_jobs_use_their_own_slots() {
        let resources = Resources {
            free_gpus: vec![0],
            free_cpu_slots: 1,
            ..Default::default()
        };
        let queue = [q(1, 1, 0, 0), q(2, 1, 0, 0), q(3, 1, 0, 1)];
        assert_eq!(planned(&queue, &resources), vec![(1, vec![]), (3, vec![0])]);
    }
}

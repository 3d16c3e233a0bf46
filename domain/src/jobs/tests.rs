//! Jobs in the database without running them (no scheduler here; the run itself is tested against the
//! real binary in the server's tests): submission checks that write nothing, access rules, queue
//! positions, cancelling a queued job, retries, and deletions.

use contracts::ids::{CheckpointId, DatasetId, JobId, WorkspaceId};
use std::sync::Arc;

use super::*;
use crate::testing::{actor, dataset, jobs, team, test_db, Team};
use crate::workspaces;

/// The reviews dataset every job here trains on.
async fn reviews(db: &SqlitePool, workspace_id: WorkspaceId) -> DatasetId {
    dataset(db, workspace_id, "reviews", &["negative", "positive"]).await
}

/// A database, a job runner that can start nothing, a team, and the reviews dataset in its workspace.
async fn setup() -> (tempfile::TempDir, SqlitePool, Arc<Jobs>, Team, DatasetId) {
    let (dir, db) = test_db().await;
    let jobs = jobs(&dir, &db).await;
    let team = team(&db).await;
    let ds = reviews(&db, team.ws).await;
    (dir, db, jobs, team, ds)
}

async fn status(db: &SqlitePool, actor: &Actor, ws: WorkspaceId, id: JobId) -> JobStatus {
    get(db, actor, ws, id).await.unwrap().summary.status
}

/// Submits a job of `spec` as `actor`; its id.
async fn submitted(
    db: &SqlitePool,
    jobs: &Jobs,
    actor: &Actor,
    ws: WorkspaceId,
    spec: JobSpec,
) -> JobId {
    submit(db, jobs, actor, ws, spec).await.unwrap().summary.id
}

#[tokio::test]
async fn submissions_are_checked_queued_in_order_and_audited() {
    let (_dir, db, jobs, Team { owner, ws, .. }, ds) = setup().await;

    let mut bad = JobSpec::new("bad", ds);
    bad.learning_rate = -1.0;
    let refused = submit(&db, &jobs, &owner, ws, bad).await.unwrap_err();
    assert_eq!(refused.field(), Some("learning_rate"));
    let err = submit(
        &db,
        &jobs,
        &owner,
        ws,
        JobSpec::new("x", DatasetId::new(999)),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.field(), err.code().as_str()),
        (Some("dataset_id"), "dataset_not_found")
    );
    assert!(
        list(&db, &owner, ws, &JobQuery::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing written"
    );

    let first = submit(&db, &jobs, &owner, ws, JobSpec::new("first", ds))
        .await
        .unwrap();
    let mut urgent = JobSpec::new("urgent", ds);
    urgent.priority = 10;
    let urgent = submit(&db, &jobs, &owner, ws, urgent).await.unwrap();
    assert_eq!(urgent.summary.queue_position, Some(1));
    assert_eq!(
        get(&db, &owner, ws, first.summary.id)
            .await
            .unwrap()
            .summary
            .queue_position,
        Some(2)
    );
    // A local run reads its inputs from the workspace's store on the host.
    let train = jobs.storage.store_dir(ws).join("datasets/1/r.tsv");
    assert!(
        first
            .config_toml
            .contains(&format!("train = \"{}\"", train.display())),
        "{}",
        first.config_toml
    );
    assert!(first
        .config_toml
        .contains("labels = [\"negative\", \"positive\"]"));

    let cancelled = cancel(&db, &jobs, &owner, ws, first.summary.id)
        .await
        .unwrap();
    assert_eq!(cancelled.summary.status, JobStatus::Cancelled);
    let again = retry(&db, &jobs, &owner, ws, first.summary.id, false)
        .await
        .unwrap();
    assert_eq!(
        (again.retry_of, again.spec.name.as_str()),
        (Some(first.summary.id), "first")
    );
    let err = retry(&db, &jobs, &owner, ws, first.summary.id, true)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "no_checkpoint");
    assert_eq!(
        delete(&db, &jobs, &owner, ws, urgent.summary.id)
            .await
            .unwrap_err()
            .code(),
        "job_not_finished"
    );
    delete(&db, &jobs, &owner, ws, first.summary.id)
        .await
        .unwrap();

    let actions: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE action LIKE 'job.%' ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(
        actions,
        [
            "job.submit",
            "job.submit",
            "job.cancel",
            "job.retry",
            "job.delete"
        ]
    );
}

#[tokio::test]
async fn viewers_read_jobs_and_outsiders_see_nothing() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ds) = setup().await;
    let outsider = actor(&db, "outsider").await;
    let job = submitted(&db, &jobs, &owner, ws, JobSpec::new("run", ds)).await;

    assert_eq!(
        list(&db, &viewer, ws, &JobQuery::default())
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(!get(&db, &viewer, ws, job).await.unwrap().can_edit);
    assert!(metrics(&db, &viewer, ws, job, 0).await.unwrap().is_empty());
    assert_eq!(
        submit(&db, &jobs, &viewer, ws, JobSpec::new("mine", ds))
            .await
            .unwrap_err(),
        AppError::Forbidden
    );
    assert_eq!(
        cancel(&db, &jobs, &viewer, ws, job).await.unwrap_err(),
        AppError::Forbidden
    );
    assert_eq!(
        get(&db, &outsider, ws, job).await.unwrap_err(),
        AppError::NotFound
    );
    assert_eq!(
        logs(&db, &outsider, ws, job, 0, None).await.unwrap_err(),
        AppError::NotFound
    );
    // A dataset a job uses cannot be deleted.
    let err = crate::datasets::delete(&db, &jobs.storage, &owner, ws, ds)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "dataset_in_use");
}

#[tokio::test]
async fn the_scheduler_places_jobs_on_distinct_gpus_within_quotas() {
    let (dir, db) = test_db().await;
    let jobs = jobs(&dir, &db).await;
    let fake = "0, GPU-a, 00000000:01:00.0, 580.95.05, 81920 MiB, Disabled, 8.0, NVIDIA A100\n\
                1, GPU-b, 00000000:02:00.0, 580.95.05, 81920 MiB, Disabled, 8.0, NVIDIA A100\n";
    jobs.engine
        .set_gpus(containers::preflight::gpus::parse(fake, true))
        .await;
    let admin = actor(&db, "admin").await; // the first account is the instance admin
    let ws1 = workspaces::create(&db, &admin, "one").await.unwrap().id;
    let ws2 = workspaces::create(&db, &admin, "two").await.unwrap().id;
    let (ds1, ds2) = (reviews(&db, ws1).await, reviews(&db, ws2).await);
    crate::admin::set_gpu_quota(&db, &admin, ws1, Some(1))
        .await
        .unwrap();
    let on_gpu = |name: &str, ds| {
        let mut spec = JobSpec::new(name, ds);
        spec.gpus = 1;
        spec
    };
    let mut too_many = on_gpu("greedy", ds1);
    too_many.gpus = 3;
    let refused = submit(&db, &jobs, &admin, ws1, too_many).await.unwrap_err();
    assert_eq!(refused.field(), Some("gpus"));
    let a = submitted(&db, &jobs, &admin, ws1, on_gpu("a", ds1)).await;
    let b = submitted(&db, &jobs, &admin, ws1, on_gpu("b", ds1)).await;
    let c = submitted(&db, &jobs, &admin, ws2, on_gpu("c", ds2)).await;

    let started = scheduler::schedule_once(&db, &jobs, &jobs.engine)
        .await
        .unwrap();
    assert_eq!(started, vec![a, c], "b waits for its workspace's quota");
    let leases: Vec<(i64, JobId)> = sqlx::query_as(
        "SELECT gpu_index, holder_id FROM gpu_leases WHERE holder_kind = 'job' ORDER BY gpu_index",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(leases, vec![(0, a), (1, c)], "one job per GPU");
    assert_eq!(status(&db, &admin, ws1, b).await, JobStatus::Queued);
}

#[tokio::test]
async fn a_job_from_an_earlier_checkpoint_names_it_and_its_job() {
    let (_dir, db, jobs, Team { owner, ws, .. }, ds) = setup().await;
    let first = submit(&db, &jobs, &owner, ws, JobSpec::new("pretrained-run", ds))
        .await
        .unwrap();
    assert_eq!(first.base_model, None, "from scratch");
    let first = first.summary.id;
    sqlx::query("UPDATE jobs SET status = 'succeeded' WHERE id = ?")
        .bind(first)
        .execute(&db)
        .await
        .unwrap();
    let checkpoint: CheckpointId = sqlx::query_scalar(
        "INSERT INTO checkpoints (job_id, workspace_id, step, path, bytes, sha256, created_at)
         VALUES (?, ?, 40, 'jobs/1/output/checkpoints/step-0000040', 1, 'x', '2026-01-01T00:00:00Z') RETURNING id",
    )
    .bind(first)
    .bind(ws)
    .fetch_one(&db)
    .await
    .unwrap();

    let mut spec = JobSpec::new("fine-tune", ds);
    spec.base_checkpoint_id = Some(checkpoint);
    let second = submit(&db, &jobs, &owner, ws, spec).await.unwrap();
    assert_eq!(
        second.base_model,
        Some(BaseModel {
            checkpoint_id: checkpoint,
            job_id: Some(first),
            job_name: Some("pretrained-run".into()),
            step: Some(40),
        })
    );
    // The earlier job is deleted (its checkpoints with it): the id is all that is left.
    delete(&db, &jobs, &owner, ws, first).await.unwrap();
    let base = get(&db, &owner, ws, second.summary.id)
        .await
        .unwrap()
        .base_model
        .unwrap();
    assert_eq!(
        (base.checkpoint_id, base.job_id, base.step),
        (checkpoint, None, None)
    );
}

/// After a restart every run whose end is not recorded is followed again, whatever its status and
/// executor: a local run whose `end` event was applied just before the crash (already `succeeded`), and a
/// run in a container (no pid). Both get their exit status and finish time; a queued job is left alone.
#[tokio::test]
async fn recovery_follows_every_run_whose_end_is_unrecorded() {
    let (_dir, db, jobs, Team { owner, ws, .. }, ds) = setup().await;
    let mut ids = Vec::new();
    for name in ["ended-local", "in-container", "waiting"] {
        ids.push(submitted(&db, &jobs, &owner, ws, JobSpec::new(name, ds)).await);
    }
    let (local_run, container_run, queued) = (ids[0], ids[1], ids[2]);
    // A pid that is certainly not running: a child that has been waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = i64::from(child.id());
    child.wait().unwrap();
    sqlx::query("UPDATE jobs SET status = 'succeeded', pid = ?, started_at = '2026-01-01T00:00:00Z' WHERE id = ?")
        .bind(dead_pid)
        .bind(local_run)
        .execute(&db)
        .await
        .unwrap();
    sqlx::query("UPDATE jobs SET status = 'running', executor = 'docker', container_name = 'paddock-job-x', started_at = '2026-01-01T00:00:00Z' WHERE id = ?")
        .bind(container_run)
        .execute(&db)
        .await
        .unwrap();
    // Each in its executor's run root: the server's `runs/`, the workspace volume.
    for (id, executor, code) in [
        (local_run, ExecutorKind::Local, "0"),
        (container_run, ExecutorKind::Docker, "3"),
    ] {
        let job_dir = jobs.executor(executor).run_root_dir(ws).join(job_rel(id));
        std::fs::create_dir_all(&job_dir).unwrap();
        std::fs::write(job_dir.join("exit_code"), format!("{code}\n")).unwrap();
    }

    supervise::recover(&db, &jobs).await;
    let mut ended = Vec::new();
    for _ in 0..100 {
        ended = sqlx::query_as::<_, (JobId, String, Option<i64>)>(
            "SELECT id, status, exit_code FROM jobs WHERE finished_at IS NOT NULL ORDER BY id",
        )
        .fetch_all(&db)
        .await
        .unwrap();
        if ended.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        ended,
        vec![
            (local_run, "succeeded".to_string(), Some(0)),
            (container_run, "failed".to_string(), Some(3)),
        ]
    );
    assert_eq!(status(&db, &owner, ws, queued).await, JobStatus::Queued);
}

#[tokio::test]
async fn status_moves_follow_the_machine_and_record_their_reason() {
    use super::status::{current, Job, Reason};
    use crate::transitions::Machine;
    let (_dir, db, jobs, Team { owner, ws, .. }, ds) = setup().await;
    let id = submitted(&db, &jobs, &owner, ws, JobSpec::new("run", ds)).await;
    let mut conn = db.acquire().await.unwrap();
    // Queued cannot jump to running; nothing is written.
    let moved = Job::transition(&mut conn, id, JobStatus::Running, Reason::Launched, None).await;
    assert_eq!(moved.unwrap(), None);
    assert_eq!(
        current(&mut conn, id).await.unwrap(),
        (JobStatus::Queued, None)
    );
    for (to, reason) in [
        (JobStatus::Starting, Reason::Scheduled),
        (JobStatus::Running, Reason::Launched),
        (JobStatus::Cancelling, Reason::TimeLimit),
    ] {
        let moved = Job::transition(&mut conn, id, to, reason, Some("time limit reached")).await;
        assert!(moved.unwrap().is_some(), "{to:?}");
    }
    assert_eq!(
        current(&mut conn, id).await.unwrap(),
        (JobStatus::Cancelling, Some(Reason::TimeLimit))
    );
    let moved = Job::transition(&mut conn, id, JobStatus::Failed, Reason::TimeLimit, None).await;
    assert_eq!(moved.unwrap(), Some(JobStatus::Cancelling));
    // Final is final, and the last message stays when a move gives none.
    let moved = Job::transition(&mut conn, id, JobStatus::Queued, Reason::Requeued, None).await;
    assert_eq!(moved.unwrap(), None);
    let message: String = sqlx::query_scalar("SELECT status_message FROM jobs WHERE id = ?")
        .bind(id)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(message, "time limit reached");
    assert_eq!(
        Job::transition(
            &mut conn,
            JobId::new(999),
            JobStatus::Queued,
            Reason::Requeued,
            None
        )
        .await
        .unwrap_err(),
        AppError::NotFound
    );
}

/// A member who is not an instance admin sees of a cluster what a job form needs, and nothing of how
/// it is reached, its nodes, or the words its tools or the shared-directory check used.
#[test]
fn members_see_a_cluster_s_partitions_not_its_configuration() {
    use contracts::types::{
        ClusterNode, ClusterPartition, ResourceUsage, SharedDirCheck, SharedDirResult,
    };
    let gpus = ResourceUsage {
        total: 4,
        allocated: 1,
    };
    let partition = ClusterPartition {
        name: "gpu".into(),
        default: true,
        state: "UP".into(),
        nodes: "node[1-2]".into(),
        max_time: "UNLIMITED".into(),
        gpus,
    };
    let full = ClusterView {
        name: "slurm".into(),
        executor: "slurm".into(),
        partition: Some("gpu".into()),
        partitions: vec![partition.clone()],
        nodes: vec![ClusterNode {
            name: "node1".into(),
            state: "drained".into(),
            gpus,
            cpus: gpus,
            memory_mb: gpus,
            partitions: vec!["gpu".into()],
            reason: Some("fan broken, ask ops@corp".into()),
        }],
        problem: Some("sinfo: error reading /etc/slurm/slurm.conf".into()),
        shared_dir: Some(SharedDirCheck {
            dir: "/srv/paddock/data".into(),
            checked_at: "t".into(),
            partitions: vec![SharedDirResult {
                partition: "gpu".into(),
                node: Some("node1".into()),
                checked: true,
                problem: None,
                driver: Some("550.54.15".into()),
            }],
        }),
        reached_by: "slurm.conf /etc/slurm/slurm.conf".into(),
        registered: true,
    };
    let seen = for_members(full);
    assert_eq!(seen.partitions, vec![partition]);
    assert!(seen.nodes.is_empty() && seen.shared_dir.is_none() && seen.reached_by.is_empty());
    let text = serde_json::to_string(&seen).unwrap();
    for secret in ["/etc/slurm", "/srv/paddock", "ops@corp", "node1"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

/// A run that kept improving stored several checkpoints as "best so far"; only the newest of each
/// job's is its best (two jobs listed together, newest first, as on the Models page).
#[test]
fn each_job_has_one_best_checkpoint_the_newest_that_was_best_so_far() {
    let checkpoint = |id: i64, job: i64, best: bool| CheckpointInfo {
        id: CheckpointId::new(id),
        job_id: JobId::new(job),
        step: id * 10,
        epoch: None,
        metrics: None,
        container_path: String::new(),
        bytes: 0,
        sha256: String::new(),
        best,
        degenerate: None,
        created_at: String::new(),
        deleted_at: None,
    };
    let mut list = vec![
        checkpoint(6, 2, false),
        checkpoint(5, 1, true),
        checkpoint(4, 2, true),
        checkpoint(3, 1, true),
        checkpoint(2, 2, true),
        checkpoint(1, 1, false),
    ];
    only_the_last_best(&mut list);
    let best: Vec<i64> = list.iter().filter(|c| c.best).map(|c| c.id.get()).collect();
    assert_eq!(best, [5, 4]);
}

/// bf16 on GPUs is taken only where as many GPUs as asked are from Ampere on (or do not say).
#[test]
fn bf16_needs_as_many_ampere_gpus_as_asked() {
    let gpu = |index: u32, cc: Option<&str>| containers::preflight::GpuInfo {
        index,
        uuid: format!("GPU-{index}"),
        pci_bus_id: String::new(),
        name: "test".into(),
        driver_version: "580.95.05".parse().unwrap(),
        compute_capability: cc.map(|c| c.parse().unwrap()),
        memory_mib: None,
    };
    let (t4, a10, old_driver) = (gpu(0, Some("7.5")), gpu(1, Some("8.6")), gpu(2, None));
    assert!(bf16_on_gpus(std::slice::from_ref(&a10), 1).is_ok());
    assert!(bf16_on_gpus(&[t4.clone(), old_driver], 2).is_err());
    assert!(bf16_on_gpus(&[t4.clone(), a10.clone()], 1).is_ok());
    let refused = bf16_on_gpus(&[t4.clone(), a10], 2).unwrap_err();
    assert_eq!(refused.field(), Some("precision"));
    assert_eq!(
        refused.problems().first().and_then(|p| p.rule.clone()),
        Some(Rule::Bf16NeedsAmpere { ampere: 1 })
    );
    assert!(bf16_on_gpus(&[t4], 1).is_err());
}

//! Sweeps in the database with the driver's rounds run by hand (no scheduler, nothing trains: a
//! trial "runs" when a test moves its row, and "evaluates" when a test writes its eval rows): what a
//! create checks and writes, trials queued up to the parallelism and numbered once, decisions at rungs
//! in the order trials reached them, the poor ones stopped, pause, resume, extend, cancel, and a sweep
//! whose creator lost the right to submit. The real run (trainer, supervisor, stop with a checkpoint)
//! is tested against the binary in the server's tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use contracts::ids::{DatasetId, JobId, SweepId};
use contracts::sweeps::*;
use contracts::types::{JobReason, JobSpec, JobStatus};
use serde_json::json;
use sqlx::SqlitePool;

use super::*;
use crate::jobs::Jobs;
use crate::testing::{dataset, jobs, team, test_db, Team};

async fn setup() -> (tempfile::TempDir, SqlitePool, Arc<Jobs>, Team, DatasetId) {
    let (dir, db) = test_db().await;
    let jobs = jobs(&dir, &db).await;
    let team = team(&db).await;
    let ds = dataset(&db, team.ws, "reviews", &["negative", "positive"]).await;
    (dir, db, jobs, team, ds)
}

/// Four learning rates × two seeds, judged on loss at rungs of 10 and 30 steps (η = 3), two at once.
fn lr_grid(ds: DatasetId) -> SweepSpec {
    let mut job = JobSpec::new("sentiment", ds);
    job.max_steps = Some(100);
    SweepSpec {
        name: "lr".into(),
        job,
        parameters: BTreeMap::from([
            (
                "learning_rate".into(),
                Distribution::Values {
                    values: vec![json!(1e-5), json!(1e-4), json!(1e-3), json!(1e-2)],
                },
            ),
            (
                "seed".into(),
                Distribution::Values {
                    values: vec![json!(1), json!(2)],
                },
            ),
        ]),
        method: Method::Grid,
        max_trials: None,
        parallelism: 2,
        objective: Objective {
            metric: "loss".into(),
            goal: None,
        },
        early_stopping: EarlyStopping::Asha {
            min_steps: 10,
            reduction_factor: 3,
        },
        seed: 0,
    }
}

/// The sweep's trials: (trial, job id, status), by trial.
async fn trials(db: &SqlitePool, sweep: SweepId) -> Vec<(i64, JobId, JobStatus)> {
    sqlx::query_as("SELECT trial, id, status FROM jobs WHERE sweep_id = ? ORDER BY trial")
        .bind(sweep)
        .fetch_all(db)
        .await
        .unwrap()
}

/// Trial job `id` runs (as the scheduler and supervisor would have it), `total` steps long.
async fn running(db: &SqlitePool, id: JobId, total: i64) {
    sqlx::query("UPDATE jobs SET status = 'running', total_steps = ? WHERE id = ?")
        .bind(total)
        .bind(id)
        .execute(db)
        .await
        .unwrap();
}

/// Trial job `id` reports a dev evaluation with this loss at `step`.
async fn evaluated(db: &SqlitePool, id: JobId, step: i64, loss: f64) {
    let data = json!({ "accuracy": 0.5, "macro_f1": 0.5, "loss": loss, "count": 10,
                       "per_class": [], "confusion": [], "split": "dev" });
    sqlx::query(
        "INSERT INTO job_metrics (job_id, kind, step, data, at) VALUES (?, 'eval', ?, ?, '2026-12-07T00:00:00Z')",
    )
    .bind(id)
    .bind(step)
    .bind(data.to_string())
    .execute(db)
    .await
    .unwrap();
    sqlx::query("UPDATE jobs SET step = MAX(step, ?) WHERE id = ?")
        .bind(step)
        .bind(id)
        .execute(db)
        .await
        .unwrap();
}

async fn ended(db: &SqlitePool, id: JobId) {
    sqlx::query("UPDATE jobs SET status = 'succeeded', status_reason = 'completed' WHERE id = ?")
        .bind(id)
        .execute(db)
        .await
        .unwrap();
}

async fn job_state(db: &SqlitePool, id: JobId) -> (JobStatus, Option<JobReason>, Option<String>) {
    sqlx::query_as("SELECT status, status_reason, status_message FROM jobs WHERE id = ?")
        .bind(id)
        .fetch_one(db)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_bad_spec_is_refused_by_path_and_writes_nothing() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ds) = setup().await;
    let mut bad = lr_grid(ds);
    bad.parameters.insert(
        "batch_size".into(),
        Distribution::Values {
            values: vec![json!(16), json!(0), json!("big")],
        },
    );
    bad.job.epochs = 0;
    let err = create(&db, &jobs, &owner, ws, bad).await.unwrap_err();
    let AppError::Invalid { problems, .. } = &err else {
        panic!("{err:?}")
    };
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "job.epochs",
            "parameters.batch_size.values[1]",
            "parameters.batch_size.values[2]"
        ],
        "{err:?}"
    );
    // A dataset of another workspace is unknown here, named where the spec holds it.
    let elsewhere = crate::workspaces::create(&db, &owner, "other")
        .await
        .unwrap()
        .id;
    let theirs = dataset(&db, elsewhere, "theirs", &["a", "b"]).await;
    let err = create(&db, &jobs, &owner, ws, lr_grid(theirs))
        .await
        .unwrap_err();
    assert_eq!(
        (err.field(), err.code().as_str()),
        (Some("job.dataset_id"), "dataset_not_found")
    );
    // A starting checkpoint that is not here, named by its place in the list.
    let mut from = lr_grid(ds);
    from.parameters.insert(
        "base_checkpoint_id".into(),
        Distribution::Values {
            values: vec![json!(null), json!(77)],
        },
    );
    let err = create(&db, &jobs, &owner, ws, from).await.unwrap_err();
    assert_eq!(
        err.field(),
        Some("parameters.base_checkpoint_id.values[1]"),
        "{err:?}"
    );
    // Viewers read, never start.
    let err = create(&db, &jobs, &viewer, ws, lr_grid(ds))
        .await
        .unwrap_err();
    assert!(matches!(err, AppError::Forbidden), "{err:?}");
    assert!(
        list(&db, &owner, ws).await.unwrap().is_empty(),
        "nothing written"
    );
    driver::tick(&db, &jobs).await.unwrap();
    let queued: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(queued, 0);
}

#[tokio::test]
async fn trials_are_queued_up_to_the_parallelism_judged_at_rungs_and_the_poor_ones_stopped() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ds) = setup().await;
    let sweep = create(&db, &jobs, &owner, ws, lr_grid(ds)).await.unwrap();
    let id = sweep.summary.id;
    assert_eq!(sweep.summary.max_trials, 8, "the whole grid");
    assert_eq!(
        sweep.spec.objective.goal,
        Some(Goal::Minimize),
        "said when stored"
    );

    // Two at once, numbered 1 and 2, each the grid's point for its number; a second round adds none.
    driver::tick(&db, &jobs).await.unwrap();
    driver::tick(&db, &jobs).await.unwrap();
    let first = trials(&db, id).await;
    assert_eq!(first.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2]);
    let detail = get(&db, &viewer, ws, id).await.unwrap();
    for t in &detail.trials {
        let expected = search::trial_values(&detail.spec, t.trial - 1).unwrap();
        assert_eq!(t.parameters, expected);
        assert_eq!(t.job.name, format!("sentiment #{}", t.trial));
        assert_eq!((t.job.sweep_id, t.job.trial), (Some(id), Some(t.trial)));
    }

    // Trial 1 reaches rung 10 first (always goes on); trial 2 reaches it worse: of two, one goes on.
    let (one, two) = (first[0].1, first[1].1);
    running(&db, one, 100).await;
    running(&db, two, 100).await;
    evaluated(&db, one, 10, 0.6).await;
    evaluated(&db, two, 10, 0.8).await;
    driver::tick(&db, &jobs).await.unwrap();
    assert_eq!(job_state(&db, one).await.0, JobStatus::Running);
    let (status, reason, message) = job_state(&db, two).await;
    assert_eq!(
        (status, reason),
        (JobStatus::Cancelling, Some(JobReason::Pruned))
    );
    let message = message.unwrap();
    assert!(
        message.contains("step 10") && message.contains("loss 0.8000"),
        "{message}"
    );
    let detail = get(&db, &owner, ws, id).await.unwrap();
    let two_rungs = &detail
        .trials
        .iter()
        .find(|t| t.job.id == two)
        .unwrap()
        .rungs;
    assert_eq!(
        two_rungs,
        &[RungDecision {
            step: 10,
            value: 0.8,
            peers: 2,
            continued: false
        }]
    );
    // Judged once: a later round changes nothing, even with a better value written afterwards.
    evaluated(&db, two, 20, 0.1).await;
    driver::tick(&db, &jobs).await.unwrap();
    let decisions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sweep_rungs WHERE job_id = ?")
        .bind(two)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(decisions, 1);
    // Still two active: no third trial until one ends.
    assert_eq!(trials(&db, id).await.len(), 2);

    // Trial 2's stop ends it (as the supervisor would): trial 3 is queued in its place.
    sqlx::query("UPDATE jobs SET status = 'succeeded' WHERE id = ?")
        .bind(two)
        .execute(&db)
        .await
        .unwrap();
    driver::tick(&db, &jobs).await.unwrap();
    let now = trials(&db, id).await;
    assert_eq!(now.len(), 3);
    let three = now[2].1;
    // The value at a rung is the best by then: trial 3's best by step 10 is 0.5, better than 0.6 and
    // 0.8, so it goes on though its last value there is worse.
    running(&db, three, 100).await;
    evaluated(&db, three, 5, 0.5).await;
    evaluated(&db, three, 10, 0.9).await;
    driver::tick(&db, &jobs).await.unwrap();
    assert_eq!(job_state(&db, three).await.0, JobStatus::Running);
    // A trial already over when it is judged is recorded as gone on, so later ones meet its value.
    evaluated(&db, one, 30, 0.4).await;
    ended(&db, one).await;
    driver::tick(&db, &jobs).await.unwrap();
    let one_rungs: Vec<(i64, bool)> = sqlx::query_as(
        "SELECT rung_step, continued FROM sweep_rungs WHERE job_id = ? ORDER BY rung_step",
    )
    .bind(one)
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(one_rungs, [(10, true), (30, true)]);

    let summary = get(&db, &owner, ws, id).await.unwrap().summary;
    assert_eq!(summary.trials, 4, "trial 1's end made room for trial 4");
    assert_eq!(
        summary.counts.pruned, 1,
        "trial 2 ended, keeping the reason it was stopped for"
    );
    // The best counts what a trial reported until it stopped, the evaluations after its rung too.
    let best = summary.best.unwrap();
    assert_eq!(
        (best.trial, best.objective.value, best.objective.step),
        (2, 0.1, 20)
    );
}

#[tokio::test]
async fn a_sweep_finishes_when_its_last_trial_ends_and_extends_pauses_resumes_and_cancels() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ds) = setup().await;
    let mut spec = lr_grid(ds);
    spec.max_trials = Some(2);
    spec.early_stopping = EarlyStopping::None;
    let id = create(&db, &jobs, &owner, ws, spec)
        .await
        .unwrap()
        .summary
        .id;
    driver::tick(&db, &jobs).await.unwrap();
    for (_, job, _) in trials(&db, id).await {
        ended(&db, job).await;
    }
    driver::tick(&db, &jobs).await.unwrap();
    let done = get(&db, &owner, ws, id).await.unwrap().summary;
    assert_eq!(
        (done.status, done.status_reason),
        (SweepStatus::Finished, Some(SweepReason::Completed))
    );
    assert!(done.finished_at.is_some());
    assert_eq!(done.counts.completed, 2);

    // Extending: past what it has and within the grid; a finished sweep runs again.
    for (n, field) in [(2, "max_trials"), (9, "max_trials")] {
        let err = extend(&db, &jobs, &owner, ws, id, SweepExtend { max_trials: n })
            .await
            .unwrap_err();
        assert_eq!(err.field(), Some(field), "{n}: {err:?}");
    }
    let err = extend(&db, &jobs, &viewer, ws, id, SweepExtend { max_trials: 4 })
        .await
        .unwrap_err();
    assert!(matches!(err, AppError::Forbidden));
    let more = extend(&db, &jobs, &owner, ws, id, SweepExtend { max_trials: 4 })
        .await
        .unwrap();
    assert_eq!(
        (more.summary.status, more.summary.max_trials),
        (SweepStatus::Running, 4)
    );
    assert_eq!(more.summary.finished_at, None);

    // Paused: no new trial; the queued ones stay.
    pause(&db, &jobs, &owner, ws, id).await.unwrap();
    driver::tick(&db, &jobs).await.unwrap();
    assert_eq!(trials(&db, id).await.len(), 2);
    let again = pause(&db, &jobs, &owner, ws, id).await.unwrap();
    assert_eq!(
        again.summary.status,
        SweepStatus::Paused,
        "asking twice is no error"
    );
    resume(&db, &jobs, &owner, ws, id).await.unwrap();
    driver::tick(&db, &jobs).await.unwrap();
    let now = trials(&db, id).await;
    assert_eq!(now.iter().map(|t| t.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    // A deleted trial is not made again: the count is the sweep's.
    crate::jobs::delete(&db, &jobs, &owner, ws, now[0].1)
        .await
        .unwrap();
    driver::tick(&db, &jobs).await.unwrap();
    assert_eq!(trials(&db, id).await.len(), 3);

    // Cancel: the queued trials with it; then final.
    let cancelled = cancel(&db, &jobs, &owner, ws, id).await.unwrap();
    assert_eq!(cancelled.summary.status, SweepStatus::Cancelled);
    for (_, job, status) in trials(&db, id).await {
        assert!(status.is_final(), "trial job {job} is {status:?}");
    }
    let err = resume(&db, &jobs, &owner, ws, id).await.unwrap_err();
    assert_eq!(err.code().as_str(), "sweep_status_conflict");
    let err = extend(&db, &jobs, &owner, ws, id, SweepExtend { max_trials: 6 })
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "sweep_status_conflict");
    let audit: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE action LIKE 'sweep.%' ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(
        audit,
        [
            "sweep.create",
            "sweep.extend",
            "sweep.pause",
            "sweep.resume",
            "sweep.cancel"
        ]
    );
}

#[tokio::test]
async fn a_sweep_acts_for_its_creator_and_waits_when_they_may_no_longer_submit() {
    let (_dir, db, jobs, Team { owner, ws, .. }, ds) = setup().await;
    let editor = crate::testing::actor(&db, "editor").await;
    crate::members::add(&db, &owner, ws, "editor", "editor")
        .await
        .unwrap();
    let mut spec = lr_grid(ds);
    spec.parallelism = 1;
    let id = create(&db, &jobs, &editor, ws, spec)
        .await
        .unwrap()
        .summary
        .id;
    driver::tick(&db, &jobs).await.unwrap();
    let first = trials(&db, id).await;
    let by: Option<String> = sqlx::query_scalar(
        "SELECT u.username FROM jobs j JOIN users u ON u.id = j.created_by WHERE j.id = ?",
    )
    .bind(first[0].1)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(by.as_deref(), Some("editor"));
    // Made a viewer: the next trial is refused, and the sweep says so and waits.
    crate::members::change_role(&db, &owner, ws, editor.user_id, "viewer")
        .await
        .unwrap();
    ended(&db, first[0].1).await;
    driver::tick(&db, &jobs).await.unwrap();
    assert_eq!(trials(&db, id).await.len(), 1);
    let summary = get(&db, &owner, ws, id).await.unwrap().summary;
    assert_eq!(
        (summary.status, summary.status_reason),
        (SweepStatus::Paused, Some(SweepReason::TrialRefused))
    );
    assert!(summary.status_message.unwrap().contains("trial 2"));
}

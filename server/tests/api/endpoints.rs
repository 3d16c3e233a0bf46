//! Endpoints through the real binary: a checkpoint trained by a job is deployed with one call, passes
//! the parity gate, and answers on `/v1/endpoints/{slug}/predict` to holders of its API key — with the
//! key's rate limit, 401 without a key, numbers on the endpoint page, and 503 once undeployed.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{playground, status_json, workspace, workspace_with_sample, Server, User};

/// A workspace with the sample dataset and a tiny finished job; returns the workspace, the job and its
/// live checkpoints (oldest first).
pub(crate) async fn trained(server: &Server, owner: &User, max_steps: u32) -> (i64, i64, Vec<i64>) {
    let (ws, ds) = workspace_with_sample(owner, server).await;
    let spec = json!({ "name": "train", "dataset_id": ds, "preset": "tiny", "max_seq_len": 32, "batch_size": 16,
                       "max_steps": max_steps, "eval_every_steps": 5, "keep_best": 3 });
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/jobs")))
        .json(&spec)
        .send()
        .await
        .unwrap();
    let job = status_json(res).await.1["summary"]["id"].as_i64().unwrap();
    let mut detail = Value::Null;
    for _ in 0..400 {
        detail = status_json(
            owner
                .client
                .get(server.url(&format!("/api/v1/workspaces/{ws}/jobs/{job}")))
                .send()
                .await
                .unwrap(),
        )
        .await
        .1;
        if detail["summary"]["finished_at"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(detail["summary"]["status"], "succeeded", "{detail}");
    let mut checkpoints: Vec<i64> = detail["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["deleted_at"].is_null())
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    checkpoints.sort();
    (ws, job, checkpoints)
}

/// Creates an API key on the endpoint at `ep_url`; returns the answer (`secret`, `key`).
async fn new_key(owner: &User, ep_url: &str, body: Value) -> Value {
    let res = owner
        .client
        .post(format!("{ep_url}/keys"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (code, key) = status_json(res).await;
    assert_eq!(code, StatusCode::CREATED, "{key}");
    key
}

/// Polls the endpoint until `done` holds (or fails the test with what it last saw).
pub(crate) async fn wait_endpoint(
    owner: &User,
    url: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut detail = Value::Null;
    for _ in 0..600 {
        detail = status_json(owner.client.get(url).send().await.unwrap())
            .await
            .1;
        if done(&detail) {
            return detail;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the endpoint never reached {what}: {detail}");
}

#[tokio::test]
async fn a_checkpoint_becomes_an_endpoint_with_keys_and_numbers() {
    let server = Server::start_with(&["--docker-host", "unix:///nonexistent.sock"]);
    let owner = server.signup("owner").await;
    let (ws, job, checkpoints) = trained(&server, &owner, 10).await;
    let ckpt = checkpoints[0];
    let mut detail = Value::Null;

    // Bad specs write nothing.
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "x", "checkpoint_id": ckpt, "replicas": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["field"], "replicas");
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "x", "checkpoint_id": ckpt, "precision": "fp16" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        status_json(res).await.1["field"],
        "precision",
        "fp16 needs cuda"
    );
    let res = owner.client.post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "sentiment", "slug": "sentiment-test", "checkpoint_id": ckpt, "replicas": 2 })).send().await.unwrap();
    let (code, ep) = status_json(res).await;
    assert_eq!(code, StatusCode::CREATED, "{ep}");
    let id = ep["summary"]["id"].as_i64().unwrap();
    let ep_url = server.url(&format!("/api/v1/workspaces/{ws}/endpoints/{id}"));
    for _ in 0..400 {
        detail = status_json(owner.client.get(&ep_url).send().await.unwrap())
            .await
            .1;
        if detail["summary"]["status"] != "starting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    assert_eq!(detail["summary"]["ready_replicas"], 2);
    assert_eq!(detail["parity_report"]["passed"], true, "{detail}");
    assert_eq!(detail["summary"]["job_id"], job, "lineage");

    let key = new_key(
        &owner,
        &ep_url,
        json!({ "name": "app", "rate_limit_per_minute": 20 }),
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_string();
    let predict = server.url("/v1/endpoints/sentiment-test/predict");
    let anonymous = reqwest::Client::new();
    let res = anonymous
        .post(&predict)
        .json(&json!({ "inputs": ["好"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = anonymous
        .post(&predict)
        .bearer_auth("pdk_ep_wrong")
        .json(&json!({ "inputs": ["好"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let calls = (0..12).map(|_| {
        let (c, u, s) = (anonymous.clone(), predict.clone(), secret.clone());
        async move {
            c.post(u)
                .bearer_auth(s)
                .json(&json!({ "inputs": ["这家银行的服务态度很差，等了半小时还没人理我。"] }))
                .send()
                .await
                .unwrap()
        }
    });
    for res in futures_util::future::join_all(calls).await {
        assert_eq!(res.status(), StatusCode::OK);
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["predictions"][0]["probabilities"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
    // The key's 20 per minute run out.
    let mut limited = false;
    for _ in 0..12 {
        let res = anonymous
            .post(&predict)
            .bearer_auth(&secret)
            .json(&json!({ "text": "一般" }))
            .send()
            .await
            .unwrap();
        if res.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(res.headers().contains_key("retry-after"));
            limited = true;
            break;
        }
    }
    assert!(limited, "the rate limit applies");
    detail = status_json(owner.client.get(&ep_url).send().await.unwrap())
        .await
        .1;
    assert!(
        detail["metrics"]["requests_total"].as_u64().unwrap() >= 12,
        "{detail}"
    );
    assert!(detail["metrics"]["p50_ms"].is_number());
    assert!(detail["keys"][0]["last_used_at"].is_string(), "{detail}");
    assert!(
        server.count("SELECT COUNT(*) FROM endpoint_requests").await >= 1,
        "sampled request log"
    );

    let res = owner
        .client
        .post(format!("{ep_url}/undeploy"))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["summary"]["status"], "stopped");
    let key2 = new_key(&owner, &ep_url, json!({ "name": "b" })).await;
    let res = anonymous
        .post(&predict)
        .bearer_auth(key2["secret"].as_str().unwrap())
        .json(&json!({ "text": "一般" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let res = owner.client.delete(&ep_url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    deploys_in_bf16_where_the_cpu_has_it(&server, &owner, ws, ckpt).await;
}

/// bf16 on a CPU with native bfloat16: the replica says it serves bf16, the gate compares it with the
/// float32 trainer within bf16's slack, and it answers. Without native bf16 (or with it hidden) the spec
/// is refused at its field, as `bf16_is_refused_at_its_field_on_a_cpu_without_it` checks on every CPU.
async fn deploys_in_bf16_where_the_cpu_has_it(server: &Server, owner: &User, ws: i64, ckpt: i64) {
    let res = owner.client.post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "fast", "slug": "sentiment-bf16", "checkpoint_id": ckpt, "precision": "bf16" }))
        .send().await.unwrap();
    let (code, ep) = status_json(res).await;
    if !hostcaps::cpu_bf16() {
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{ep}");
        assert_eq!(ep["field"], "precision");
        return;
    }
    assert_eq!(code, StatusCode::CREATED, "{ep}");
    assert_eq!(ep["spec"]["precision"], "bf16");
    let id = ep["summary"]["id"].as_i64().unwrap();
    let ep_url = server.url(&format!("/api/v1/workspaces/{ws}/endpoints/{id}"));
    let detail = wait_endpoint(owner, &ep_url, "a verdict", |d| {
        d["summary"]["status"] != "starting"
    })
    .await;
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    let report = &detail["parity_report"];
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["precision"], "bf16");
    assert!(
        report["tolerance"]["rel"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    let key = new_key(owner, &ep_url, json!({ "name": "app" })).await;
    let res = reqwest::Client::new()
        .post(server.url("/v1/endpoints/sentiment-bf16/predict"))
        .bearer_auth(key["secret"].as_str().unwrap())
        .json(&json!({ "inputs": ["质量很好，物流也快。"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let total: f64 = body["predictions"][0]["probabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-3, "{body}");
}

/// The branch a CPU without native bfloat16 takes, walked on every CPU by hiding the capability: bf16
/// endpoints and bf16 CPU jobs are refused at the `precision` field with a sentence that says why, and
/// nothing is stored. (On a CPU that has it, the main endpoint test deploys in bf16.)
#[tokio::test]
async fn bf16_is_refused_at_its_field_on_a_cpu_without_it() {
    let server = Server::start_with_env(&[], &[(hostcaps::HIDE_ENV, "bf16")]);
    let owner = server.signup("nobf16").await;
    let ws = workspace(&owner, &server).await;
    for (what, body) in [
        (
            "endpoints",
            json!({ "name": "fast", "slug": "no-bf16", "checkpoint_id": 1, "precision": "bf16" }),
        ),
        (
            "jobs",
            json!({ "name": "bf16 run", "dataset_id": 1, "preset": "tiny", "precision": "bf16" }),
        ),
    ] {
        let res = owner
            .client
            .post(server.url(&format!("/api/v1/workspaces/{ws}/{what}")))
            .json(&body)
            .send()
            .await
            .unwrap();
        let (code, body) = status_json(res).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
        assert_eq!(body["field"], "precision", "{what}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("AVX512-BF16"),
            "{what}: {body}"
        );
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM endpoints").await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);
}

/// A misspelt override would hide nothing and let a suite pass only on the CPU it ran on: `paddock`
/// refuses to start with it, naming the bad entry.
#[test]
fn a_misspelt_capability_override_stops_paddock() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
        .arg("version")
        .env(hostcaps::HIDE_ENV, "bf16,avx512")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`avx512`") && err.contains(hostcaps::HIDE_ENV),
        "{err}"
    );
}

/// A client that keeps calling the endpoint until told to stop, counting answers by status.
fn load(
    url: String,
    secret: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<std::collections::BTreeMap<u16, u32>> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let mut seen = std::collections::BTreeMap::new();
        let mut i = 0u32;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            i += 1;
            let text = if i.is_multiple_of(2) {
                "服务很好，下次还来"
            } else {
                "太差了，再也不来"
            };
            let status = match client
                .post(&url)
                .bearer_auth(&secret)
                .json(&json!({ "inputs": [text] }))
                .send()
                .await
            {
                Ok(res) => res.status().as_u16(),
                Err(_) => 0,
            };
            *seen.entry(status).or_insert(0) += 1;
        }
        seen
    })
}

#[tokio::test]
async fn rollouts_and_scaling_under_load_fail_no_request_and_crashed_replicas_come_back() {
    let server = Server::start_with(&["--docker-host", "unix:///nonexistent.sock"]);
    let owner = server.signup("owner").await;
    let (ws, _, checkpoints) = trained(&server, &owner, 15).await;
    assert!(checkpoints.len() >= 2, "{checkpoints:?}");
    let (first, second) = (checkpoints[0], checkpoints[checkpoints.len() - 1]);
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "rolling", "slug": "rolling", "checkpoint_id": first }))
        .send()
        .await
        .unwrap();
    let id = status_json(res).await.1["summary"]["id"].as_i64().unwrap();
    let ep_url = server.url(&format!("/api/v1/workspaces/{ws}/endpoints/{id}"));
    wait_endpoint(&owner, &ep_url, "ready", |d| {
        d["summary"]["status"] == "ready"
    })
    .await;
    let key = new_key(
        &owner,
        &ep_url,
        json!({ "name": "load", "rate_limit_per_minute": 1000000 }),
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_string();
    let predict = server.url("/v1/endpoints/rolling/predict");

    // Nothing to change, and bad changes, are refused.
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "replicas": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["code"], "endpoint_unchanged");
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "replicas": 99 }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["field"], "replicas");
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "checkpoint_id": 999999 }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["field"], "checkpoint_id");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| load(predict.clone(), secret.clone(), stop.clone()))
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Roll out the other checkpoint on two replicas, under load.
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "checkpoint_id": second, "replicas": 2 }))
        .send()
        .await
        .unwrap();
    let (code, body) = status_json(res).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(
        body["summary"]["status_message"]
            .as_str()
            .unwrap()
            .contains("rolling out"),
        "{body}"
    );
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "replicas": 3 }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        status_json(res).await.1["code"],
        "endpoint_changing",
        "one change at a time"
    );
    let rolled = wait_endpoint(&owner, &ep_url, "the new checkpoint", |d| {
        d["summary"]["checkpoint_id"] == second
            && d["summary"]["status_message"].is_null()
            && d["summary"]["ready_replicas"] == 2
            && d["replicas"].as_array().unwrap().len() == 2
    })
    .await;
    assert_eq!(rolled["summary"]["status"], "ready");
    assert_eq!(rolled["parity_report"]["passed"], true, "{rolled}");

    // Scale down to one, still under load.
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "replicas": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    wait_endpoint(&owner, &ep_url, "one replica", |d| {
        d["summary"]["replicas"] == 1
            && d["summary"]["status_message"].is_null()
            && d["replicas"].as_array().unwrap().len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut seen = std::collections::BTreeMap::new();
    for client in clients {
        for (status, n) in client.await.unwrap() {
            *seen.entry(status).or_insert(0) += n;
        }
    }
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "every request answered: {seen:?}"
    );
    assert!(seen[&200] >= 20, "{seen:?}");

    // A replica killed with SIGKILL is restarted and the endpoint answers again.
    let pid = server
        .count(&format!(
            "SELECT pid FROM endpoint_replicas WHERE endpoint_id = {id}"
        ))
        .await;
    assert!(pid > 1);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let back = wait_endpoint(&owner, &ep_url, "a restarted replica", |d| {
        d["replicas"][0]["restarts"].as_u64().unwrap_or(0) >= 1
            && d["replicas"][0]["status"] == "ready"
    })
    .await;
    assert_eq!(back["summary"]["ready_replicas"], 1);
    let res = reqwest::Client::new()
        .post(&predict)
        .bearer_auth(&secret)
        .json(&json!({ "text": "还行" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // The playground: members with their session, not outsiders.
    let (code, answers) = playground(
        &owner,
        &ep_url,
        json!([
            "这家银行的服务态度很差，等了半小时还没人理我。",
            "  ",
            "很满意"
        ]),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{answers}");
    assert_eq!(
        answers.as_array().unwrap().len(),
        2,
        "blank lines are skipped"
    );
    let probabilities = answers[0]["probabilities"].as_array().unwrap();
    let sum: f64 = probabilities
        .iter()
        .map(|p| p["probability"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-3, "{answers}");
    assert_eq!(
        answers[0]["label"], probabilities[0]["label"],
        "highest first"
    );
    assert_eq!(
        playground(&owner, &ep_url, json!([])).await.1["field"],
        "inputs"
    );
    let outsider = server.signup("outsider").await;
    assert_eq!(
        playground(&outsider, &ep_url, json!(["好"])).await.0,
        StatusCode::NOT_FOUND
    );

    // Keys: a revoked key, and another workspace's key, are refused.
    let res = owner
        .client
        .delete(format!("{ep_url}/keys/{}", key["key"]["id"]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = reqwest::Client::new()
        .post(&predict)
        .bearer_auth(&secret)
        .json(&json!({ "text": "好" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let (other_ws, _, other_ckpts) = trained(&server, &outsider, 5).await;
    let res = outsider
        .client
        .post(server.url(&format!("/api/v1/workspaces/{other_ws}/endpoints")))
        .json(&json!({ "name": "theirs", "slug": "theirs", "checkpoint_id": other_ckpts[0] }))
        .send()
        .await
        .unwrap();
    let theirs = status_json(res).await.1["summary"]["id"].as_i64().unwrap();
    let other_key = status_json(
        outsider
            .client
            .post(server.url(&format!(
                "/api/v1/workspaces/{other_ws}/endpoints/{theirs}/keys"
            )))
            .json(&json!({ "name": "theirs" }))
            .send()
            .await
            .unwrap(),
    )
    .await
    .1;
    let res = reqwest::Client::new()
        .post(&predict)
        .bearer_auth(other_key["secret"].as_str().unwrap())
        .json(&json!({ "text": "好" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::UNAUTHORIZED,
        "a key opens only its own endpoint"
    );
    // Someone else's checkpoint cannot be rolled out here.
    let res = owner
        .client
        .patch(&ep_url)
        .json(&json!({ "checkpoint_id": other_ckpts[0] }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["code"], "checkpoint_not_found");

    // Deleting a running endpoint stops its replicas first.
    let live = server
        .count(&format!(
            "SELECT pid FROM endpoint_replicas WHERE endpoint_id = {id}"
        ))
        .await;
    let res = owner.client.delete(&ep_url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let proc_dir = std::path::PathBuf::from(format!("/proc/{live}"));
    for _ in 0..50 {
        if !proc_dir.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!proc_dir.exists(), "replica {live} was stopped");
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM endpoint_replicas WHERE endpoint_id = {id}"
            ))
            .await,
        0
    );
    let res = outsider
        .client
        .delete(server.url(&format!("/api/v1/workspaces/{other_ws}/endpoints/{theirs}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

//! Endpoints through the real binary: a checkpoint trained by a job is deployed with one call, passes
//! the parity gate, and answers on `/v1/endpoints/{slug}/predict` to holders of its API key — with the
//! key's rate limit, 401 without a key, numbers on the endpoint page, and 503 once undeployed.

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use crate::common::{
    eventually, playground, workspace, workspace_with_sample, Server, User, NO_DOCKER,
};
use crate::jobs::{finished, submit};

/// A workspace with the sample dataset and a tiny finished job; returns the workspace, the job and its
/// live checkpoints (oldest first).
pub(crate) async fn trained(owner: &User, max_steps: u32) -> (i64, i64, Vec<i64>) {
    let (ws, ds) = workspace_with_sample(owner).await;
    let spec = json!({ "name": "train", "dataset_id": ds, "preset": "tiny", "max_seq_len": 32, "batch_size": 16,
                       "max_steps": max_steps, "eval_every_steps": 5, "keep_best": 3 });
    let job = submit(owner, ws, spec).await;
    let detail = finished(owner, ws, job).await;
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

/// Deploys `spec` in `ws`: the endpoint's id and REST path.
pub(crate) async fn deploy(owner: &User, ws: i64, spec: Value) -> (i64, String) {
    let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");
    let (status, ep) = owner.post(&endpoints, spec).await;
    assert_eq!(status, StatusCode::CREATED, "{ep}");
    let id = ep["summary"]["id"].as_i64().unwrap();
    (id, format!("{endpoints}/{id}"))
}

/// Deploys `spec` (which names its `slug`) in `ws` and waits until it is ready, with a key of no
/// practical rate limit: its REST path, the key's secret and its public predict URL.
pub(crate) async fn serving(
    server: &crate::common::Server,
    owner: &User,
    ws: i64,
    spec: Value,
) -> (String, String, String) {
    let slug = spec["slug"].as_str().expect("a slug").to_string();
    let (_, ep) = deploy(owner, ws, spec).await;
    owner
        .wait_for(&ep, "ready", |d| d["summary"]["status"] == "ready")
        .await;
    let key = new_key(
        owner,
        &ep,
        json!({ "name": "load", "rate_limit_per_minute": 1000000 }),
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_string();
    let public = server.url(&format!("/v1/endpoints/{slug}/predict"));
    (ep, secret, public)
}

/// Creates an API key on the endpoint at `ep`; returns the answer (`secret`, `key`).
pub(crate) async fn new_key(owner: &User, ep: &str, body: Value) -> Value {
    let (code, key) = owner.post(&format!("{ep}/keys"), body).await;
    assert_eq!(code, StatusCode::CREATED, "{key}");
    key
}

/// Calls the public predict route at `url` with `secret` as the bearer token (`None`: without one).
pub(crate) async fn predict(url: &str, secret: Option<&str>, body: Value) -> Response {
    let mut req = reqwest::Client::new().post(url).json(&body);
    if let Some(secret) = secret {
        req = req.bearer_auth(secret);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn a_checkpoint_becomes_an_endpoint_with_keys_and_numbers() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, job, checkpoints) = trained(&owner, 10).await;
    let ckpt = checkpoints[0];
    let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");

    // Bad specs write nothing.
    let spec = json!({ "name": "x", "checkpoint_id": ckpt, "replicas": 0 });
    assert_eq!(owner.post(&endpoints, spec).await.1["field"], "replicas");
    let spec = json!({ "name": "x", "checkpoint_id": ckpt, "precision": "fp16" });
    assert_eq!(
        owner.post(&endpoints, spec).await.1["field"],
        "precision",
        "fp16 needs cuda"
    );
    let spec = json!({ "name": "sentiment", "slug": "sentiment-test", "checkpoint_id": ckpt, "replicas": 2 });
    let (_, ep) = deploy(&owner, ws, spec).await;
    let detail = owner
        .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
        .await;
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    assert_eq!(detail["summary"]["ready_replicas"], 2);
    assert_eq!(detail["parity_report"]["passed"], true, "{detail}");
    assert_eq!(detail["summary"]["job_id"], job, "lineage");
    // The job whose checkpoint is served stays: deleting it is refused, naming the endpoint.
    let job_path = format!("/api/v1/workspaces/{ws}/jobs/{job}");
    let (status, err) = owner.delete(&job_path).await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["code"], "job_served");
    assert!(
        err["message"].as_str().unwrap().contains("sentiment"),
        "{err}"
    );
    assert_eq!(owner.get(&job_path).await.0, StatusCode::OK, "still there");

    let key = new_key(
        &owner,
        &ep,
        json!({ "name": "app", "rate_limit_per_minute": 20 }),
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_string();
    let public = server.url("/v1/endpoints/sentiment-test/predict");
    // An application has no one to sign in: the refusal speaks of the key, not of signing in.
    for (key, code) in [(None, "key_missing"), (Some("pdk_ep_wrong"), "key_refused")] {
        let res = predict(&public, key, json!({ "inputs": ["好"] })).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert!(res.headers().contains_key("www-authenticate"));
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["code"], code);
        assert!(body["message"].as_str().unwrap().contains("key"), "{body}");
    }
    let calls = (0..12).map(|_| {
        let text = "这家银行的服务态度很差，等了半小时还没人理我。";
        predict(&public, Some(&secret), json!({ "inputs": [text] }))
    });
    for res in futures_util::future::join_all(calls).await {
        assert_eq!(res.status(), StatusCode::OK);
        let body: Value = res.json().await.unwrap();
        let p = &body["predictions"][0];
        assert_eq!(p["probabilities"].as_array().unwrap().len(), 2);
        // The labels say what each probability is of.
        let labels = body["labels"].as_array().unwrap();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[p["label_id"].as_u64().unwrap() as usize], p["label"]);
    }
    // The key's 20 per minute run out.
    let mut limited = false;
    for _ in 0..12 {
        let res = predict(&public, Some(&secret), json!({ "text": "一般" })).await;
        if res.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(res.headers().contains_key("retry-after"));
            limited = true;
            break;
        }
    }
    assert!(limited, "the rate limit applies");
    let (_, detail) = owner.get(&ep).await;
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

    let (_, stopped) = owner.post_empty(&format!("{ep}/undeploy")).await;
    assert_eq!(stopped["summary"]["status"], "stopped");
    let key2 = new_key(&owner, &ep, json!({ "name": "b" })).await;
    let res = predict(&public, key2["secret"].as_str(), json!({ "text": "一般" })).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(owner.delete(&ep).await.0, StatusCode::NO_CONTENT);
    deploys_in_bf16_where_the_cpu_has_it(&server, &owner, ws, ckpt).await;
    auto_precision_is_measured_and_shown(&owner, ws, job, ckpt).await;
}

/// `auto` on whatever CPU runs the suite: the forms' advice follows this process's tier and its own
/// measurement, a job and a replica asked for `auto` say what they chose and why, and the choice follows
/// the figures they report (bf16 only at `BF16_MIN_SPEEDUP` or more), never the CPU's flags alone. The
/// lower tiers are walked on every machine by `bf16_is_refused_at_its_field_on_a_cpu_without_it`.
async fn auto_precision_is_measured_and_shown(owner: &User, ws: i64, job: i64, ckpt: i64) {
    let tier = hostcaps::cpu::bf16();
    let advice = owner.get("/api/v1/precision-advice?work=serve").await.1;
    assert_eq!(advice["cpu_bf16"], tier.name(), "{advice}");
    let follows = |choice: &Value, what: &str| {
        let precision = choice["precision"].as_str().unwrap();
        assert_eq!(choice["asked"], "auto", "{what}: {choice}");
        if tier.is_native() {
            assert_eq!(choice["reason"], "measured", "{what}: {choice}");
            let (fp32, bf16) = (
                choice["probe"]["fp32_ms"].as_f64().unwrap(),
                choice["probe"]["bf16_ms"].as_f64().unwrap(),
            );
            assert!(fp32 > 0.0 && bf16 > 0.0, "{what}: {choice}");
            let pays = fp32 / bf16 >= contracts::precision::BF16_MIN_SPEEDUP;
            assert_eq!(
                precision,
                if pays { "bf16" } else { "fp32" },
                "{what}: {choice}"
            );
        } else {
            assert_eq!(choice["reason"], "no_native_bf16", "{what}: {choice}");
            assert_eq!(precision, "fp32", "{what}: {choice}");
        }
        precision.to_string()
    };
    if tier.is_native() {
        let probe = &advice["probe"];
        let pays = probe["fp32_ms"].as_f64().unwrap() / probe["bf16_ms"].as_f64().unwrap()
            >= contracts::precision::BF16_MIN_SPEEDUP;
        assert_eq!(
            advice["default"],
            if pays { "auto" } else { "fp32" },
            "{advice}"
        );
        assert_eq!(
            (probe["batch"].as_u64(), probe["seq_len"].as_u64()),
            (Some(8), Some(128))
        );
    } else {
        assert_eq!(
            (&advice["default"], &advice["probe"]),
            (&json!("fp32"), &Value::Null)
        );
    }

    let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");
    let spec = json!({ "name": "auto", "slug": "sentiment-auto", "checkpoint_id": ckpt, "precision": "auto" });
    let (code, ep) = owner.post(&endpoints, spec).await;
    assert_eq!(code, StatusCode::CREATED, "{ep}");
    let (ep, detail) = ready_past_the_gate(owner, &endpoints, &ep).await;
    let report = &detail["parity_report"];
    let served = follows(&report["precision_choice"], "replica");
    assert_eq!(
        report["precision"],
        served.as_str(),
        "the gate's slack is the served precision's"
    );
    assert_eq!(owner.delete(&ep).await.0, StatusCode::NO_CONTENT);

    let first = owner
        .get(&format!("/api/v1/workspaces/{ws}/jobs/{job}"))
        .await
        .1;
    assert_eq!(first["precision_choice"]["reason"], "asked", "{first}");
    let ds = &first["spec"]["dataset_id"];
    let spec = json!({ "name": "auto", "dataset_id": ds, "preset": "tiny", "max_seq_len": 32, "batch_size": 8,
                       "max_steps": 2, "eval_every_steps": 2, "precision": "auto" });
    let job = submit(owner, ws, spec).await;
    let detail = finished(owner, ws, job).await;
    assert_eq!(detail["summary"]["status"], "succeeded", "{detail}");
    assert_eq!(detail["spec"]["precision"], "auto");
    follows(&detail["precision_choice"], "job");
}

/// The endpoint `created` (under `endpoints`) once its replica passed the parity gate: its path and
/// its detail.
async fn ready_past_the_gate(owner: &User, endpoints: &str, created: &Value) -> (String, Value) {
    let ep = format!("{endpoints}/{}", created["summary"]["id"]);
    let detail = owner
        .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
        .await;
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    assert_eq!(detail["parity_report"]["passed"], true, "{detail}");
    (ep, detail)
}

/// bf16 on a CPU with native bfloat16: the replica says it serves bf16, the gate compares it with the
/// float32 trainer within bf16's slack, and it answers. Without native bf16 (or with it hidden) the spec
/// is refused at its field, as `bf16_is_refused_at_its_field_on_a_cpu_without_it` checks on every CPU.
async fn deploys_in_bf16_where_the_cpu_has_it(server: &Server, owner: &User, ws: i64, ckpt: i64) {
    let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");
    let spec = json!({ "name": "fast", "slug": "sentiment-bf16", "checkpoint_id": ckpt, "precision": "bf16" });
    let (code, ep) = owner.post(&endpoints, spec).await;
    if !hostcaps::cpu::bf16().is_native() {
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{ep}");
        assert_eq!(ep["field"], "precision");
        return;
    }
    assert_eq!(code, StatusCode::CREATED, "{ep}");
    assert_eq!(ep["spec"]["precision"], "bf16");
    let (ep, detail) = ready_past_the_gate(owner, &endpoints, &ep).await;
    let report = &detail["parity_report"];
    assert_eq!(report["precision"], "bf16");
    assert!(
        report["tolerance"]["rel"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    let key = new_key(owner, &ep, json!({ "name": "app" })).await;
    let res = predict(
        &server.url("/v1/endpoints/sentiment-bf16/predict"),
        key["secret"].as_str(),
        json!({ "inputs": ["质量很好，物流也快。"] }),
    )
    .await;
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
    let ws = workspace(&owner).await;
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
        let (code, body) = owner
            .post(&format!("/api/v1/workspaces/{ws}/{what}"), body)
            .await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
        assert_eq!(body["field"], "precision", "{what}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("AVX512-BF16"),
            "{what}: {body}"
        );
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM endpoints").await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);
    // The forms start on fp32 and say why, without measuring anything.
    for work in ["serve", "train"] {
        let advice = owner
            .get(&format!("/api/v1/precision-advice?work={work}"))
            .await
            .1;
        assert_eq!(
            advice,
            json!({ "cpu_bf16": "none", "default": "fp32", "probe": null })
        );
    }
    let (code, body) = owner.get("/api/v1/precision-advice?work=fast").await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "invalid_body", "{body}");
}

/// With AMX hidden, a CPU that has it is treated as one with AVX512-BF16 alone, by Paddock and by
/// libtorch's oneDNN (capped below AMX for every process `paddock` starts), so the forms' advice on an
/// AMX machine is what a machine without AMX would get.
#[tokio::test]
async fn hidden_amx_is_hidden_from_the_advice_and_from_libtorch() {
    let server = Server::start_with_env(&[], &[(hostcaps::HIDE_ENV, "amx")]);
    let owner = server.signup("noamx").await;
    let advice = owner.get("/api/v1/precision-advice?work=serve").await.1;
    let expected = hostcaps::cpu::Bf16::with_hidden(hostcaps::cpu::bf16_detected(), false, true);
    assert_eq!(advice["cpu_bf16"], expected.name(), "{advice}");
    assert_ne!(advice["cpu_bf16"], "amx");
    assert_eq!(
        advice["probe"].is_object(),
        expected.is_native(),
        "{advice}"
    );
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
pub(crate) fn load(
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
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, _, checkpoints) = trained(&owner, 15).await;
    assert!(checkpoints.len() >= 2, "{checkpoints:?}");
    let (first, second) = (checkpoints[0], checkpoints[checkpoints.len() - 1]);
    let spec = json!({ "name": "rolling", "slug": "rolling", "checkpoint_id": first });
    let (id, ep) = deploy(&owner, ws, spec).await;
    owner
        .wait_for(&ep, "ready", |d| d["summary"]["status"] == "ready")
        .await;
    let key = new_key(
        &owner,
        &ep,
        json!({ "name": "load", "rate_limit_per_minute": 1000000 }),
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_string();
    let public = server.url("/v1/endpoints/rolling/predict");

    // Nothing to change, and bad changes, are refused.
    let (_, body) = owner.patch(&ep, json!({ "replicas": 1 })).await;
    assert_eq!(body["code"], "endpoint_unchanged");
    let (_, body) = owner.patch(&ep, json!({ "replicas": 99 })).await;
    assert_eq!(body["field"], "replicas");
    let (_, body) = owner.patch(&ep, json!({ "checkpoint_id": 999999 })).await;
    assert_eq!(body["field"], "checkpoint_id");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| load(public.clone(), secret.clone(), stop.clone()))
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Roll out the other checkpoint on two replicas, under load.
    let (code, body) = owner
        .patch(&ep, json!({ "checkpoint_id": second, "replicas": 2 }))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        body["summary"]["change"],
        json!({ "kind": "rollout", "checkpoint_id": second, "replicas": 2 }),
        "the change under way is typed, for each page to say in its language: {body}"
    );
    let (_, body) = owner.patch(&ep, json!({ "replicas": 3 })).await;
    assert_eq!(body["code"], "endpoint_changing", "one change at a time");
    let rolled = owner
        .wait_for(&ep, "the new checkpoint", |d| {
            d["summary"]["checkpoint_id"] == second
                && d["summary"]["status_message"].is_null()
                && d["summary"]["change"].is_null()
                && d["summary"]["ready_replicas"] == 2
                && d["replicas"].as_array().unwrap().len() == 2
        })
        .await;
    assert_eq!(rolled["summary"]["status"], "ready");
    assert_eq!(rolled["parity_report"]["passed"], true, "{rolled}");

    // Scale down to one, still under load.
    let (code, _) = owner.patch(&ep, json!({ "replicas": 1 })).await;
    assert_eq!(code, StatusCode::OK);
    owner
        .wait_for(&ep, "one replica", |d| {
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
    let replica_pid = format!("SELECT pid FROM endpoint_replicas WHERE endpoint_id = {id}");
    let pid = server.count(&replica_pid).await;
    assert!(pid > 1);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let back = owner
        .wait_for(&ep, "a restarted replica", |d| {
            d["replicas"][0]["restarts"].as_u64().unwrap_or(0) >= 1
                && d["replicas"][0]["status"] == "ready"
        })
        .await;
    assert_eq!(back["summary"]["ready_replicas"], 1);
    let res = predict(&public, Some(&secret), json!({ "text": "还行" })).await;
    assert_eq!(res.status(), StatusCode::OK);

    // The playground: members with their session, not outsiders.
    let (code, answers) = playground(
        &owner,
        &ep,
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
        playground(&owner, &ep, json!([])).await.1["field"],
        "inputs"
    );
    let outsider = server.signup("outsider").await;
    assert_eq!(
        playground(&outsider, &ep, json!(["好"])).await.0,
        StatusCode::NOT_FOUND
    );

    // Keys: a revoked key, and another workspace's key, are refused.
    let (status, _) = owner
        .delete(&format!("{ep}/keys/{}", key["key"]["id"]))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let res = predict(&public, Some(&secret), json!({ "text": "好" })).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let (other_ws, _, other_ckpts) = trained(&outsider, 5).await;
    let spec = json!({ "name": "theirs", "slug": "theirs", "checkpoint_id": other_ckpts[0] });
    let (_, theirs) = deploy(&outsider, other_ws, spec).await;
    let other_key = new_key(&outsider, &theirs, json!({ "name": "theirs" })).await;
    let res = predict(
        &public,
        other_key["secret"].as_str(),
        json!({ "text": "好" }),
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::UNAUTHORIZED,
        "a key opens only its own endpoint"
    );
    // Someone else's checkpoint cannot be rolled out here.
    let (_, body) = owner
        .patch(&ep, json!({ "checkpoint_id": other_ckpts[0] }))
        .await;
    assert_eq!(body["code"], "checkpoint_not_found");

    // Deleting a running endpoint stops its replicas first.
    let live = server.count(&replica_pid).await;
    assert_eq!(owner.delete(&ep).await.0, StatusCode::NO_CONTENT);
    let proc_dir = std::path::PathBuf::from(format!("/proc/{live}"));
    eventually(
        &format!("replica {live} was stopped"),
        Duration::from_secs(5),
        async || !proc_dir.exists(),
    )
    .await;
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM endpoint_replicas WHERE endpoint_id = {id}"
            ))
            .await,
        0
    );
    assert_eq!(outsider.delete(&theirs).await.0, StatusCode::NO_CONTENT);
}

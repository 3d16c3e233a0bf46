//! Canary rollouts through the real binary, under load: a canary of a much slower model (the same data
//! on ERNIE 3.0's `medium` shape instead of `tiny`) is rolled back by itself on its latency, with the
//! figures that failed it in the history and the audit log; a good one passes its steps and is promoted;
//! a tester's header reaches the canary; a person pauses, resumes, rolls back and promotes. No call
//! fails throughout (the figures the issue asks for are printed).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::autoscale::{clients, history_has, stopped};
use crate::common::{problem_fields, Server, User, NO_DOCKER};
use crate::endpoints::{serving, trained};
use crate::jobs::{finished, submit};

/// A checkpoint of a job on `preset` in workspace `ws`, trained on its first dataset.
async fn checkpoint_of(owner: &User, ws: i64, preset: &str) -> i64 {
    let (_, datasets) = owner
        .get(&format!("/api/v1/workspaces/{ws}/datasets"))
        .await;
    let ds = datasets[0]["id"].as_i64().expect("the sample dataset");
    let spec = json!({ "name": preset, "dataset_id": ds, "preset": preset, "max_seq_len": 32,
                       "batch_size": 8, "max_steps": 2, "eval_every_steps": 2, "keep_best": 1 });
    let job = submit(owner, ws, spec).await;
    let detail = finished(owner, ws, job).await;
    assert_eq!(detail["summary"]["status"], "succeeded", "{detail}");
    detail["checkpoints"][0]["id"].as_i64().unwrap()
}

async fn start(owner: &User, ep: &str, body: Value) -> Value {
    let (status, detail) = owner.post(&format!("{ep}/canary"), body).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    detail
}

async fn act(owner: &User, ep: &str, action: &str) -> Value {
    let (status, detail) = owner.post_empty(&format!("{ep}/canary/{action}")).await;
    assert_eq!(status, StatusCode::OK, "{action}: {detail}");
    detail
}

fn phase(d: &Value) -> &str {
    d["canary"]["phase"].as_str().unwrap_or("none")
}

#[tokio::test]
async fn a_slower_canary_rolls_itself_back_a_good_one_is_promoted_and_people_can_steer() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, _, checkpoints) = trained(&owner, 15).await;
    let (stable, good) = (checkpoints[0], checkpoints[checkpoints.len() - 1]);
    let slow = checkpoint_of(&owner, ws, "medium").await;
    let spec = json!({ "name": "canaried", "slug": "canaried", "checkpoint_id": stable });
    let (ep, secret, public) = serving(&server, &owner, ws, spec).await;

    // Broken specs are refused at their fields, and the checkpoint it serves is no canary.
    let (status, body) = owner
        .post(
            &format!("{ep}/canary"),
            json!({ "checkpoint_id": good, "steps": [50, 20], "rule": { "max_p95_ratio": 0 } }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let fields = problem_fields(&body);
    assert_eq!(fields, ["steps", "rule.max_p95_ratio"]);
    let (_, body) = owner
        .post(&format!("{ep}/canary"), json!({ "checkpoint_id": stable }))
        .await;
    assert_eq!(body["code"], "endpoint_unchanged", "{body}");

    let (load, callers) = clients(3, &public, &secret);

    // The slow canary: half of the calls, judged after 20 of its own; its latency fails the rule.
    let began = Instant::now();
    let detail = start(
        &owner,
        &ep,
        json!({ "checkpoint_id": slow, "steps": [50], "step_secs": 600, "rule": { "min_requests": 20 } }),
    )
    .await;
    assert_eq!(phase(&detail), "starting", "{detail}");
    let (status, body) = owner.patch(&ep, json!({ "replicas": 2 })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("endpoint_changing")),
        "no other change while a canary runs"
    );
    let rolled = owner
        .wait_for(
            &ep,
            "the slow canary rolled back and its replica gone",
            |d| {
                d["canary"].is_null()
                    && history_has(d, "canary_rolled_back")
                    && d["replicas"].as_array().unwrap().len() == 1
            },
        )
        .await;
    let rollback = began.elapsed();
    let event = rolled["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"]["kind"] == "canary_rolled_back")
        .unwrap();
    assert!(event["by"].is_null(), "by itself: {event}");
    let figures = &event["event"]["figures"];
    let fault = figures["fault"].as_str().unwrap();
    assert!(["p95_latency", "p99_latency"].contains(&fault), "{event}");
    assert!(
        figures["canary_requests"].as_u64().unwrap() >= 20,
        "{event}"
    );
    assert!(
        figures["canary_p95_ms"].as_f64().unwrap() > figures["stable_p95_ms"].as_f64().unwrap(),
        "{event}"
    );
    assert_eq!(rolled["summary"]["checkpoint_id"], stable);
    let audited = server
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'endpoint.canary.roll_back' AND actor_id IS NULL AND detail LIKE '%latency%'")
        .await;
    assert_eq!(audited, 1);

    // A good canary: two steps of three seconds, judged leniently (both are the same tiny model, and a
    // fresh replica's first calls on a busy machine can be a few hundred milliseconds slow).
    let asked = Instant::now();
    let lenient = json!({ "min_requests": 30, "max_p95_ratio": 3, "max_p99_ratio": 5, "latency_slack_ms": 250 });
    start(
        &owner,
        &ep,
        json!({ "checkpoint_id": good, "steps": [20, 60], "step_secs": 3, "rule": lenient }),
    )
    .await;
    owner
        .wait_for(&ep, "the canary taking calls", |d| phase(d) == "running")
        .await;
    // A tester's header reaches the canary; the answer says which version gave it.
    let res = reqwest::Client::new()
        .post(&public)
        .bearer_auth(&secret)
        .header("x-paddock-canary", "always")
        .json(&json!({ "inputs": ["服务很好"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["x-paddock-version"], "canary");
    let seen = owner
        .wait_for(&ep, "both versions' figures", |d| {
            d["canary_figures"]["canary_requests"].as_u64().unwrap_or(0) > 0
                && d["canary_figures"]["stable_requests"].as_u64().unwrap_or(0) > 0
        })
        .await;
    assert!(seen["canary_figures"]["share_percent"].as_u64().unwrap() >= 20);
    let promoted = owner
        .wait_for(&ep, "the good canary promoted, the old replica gone", |d| {
            d["summary"]["checkpoint_id"] == good
                && d["canary"].is_null()
                && d["replicas"].as_array().unwrap().len() == 1
        })
        .await;
    let promotion = asked.elapsed();
    assert!(history_has(&promoted, "canary_stepped"), "{promoted}");
    assert!(history_has(&promoted, "canary_promoted"), "{promoted}");
    assert_eq!(promoted["parity_report"]["passed"], true);

    // A person steers: pause, resume, roll back; then promote another by hand.
    start(
        &owner,
        &ep,
        json!({ "checkpoint_id": stable, "steps": [10], "step_secs": 600, "rule": { "min_requests": 1000000 } }),
    )
    .await;
    owner
        .wait_for(&ep, "running", |d| phase(d) == "running")
        .await;
    assert_eq!(phase(&act(&owner, &ep, "pause").await), "paused");
    let (status, body) = owner.post_empty(&format!("{ep}/canary/pause")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(phase(&act(&owner, &ep, "resume").await), "running");
    let back = act(&owner, &ep, "roll_back").await;
    assert!(back["canary"].is_null(), "{back}");
    assert_eq!(back["summary"]["checkpoint_id"], good);
    let by_owner = back["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"]["kind"] == "canary_rolled_back")
        .unwrap();
    assert_eq!(by_owner["by"], "owner", "{by_owner}");
    start(
        &owner,
        &ep,
        json!({ "checkpoint_id": stable, "steps": [10], "step_secs": 600 }),
    )
    .await;
    owner
        .wait_for(&ep, "running", |d| phase(d) == "running")
        .await;
    let now_stable = act(&owner, &ep, "promote").await;
    assert_eq!(
        now_stable["summary"]["checkpoint_id"], stable,
        "{now_stable}"
    );
    assert!(now_stable["canary"].is_null());

    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = stopped(load, callers).await;
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "no call failed through two rollbacks and two promotions: {seen:?}"
    );
    let (status, body) = owner.post_empty(&format!("{ep}/canary/promote")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("endpoint_unchanged")),
        "no canary to promote"
    );
    println!(
        "canary figures: slow canary rolled back {:.1} s after it was asked for; good canary promoted {:.1} s after it was asked for; {} calls, none failed",
        rollback.as_secs_f64(),
        promotion.as_secs_f64(),
        seen.values().sum::<u32>()
    );
}

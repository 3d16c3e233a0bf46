//! An endpoint that sizes itself, through the real binary: a step load raises its replicas to the
//! ceiling, and once the load falls they come back down without a failed request; idle, it goes to zero
//! replicas, and its next call is answered after a cold start; a cold start the workspace's caps refuse
//! answers 503 with `Retry-After` and says why on the endpoint. The figures the issue asks for (time to
//! scale up under a step load, cold start) are printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{problem_fields, Cli, Server, User, NO_DOCKER};
use crate::endpoints::{deploy, load, predict, serving, trained};

pub(crate) fn history_has(detail: &Value, kind: &str) -> bool {
    detail["history"]
        .as_array()
        .is_some_and(|h| h.iter().any(|e| e["event"]["kind"] == kind))
}

/// Stops `clients` and adds up what they saw, by status.
pub(crate) async fn stopped(
    stop: Arc<AtomicBool>,
    clients: Vec<tokio::task::JoinHandle<std::collections::BTreeMap<u16, u32>>>,
) -> std::collections::BTreeMap<u16, u32> {
    stop.store(true, Ordering::Relaxed);
    let mut seen = std::collections::BTreeMap::new();
    for client in clients {
        for (status, n) in client.await.unwrap() {
            *seen.entry(status).or_insert(0) += n;
        }
    }
    seen
}

pub(crate) fn clients(
    n: usize,
    url: &str,
    secret: &str,
) -> (
    Arc<AtomicBool>,
    Vec<tokio::task::JoinHandle<std::collections::BTreeMap<u16, u32>>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let handles = (0..n)
        .map(|_| load(url.to_string(), secret.to_string(), stop.clone()))
        .collect();
    (stop, handles)
}

async fn replicas_now(owner: &User, ep: &str) -> Value {
    owner.get(ep).await.1
}

#[tokio::test]
async fn a_step_load_scales_up_and_back_down_and_an_idle_endpoint_sleeps_and_wakes() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, _, checkpoints) = trained(&owner, 5).await;
    let policy = json!({ "min_replicas": 0, "max_replicas": 3, "metric": "in_flight",
        "target_per_replica": 1.0, "scale_up_after_secs": 0, "scale_down_after_secs": 3,
        "idle_after_secs": 5, "cold_start_wait_secs": 120 });
    let spec = json!({ "name": "elastic", "slug": "elastic", "checkpoint_id": checkpoints[0],
                       "replicas": 1, "autoscale": policy });
    let (ep, secret, public) = serving(&server, &owner, ws, spec).await;

    // Broken policies are refused at their fields; replicas by hand are refused while it scales itself.
    let (status, body) = owner
        .put(
            &format!("{ep}/autoscale"),
            json!({ "min_replicas": 2, "max_replicas": 1, "metric": "qps", "target_per_replica": 0 }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let fields = problem_fields(&body);
    assert_eq!(
        fields,
        ["autoscale.max_replicas", "autoscale.target_per_replica"]
    );
    let (status, body) = owner.patch(&ep, json!({ "replicas": 2 })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("endpoint_scales_itself"))
    );

    // A step load: six callers at once want three replicas (one in flight each).
    let step = Instant::now();
    let (heavy, heavy_clients) = clients(5, &public, &secret);
    let (light, light_client) = clients(1, &public, &secret);
    let up = owner
        .wait_for(&ep, "three ready replicas", |d| {
            d["summary"]["ready_replicas"] == 3 && d["summary"]["replicas"] == 3
        })
        .await;
    let scale_up = step.elapsed();
    assert!(history_has(&up, "scaled"), "{up}");
    // The load falls to one caller: back to one replica, while that caller is still served.
    let mut seen = stopped(heavy, heavy_clients).await;
    owner
        .wait_for(&ep, "one replica", |d| {
            d["summary"]["replicas"] == 1 && d["replicas"].as_array().unwrap().len() == 1
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (status, n) in stopped(light, light_client).await {
        *seen.entry(status).or_insert(0) += n;
    }
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "no request failed while replicas came and went: {seen:?}"
    );

    // Nobody calls: every replica stops.
    let asleep = owner
        .wait_for(&ep, "zero replicas", |d| {
            d["summary"]["replicas"] == 0 && d["replicas"].as_array().unwrap().is_empty()
        })
        .await;
    assert_eq!(asleep["summary"]["status"], "ready", "{asleep}");
    assert!(history_has(&asleep, "scaled_to_zero"), "{asleep}");

    // The next call waits for a replica and is answered.
    let called = Instant::now();
    let res = predict(&public, Some(&secret), json!({ "text": "服务很好" })).await;
    let cold_call = called.elapsed();
    assert_eq!(res.status(), StatusCode::OK);
    let awake = replicas_now(&owner, &ep).await;
    let cold_start_ms = awake["summary"]["cold_start_ms"].as_u64().expect("timed");
    assert!(cold_start_ms as u128 <= cold_call.as_millis(), "{awake}");
    assert!(history_has(&awake, "cold_start"), "{awake}");
    println!(
        "autoscaling figures: step load to 3 ready replicas {:.1} s; cold start {} ms (the waking call took {} ms)",
        scale_up.as_secs_f64(),
        cold_start_ms,
        cold_call.as_millis()
    );

    // A cold start the caps refuse: the call gets 503 with Retry-After, the endpoint says why.
    owner
        .wait_for(&ep, "zero replicas again", |d| {
            d["summary"]["replicas"] == 0
        })
        .await;
    // Through the command line this time.
    let cli = Cli::of(&owner, ws).await;
    let id = ep.rsplit('/').next().unwrap();
    let (code, out, err) = cli.run(&[
        "endpoint",
        "autoscale",
        id,
        "--min",
        "0",
        "--max",
        "3",
        "--target-per-replica",
        "1",
        "--idle-after",
        "5",
        "--cold-start-wait",
        "2",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("autoscale  0–3 replicas, 1 in_flight per replica"),
        "{out}"
    );
    let (status, body) = owner
        .patch("/api/v1/admin/settings", json!({ "max_replicas": 1 }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let holder = json!({ "name": "holder", "slug": "holder", "checkpoint_id": checkpoints[0] });
    let (_, holder) = deploy(&owner, ws, holder).await;
    owner
        .wait_for(&holder, "ready", |d| d["summary"]["status"] == "ready")
        .await;
    let res = predict(&public, Some(&secret), json!({ "text": "还行" })).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(res.headers().get("retry-after").is_some(), "{res:?}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["code"], "endpoint_waking", "{body}");
    let refused = owner
        .wait_for(&ep, "the refusal said", |d| history_has(d, "scale_refused"))
        .await;
    let message = refused["summary"]["status_message"].as_str().unwrap_or("");
    assert!(message.contains("replica"), "{refused}");
    // The holder gone, a caller that honours Retry-After gets its answer.
    let (status, _) = owner.delete(&holder).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let mut tries = 0;
    let answered = loop {
        tries += 1;
        let res = predict(&public, Some(&secret), json!({ "text": "还行" })).await;
        if res.status() != StatusCode::SERVICE_UNAVAILABLE || tries == 20 {
            break res.status();
        }
        let wait: u64 = res.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        tokio::time::sleep(Duration::from_secs(wait)).await;
    };
    assert_eq!(answered, StatusCode::OK);

    // The scaler's decisions are in /metrics; turning it off keeps what runs.
    let text = owner
        .client
        .get(owner.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for decision in ["up", "down", "to_zero", "wake", "refused"] {
        assert!(
            text.contains(&format!("decision=\"{decision}\"")),
            "{decision}: {text}"
        );
    }
    assert!(text.contains("paddock_endpoint_cold_start_seconds"));
    let (code, out, err) = cli.run(&["endpoint", "show", id]);
    assert_eq!(code, Some(0), "{err}");
    // The history in the dashboard's English words.
    for said in [
        "A call woke the endpoint: cold start",
        "every replica stopped",
        "Wanted 1 replicas, refused",
        "1 → ",
    ] {
        assert!(out.contains(said), "{said}: {out}");
    }
    let (status, off) = owner.delete(&format!("{ep}/autoscale")).await;
    assert_eq!(status, StatusCode::OK, "{off}");
    assert!(off["summary"]["autoscale"].is_null(), "{off}");
    assert_eq!(off["summary"]["replicas"], 1);
    let audit = server
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'endpoint.autoscale'")
        .await;
    assert_eq!(audit, 2);
}

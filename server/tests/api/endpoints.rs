//! Endpoints through the real binary: a checkpoint trained by a job is deployed with one call, passes
//! the parity gate, and answers on `/v1/endpoints/{slug}/predict` to holders of its API key — with the
//! key's rate limit, 401 without a key, numbers on the endpoint page, and 503 once undeployed.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{status_json, Server};

#[tokio::test]
async fn a_checkpoint_becomes_an_endpoint_with_keys_and_numbers() {
    let server = Server::start_with(&["--docker-host", "unix:///nonexistent.sock"]);
    let owner = server.signup("owner").await;
    let res = owner
        .client
        .post(server.url("/api/v1/workspaces"))
        .json(&json!({ "name": "nlp" }))
        .send()
        .await
        .unwrap();
    let ws = status_json(res).await.1["id"].as_i64().unwrap();
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/datasets/sample")))
        .send()
        .await
        .unwrap();
    let ds = status_json(res).await.1["summary"]["id"].as_i64().unwrap();
    let spec = json!({ "name": "train", "dataset_id": ds, "preset": "tiny", "max_seq_len": 32, "batch_size": 16,
                       "max_steps": 10, "eval_every_steps": 5, "keep_best": 1 });
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
    let ckpt = detail["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["deleted_at"].is_null())
        .unwrap()["id"]
        .as_i64()
        .unwrap();

    // Bad specs write nothing.
    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/endpoints")))
        .json(&json!({ "name": "x", "checkpoint_id": ckpt, "replicas": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(status_json(res).await.1["field"], "replicas");
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

    let res = owner
        .client
        .post(format!("{ep_url}/keys"))
        .json(&json!({ "name": "app", "rate_limit_per_minute": 20 }))
        .send()
        .await
        .unwrap();
    let (code, key) = status_json(res).await;
    assert_eq!(code, StatusCode::CREATED, "{key}");
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
    let key2 = status_json(
        owner
            .client
            .post(format!("{ep_url}/keys"))
            .json(&json!({ "name": "b" }))
            .send()
            .await
            .unwrap(),
    )
    .await
    .1;
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
}

//! Bad input gets a clear 4xx in the common error shape and writes nothing.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{status_json, Server, PASSWORD};

#[tokio::test]
async fn bad_signups_write_nothing() {
    let server = Server::start();
    let anon = server.anonymous();
    let signup = |body: Value| anon.post("/api/v1/auth/signup", body);

    let (status, body) = signup(json!({ "username": "alice", "password": "short" })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (body["code"].as_str(), body["field"].as_str()),
        (Some("password_too_short"), Some("password"))
    );
    assert!(body["message"].as_str().unwrap().contains("10"), "{body}");

    let (status, body) = signup(json!({ "username": "a b", "password": PASSWORD })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("username_invalid"))
    );

    let (status, body) =
        signup(json!({ "username": "alice", "password": PASSWORD, "is_admin": true })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (body["code"].as_str(), body["field"].as_str()),
        (Some("invalid_body"), Some("is_admin"))
    );

    let (status, body) = signup(json!({ "username": "alice", "password": 12345678901u64 })).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("password"))
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 0);

    server.signup("alice").await;
    let (status, body) = signup(json!({ "username": "ALICE", "password": PASSWORD })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("username_taken"))
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 1);
}

#[tokio::test]
async fn malformed_and_oversized_bodies_write_nothing() {
    let server = Server::start();
    let alice = server.signup("alice").await;
    let send = |body: Vec<u8>, content_type: &'static str| {
        alice
            .client
            .post(alice.url("/api/v1/workspaces"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let post = async |body: &[u8], content_type: &'static str| {
        status_json(send(body.to_vec(), content_type).await.unwrap()).await
    };
    const JSON: &str = "application/json";

    // Just over the 1 MiB limit: small enough to sit in loopback socket buffers, so the client always
    // finishes writing and reads the clear 413.
    let over = format!("{{\"name\":\"{}\"}}", "x".repeat(1024 * 1024 + 1024)).into_bytes();
    let (status, body) = post(&over, JSON).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("body_too_large"))
    );

    // 10 MB of valid JSON: the server answers 413 without reading the rest, so depending on timing the
    // client either reads that answer or sees the connection closed while it is still writing. Either
    // way nothing may be written (checked at the end).
    let big = format!("{{\"name\":\"{}\"}}", "x".repeat(10 * 1024 * 1024)).into_bytes();
    match send(big, JSON).await {
        Ok(res) => {
            let (status, body) = status_json(res).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (StatusCode::PAYLOAD_TOO_LARGE, Some("body_too_large"))
            );
        }
        Err(e) => assert!(
            e.is_request() || e.is_body(),
            "unexpected client error: {e:?}"
        ),
    }

    let (bad, invalid) = (StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY);
    // (body, content type, status, the key of the answer that says why, its value, words of the message)
    type Refusal = (
        &'static [u8],
        &'static str,
        StatusCode,
        &'static str,
        &'static str,
        &'static str,
    );
    #[rustfmt::skip]
    let refusals: [Refusal; 8] = [
        (b"{\"name\":\"\xff\xfe\"}",            JSON,         bad,     "code",  "invalid_body", "UTF-8"),
        (b"{\"name\": ",                        JSON,         bad,     "code",  "invalid_body", ""),
        (br#"{"name":"ok"}"#,                   "text/plain", bad,     "code",  "invalid_body", ""),
        (br#"{"name":"ok","owner":"mallory"}"#, JSON,         invalid, "field", "owner",        ""),
        (br#"{"name":42}"#,                     JSON,         invalid, "field", "name",         ""),
        (br#"{"name":"   "}"#,                  JSON,         invalid, "code",  "workspace_name_invalid", ""),
        (br#"["x"]"#,                           JSON,         bad,     "code",  "invalid_body", "JSON object"),
        (b" \n[\"ok\"]",                         JSON,         bad,     "code",  "invalid_body", "JSON object"),
    ];
    for (sent, content_type, want, key, value, words) in refusals {
        let (status, body) = post(sent, content_type).await;
        let sent = String::from_utf8_lossy(sent);
        assert_eq!((status, body[key].as_str()), (want, Some(value)), "{sent}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{sent}: {body}");
    }

    let (status, body) = alice.get("/api/v1/workspaces/not-a-number").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_body"))
    );

    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 0);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'workspace.%'")
            .await,
        0
    );

    // A struct inside the body is read from an object only, as the top level is: serde would read an
    // internally tagged `reach` from `["local", null]` too. (alice signed up first: she is the admin.)
    let registration =
        json!({ "name": "c1", "reach": ["local", null], "cpus": 1, "memory_mb": 1000 });
    let (status, body) = alice.post("/api/v1/admin/clusters", &registration).await;
    assert_eq!(
        (status, body["code"].as_str(), body["field"].as_str()),
        (invalid, Some("invalid_body"), Some("reach")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("expected an object"), "{body}");
    // A cluster's slurm.conf: a file only the server's user may read, or one that is no slurm.conf, is
    // refused in words that quote nothing of it.
    for (conf, why) in [
        ("/etc/shadow", "not readable by every user"),
        ("/etc/passwd", "not a slurm.conf"),
    ] {
        let reach = json!({ "kind": "local", "slurm_conf": conf });
        let registration = json!({ "name": "c2", "reach": reach, "cpus": 1, "memory_mb": 1000 });
        let (status, body) = alice.post("/api/v1/admin/clusters", &registration).await;
        assert_eq!(status, invalid, "{conf}: {body}");
        let said = body.to_string();
        assert!(said.contains(why), "{conf}: {body}");
        assert!(!said.contains("root:"), "{conf} was quoted: {body}");
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM clusters").await, 0);

    // The same body, well-formed and small, is accepted: the refusals above were about the input.
    let (status, _) = post(br#"{"name":"ok"}"#, JSON).await;
    assert_eq!(status, StatusCode::CREATED);
}

/// Server functions whose arguments do not decode, unknown ones and a wrong method: each a 4xx with the
/// error in the body, never a panic or a dropped connection; the server keeps answering.
#[tokio::test]
async fn server_function_calls_that_do_not_decode_are_answered_with_4xx() {
    let server = Server::start();
    let client = server.client();
    let origin = server.base();
    let call = |path: &str, body: &'static str| {
        client
            .post(server.url(path))
            .header("origin", &origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    for (path, body) in [
        ("/rpc/sign_in", "zzz=1"),
        ("/rpc/sign_in", "username=a"),
        ("/rpc/sign_in", "%ff%fe=%00"),
        ("/rpc/create_workspace", ""),
    ] {
        let res = call(path, body)
            .await
            .expect("an answer, not a dropped connection");
        let status = res.status();
        let answer: serde_json::Value = res.json().await.unwrap_or_default();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {answer}");
        assert_eq!(answer["kind"], "malformed", "{path} {body}: {answer}");
    }
    // Every JSON-codec function, signed in or not: a body that is not JSON, or not the arguments.
    let json_functions = [
        "create_environment",
        "update_environment",
        "environment_action",
        "submit_job",
        "job_action",
        "deploy_endpoint",
        "endpoint_action",
        "create_endpoint_key",
        "change_endpoint",
        "try_predict",
    ];
    for function in json_functions {
        for body in ["{", "[\"x\"]", "{\"nothing\": 1}"] {
            let res = client
                .post(server.url(&format!("/rpc/{function}")))
                .header("origin", &origin)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("an answer");
            let status = res.status();
            let answer: serde_json::Value = res.json().await.unwrap_or_default();
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{function} {body}: {answer}"
            );
            assert_eq!(answer["kind"], "malformed", "{function} {body}: {answer}");
        }
    }
    let res = client
        .get(server.url("/rpc/sign_in?zzz=1"))
        .send()
        .await
        .expect("an answer");
    assert!(res.status().is_client_error(), "GET: {}", res.status());
    let res = call("/rpc/sign_in", "username=nobody&password=wrong")
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::UNAUTHORIZED,
        "a decodable call still reaches its handler"
    );
    let res = client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

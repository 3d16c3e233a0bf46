//! Operational endpoints: health, Prometheus metrics, the OpenAPI document, and the pages not failing
//! with 500 (their content is the UI's; its browser tests check it).

use reqwest::StatusCode;

use crate::common::Server;

#[tokio::test]
async fn healthz_metrics_and_openapi() {
    let server = Server::start();
    let alice = server.signup("alice").await;
    let anon = server.anonymous();

    let (status, body) = anon.get("/healthz").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );

    // The first account is the admin, who may read the metrics.
    let res = alice
        .client
        .get(alice.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let text = res.text().await.unwrap();
    assert!(
        text.contains(
            r#"http_requests_total{method="POST",route="/api/v1/auth/signup",status="201"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(text.contains("paddock_users 1"), "{text}");
    assert!(text.contains("paddock_workspaces 0"), "{text}");

    let (status, doc) = anon.get("/api/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/api/v1/auth/signup",
        "/api/v1/me",
        "/api/v1/workspaces/{id}",
        "/api/v1/workspaces/{id}/members/{user_id}",
        "/api/v1/workspaces/{id}/activity",
        "/api/v1/tokens/{id}",
        "/api/v1/admin/users/{id}",
    ] {
        assert!(paths.contains_key(path), "OpenAPI lacks {path}");
    }
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert!(doc["components"]["securitySchemes"]["token"].is_object());

    let (status, body) = anon.get("/api/v1/no-such-thing").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn pages_render_without_server_errors() {
    let server = Server::start();
    let anon = server.anonymous();
    for path in ["/", "/signin", "/signup", "/no-such-page"] {
        let (status, _) = anon.get(path).await;
        assert!(
            !status.is_server_error(),
            "GET {path} as anonymous: {status}"
        );
    }
    let alice = server.signup("alice").await;
    let res = alice.client.get(alice.url("/")).send().await.unwrap();
    assert!(
        !res.status().is_server_error(),
        "GET / signed in: {}",
        res.status()
    );
    let html = res.text().await.unwrap();
    assert!(html.to_lowercase().contains("<html"), "{html}");
}

/// A fixed segment beside a named one at the same place takes every request for that word: a cluster
/// named `ssh-key` could not be removed while `GET /admin/clusters/ssh-key` was a route (`DELETE` answered
/// 405). Words are what a string parameter takes, so no fixed segment may sit beside one; numeric ids
/// cannot be spelt as a word, so a fixed segment beside them is fine.
#[tokio::test]
async fn no_fixed_path_hides_a_word_a_path_parameter_takes() {
    let server = Server::start();
    let (_, doc) = server.anonymous().get("/api/v1/openapi.json").await;
    let paths = doc["paths"].as_object().unwrap();
    // Whether `{name}` in `path` is a string (any operation of it says).
    let is_word =
        |path: &str, name: &str| {
            paths[path].as_object().unwrap().values().any(|op| {
                op["parameters"].as_array().into_iter().flatten().any(|p| {
                    p["in"] == "path" && p["name"] == name && p["schema"]["type"] == "string"
                })
            })
        };
    let mut hidden = Vec::new();
    for named in paths.keys() {
        let n: Vec<&str> = named.split('/').collect();
        for fixed in paths.keys() {
            let f: Vec<&str> = fixed.split('/').collect();
            if f.len() != n.len() || fixed == named {
                continue;
            }
            // Where the two differ, `named` must have a parameter and `fixed` a word for `fixed` to take
            // requests meant for `named`.
            let differ: Vec<usize> = (0..n.len()).filter(|&i| n[i] != f[i]).collect();
            let shadows = differ
                .iter()
                .all(|&i| n[i].starts_with('{') && !f[i].starts_with('{'));
            let words = differ
                .iter()
                .all(|&i| is_word(named, n[i].trim_matches(|c| c == '{' || c == '}')));
            if shadows && words {
                hidden.push(format!("{fixed} hides {named}"));
            }
        }
    }
    assert!(hidden.is_empty(), "{hidden:#?}");
}

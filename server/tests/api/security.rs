//! CSRF protection of cookie-authenticated mutations (REST and server functions) and personal API
//! tokens.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{status_json, Server};

#[tokio::test]
async fn cookie_posts_from_a_foreign_origin_are_refused() {
    let server = Server::start();
    let alice = server.signup("alice").await;
    let create = |origin: Option<&str>| {
        let mut req = alice
            .client
            .post(server.url("/api/v1/workspaces"))
            .json(&json!({ "name": "Team" }));
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let (status, body) = status_json(create(Some("http://evil.example")).await.unwrap()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("csrf_rejected"))
    );
    let res = alice
        .client
        .post(server.url("/api/v1/workspaces"))
        .header("sec-fetch-site", "cross-site")
        .json(&json!({ "name": "Team" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // The same server function, called cross-site, is refused too.
    let res = alice
        .client
        .post(server.url("/rpc/create_workspace"))
        .header("origin", "http://evil.example")
        .form(&[("name", "Team")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 0);

    // Same origin passes, for REST and for the server function.
    assert_eq!(
        create(Some(server.base.as_str())).await.unwrap().status(),
        StatusCode::CREATED
    );
    let res = alice
        .client
        .post(server.url("/rpc/create_workspace"))
        .header("origin", server.base.as_str())
        .form(&[("name", "Team 2")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 2);
    // A server function's error carries the REST status code.
    let res = alice
        .client
        .post(server.url("/rpc/get_workspace"))
        .form(&[("workspace_id", "999")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn personal_api_tokens() {
    let server = Server::start();
    let alice = server.signup("alice").await;
    let (status, created) = status_json(
        alice
            .client
            .post(server.url("/api/v1/tokens"))
            .json(&json!({ "name": "ci" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let secret = created["secret"].as_str().unwrap().to_string();
    let token_id = created["token"]["id"].as_i64().unwrap();
    assert!(secret.starts_with(created["token"]["prefix"].as_str().unwrap()));
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM api_tokens WHERE secret_sha256 = '{secret}'"
            ))
            .await,
        0
    );

    // The token alone authenticates (no cookie), and a cross-site header does not matter for it.
    let bare = reqwest::Client::new();
    let (status, me) = status_json(
        bare.get(server.url("/api/v1/me"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, me["username"].as_str()),
        (StatusCode::OK, Some("alice"))
    );
    let res = bare
        .post(server.url("/api/v1/workspaces"))
        .bearer_auth(&secret)
        .header("origin", "http://elsewhere.example")
        .json(&json!({ "name": "From CI" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    let (_, list) = status_json(
        alice
            .client
            .get(server.url("/api/v1/tokens"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert!(list[0]["last_used_at"].is_string());
    assert!(list[0].get("secret").is_none());

    // Missing, malformed and unknown tokens: 401.
    let (status, body) =
        status_json(bare.get(server.url("/api/v1/me")).send().await.unwrap()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    let res = bare
        .get(server.url("/api/v1/me"))
        .header("authorization", "Bearer")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = bare
        .get(server.url("/api/v1/me"))
        .bearer_auth("pdk_not-a-real-token")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // A bad token is not rescued by a valid session cookie.
    let res = alice
        .client
        .get(server.url("/api/v1/me"))
        .bearer_auth("pdk_wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = bare
        .post(server.url("/api/v1/workspaces"))
        .json(&json!({ "name": "Anon" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // Someone else cannot revoke it; its owner can, and then it stops working.
    let bob = server.signup("bob").await;
    let res = bob
        .client
        .delete(server.url(&format!("/api/v1/tokens/{token_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = alice
        .client
        .delete(server.url(&format!("/api/v1/tokens/{token_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = bare
        .get(server.url("/api/v1/me"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 1);
}

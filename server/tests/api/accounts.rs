//! Sign-up, sign-in, sign-out, the first-account admin rule, disabling sign-up and accounts, and the
//! throttling of failed sign-ins.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{status_json, Server, PASSWORD};

#[tokio::test]
async fn signup_signin_signout_and_first_user_is_admin() {
    let server = Server::start();
    let alice = server.signup("Alice").await;
    assert!(alice.is_admin, "first account is the instance admin");
    let bob = server.signup("bob").await;
    assert!(!bob.is_admin);

    // The session cookie works and is HttpOnly + SameSite=Lax.
    let (status, me) = status_json(
        alice
            .client
            .get(server.url("/api/v1/me"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["username"], "alice");

    let anon = server.client();
    let res = anon
        .post(server.url("/api/v1/auth/signin"))
        .json(&json!({ "username": "BOB", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res
        .headers()
        .get("set-cookie")
        .expect("session cookie")
        .to_str()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("paddock_session="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Secure"),
        "Secure only when configured: {cookie}"
    );
    assert_eq!(
        status_json(anon.get(server.url("/api/v1/me")).send().await.unwrap())
            .await
            .1["username"],
        "bob"
    );

    let res = anon
        .post(server.url("/api/v1/auth/signout"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let (status, body) =
        status_json(anon.get(server.url("/api/v1/me")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "unauthenticated");

    let (status, body) = status_json(
        anon.post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "bob", "password": "wrong password" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_credentials"))
    );
}

#[tokio::test]
async fn secure_cookies_when_configured() {
    let server = Server::start_with(&["--secure-cookies"]);
    let res = server
        .client()
        .post(server.url("/api/v1/auth/signup"))
        .json(&json!({ "username": "alice", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    let cookie = res.headers().get("set-cookie").unwrap().to_str().unwrap();
    assert!(cookie.contains("Secure"), "{cookie}");
}

#[tokio::test]
async fn admin_disables_signup_and_users() {
    let server = Server::start();
    let admin = server.signup("root").await;
    let user = server.signup("user").await;

    let (status, _) = status_json(
        user.client
            .patch(server.url("/api/v1/admin/settings"))
            .json(&json!({ "signup_enabled": false }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = status_json(
        admin
            .client
            .patch(server.url("/api/v1/admin/settings"))
            .json(&json!({ "signup_enabled": false }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["signup_enabled"].as_bool()),
        (StatusCode::OK, Some(false))
    );

    let (status, body) = status_json(
        server
            .client()
            .post(server.url("/api/v1/auth/signup"))
            .json(&json!({ "username": "latecomer", "password": PASSWORD }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("signup_disabled"))
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 2);

    // Disabling an account ends its session at once and refuses its sign-in.
    let (status, body) = status_json(
        admin
            .client
            .patch(server.url(&format!("/api/v1/admin/users/{}", user.id)))
            .json(&json!({ "disabled": true }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["disabled"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    assert_eq!(
        user.client
            .get(server.url("/api/v1/me"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, body) = status_json(
        server
            .client()
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "user", "password": PASSWORD }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("account_disabled"))
    );

    let (status, users) = status_json(
        admin
            .client
            .get(server.url("/api/v1/admin/users"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(users.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn repeated_failed_signins_are_throttled() {
    let server = Server::start();
    server.signup("carol").await;
    let client = server.client();
    let attempt = |password: &'static str| {
        client
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "carol", "password": password }))
            .send()
    };
    // MAX_FAILURES_PER_USERNAME in domain::throttle.
    for _ in 0..5 {
        assert_eq!(
            attempt("wrong password").await.unwrap().status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let res = attempt(PASSWORD).await.unwrap();
    assert_eq!(
        res.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "locked even with the right password"
    );
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after > 0);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["code"], "too_many_requests");
    assert_eq!(body["retry_after_secs"].as_u64(), Some(retry_after));

    // Another account from the same address is not locked out by carol's failures.
    server.signup("dave").await;
    let res = server
        .client()
        .post(server.url("/api/v1/auth/signin"))
        .json(&json!({ "username": "dave", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

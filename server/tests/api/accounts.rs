//! Sign-up, sign-in, sign-out, the first-account admin rule, disabling sign-up and accounts, and the
//! throttling of failed sign-ins.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{Server, PASSWORD};

#[tokio::test]
async fn signup_signin_signout_and_first_user_is_admin() {
    let server = Server::start();
    let alice = server.signup("Alice").await;
    assert!(alice.is_admin, "first account is the instance admin");
    let bob = server.signup("bob").await;
    assert!(!bob.is_admin);

    // The session cookie works and is HttpOnly + SameSite=Lax.
    let (status, me) = alice.get("/api/v1/me").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["username"], "alice");

    let anon = server.anonymous();
    let cookie = anon.sign_in_cookie("BOB").await;
    assert!(cookie.starts_with("paddock_session="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Secure"),
        "Secure only when configured: {cookie}"
    );
    assert_eq!(anon.get("/api/v1/me").await.1["username"], "bob");

    let (status, _) = anon.post_empty("/api/v1/auth/signout").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = anon.get("/api/v1/me").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["code"], "unauthenticated");

    let wrong = json!({ "username": "bob", "password": "wrong password" });
    let (status, body) = anon.post("/api/v1/auth/signin", wrong).await;
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

    let no_signup = json!({ "signup_enabled": false });
    let (status, _) = user.patch("/api/v1/admin/settings", &no_signup).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = admin.patch("/api/v1/admin/settings", &no_signup).await;
    assert_eq!(
        (status, body["signup_enabled"].as_bool()),
        (StatusCode::OK, Some(false))
    );

    let latecomer = json!({ "username": "latecomer", "password": PASSWORD });
    let (status, body) = server
        .anonymous()
        .post("/api/v1/auth/signup", latecomer)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("signup_disabled"))
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 2);

    // Disabling an account ends its session at once and refuses its sign-in.
    let (status, body) = admin
        .patch(
            &format!("/api/v1/admin/users/{}", user.id),
            json!({ "disabled": true }),
        )
        .await;
    assert_eq!(
        (status, body["disabled"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    assert_eq!(user.get("/api/v1/me").await.0, StatusCode::UNAUTHORIZED);
    let again = json!({ "username": "user", "password": PASSWORD });
    let (status, body) = server.anonymous().post("/api/v1/auth/signin", again).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("account_disabled"))
    );

    let (status, users) = admin.get("/api/v1/admin/users").await;
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
    server.signin("dave").await;
}

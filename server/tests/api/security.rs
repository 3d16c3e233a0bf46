//! The HTTP edge: CSRF protection of cookie-authenticated mutations (REST and server functions),
//! personal API tokens, the sign-in and sign-up budgets, the `Host` allow-list, security headers,
//! `Secure` cookies and who may read `/metrics`.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{status_json, Server, PASSWORD};

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
        create(Some(&server.base())).await.unwrap().status(),
        StatusCode::CREATED
    );
    let res = alice
        .client
        .post(server.url("/rpc/create_workspace"))
        .header("origin", server.base())
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
    let (status, created) = alice.post("/api/v1/tokens", json!({ "name": "ci" })).await;
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
    // GET /api/v1/me from `client` with this `Authorization` header, if any.
    let me = async |client: &reqwest::Client, authorization: Option<&str>| {
        let mut req = client.get(server.url("/api/v1/me"));
        if let Some(authorization) = authorization {
            req = req.header("authorization", authorization);
        }
        status_json(req.send().await.unwrap()).await
    };
    let bearer = format!("Bearer {secret}");
    let (status, me_by_token) = me(&bare, Some(&bearer)).await;
    assert_eq!(
        (status, me_by_token["username"].as_str()),
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

    let (_, list) = alice.get("/api/v1/tokens").await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert!(list[0]["last_used_at"].is_string());
    assert!(list[0].get("secret").is_none());

    // Missing, malformed and unknown tokens: 401.
    let (status, body) = me(&bare, None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    for authorization in ["Bearer", "Bearer pdk_not-a-real-token"] {
        let (status, _) = me(&bare, Some(authorization)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{authorization}");
    }
    // A bad token is not rescued by a valid session cookie.
    let (status, _) = me(&alice.client, Some("Bearer pdk_wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let res = bare
        .post(server.url("/api/v1/workspaces"))
        .json(&json!({ "name": "Anon" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // Someone else cannot revoke it; its owner can, and then it stops working.
    let bob = server.signup("bob").await;
    let token = format!("/api/v1/tokens/{token_id}");
    assert_eq!(bob.delete(&token).await.0, StatusCode::NOT_FOUND);
    assert_eq!(alice.delete(&token).await.0, StatusCode::NO_CONTENT);
    assert_eq!(me(&bare, Some(&bearer)).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 1);
}

#[tokio::test]
async fn read_tokens_only_read_and_expired_tokens_are_refused() {
    let server = Server::start();
    let alice = server.signup("alice").await;
    let new_token = |body: serde_json::Value| alice.post("/api/v1/tokens", body);
    let (status, read) = new_token(json!({ "name": "dashboard", "scope": "read" })).await;
    assert_eq!(status, StatusCode::CREATED, "{read}");
    assert_eq!(read["token"]["scope"], "read");
    assert!(
        read["token"]["expires_at"].is_string(),
        "90 days by default"
    );
    let secret = read["secret"].as_str().unwrap().to_string();
    let bare = reqwest::Client::new();
    let res = bare
        .get(server.url("/api/v1/workspaces"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    for (what, req) in [
        (
            "a workspace",
            bare.post(server.url("/api/v1/workspaces"))
                .json(&json!({ "name": "nope" })),
        ),
        (
            "a token",
            bare.post(server.url("/api/v1/tokens"))
                .json(&json!({ "name": "escalate" })),
        ),
    ] {
        let (status, body) = status_json(req.bearer_auth(&secret).send().await.unwrap()).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("token_read_only")),
            "{what}"
        );
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM workspaces").await, 0);
    assert_eq!(server.count("SELECT COUNT(*) FROM api_tokens").await, 1);

    let (status, body) = new_token(json!({ "name": "long", "expires_in_days": 4000 })).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("expires_in_days"))
    );
    let (_, forever) = new_token(json!({ "name": "forever", "expires_in_days": 0 })).await;
    assert!(forever["token"]["expires_at"].is_null(), "{forever}");

    // Past its expiry a token is refused like an unknown one.
    server
        .execute(
            "UPDATE api_tokens SET expires_at = '2000-01-01T00:00:00Z' WHERE name = 'dashboard'",
        )
        .await;
    let res = bare
        .get(server.url("/api/v1/me"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}

/// A client whose connections come from `ip` (any 127.0.0.0/8 address reaches the server bound
/// to 127.0.0.1), so one test can play several client addresses.
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .cookie_store(true)
        .build()
        .unwrap()
}

#[tokio::test]
async fn parallel_wrong_passwords_spend_only_the_budget_and_never_lock_the_owner_out() {
    let server = Server::start();
    let admin = server.signup("admin").await;
    assert!(admin.is_admin);
    let attacker = client_from("127.0.0.2");
    let guesses = (0..60).map(|i| {
        attacker
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "admin", "password": format!("guess number {i}") }))
            .send()
    });
    let statuses: Vec<StatusCode> = futures_util::future::join_all(guesses)
        .await
        .into_iter()
        .map(|r| r.unwrap().status())
        .collect();
    let hashed = statuses
        .iter()
        .filter(|s| **s == StatusCode::UNAUTHORIZED)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    // SIGN_IN_PER_ACCOUNT_AND_ADDRESS in domain::throttle: every other guess is refused before
    // its password is hashed.
    assert_eq!((hashed, refused), (5, 55), "{statuses:?}");
    // Five more from yet another address: that pair's own budget, nobody else's.
    let other = client_from("127.0.0.3");
    for _ in 0..6 {
        other
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "admin", "password": "not the password" }))
            .send()
            .await
            .unwrap();
    }
    // The admin, from their own address, signs in with the right password.
    let (status, me) = status_json(
        client_from("127.0.0.1")
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "admin", "password": PASSWORD }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, me["is_admin"].as_bool()),
        (StatusCode::OK, Some(true))
    );
}

#[tokio::test]
async fn sign_ups_are_throttled_per_address() {
    let server = Server::start_with(&["--signups-per-hour", "3"]);
    let from = client_from("127.0.0.4");
    let signup = |name: String| {
        from.post(server.url("/api/v1/auth/signup"))
            .json(&json!({ "username": name, "password": PASSWORD }))
            .send()
    };
    for i in 0..3 {
        assert_eq!(
            signup(format!("user{i}")).await.unwrap().status(),
            StatusCode::CREATED
        );
    }
    let (status, body) = status_json(signup("user3".into()).await.unwrap()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("too_many_requests"))
    );
    assert!(body["retry_after_secs"].as_u64().unwrap() > 0);
    // Another address still may.
    let res = client_from("127.0.0.5")
        .post(server.url("/api/v1/auth/signup"))
        .json(&json!({ "username": "user4", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    // An address that has used up its failed sign-ins cannot switch to signing up.
    let guesser = client_from("127.0.0.6");
    for i in 0..30 {
        guesser
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": format!("someone{i}"), "password": "wrong password" }))
            .send()
            .await
            .unwrap();
    }
    let res = guesser
        .post(server.url("/api/v1/auth/signup"))
        .json(&json!({ "username": "fresh", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn requests_for_a_foreign_host_are_refused() {
    let server = Server::start_with(&["--allowed-host", "paddock.lan"]);
    let port = server.base().rsplit(':').next().unwrap().to_string();
    let client = server.client();
    // DNS rebinding: the browser names the attacker's host, and sends a matching Origin.
    let (status, body) = status_json(
        client
            .post(server.url("/api/v1/auth/signup"))
            .header("host", format!("evil.example:{port}"))
            .header("origin", format!("http://evil.example:{port}"))
            .json(&json!({ "username": "mallory", "password": PASSWORD }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("host_not_allowed"))
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 0);
    for host in ["evil.example", "10.1.2.3"] {
        let res = client
            .get(server.url("/healthz"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{host}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("PADDOCK.lan:{port}"),
    ] {
        let res = client
            .get(server.url("/healthz"))
            .header("host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn responses_carry_security_headers_and_pages_a_nonce_policy() {
    let server = Server::start();
    let client = server.client();
    let res = client.get(server.url("/signin")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let headers = res.headers().clone();
    let html = res.text().await.unwrap();
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["referrer-policy"], "same-origin");
    assert!(headers.get("strict-transport-security").is_none());
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce in the page's policy");
    // Every inline script of the page that has a body carries that nonce (Leptos also writes an
    // empty `<script></script>`, which has nothing to run).
    let mut count = 0;
    for (i, _) in html.match_indices("<script") {
        let tag = &html[i..i + html[i..].find('>').unwrap()];
        let body_start = i + tag.len() + 1;
        let body = &html[body_start..body_start + html[body_start..].find("</script>").unwrap()];
        if tag.contains("src=") || body.trim().is_empty() {
            continue;
        }
        assert!(tag.contains(&format!("nonce=\"{nonce}\"")), "{tag}");
        count += 1;
    }
    assert!(count > 0, "the hydration script is inline");

    // Anything that is not a page may run nothing.
    let res = client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(
        res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .split(';')
            .next(),
        Some("default-src 'none'")
    );
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn an_https_public_url_makes_cookies_secure_and_is_answered_to() {
    let server = Server::start_with(&["--public-url", "https://paddock.example.com/"]);
    let res = server
        .client()
        .post(server.url("/api/v1/auth/signup"))
        .header("host", "paddock.example.com")
        .header("origin", "https://paddock.example.com")
        .json(&json!({ "username": "alice", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("Secure"), "{cookie}");
    assert!(res.headers().contains_key("strict-transport-security"));
}

#[tokio::test]
async fn metrics_are_for_admins_and_the_metrics_token() {
    let server = Server::start_with(&["--metrics-token", "scrape-secret-1234"]);
    let admin = server.signup("admin").await;
    let member = server.signup("member").await;
    let get = |client: &reqwest::Client, token: Option<&str>| {
        let mut req = client.get(server.url("/metrics"));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        req.send()
    };
    let anonymous = server.client();
    assert_eq!(
        get(&anonymous, None).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        get(&member.client, None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        get(&anonymous, Some("scrape-secret-123"))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    for (client, token) in [
        (&admin.client, None),
        (&anonymous, Some("scrape-secret-1234")),
    ] {
        let res = get(client, token).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.text().await.unwrap().contains("paddock_users 2"));
    }
}

/// The session table keeps a hash of each id: the cookie a browser holds is in no row, so a copy of the
/// database signs nobody in (a cookie made from a stored key is refused), while the cookie itself works.
#[tokio::test]
async fn session_ids_are_stored_hashed() {
    let server = Server::start();
    server.signup("alice").await;
    let set_cookie = server.anonymous().sign_in_cookie("alice").await;
    let cookie = set_cookie
        .strip_prefix("paddock_session=")
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_string();
    let client = reqwest::Client::new();
    let me = |id: String| {
        client
            .get(server.url("/api/v1/me"))
            .header("cookie", format!("paddock_session={id}"))
            .send()
    };
    assert_eq!(me(cookie.clone()).await.unwrap().status(), StatusCode::OK);
    let url = format!("sqlite://{}", server.db_path().display());
    let db = sqlx::SqlitePool::connect(&url).await.unwrap();
    let keys: Vec<String> = sqlx::query_scalar("SELECT id FROM tower_sessions")
        .fetch_all(&db)
        .await
        .unwrap();
    assert!(!keys.is_empty());
    assert!(
        !keys.contains(&cookie),
        "the cookie's id is stored as it is"
    );
    for key in keys {
        let status = me(key).await.unwrap().status();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "a stored key signs in");
    }
}

/// `/admin` for a signed-in account that is not an instance admin: a 403 page with nothing of the
/// instance's configuration in its HTML (none of the page's sections, not the data directory); the
/// admin gets the page. The page guard answers it before the dashboard renders, with no scripts.
#[tokio::test]
async fn only_instance_admins_get_the_admin_page() {
    let server = Server::start();
    let admin = server.signup("root").await; // the first account is the instance admin
    let member = server.signup("member").await;
    assert!(admin.is_admin && !member.is_admin);
    let page = async |caller: &crate::common::Caller| {
        let res = caller
            .client
            .get(caller.url("/admin"))
            .send()
            .await
            .unwrap();
        (res.status(), res.text().await.unwrap())
    };
    let (code, html) = page(&member).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{html}");
    assert!(
        html.contains(r#"data-testid="forbidden""#) && !html.contains("<script"),
        "{html}"
    );
    let data_dir = server.data_dir().display().to_string();
    let sections = [r#"data-testid="signup-state""#, r#"data-testid="clusters""#];
    for secret in std::iter::once(data_dir.as_str()).chain(sections) {
        assert!(!html.contains(secret), "{secret} in the page a member gets");
    }
    let (code, html) = page(&admin).await;
    assert_eq!(code, StatusCode::OK);
    assert!(html.contains("signup-state") && !html.contains(r#"data-testid="forbidden""#));
}

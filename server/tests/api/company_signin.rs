//! Company sign-in through the real binary: an OpenID provider that the test starts (the npm package
//! `oidc-provider`, `e2e/idp/server.mjs`) and the OpenLDAP directory of `scripts/ldap.sh`. People sign in
//! through the provider's own pages; their groups put them in a workspace; every way a sign-in must be
//! refused is refused, audited, and creates nothing.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use reqwest::{Client, StatusCode, Url};
use serde_json::{json, Value};

use crate::common::*;

/// The test's OpenID provider, stopped when dropped.
struct Idp {
    child: Child,
    issuer: String,
}

impl Idp {
    fn start(redirect_uri: &str, people: Value) -> Idp {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../e2e/idp/server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .env("CLIENT_ID", "paddock")
            .env("CLIENT_SECRET", "idp-client-secret")
            .env("REDIRECT_URIS", redirect_uri)
            .env("PEOPLE", people.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the test OpenID provider (make test installs e2e/node_modules)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let issuer = serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("the provider's first line {line:?}: {e}"))["issuer"]
            .as_str()
            .unwrap()
            .to_string();
        Idp { child, issuer }
    }

    async fn set(&self, what: &str, body: Value) {
        let res = Client::new()
            .post(format!("{}/__test/{what}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn person(login: &str, groups: &[&str]) -> Value {
    json!({ "login": login, "password": format!("{login} password"), "email": format!("{login}@corp.example"), "groups": groups })
}

/// A browser: a client with cookies that follows redirects and remembers where it went.
struct Browser {
    client: Client,
    visited: Arc<Mutex<Vec<Url>>>,
}

impl Browser {
    fn new() -> Browser {
        let visited: Arc<Mutex<Vec<Url>>> = Arc::default();
        let seen = visited.clone();
        let client = Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                seen.lock().unwrap().push(attempt.url().clone());
                if attempt.previous().len() > 10 {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .unwrap();
        Browser { client, visited }
    }

    /// Starts a sign-in at Paddock and types `login`/`password` into the provider's page: where it
    /// ended (the URL) and that page's text.
    async fn sign_in(
        &self,
        server: &Server,
        provider: &str,
        login: &str,
        password: &str,
    ) -> (Url, String) {
        let start = server.url(&format!("/api/v1/auth/oidc/{provider}/start?next=/w/1"));
        let page = self.client.get(start).send().await.unwrap();
        let form_at = page.url().clone();
        if !form_at.path().starts_with("/interaction/") {
            return (form_at, page.text().await.unwrap());
        }
        let res = self
            .client
            .post(format!("{}/login", form_at.as_str().trim_end_matches('/')))
            .form(&[("login", login), ("password", password)])
            .send()
            .await
            .unwrap();
        (res.url().clone(), res.text().await.unwrap())
    }

    /// The callback URL this browser was last sent to.
    fn last_callback(&self) -> Url {
        self.visited
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|u| u.path().ends_with("/callback"))
            .cloned()
            .expect("a callback")
    }

    async fn me(&self, server: &Server) -> StatusCode {
        self.client
            .get(server.url("/api/v1/me"))
            .send()
            .await
            .unwrap()
            .status()
    }
}

fn refused_with(url: &Url) -> Option<String> {
    (url.path() == "/signin")
        .then(|| {
            url.query_pairs()
                .find(|(k, _)| k == "error")
                .map(|(_, v)| v.to_string())
        })
        .flatten()
}

#[tokio::test]
async fn openid_connect_sign_in_maps_groups_and_refuses_every_bad_answer() {
    let server = Server::start();
    let admin = server.signup("admin").await;
    let ws = workspace(&admin).await;
    let redirect = server.url("/api/v1/auth/oidc/corp-sso/callback");
    let idp = Idp::start(
        &redirect,
        json!([person("wang", &["nlp-team"]), person("li", &[])]),
    );
    let (status, provider) = admin
        .post(
            "/api/v1/admin/identity-providers",
            json!({
                "name": "corp-sso", "display_name": "企业统一认证", "secret": "idp-client-secret",
                "settings": { "oidc": { "issuer": idp.issuer, "client_id": "paddock",
                              "scopes": ["profile", "email", "groups"] } }
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{provider}");
    assert_eq!(provider["has_secret"], true);
    assert!(!provider.to_string().contains("idp-client-secret"));
    let id = provider["id"].as_i64().unwrap();
    let (status, _) = admin
        .post(
            &format!("/api/v1/admin/identity-providers/{id}/mappings"),
            json!({ "group": "nlp-team", "grant": { "kind": "workspace", "workspace_id": ws, "role": "editor" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, steps) = admin
        .post(
            &format!("/api/v1/admin/identity-providers/{id}/check"),
            json!({}),
        )
        .await;
    assert_eq!(
        steps
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["ok"] == true)
            .count(),
        2,
        "{steps}"
    );
    let (_, buttons) = server.anonymous().get("/api/v1/auth/providers").await;
    assert_eq!(
        buttons,
        json!([{ "name": "corp-sso", "display_name": "企业统一认证", "kind": "oidc" }])
    );
    let users = || server.count("SELECT COUNT(*) FROM users");
    let before = users().await;

    // A wrong password is the provider's to refuse: its page says so, Paddock never hears of it.
    let browser = Browser::new();
    let (at, page) = browser.sign_in(&server, "corp-sso", "wang", "wrong").await;
    assert!(
        at.as_str().starts_with(&idp.issuer) && page.contains("用户名或密码错误"),
        "{at}"
    );
    assert_eq!(browser.me(&server).await, StatusCode::UNAUTHORIZED);

    // Each bad ID token is refused at the callback, with its reason, audited, creating nothing.
    for (mode, code) in [
        ("bad-signature", "id_token_invalid"),
        ("expired", "id_token_invalid"),
        ("wrong-audience", "id_token_invalid"),
    ] {
        idp.set("mode", json!({ "mode": mode })).await;
        let browser = Browser::new();
        let (at, _) = browser
            .sign_in(&server, "corp-sso", "wang", "wang password")
            .await;
        assert_eq!(refused_with(&at).as_deref(), Some(code), "{mode}: {at}");
        assert_eq!(
            browser.me(&server).await,
            StatusCode::UNAUTHORIZED,
            "{mode}"
        );
    }
    assert_eq!(
        users().await,
        before,
        "a refused sign-in created an account"
    );

    // The provider rotated its keys: the new key is fetched once, and the sign-in goes through.
    idp.set("mode", json!({ "mode": "rotated" })).await;
    let wang = Browser::new();
    let (at, _) = wang
        .sign_in(&server, "corp-sso", "wang", "wang password")
        .await;
    assert_eq!(at.path(), "/w/1", "{at}");
    let me: Value = wang
        .client
        .get(server.url("/api/v1/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["username"], "wang");
    let role = format!("SELECT role FROM members m JOIN users u ON u.id = m.user_id WHERE u.username = 'wang' AND workspace_id = {ws}");
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM ({role}) WHERE role = 'editor'"
            ))
            .await,
        1
    );

    // The same callback again (a replayed state), in this browser and in another: refused.
    let callback = wang.last_callback();
    for replayer in [&wang, &Browser::new()] {
        replayer.client.get(callback.clone()).send().await.unwrap();
        // (A browser still signed in then goes on from the sign-in page to the dashboard.)
        let refused = replayer
            .visited
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find_map(refused_with);
        assert_eq!(refused.as_deref(), Some("sign_in_expired"));
    }

    // Out of the group: the next sign-in takes the workspace away.
    idp.set("people", json!([person("wang", &[]), person("li", &[])]))
        .await;
    let (at, _) = Browser::new()
        .sign_in(&server, "corp-sso", "wang", "wang password")
        .await;
    assert_eq!(at.path(), "/w/1");
    assert_eq!(
        server
            .count(&format!("SELECT COUNT(*) FROM ({role})"))
            .await,
        0
    );

    // Past max_age_secs since the last check, the person's session and tokens stop.
    let token = {
        let wang_caller = Browser::new();
        wang_caller
            .sign_in(&server, "corp-sso", "wang", "wang password")
            .await;
        let res: Value = wang_caller
            .client
            .post(server.url("/api/v1/tokens"))
            .json(&json!({ "name": "laptop" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        res["secret"].as_str().expect("a token").to_string()
    };
    let with_token = |t: &str| {
        Client::new()
            .get(server.url("/api/v1/me"))
            .bearer_auth(t.to_string())
    };
    assert_eq!(
        with_token(&token).send().await.unwrap().status(),
        StatusCode::OK
    );
    server
        .execute("UPDATE user_identities SET verified_at = verified_at - 50000")
        .await;
    assert_eq!(
        with_token(&token).send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(wang.me(&server).await, StatusCode::UNAUTHORIZED);

    // A provider that does not answer: refused as unavailable.
    let (status, _) = admin
        .post(
            "/api/v1/admin/identity-providers",
            json!({
                "name": "down", "display_name": "停机的", "secret": "x",
                "settings": { "oidc": { "issuer": "http://127.0.0.1:1", "client_id": "paddock" } }
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (at, _) = Browser::new()
        .sign_in(&server, "down", "wang", "wang password")
        .await;
    assert_eq!(
        refused_with(&at).as_deref(),
        Some("identity_provider_unavailable")
    );

    // Every refusal is in the instance's audit log with its code; non-admins may not read it.
    let (_, log) = admin.get("/api/v1/admin/audit").await;
    let codes: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "signin.refused")
        .filter_map(|e| serde_json::from_str::<Value>(e["detail"].as_str()?).ok())
        .filter_map(|d| d["code"].as_str().map(str::to_string))
        .collect();
    for code in [
        "id_token_invalid",
        "sign_in_expired",
        "identity_provider_unavailable",
    ] {
        assert!(
            codes.iter().any(|c| c == code),
            "{code} not audited: {codes:?}"
        );
    }
    let someone = server.signup("someone").await;
    let (status, _) = someone.get("/api/v1/admin/audit").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn ldap_sign_in_over_rest_and_the_password_switch() {
    let server = Server::start();
    let admin = server.signup("admin").await;
    let member = server.signup("member").await;
    let ws = workspace(&admin).await;
    let ca = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/ldap/ca.pem"
    ))
    .expect("the test directory's CA (scripts/ldap.sh)");
    let provider = json!({
        "name": "corp-ldap", "display_name": "公司目录", "secret": "service",
        "settings": {
            "ldap": { "url": "ldap://127.0.0.1:13389", "ca_pem": ca,
            "bind_dn": "cn=paddock,ou=services,dc=paddock,dc=test",
            "user_base": "ou=people,dc=paddock,dc=test",
            "groups": { "style": "member_attribute", "base": "ou=groups,dc=paddock,dc=test" }
        } }
    });
    let (status, _) = member
        .post("/api/v1/admin/identity-providers", &provider)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut bad = provider.clone();
    bad["settings"]["ldap"]["url"] = json!("ldap://dc.corp.example");
    bad["settings"]["ldap"]["starttls"] = json!(false);
    bad["settings"]["ldap"]["user_filter"] = json!("(uid=*)");
    let (status, e) = admin.post("/api/v1/admin/identity-providers", &bad).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<&str> = e["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        ["settings.ldap.starttls", "settings.ldap.user_filter"]
    );
    let (status, created) = admin
        .post("/api/v1/admin/identity-providers", &provider)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_i64().unwrap();
    let (_, steps) = admin
        .post(
            &format!("/api/v1/admin/identity-providers/{id}/check"),
            json!({ "username": "nobody-at-all" }),
        )
        .await;
    let last = steps.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["step"].as_str(), last["ok"].as_bool()),
        (Some("search"), Some(false)),
        "{steps}"
    );

    // The directory's service account can read, so the test's people are added as its manager.
    let tag = format!("{:08x}", rand_tag());
    let uid = format!("zhang-{tag}");
    ldapadd(&format!(
        "dn: uid={uid},ou=people,dc=paddock,dc=test\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: 张\nmail: {uid}@corp.example\nuserPassword: zhang password\n\n\
         dn: cn=nlp-{tag},ou=groups,dc=paddock,dc=test\nobjectClass: groupOfNames\ncn: nlp-{tag}\nmember: uid={uid},ou=people,dc=paddock,dc=test\n"
    ));
    let (status, _) = admin
        .post(
            &format!("/api/v1/admin/identity-providers/{id}/mappings"),
            json!({ "group": format!("nlp-{tag}"), "grant": { "kind": "workspace", "workspace_id": ws, "role": "viewer" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let person = server.anonymous();
    let path = "/api/v1/auth/ldap/corp-ldap/signin";
    let (status, e) = person
        .post(path, json!({ "username": uid, "password": "" }))
        .await;
    assert_eq!(
        (status, e["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("password_required"))
    );
    let (status, _) = person
        .post(
            path,
            json!({ "username": "*", "password": "zhang password" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, me) = person
        .post(
            path,
            json!({ "username": uid, "password": "zhang password" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    let (status, _) = person.get(&format!("/api/v1/workspaces/{ws}")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the group's workspace is theirs to read"
    );

    // Password sign-in closed to all but the break-glass admin.
    let (status, _) = admin
        .patch(
            "/api/v1/admin/settings",
            json!({ "password_sign_in": "admins" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, e) = server
        .anonymous()
        .post(
            "/api/v1/auth/signin",
            json!({ "username": "member", "password": PASSWORD }),
        )
        .await;
    assert_eq!(
        (status, e["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("password_sign_in_disabled"))
    );
    let (status, _) = server
        .anonymous()
        .post(
            "/api/v1/auth/signin",
            json!({ "username": "admin", "password": PASSWORD }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

fn rand_tag() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    nanos ^ std::process::id()
}

/// Adds entries to the test directory as its manager (`ldapadd`, Debian's ldap-utils).
fn ldapadd(ldif: &str) {
    use std::io::Write;
    let mut child = Command::new("ldapadd")
        .args([
            "-x",
            "-H",
            "ldap://127.0.0.1:13389",
            "-D",
            "cn=admin,dc=paddock,dc=test",
            "-w",
            "manager",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("ldapadd (scripts/ldap.sh installs ldap-utils)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ldif.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "ldapadd failed");
}

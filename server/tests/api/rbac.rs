//! The RBAC matrix: owner, editor, viewer, non-member and anonymous × every workspace route, with the
//! exact status of each cell, plus the instance-level routes × admin, user and anonymous. A
//! non-member's 404 must be indistinguishable from a missing workspace and never contain its name.

use std::time::Duration;

use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

use crate::common::{add_member, eventually, Server};

const SECRET_NAME: &str = "Secret Project Ω";

async fn call(
    client: &Client,
    server: &Server,
    method: &Method,
    path: &str,
    body: &Option<Value>,
) -> (StatusCode, String) {
    let mut req = client.request(method.clone(), server.url(path));
    if let Some(body) = body {
        req = req.json(body);
    }
    let res = req.send().await.unwrap();
    (res.status(), res.text().await.unwrap())
}

#[tokio::test]
async fn workspace_routes_by_role() {
    let server = Server::start();
    let owner = server.signup("owner").await;
    let editor = server.signup("editor").await;
    let viewer = server.signup("viewer").await;
    let outsider = server.signup("outsider").await;
    let erin = server.signup("erin").await;
    server.signup("frank").await;
    let anonymous = server.client();

    let (status, ws) = owner
        .post("/api/v1/workspaces", json!({ "name": SECRET_NAME }))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = ws["id"].as_i64().unwrap();
    for (name, role) in [
        ("editor", "editor"),
        ("viewer", "viewer"),
        ("erin", "viewer"),
    ] {
        add_member(&owner, id, name, role).await;
    }

    let clients = [
        ("anonymous", &anonymous),
        ("non-member", &outsider.client),
        ("viewer", &viewer.client),
        ("editor", &editor.client),
        ("owner", &owner.client),
    ];
    use StatusCode as S;
    let (ok, created, gone) = (S::OK, S::CREATED, S::NO_CONTENT);
    let (forbidden, missing, unauth) = (S::FORBIDDEN, S::NOT_FOUND, S::UNAUTHORIZED);
    let workspace = format!("/api/v1/workspaces/{id}");
    let erin_member = format!("{workspace}/members/{}", erin.id);
    let frank = json!({ "username": "frank", "role": "viewer" });
    // Each row's statuses are for the callers above, in their order: the owner goes last, so a
    // successful destructive call cannot change what the other cells see; rows that delete run at the end.
    #[rustfmt::skip]
    let matrix: Vec<(Method, String, Option<Value>, [StatusCode; 5])> = vec![
        (Method::GET,    workspace.clone(),                None,                                [unauth, missing, ok, ok, ok]),
        (Method::PATCH,  workspace.clone(),                Some(json!({ "name": SECRET_NAME })), [unauth, missing, forbidden, forbidden, ok]),
        (Method::GET,    format!("{workspace}/members"),   None,                                [unauth, missing, ok, ok, ok]),
        (Method::POST,   format!("{workspace}/members"),   Some(frank),                         [unauth, missing, forbidden, forbidden, created]),
        (Method::PATCH,  erin_member.clone(),              Some(json!({ "role": "editor" })),   [unauth, missing, forbidden, forbidden, ok]),
        (Method::GET,    format!("{workspace}/activity"),  None,                                [unauth, missing, ok, ok, ok]),
        (Method::DELETE, erin_member,                      None,                                [unauth, missing, forbidden, forbidden, gone]),
        (Method::DELETE, workspace,                        None,                                [unauth, missing, forbidden, forbidden, gone]),
    ];

    let mut failures = Vec::new();
    for (method, path, body, expected) in &matrix {
        for ((who, client), expect) in clients.iter().zip(expected) {
            let (status, text) = call(client, &server, method, path, body).await;
            if status != *expect {
                failures.push(format!(
                    "{method} {path} as {who}: expected {expect}, got {status}: {text}"
                ));
            }
            if *who == "non-member" {
                assert!(
                    !text.contains("Secret"),
                    "a non-member's response reveals the name: {text}"
                );
                let (missing_status, missing_text) = call(
                    client,
                    &server,
                    method,
                    &path.replace(&format!("/workspaces/{id}"), "/workspaces/987654"),
                    body,
                )
                .await;
                assert_eq!(
                    (status, text.as_str()),
                    (missing_status, missing_text.as_str()),
                    "non-member vs missing: {method} {path}"
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "RBAC matrix mismatches:\n{}",
        failures.join("\n")
    );

    // Outcomes really happened (and only the owner's): the deletion at once, its purge soon after.
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM workspaces WHERE deleting_since IS NULL")
            .await,
        0
    );
    eventually("the purge", Duration::from_secs(30), async || {
        server.count("SELECT COUNT(*) FROM workspaces").await == 0
    })
    .await;
    assert_eq!(
        server
            .count(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'member.add' AND resource = 'frank'"
            )
            .await,
        1
    );
}

#[tokio::test]
async fn members_may_leave_and_last_owner_stays() {
    let server = Server::start();
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let (_, ws) = owner
        .post("/api/v1/workspaces", json!({ "name": "W" }))
        .await;
    let id = ws["id"].as_i64().unwrap();
    let workspace = format!("/api/v1/workspaces/{id}");
    add_member(&owner, id, "viewer", "viewer").await;
    let as_owner = format!("{workspace}/members/{}", owner.id);
    let (status, body) = owner.delete(&as_owner).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("last_owner"))
    );
    let (status, body) = owner.patch(&as_owner, json!({ "role": "viewer" })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("last_owner"))
    );
    let (status, _) = viewer
        .delete(&format!("{workspace}/members/{}", viewer.id))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(viewer.get(&workspace).await.0, StatusCode::NOT_FOUND);

    let (_, activity) = owner.get(&format!("{workspace}/activity")).await;
    let first = &activity[0];
    assert_eq!(
        (first["action"].as_str(), first["actor"].as_str()),
        (Some("member.leave"), Some("viewer"))
    );
    assert_eq!(first["ip"].as_str(), Some("127.0.0.1"));
}

#[tokio::test]
async fn instance_routes_by_role() {
    let server = Server::start();
    let admin = server.signup("admin").await;
    let user = server.signup("user").await;
    let anonymous = server.client();
    use StatusCode as S;
    let (ok, created, unauth) = (S::OK, S::CREATED, S::UNAUTHORIZED);
    let (forbidden, missing) = (S::FORBIDDEN, S::NOT_FOUND);
    // (method, path, body, [anonymous, user, admin])
    #[rustfmt::skip]
    let routes: Vec<(Method, &str, Option<Value>, [StatusCode; 3])> = vec![
        (Method::GET,    "/api/v1/me",                 None,                                      [unauth, ok, ok]),
        (Method::GET,    "/api/v1/workspaces",         None,                                      [unauth, ok, ok]),
        (Method::POST,   "/api/v1/workspaces",         Some(json!({ "name": "x" })),              [unauth, created, created]),
        (Method::GET,    "/api/v1/tokens",             None,                                      [unauth, ok, ok]),
        (Method::POST,   "/api/v1/tokens",             Some(json!({ "name": "t" })),              [unauth, created, created]),
        (Method::DELETE, "/api/v1/tokens/987654",      None,                                      [unauth, missing, missing]),
        (Method::GET,    "/api/v1/admin/settings",     None,                                      [unauth, forbidden, ok]),
        (Method::PATCH,  "/api/v1/admin/settings",     Some(json!({ "signup_enabled": true })),   [unauth, forbidden, ok]),
        (Method::GET,    "/api/v1/admin/users",        None,                                      [unauth, forbidden, ok]),
        (Method::PATCH,  "/api/v1/admin/users/987654", Some(json!({ "disabled": false })),        [unauth, forbidden, missing]),
    ];
    let mut failures = Vec::new();
    for (method, path, body, expected) in &routes {
        for (client, who, expect) in [
            (&anonymous, "anonymous", expected[0]),
            (&user.client, "user", expected[1]),
            (&admin.client, "admin", expected[2]),
        ] {
            let (status, text) = call(client, &server, method, path, body).await;
            if status != expect {
                failures.push(format!(
                    "{method} {path} as {who}: expected {expect}, got {status}: {text}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

//! The RBAC matrix: owner, editor, viewer, non-member and anonymous × every workspace route, with the
//! exact status of each cell, plus the instance-level routes × admin, user and anonymous. A
//! non-member's 404 must be indistinguishable from a missing workspace and never contain its name.

use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

use crate::common::{status_json, Server};

const SECRET_NAME: &str = "Secret Project Ω";

struct Cell {
    who: &'static str,
    expect: StatusCode,
}

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

    let (status, ws) = status_json(
        owner
            .client
            .post(server.url("/api/v1/workspaces"))
            .json(&json!({ "name": SECRET_NAME }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = ws["id"].as_i64().unwrap();
    for (name, role) in [
        ("editor", "editor"),
        ("viewer", "viewer"),
        ("erin", "viewer"),
    ] {
        let res = owner
            .client
            .post(server.url(&format!("/api/v1/workspaces/{id}/members")))
            .json(&json!({ "username": name, "role": role }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }

    let clients = [
        ("anonymous", &anonymous),
        ("non-member", &outsider.client),
        ("viewer", &viewer.client),
        ("editor", &editor.client),
        ("owner", &owner.client),
    ];
    use StatusCode as S;
    let (ok, created, gone, forbidden, missing, unauth) = (
        S::OK,
        S::CREATED,
        S::NO_CONTENT,
        S::FORBIDDEN,
        S::NOT_FOUND,
        S::UNAUTHORIZED,
    );
    let row = |anon, nm, v, e, o| {
        vec![
            Cell {
                who: "anonymous",
                expect: anon,
            },
            Cell {
                who: "non-member",
                expect: nm,
            },
            Cell {
                who: "viewer",
                expect: v,
            },
            Cell {
                who: "editor",
                expect: e,
            },
            Cell {
                who: "owner",
                expect: o,
            },
        ]
    };
    let erin_id = erin.id;
    // Within each row the owner goes last, so a successful destructive call cannot change what the
    // other cells see; rows that delete run at the end.
    let matrix: Vec<(Method, String, Option<Value>, Vec<Cell>)> = vec![
        (
            Method::GET,
            format!("/api/v1/workspaces/{id}"),
            None,
            row(unauth, missing, ok, ok, ok),
        ),
        (
            Method::PATCH,
            format!("/api/v1/workspaces/{id}"),
            Some(json!({ "name": SECRET_NAME })),
            row(unauth, missing, forbidden, forbidden, ok),
        ),
        (
            Method::GET,
            format!("/api/v1/workspaces/{id}/members"),
            None,
            row(unauth, missing, ok, ok, ok),
        ),
        (
            Method::POST,
            format!("/api/v1/workspaces/{id}/members"),
            Some(json!({ "username": "frank", "role": "viewer" })),
            row(unauth, missing, forbidden, forbidden, created),
        ),
        (
            Method::PATCH,
            format!("/api/v1/workspaces/{id}/members/{erin_id}"),
            Some(json!({ "role": "editor" })),
            row(unauth, missing, forbidden, forbidden, ok),
        ),
        (
            Method::GET,
            format!("/api/v1/workspaces/{id}/activity"),
            None,
            row(unauth, missing, ok, ok, ok),
        ),
        (
            Method::DELETE,
            format!("/api/v1/workspaces/{id}/members/{erin_id}"),
            None,
            row(unauth, missing, forbidden, forbidden, gone),
        ),
        (
            Method::DELETE,
            format!("/api/v1/workspaces/{id}"),
            None,
            row(unauth, missing, forbidden, forbidden, gone),
        ),
    ];

    let mut failures = Vec::new();
    for (method, path, body, cells) in &matrix {
        for cell in cells {
            let client = clients.iter().find(|(who, _)| *who == cell.who).unwrap().1;
            let (status, text) = call(client, &server, method, path, body).await;
            if status != cell.expect {
                failures.push(format!(
                    "{method} {path} as {}: expected {}, got {status}: {text}",
                    cell.who, cell.expect
                ));
            }
            if cell.who == "non-member" {
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
    let purged_by = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.count("SELECT COUNT(*) FROM workspaces").await > 0 {
        assert!(
            std::time::Instant::now() < purged_by,
            "the purge never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
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
    let (_, ws) = status_json(
        owner
            .client
            .post(server.url("/api/v1/workspaces"))
            .json(&json!({ "name": "W" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let id = ws["id"].as_i64().unwrap();
    owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{id}/members")))
        .json(&json!({ "username": "viewer", "role": "viewer" }))
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(
        owner
            .client
            .delete(server.url(&format!("/api/v1/workspaces/{id}/members/{}", owner.id)))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("last_owner"))
    );
    let (status, body) = status_json(
        owner
            .client
            .patch(server.url(&format!("/api/v1/workspaces/{id}/members/{}", owner.id)))
            .json(&json!({ "role": "viewer" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("last_owner"))
    );
    let res = viewer
        .client
        .delete(server.url(&format!("/api/v1/workspaces/{id}/members/{}", viewer.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        viewer
            .client
            .get(server.url(&format!("/api/v1/workspaces/{id}")))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::NOT_FOUND
    );

    let (_, activity) = status_json(
        owner
            .client
            .get(server.url(&format!("/api/v1/workspaces/{id}/activity")))
            .send()
            .await
            .unwrap(),
    )
    .await;
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
    // (method, path, body, anonymous, user, admin)
    let routes: Vec<(Method, &str, Option<Value>, [StatusCode; 3])> = vec![
        (
            Method::GET,
            "/api/v1/me",
            None,
            [S::UNAUTHORIZED, S::OK, S::OK],
        ),
        (
            Method::GET,
            "/api/v1/workspaces",
            None,
            [S::UNAUTHORIZED, S::OK, S::OK],
        ),
        (
            Method::POST,
            "/api/v1/workspaces",
            Some(json!({ "name": "x" })),
            [S::UNAUTHORIZED, S::CREATED, S::CREATED],
        ),
        (
            Method::GET,
            "/api/v1/tokens",
            None,
            [S::UNAUTHORIZED, S::OK, S::OK],
        ),
        (
            Method::POST,
            "/api/v1/tokens",
            Some(json!({ "name": "t" })),
            [S::UNAUTHORIZED, S::CREATED, S::CREATED],
        ),
        (
            Method::DELETE,
            "/api/v1/tokens/987654",
            None,
            [S::UNAUTHORIZED, S::NOT_FOUND, S::NOT_FOUND],
        ),
        (
            Method::GET,
            "/api/v1/admin/settings",
            None,
            [S::UNAUTHORIZED, S::FORBIDDEN, S::OK],
        ),
        (
            Method::PATCH,
            "/api/v1/admin/settings",
            Some(json!({ "signup_enabled": true })),
            [S::UNAUTHORIZED, S::FORBIDDEN, S::OK],
        ),
        (
            Method::GET,
            "/api/v1/admin/users",
            None,
            [S::UNAUTHORIZED, S::FORBIDDEN, S::OK],
        ),
        (
            Method::PATCH,
            "/api/v1/admin/users/987654",
            Some(json!({ "disabled": false })),
            [S::UNAUTHORIZED, S::FORBIDDEN, S::NOT_FOUND],
        ),
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

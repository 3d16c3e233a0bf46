//! Environments through the real binary and the real Docker daemon: REST with the build log over SSE, a
//! shell over the WebSocket terminal, the `paddock env` CLI, Docker events reaching the database when a
//! container is removed behind Paddock's back, access rules over HTTP, and a server without Docker that
//! says so and keeps working. Each server has its own data directory, hence its own instance label; a
//! guard removes that label's containers and volumes even when a test fails.

use std::process::Command;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{status_json, workspace, DockerCleanup, Server, User};

pub(crate) fn docker_tests_skipped() -> bool {
    std::env::var("PADDOCK_TEST_DOCKER").as_deref() == Ok("skip")
}

fn spec(name: &str) -> Value {
    json!({ "name": name, "base_image": "paddock/base:busybox", "cpus": 0.5, "memory": "64m", "shm_size": "16m" })
}

/// Reads the SSE build log to its `end` event; returns (log text, final status).
async fn follow_log(user: &User, server: &Server, ws: i64, env: i64) -> (String, String) {
    let url = server.url(&format!(
        "/api/v1/workspaces/{ws}/environments/{env}/versions/1/log"
    ));
    let mut res = user.client.get(url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(120), res.chunk())
        .await
        .expect("log stalled")
        .unwrap()
    {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(at) = text.find("event: end") {
            let data = text[at..]
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or("{}");
            let status: Value = serde_json::from_str(data).unwrap();
            return (text, status["status"].as_str().unwrap().to_string());
        }
    }
    panic!("the log stream ended without an end event:\n{text}");
}

async fn wait_status(user: &User, server: &Server, ws: i64, env: i64, want: &str) -> Value {
    let url = server.url(&format!("/api/v1/workspaces/{ws}/environments/{env}"));
    for _ in 0..100 {
        let (_, detail) = status_json(user.client.get(&url).send().await.unwrap()).await;
        if detail["summary"]["status"] == want {
            return detail;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("environment {env} never became {want}");
}

#[tokio::test]
async fn build_log_terminal_events_and_access_over_http() {
    if docker_tests_skipped() {
        return;
    }
    let server = Server::start();
    let _cleanup = DockerCleanup::of(&server).await;
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let outsider = server.signup("outsider").await;
    let ws = workspace(&owner, &server).await;
    owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/members")))
        .json(&json!({ "username": "viewer", "role": "viewer" }))
        .send()
        .await
        .unwrap();

    let (status, docker) = status_json(
        owner
            .client
            .get(server.url("/api/v1/docker"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, docker["available"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{docker}"
    );

    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
        .json(&spec("shell"))
        .send()
        .await
        .unwrap();
    let (status, created) = status_json(res).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let env = created["summary"]["id"].as_i64().unwrap();
    let (log, build) = follow_log(&owner, &server, ws, env).await;
    assert_eq!(build, "built", "{log}");
    assert!(log.contains("event: log"), "the log streams output: {log}");

    let base = format!("/api/v1/workspaces/{ws}/environments/{env}");
    // Viewers read but cannot act; outsiders see nothing.
    assert_eq!(
        viewer
            .client
            .get(server.url(&base))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        viewer
            .client
            .post(server.url(&format!("{base}/up")))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        outsider
            .client
            .get(server.url(&base))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::NOT_FOUND
    );

    let (status, up) = status_json(
        owner
            .client
            .post(server.url(&format!("{base}/up")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, up["summary"]["status"].as_str()),
        (StatusCode::OK, Some("running")),
        "{up}"
    );
    let (status, out) = status_json(
        owner
            .client
            .post(server.url(&format!("{base}/exec")))
            .json(&json!({ "cmd": ["id", "-u"] }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, out["stdout"].as_str().map(str::trim)),
        (StatusCode::OK, Some("1000")),
        "{out}"
    );

    // The terminal: a viewer is refused at the handshake; the owner gets a shell.
    let ws_url = server
        .url(&format!("{base}/terminal?rows=30&cols=100"))
        .replacen("http", "ws", 1);
    let refused = open_terminal(&ws_url, &server, &viewer).await.unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");

    let mut socket = open_terminal(&ws_url, &server, &owner)
        .await
        .expect("terminal handshake");
    socket
        .send(Message::Text(
            json!({ "resize": [40, 120] }).to_string().into(),
        ))
        .await
        .unwrap();
    socket
        .send(Message::Text(
            json!({ "input": "echo sum=$((6*7)); stty size\r" })
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    let mut screen = String::new();
    while !(screen.contains("sum=42") && screen.contains("40 120")) {
        match tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("terminal output")
            .unwrap()
            .unwrap()
        {
            Message::Binary(bytes) => screen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("unexpected {other:?} after {screen:?}"),
        }
    }
    socket
        .send(Message::Text(
            json!({ "input": "exit 3\r" }).to_string().into(),
        ))
        .await
        .unwrap();
    let exit = loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("exit")
            .unwrap()
            .unwrap()
        {
            Message::Text(text) => break serde_json::from_str::<Value>(&text).unwrap(),
            Message::Binary(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(exit["exit"], 3);

    // An open terminal is closed within seconds once its user loses access.
    let res = owner
        .client
        .patch(server.url(&format!("/api/v1/workspaces/{ws}/members/{}", viewer.id)))
        .json(&json!({ "role": "editor" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let socket = open_terminal(&ws_url, &server, &viewer)
        .await
        .expect("an editor's terminal handshake");
    let res = owner
        .client
        .delete(server.url(&format!("/api/v1/workspaces/{ws}/members/{}", viewer.id)))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    closes_soon(socket, "its user was removed").await;

    // A revoked token closes the terminal opened with it...
    let (status, created) = status_json(
        owner
            .client
            .post(server.url("/api/v1/tokens"))
            .json(&json!({ "name": "shell" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let mut request = ws_url.as_str().into_client_request().unwrap();
    let bearer = format!("Bearer {}", created["secret"].as_str().unwrap());
    request
        .headers_mut()
        .insert("authorization", bearer.parse().unwrap());
    let socket = tokio_tungstenite::connect_async(request)
        .await
        .expect("a token's terminal handshake")
        .0;
    let token_url = server.url(&format!(
        "/api/v1/tokens/{}",
        created["token"]["id"].as_i64().unwrap()
    ));
    let res = owner.client.delete(token_url).send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    closes_soon(socket, "the token was revoked").await;
    // ...and a password reset every terminal of the account's sessions.
    let socket = open_terminal(&ws_url, &server, &owner)
        .await
        .expect("terminal handshake");
    let owner_name = sign_in_name(&server, &owner).await;
    let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["admin", "reset-password", "--username", &owner_name])
        .args(["--password", "a brand new password", "--data-dir"])
        .arg(server.dir.path().join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    closes_soon(socket, "the password was reset").await;
    let res = owner
        .client
        .post(server.url("/api/v1/auth/signin"))
        .json(&json!({ "username": owner_name, "password": "a brand new password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // Removed behind Paddock's back: Docker's events reach the database without waiting for reconcile.
    let container = up["container_name"].as_str().unwrap().to_string();
    assert!(Command::new("docker")
        .args(["rm", "-f", &container])
        .status()
        .unwrap()
        .success());
    let missing = wait_status(&owner, &server, ws, env, "missing").await;
    assert!(
        missing["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "missing"),
        "{missing}"
    );

    let res = owner.client.delete(server.url(&base)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

/// Waits (10 s at most) for the server to close `socket` because its user lost access (`why`).
async fn closes_soon(
    mut socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    why: &str,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, socket.next()).await {
            Err(_) => panic!("the terminal stays open after {why}"),
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// The raw `Cookie` header a signed-in client sends (the WebSocket client has no cookie jar).
/// Opens the terminal WebSocket at `url` with `user`'s session cookie.
async fn open_terminal(
    url: &str,
    server: &Server,
    user: &User,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let session = session_cookie(server, user).await;
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", session.parse().unwrap());
    Ok(tokio_tungstenite::connect_async(request).await?.0)
}

async fn session_cookie(server: &Server, user: &User) -> String {
    use reqwest::cookie::CookieStore;
    // The test client keeps its jar private; sign in again with a jar we can read.
    let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let client = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .build()
        .unwrap();
    let name = sign_in_name(server, user).await;
    let res = client
        .post(server.url("/api/v1/auth/signin"))
        .json(&json!({ "username": name, "password": crate::common::PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let url = server.base.parse().unwrap();
    jar.cookies(&url).unwrap().to_str().unwrap().to_string()
}

async fn sign_in_name(server: &Server, user: &User) -> String {
    let (_, me) = status_json(
        user.client
            .get(server.url("/api/v1/me"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    me["username"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_cli_manages_environments_with_a_token() {
    if docker_tests_skipped() {
        return;
    }
    let server = Server::start();
    let _cleanup = DockerCleanup::of(&server).await;
    let owner = server.signup("owner").await;
    let ws = workspace(&owner, &server).await;
    let (_, token) = status_json(
        owner
            .client
            .post(server.url("/api/v1/tokens"))
            .json(&json!({ "name": "cli" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let token = token["secret"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let spec_file = dir.path().join("env.toml");
    std::fs::write(&spec_file, "name = \"cli-env\"\nbase_image = \"paddock/base:busybox\"\ncpus = 0.5\nmemory = \"64m\"\nshm_size = \"16m\"\n[env]\nLANG = \"C.UTF-8\"\n").unwrap();
    let paddock = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
            .arg("env")
            .args(args)
            .env("PADDOCK_SERVER", &server.base)
            .env("PADDOCK_TOKEN", &token)
            .env("PADDOCK_WORKSPACE", ws.to_string())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = paddock(&[
        "create",
        "--spec",
        spec_file.to_str().unwrap(),
        "--memory",
        "96m",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("cli-env") && out.contains("sha256:"),
        "shows the lock: {out}"
    );
    let (code, out, _) = paddock(&["list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("cli-env") && out.contains("built"), "{out}");
    let (code, out, err) = paddock(&["up", "cli-env"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("running"), "{out}");
    let (code, out, _) = paddock(&["exec", "cli-env", "--", "sh", "-c", "echo $LANG; exit 5"]);
    assert_eq!(
        (code, out.trim()),
        (Some(5), "C.UTF-8"),
        "the command's exit code is the CLI's"
    );
    let (code, out, _) = paddock(&["--json", "show", "cli-env"]);
    assert_eq!(code, Some(0));
    let detail: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        detail["spec"]["memory"], "96m",
        "flags override the spec file"
    );
    let (code, out, _) = paddock(&["down", "cli-env"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("stopped"), "{out}");
    let (code, _, err) = paddock(&["rm", "cli-env"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = paddock(&["up", "cli-env"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no environment \"cli-env\""), "{err}");
    // Bad input: a clear error naming the field, nothing created.
    let (code, _, err) = paddock(&["create", "--name", "bad", "--memory", "lots"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("memory"), "{err}");
    assert_eq!(server.count("SELECT COUNT(*) FROM environments").await, 0);
}

/// Without Docker the server retries every reconcile tick and on requests; its log says "unavailable"
/// once, not at every retry (the retries themselves are logged at debug level, counted here).
#[tokio::test]
async fn without_docker_the_log_says_so_once() {
    let server = Server::start_with_env(
        &[
            "--docker-host",
            "unix:///nonexistent/docker.sock",
            "--reconcile-seconds",
            "1",
        ],
        &[("RUST_LOG", "info,domain::engine=debug")],
    );
    let owner = server.signup("owner").await;
    let log = || std::fs::read_to_string(server.dir.path().join("server.log")).unwrap();
    let mut retries = 0;
    for _ in 0..300 {
        // Requests retry too.
        owner
            .client
            .get(server.url("/api/v1/docker"))
            .send()
            .await
            .unwrap();
        retries = log().matches("Docker is still unavailable").count();
        if retries >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(retries >= 3, "the server did not retry:\n{}", log());
    assert_eq!(
        log().matches("Docker is unavailable").count(),
        1,
        "{}",
        log()
    );
}

#[tokio::test]
async fn without_docker_the_dashboard_says_so_and_everything_else_works() {
    let server = Server::start_with(&["--docker-host", "unix:///nonexistent/docker.sock"]);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner, &server).await;
    let (status, docker) = status_json(
        owner
            .client
            .get(server.url("/api/v1/docker"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(docker["available"], false);
    assert!(
        docker["message"]
            .as_str()
            .unwrap()
            .contains("Docker is not available"),
        "{docker}"
    );
    assert!(
        !docker["catalog"].as_array().unwrap().is_empty(),
        "the catalog is still shown"
    );

    let res = owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
        .json(&spec("nope"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(res).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("docker_unavailable")),
        "{body}"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM environments").await, 0);
    let (status, list) = status_json(
        owner
            .client
            .get(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, list), (StatusCode::OK, json!([])));
    assert_eq!(
        owner
            .client
            .get(server.url(&format!("/api/v1/workspaces/{ws}/members")))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        owner
            .client
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
}

/// An environment named `name` in `ws`, built and running: its API path and container name.
pub(crate) async fn running(user: &User, server: &Server, ws: i64, name: &str) -> (String, String) {
    let (status, created) = status_json(
        user.client
            .post(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
            .json(&spec(name))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let env = created["summary"]["id"].as_i64().unwrap();
    let (log, build) = follow_log(user, server, ws, env).await;
    assert_eq!(build, "built", "{log}");
    let base = format!("/api/v1/workspaces/{ws}/environments/{env}");
    let (status, up) = status_json(
        user.client
            .post(server.url(&format!("{base}/up")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{up}");
    let container = up["summary"]["container_name"]
        .as_str()
        .or(up["container_name"].as_str())
        .unwrap_or_else(|| panic!("no container name in {up}"))
        .to_string();
    (base, container)
}

pub(crate) async fn exec(user: &User, server: &Server, base: &str, script: &str) -> String {
    let (status, out) = status_json(
        user.client
            .post(server.url(&format!("{base}/exec")))
            .json(&json!({ "cmd": ["sh", "-c", script] }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    out["stdout"].as_str().unwrap_or_default().to_string()
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(out.status.success(), "docker {args:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn each_workspace_has_its_own_network_and_its_deletion_removes_it() {
    if docker_tests_skipped() {
        return;
    }
    let server = Server::start();
    let cleanup = DockerCleanup::of(&server).await;
    let alice = server.signup("alice").await;
    let bob = server.signup("bob").await;
    let ws_a = workspace(&alice, &server).await;
    let ws_b = workspace(&bob, &server).await;
    let (a1, _) = running(&alice, &server, ws_a, "a-one").await;
    let (b1, b1_container) = running(&bob, &server, ws_b, "b-one").await;
    let (b2, _) = running(&bob, &server, ws_b, "b-two").await;

    // A service in workspace B (what an endpoint replica or a notebook server would be).
    exec(&bob, &server, &b1, "busybox httpd -p 8080 -h /workspace").await;
    let ip = docker_lines(&[
        "inspect",
        "-f",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
        &b1_container,
    ])
    .concat();
    assert!(!ip.is_empty(), "b-one has an address");
    let probe =
        format!("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 3 nc {ip} 8080 | head -1; true");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let same = exec(&bob, &server, &b2, &probe).await;
        if same.contains("HTTP/1") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "b-two never reached b-one: {same:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let other = exec(&alice, &server, &a1, &probe).await;
    assert!(
        !other.contains("HTTP/1"),
        "workspace A reached workspace B's container: {other:?}"
    );

    // Deleting workspace B removes its containers, volume and network.
    let res = bob
        .client
        .delete(server.url(&format!("/api/v1/workspaces/{ws_b}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let ours = |kind: &str| {
        let mut args = vec![kind, "ls", "-q"];
        if kind == "container" {
            args.push("-a");
        }
        let instance = format!("label=paddock.instance={}", cleanup.instance);
        let workspace = format!("label=paddock.workspace={ws_b}");
        let mut full: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        full.extend(["--filter".into(), instance, "--filter".into(), workspace]);
        docker_lines(&full.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server
        .count(&format!(
            "SELECT COUNT(*) FROM workspaces WHERE id = {ws_b}"
        ))
        .await
        > 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the purge never ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for kind in ["container", "volume", "network"] {
        assert_eq!(
            ours(kind),
            Vec::<String>::new(),
            "{kind}s of workspace B are left"
        );
    }
    // Workspace A is untouched.
    assert!(exec(&alice, &server, &a1, "echo alive")
        .await
        .contains("alive"));
}

#[tokio::test]
async fn secret_variables_reach_the_container_but_never_a_reader_or_the_image() {
    if docker_tests_skipped() {
        return;
    }
    let server = Server::start();
    let _cleanup = DockerCleanup::of(&server).await;
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let ws = workspace(&owner, &server).await;
    owner
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/members")))
        .json(&json!({ "username": "viewer", "role": "viewer" }))
        .send()
        .await
        .unwrap();
    let secret = "hf_0123456789abcdefSECRET";
    let mut with_secret = spec("secretive");
    with_secret["secret_env"] = json!({ "HF_TOKEN": secret });
    // A new secret without a value is refused at its field, and nothing is created.
    let mut empty = spec("empty-secret");
    empty["secret_env"] = json!({ "HF_TOKEN": "" });
    let (status, body) = status_json(
        owner
            .client
            .post(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
            .json(&empty)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("secret_env")),
        "{body}"
    );
    let (status, created) = status_json(
        owner
            .client
            .post(server.url(&format!("/api/v1/workspaces/{ws}/environments")))
            .json(&with_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(!created.to_string().contains(secret));
    let env = created["summary"]["id"].as_i64().unwrap();
    let (_, build) = follow_log(&owner, &server, ws, env).await;
    assert_eq!(build, "built");
    let base = format!("/api/v1/workspaces/{ws}/environments/{env}");

    // Every reader sees the name with an empty value; no answer holds the value.
    for reader in [&viewer, &owner] {
        let res = reader.client.get(server.url(&base)).send().await.unwrap();
        let text = res.text().await.unwrap();
        assert!(!text.contains(secret), "a reader saw the value: {text}");
        let detail: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(detail["spec"]["secret_env"], json!({ "HF_TOKEN": "" }));
    }
    // The container has it; the image does not.
    let (status, up) = status_json(
        owner
            .client
            .post(server.url(&format!("{base}/up")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{up}");
    assert_eq!(
        exec(&owner, &server, &base, "echo \"$HF_TOKEN\"")
            .await
            .trim(),
        secret
    );
    let image = up["summary"]["image_id"].as_str().unwrap().to_string();
    let inspect = Command::new("docker")
        .args(["image", "inspect", &image])
        .output()
        .unwrap();
    let history = Command::new("docker")
        .args(["history", "--no-trunc", &image])
        .output()
        .unwrap();
    for out in [inspect, history] {
        assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    }

    // An edit that sends the name back with no value keeps the value, adds a secret, changes no image.
    let mut edit = spec("secretive");
    edit["secret_env"] = json!({ "HF_TOKEN": "", "DB_PASSWORD": "pw-second-secret" });
    let (status, after) = status_json(
        owner
            .client
            .put(server.url(&base))
            .json(&edit)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(
        after["spec"]["secret_env"],
        json!({ "DB_PASSWORD": "", "HF_TOKEN": "" })
    );
    assert_eq!(
        after["summary"]["current_version"], 1,
        "secrets need no rebuild"
    );
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'environment.secrets' AND detail NOT LIKE '%secret%SECRET%'")
            .await,
        1
    );
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM environment_versions WHERE spec_json LIKE '%{secret}%'"
            ))
            .await,
        0,
        "no version holds a value"
    );
}

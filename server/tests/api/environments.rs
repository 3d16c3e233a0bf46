//! Environments through the real binary and the real Docker daemon: REST with the build log over SSE, a
//! shell over the WebSocket terminal, the `paddock env` CLI, Docker events reaching the database when a
//! container is removed behind Paddock's back, access rules over HTTP, an image brought in from an
//! archive by an admin, and a server without Docker that says so and keeps working. Each server has its own data directory, hence its own instance label; a
//! guard removes that label's containers and volumes even when a test fails.

use std::process::Command;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{
    add_member, assert_success, docker, eventually, poll, with_docker, workspace, Cli, Server, User,
};

fn spec(name: &str) -> Value {
    json!({ "name": name, "base_image": "paddock/base:busybox", "cpus": 0.5, "memory": "64m", "shm_size": "16m" })
}

/// Reads the SSE build log to its `end` event; returns (log text, final status).
async fn follow_log(user: &User, ws: i64, env: i64) -> (String, String) {
    let url = user.url(&format!(
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

/// Creates environment `spec` in `ws` and follows its build, which must succeed: (the creation's
/// answer, the build log).
async fn built(user: &User, ws: i64, spec: Value) -> (Value, String) {
    let environments = format!("/api/v1/workspaces/{ws}/environments");
    let (status, created) = user.post(&environments, spec).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let env = created["summary"]["id"].as_i64().unwrap();
    let (log, build) = follow_log(user, ws, env).await;
    assert_eq!(build, "built", "{log}");
    (created, log)
}

#[tokio::test]
async fn build_log_terminal_events_and_access_over_http() {
    let Some((server, _cleanup)) = with_docker().await else {
        return;
    };
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let outsider = server.signup("outsider").await;
    let ws = workspace(&owner).await;
    add_member(&owner, ws, "viewer", "viewer").await;

    let (status, daemon) = owner.get("/api/v1/docker").await;
    assert_eq!(
        (status, daemon["available"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{daemon}"
    );

    let (created, log) = built(&owner, ws, spec("shell")).await;
    assert!(log.contains("event: log"), "the log streams output: {log}");

    let env = created["summary"]["id"].as_i64().unwrap();
    let base = format!("/api/v1/workspaces/{ws}/environments/{env}");
    let up = format!("{base}/up");
    // Viewers read but cannot act; outsiders see nothing.
    assert_eq!(viewer.get(&base).await.0, StatusCode::OK);
    assert_eq!(viewer.post_empty(&up).await.0, StatusCode::FORBIDDEN);
    assert_eq!(outsider.get(&base).await.0, StatusCode::NOT_FOUND);

    let (status, up) = owner.post_empty(&up).await;
    assert_eq!(
        (status, up["summary"]["status"].as_str()),
        (StatusCode::OK, Some("running")),
        "{up}"
    );
    let (status, out) = owner
        .post(&format!("{base}/exec"), json!({ "cmd": ["id", "-u"] }))
        .await;
    assert_eq!(
        (status, out["stdout"].as_str().map(str::trim)),
        (StatusCode::OK, Some("1000")),
        "{out}"
    );

    // The terminal: a viewer is refused at the handshake; the owner gets a shell.
    let ws_url = owner
        .url(&format!("{base}/terminal?rows=30&cols=100"))
        .replacen("http", "ws", 1);
    let refused = open_terminal(&ws_url, &viewer).await.unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");

    let mut socket = open_terminal(&ws_url, &owner)
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
    let member = format!("/api/v1/workspaces/{ws}/members/{}", viewer.id);
    let (status, _) = owner.patch(&member, json!({ "role": "editor" })).await;
    assert_eq!(status, StatusCode::OK);
    let socket = open_terminal(&ws_url, &viewer)
        .await
        .expect("an editor's terminal handshake");
    let (status, _) = owner.delete(&member).await;
    assert!(status.is_success(), "{status}");
    closes_soon(socket, "its user was removed").await;

    // A revoked token closes the terminal opened with it...
    let (status, created) = owner
        .post("/api/v1/tokens", json!({ "name": "shell" }))
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
    let token = format!("/api/v1/tokens/{}", created["token"]["id"]);
    let (status, _) = owner.delete(&token).await;
    assert!(status.is_success(), "{status}");
    closes_soon(socket, "the token was revoked").await;
    // ...and a password reset every terminal of the account's sessions.
    let socket = open_terminal(&ws_url, &owner)
        .await
        .expect("terminal handshake");
    let owner_name = sign_in_name(&owner).await;
    let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["admin", "reset-password", "--username", &owner_name])
        .args(["--password", "a brand new password", "--data-dir"])
        .arg(server.dir.path().join("data"))
        .output()
        .unwrap();
    assert_success(&out);
    closes_soon(socket, "the password was reset").await;
    let signin = json!({ "username": owner_name, "password": "a brand new password" });
    // The owner signs in again, with the new password.
    let (status, _) = owner.post("/api/v1/auth/signin", signin).await;
    assert_eq!(status, StatusCode::OK);

    // Removed behind Paddock's back: Docker's events reach the database without waiting for reconcile.
    let container = up["container_name"].as_str().unwrap().to_string();
    docker(&["rm", "-f", &container]);
    // Sooner than the next reconcile (every 30 s by default): Docker's event told the server.
    let missing = owner
        .poll(&base, Duration::from_secs(10), |e| {
            e["summary"]["status"] == "missing"
        })
        .await
        .unwrap_or_else(|last| panic!("environment {env} never became missing: {last}"));
    assert!(
        missing["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "missing"),
        "{missing}"
    );

    assert_eq!(owner.delete(&base).await.0, StatusCode::NO_CONTENT);
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

/// Opens the terminal WebSocket at `url` with `user`'s session cookie.
async fn open_terminal(
    url: &str,
    user: &User,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let session = session_cookie(user).await;
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", session.parse().unwrap());
    Ok(tokio_tungstenite::connect_async(request).await?.0)
}

/// The raw `Cookie` header a signed-in client sends (the WebSocket client has no cookie jar).
async fn session_cookie(user: &User) -> String {
    use reqwest::cookie::CookieStore;
    // The test client keeps its jar private; sign in again with a jar we can read.
    let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let client = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .build()
        .unwrap();
    let name = sign_in_name(user).await;
    let res = client
        .post(user.url("/api/v1/auth/signin"))
        .json(&json!({ "username": name, "password": crate::common::PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let url = user.url("").parse().unwrap();
    jar.cookies(&url).unwrap().to_str().unwrap().to_string()
}

async fn sign_in_name(user: &User) -> String {
    let (_, me) = user.get("/api/v1/me").await;
    me["username"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_cli_manages_environments_with_a_token() {
    let Some((server, _cleanup)) = with_docker().await else {
        return;
    };
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let dir = tempfile::tempdir().unwrap();
    let spec_file = dir.path().join("env.toml");
    std::fs::write(&spec_file, "name = \"cli-env\"\nbase_image = \"paddock/base:busybox\"\ncpus = 0.5\nmemory = \"64m\"\nshm_size = \"16m\"\n[env]\nLANG = \"C.UTF-8\"\n").unwrap();
    let cli = Cli::of(&owner, ws).await;
    let paddock = |args: &[&str]| cli.run(&[&["env"], args].concat());
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
    let retried = poll(Duration::from_secs(30), async || {
        // Requests retry too.
        owner.get("/api/v1/docker").await;
        if log().matches("Docker is still unavailable").count() >= 3 {
            Ok(())
        } else {
            Err(())
        }
    })
    .await;
    assert!(retried.is_ok(), "the server did not retry:\n{}", log());
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
    let ws = workspace(&owner).await;
    let (status, daemon) = owner.get("/api/v1/docker").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(daemon["available"], false);
    assert!(
        daemon["message"]
            .as_str()
            .unwrap()
            .contains("Docker is not available"),
        "{daemon}"
    );
    assert!(
        !daemon["catalog"].as_array().unwrap().is_empty(),
        "the catalog is still shown"
    );

    let environments = format!("/api/v1/workspaces/{ws}/environments");
    let (status, body) = owner.post(&environments, spec("nope")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("docker_unavailable")),
        "{body}"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM environments").await, 0);
    assert_eq!(owner.get(&environments).await, (StatusCode::OK, json!([])));
    let members = format!("/api/v1/workspaces/{ws}/members");
    assert_eq!(owner.get(&members).await.0, StatusCode::OK);
    assert_eq!(owner.get("/healthz").await.0, StatusCode::OK);
}

/// An environment named `name` in `ws`, built and running: its API path and container name.
pub(crate) async fn running(user: &User, ws: i64, name: &str) -> (String, String) {
    let (created, _) = built(user, ws, spec(name)).await;
    let base = format!(
        "/api/v1/workspaces/{ws}/environments/{}",
        created["summary"]["id"]
    );
    let (status, up) = user.post_empty(&format!("{base}/up")).await;
    assert_eq!(status, StatusCode::OK, "{up}");
    let container = up["summary"]["container_name"]
        .as_str()
        .or(up["container_name"].as_str())
        .unwrap_or_else(|| panic!("no container name in {up}"))
        .to_string();
    (base, container)
}

pub(crate) async fn exec(user: &User, base: &str, script: &str) -> String {
    let (status, out) = user
        .post(
            &format!("{base}/exec"),
            json!({ "cmd": ["sh", "-c", script] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    out["stdout"].as_str().unwrap_or_default().to_string()
}

fn docker_lines(args: &[&str]) -> Vec<String> {
    docker(args)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn each_workspace_has_its_own_network_and_its_deletion_removes_it() {
    let Some((server, cleanup)) = with_docker().await else {
        return;
    };
    let alice = server.signup("alice").await;
    let bob = server.signup("bob").await;
    let ws_a = workspace(&alice).await;
    let ws_b = workspace(&bob).await;
    let (a1, _) = running(&alice, ws_a, "a-one").await;
    let (b1, b1_container) = running(&bob, ws_b, "b-one").await;
    let (b2, _) = running(&bob, ws_b, "b-two").await;

    // A service in workspace B (what an endpoint replica or a notebook server would be).
    exec(&bob, &b1, "busybox httpd -p 8080 -h /workspace").await;
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
    let reached = poll(Duration::from_secs(10), async || {
        let same = exec(&bob, &b2, &probe).await;
        if same.contains("HTTP/1") {
            Ok(())
        } else {
            Err(same)
        }
    })
    .await;
    assert!(reached.is_ok(), "b-two never reached b-one: {reached:?}");
    let other = exec(&alice, &a1, &probe).await;
    assert!(
        !other.contains("HTTP/1"),
        "workspace A reached workspace B's container: {other:?}"
    );

    // Deleting workspace B removes its containers, volume and network.
    let (status, _) = bob.delete(&format!("/api/v1/workspaces/{ws_b}")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
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
    let workspace_b = format!("SELECT COUNT(*) FROM workspaces WHERE id = {ws_b}");
    eventually("the purge", Duration::from_secs(60), async || {
        server.count(&workspace_b).await == 0
    })
    .await;
    for kind in ["container", "volume", "network"] {
        assert_eq!(
            ours(kind),
            Vec::<String>::new(),
            "{kind}s of workspace B are left"
        );
    }
    // Workspace A is untouched.
    assert!(exec(&alice, &a1, "echo alive").await.contains("alive"));
}

#[tokio::test]
async fn secret_variables_reach_the_container_but_never_a_reader_or_the_image() {
    let Some((server, _cleanup)) = with_docker().await else {
        return;
    };
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let ws = workspace(&owner).await;
    add_member(&owner, ws, "viewer", "viewer").await;
    let secret = "hf_0123456789abcdefSECRET";
    let mut with_secret = spec("secretive");
    with_secret["secret_env"] = json!({ "HF_TOKEN": secret });
    // A new secret without a value is refused at its field, and nothing is created.
    let mut empty = spec("empty-secret");
    empty["secret_env"] = json!({ "HF_TOKEN": "" });
    let environments = format!("/api/v1/workspaces/{ws}/environments");
    let (status, body) = owner.post(&environments, empty).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("secret_env")),
        "{body}"
    );
    let (created, _) = built(&owner, ws, with_secret).await;
    assert!(!created.to_string().contains(secret));
    let base = format!("{environments}/{}", created["summary"]["id"]);

    // Every reader sees the name with an empty value; no answer holds the value.
    for reader in [&viewer, &owner] {
        let res = reader.client.get(reader.url(&base)).send().await.unwrap();
        let text = res.text().await.unwrap();
        assert!(!text.contains(secret), "a reader saw the value: {text}");
        let detail: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(detail["spec"]["secret_env"], json!({ "HF_TOKEN": "" }));
    }
    // The container has it; the image does not.
    let (status, up) = owner.post_empty(&format!("{base}/up")).await;
    assert_eq!(status, StatusCode::OK, "{up}");
    assert_eq!(
        exec(&owner, &base, "echo \"$HF_TOKEN\"").await.trim(),
        secret
    );
    let image = up["summary"]["image_id"].as_str().unwrap().to_string();
    for out in [
        docker(&["image", "inspect", &image]),
        docker(&["history", "--no-trunc", &image]),
    ] {
        assert!(!out.contains(secret));
    }

    // An edit that sends the name back with no value keeps the value, adds a secret, changes no image.
    let mut edit = spec("secretive");
    edit["secret_env"] = json!({ "HF_TOKEN": "", "DB_PASSWORD": "pw-second-secret" });
    let (status, after) = owner.put(&base, edit).await;
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

    // At rest the values are sealed with a key outside the database (0600 in the data directory). A
    // rotation while the server runs seals them again with a new key, and the next start of the
    // container still gets them.
    let plain_rows =
        "SELECT COUNT(*) FROM environments WHERE secret_env_json NOT LIKE 'sealed1:%' \
                      OR secret_env_json LIKE '%SECRET%' OR secret_env_json LIKE '%pw-second%'";
    assert_eq!(
        server.count(plain_rows).await,
        0,
        "a secret is stored in plain text"
    );
    let key_file = server.data_dir().join("secrets.key");
    let key = std::fs::read_to_string(&key_file).unwrap();
    let mode = std::fs::metadata(&key_file).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let out = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["admin", "rotate-secrets-key", "--data-dir"])
        .arg(server.data_dir())
        .output()
        .unwrap();
    assert_success(&out);
    assert_ne!(
        std::fs::read_to_string(&key_file).unwrap(),
        key,
        "a new key"
    );
    assert!(!server.data_dir().join("secrets.key.next").exists());
    assert_eq!(server.count(plain_rows).await, 0);
    let (status, down) = owner.post_empty(&format!("{base}/down")).await;
    assert_eq!(status, StatusCode::OK, "{down}");
    let (status, up) = owner.post_empty(&format!("{base}/up")).await;
    assert_eq!(status, StatusCode::OK, "{up}");
    let both = exec(&owner, &base, "echo \"$HF_TOKEN $DB_PASSWORD\"").await;
    assert_eq!(both.trim(), format!("{secret} pw-second-secret"));
}

/// A `docker save` archive of a one-layer image tagged `tag` (one file, `/hello.txt`), made here:
/// no registry is reachable, so the test brings its own image as an admin would.
fn image_archive(tag: &str) -> Vec<u8> {
    image_archive_of(tag, &[("hello.txt", b"loaded without a registry\n")])
}

/// A `docker save` archive of one image whose one layer holds `files`.
fn image_archive_of(tag: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    use sha2::Digest;
    fn entry(builder: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        builder.append_data(&mut header, path, data).unwrap();
    }
    let mut layer = tar::Builder::new(Vec::new());
    for (path, data) in files {
        entry(&mut layer, path, data);
    }
    let layer = layer.into_inner().unwrap();
    let diff_id = hex::encode(sha2::Sha256::digest(&layer));
    let config = json!({
        "architecture": "amd64", "os": "linux", "config": { "Cmd": ["/hello.txt"] },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{diff_id}")] },
    })
    .to_string();
    let config_name = format!(
        "{}.json",
        hex::encode(sha2::Sha256::digest(config.as_bytes()))
    );
    let layer_name = format!("{diff_id}/layer.tar");
    let manifest = json!([{ "Config": config_name, "RepoTags": [tag], "Layers": [layer_name] }]);
    let mut archive = tar::Builder::new(Vec::new());
    entry(&mut archive, &config_name, config.as_bytes());
    entry(&mut archive, &layer_name, &layer);
    entry(
        &mut archive,
        "manifest.json",
        manifest.to_string().as_bytes(),
    );
    archive.into_inner().unwrap()
}

#[tokio::test]
async fn an_admin_loads_an_image_archive_and_environments_can_then_use_it() {
    let server = Server::start();
    let admin = server.signup("owner").await;
    assert!(admin.is_admin);
    let member = server.signup("member").await;
    let ws = workspace(&admin).await;
    let tag = format!("paddock-test/loaded-{}:1", std::process::id());
    let environments = format!("/api/v1/workspaces/{ws}/environments");
    let mut env = spec("from-archive");
    env["base_image"] = json!(tag);

    // Before: the form is told the image is not here, before any build starts.
    let (status, body) = admin.post(&environments, &env).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("image_unavailable")),
        "{body}"
    );
    let load = "/api/v1/admin/images/load";
    let (status, _) = member.upload(load, image_archive(&tag)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "admins only");
    let (status, body) = admin.upload(load, b"not a tar at all".to_vec()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("image_archive_invalid")
        ),
        "{body}"
    );
    assert!(
        !body["message"].as_str().unwrap().contains("/var/lib"),
        "no daemon internals: {body}"
    );

    // Within Docker's limits but past Paddock's: a layer path of 129 names is refused before Docker
    // unpacks anything, in our words, and nothing is loaded.
    let deep = "d/".repeat(128) + "f";
    let (status, body) = admin
        .upload(load, image_archive_of(&tag, &[(deep.as_str(), b"")]))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("image_archive_invalid")
        ),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("more than 128 names"), "{body}");
    let absent = Command::new("docker")
        .args(["image", "inspect", &tag])
        .output()
        .unwrap();
    assert!(!absent.status.success(), "a refused archive was loaded");

    let (status, body) = admin.upload(load, image_archive(&tag)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["loaded"], json!([tag]));
    let _cleanup = scopeguard(&tag);
    assert!(docker(&["image", "inspect", "--format", "{{.Id}}", &tag]).starts_with("sha256:"));
    let audit = server
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'image.load'")
        .await;
    assert_eq!(audit, 1);
    // The catalog says, for each of its images, whether it is here.
    let (_, daemon) = admin.get("/api/v1/docker").await;
    let catalog = daemon["catalog"].as_array().unwrap();
    assert!(
        catalog.iter().all(|c| c["present"].is_boolean()),
        "{daemon}"
    );
}

/// Removes the loaded image when the test ends, also when it fails.
fn scopeguard(tag: &str) -> impl Drop + '_ {
    struct Remove<'a>(&'a str);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = Command::new("docker")
                .args(["image", "rm", "-f", self.0])
                .output();
        }
    }
    Remove(tag)
}

/// What the fake registry serves where a secret would be: it must never reach a client.
const CANARY: &str = "INTERNAL-SECRET-CANARY admin_password=hunter2";

/// A one-route HTTP service on a loopback port: `GET /v2/` answers as a registry when `registry`, and
/// every other request (and `/v2/` otherwise) gets a 500 whose body is [`CANARY`]. Its `host:port`.
async fn fake_registry(registry: bool) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0u8; 8192];
                let n = stream.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("");
                let answer = if registry && path == "/v2/" {
                    "HTTP/1.1 200 OK\r\nDocker-Distribution-Api-Version: registry/2.0\r\n\
                     Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                        .to_string()
                } else {
                    format!(
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{CANARY}",
                        CANARY.len()
                    )
                };
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    address
}

#[tokio::test]
async fn an_admin_sets_a_docker_hub_mirror_that_base_images_are_looked_up_in() {
    let server = Server::start();
    let admin = server.signup("owner").await;
    let member = server.signup("member").await;
    let ws = workspace(&admin).await;
    let settings = "/api/v1/admin/settings";

    let (status, _) = member
        .patch(settings, json!({ "registry_mirror": "10.0.0.5:5000" }))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "admins only");
    for bad in ["not a mirror!", "mirror.cn:99999", "mirror.cn/Hub"] {
        let (status, body) = admin
            .patch(settings, json!({ "registry_mirror": bad }))
            .await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("registry_mirror_invalid"),
                Some("registry_mirror")
            ),
            "{bad}: {body}"
        );
    }
    let (_, body) = admin.get(settings).await;
    assert_eq!(body["registry_mirror"], Value::Null, "nothing was set");

    // A mirror must answer as a registry: nothing listening, or a service that is not one (whatever it
    // serves), is refused, and what it served is never quoted.
    let not_a_registry = fake_registry(false).await;
    for address in [
        "http://127.0.0.1:9/hub/".to_string(),
        format!("{not_a_registry}/hub"),
    ] {
        let (status, body) = admin
            .patch(settings, json!({ "registry_mirror": address }))
            .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("registry_mirror_invalid")
            ),
            "{address}: {body}"
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("no registry answers"),
            "{body}"
        );
        assert!(!body.to_string().contains(CANARY), "{body}");
    }

    // A registry that answers /v2/ and serves a secret on every other path.
    let registry = fake_registry(true).await;
    let (status, body) = admin
        .patch(
            settings,
            json!({ "registry_mirror": format!("http://{registry}/hub/") }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["registry_mirror"],
        format!("{registry}/hub"),
        "stored as Docker reads it"
    );
    let audited = server
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'settings.registry_mirror'")
        .await;
    assert_eq!(audited, 1);

    let mut env = spec("from-mirror");
    env["base_image"] = json!("mirrortest/nothing:1");
    let (status, body) = admin
        .post(&format!("/api/v1/workspaces/{ws}/environments"), &env)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("image_unavailable")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("mirror")
            && message.contains(&format!("{registry}/hub/mirrortest/nothing:1"))
            && message.contains("incident"),
        "the refusal names where it looked, and the incident for the rest: {message}"
    );
    assert!(
        !body.to_string().contains(CANARY),
        "the mirror's answer leaked: {body}"
    );

    let (_, body) = admin
        .patch(settings, json!({ "registry_mirror": "" }))
        .await;
    assert_eq!(
        body["registry_mirror"],
        Value::Null,
        "an empty text removes it"
    );

    // An operator may name the registries an admin can choose: another one is refused unasked.
    let limited = Server::start_with(&["--registry-mirror-host", "registry.example.cn:5000"]);
    let admin = limited.signup("owner").await;
    let (status, body) = admin
        .patch(
            settings,
            json!({ "registry_mirror": format!("{registry}/hub") }),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("registry_mirror_invalid")
        ),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("registry.example.cn:5000"),
        "{body}"
    );
}

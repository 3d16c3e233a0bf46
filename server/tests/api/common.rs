//! Starting and stopping a real `paddock serve`, and small helpers to call its API as a given user.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};

pub const PASSWORD: &str = "correct horse battery";

/// A running server; killed when dropped (its log is printed if the test failed).
pub struct Server {
    child: Child,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    pub base: String,
    pub dir: tempfile::TempDir,
    /// The extra arguments and environment variables, for restarts.
    extra: Vec<String>,
    env: Vec<(String, String)>,
}

/// Starts `paddock serve` on a free port with its state in `dir`; waits for its `listening on` line.
fn spawn(
    dir: &std::path::Path,
    extra: &[String],
    env: &[(String, String)],
) -> (Child, BufReader<ChildStdout>, String) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .expect("log file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_paddock"))
        .arg("serve")
        .args(["--bind", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--site-root")
        .arg(dir.join("site"))
        .args(extra)
        .env("RUST_LOG", "info")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start paddock");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read stdout");
    let Some(addr) = line.trim().strip_prefix("listening on ") else {
        let _ = child.kill();
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        panic!("unexpected first line {line:?}; server log:\n{log}");
    };
    (child, stdout, addr.to_string())
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_with_env(extra, &[])
    }

    /// A server with these extra arguments and environment variables (for example
    /// `hostcaps::HIDE_ENV`, to walk the branch a machine without some hardware takes).
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (child, stdout, base) = spawn(dir.path(), &extra, &env);
        Server {
            base,
            child,
            _stdout: stdout,
            dir,
            extra,
            env,
        }
    }

    /// Kills the server with SIGKILL (no shutdown code runs) and starts a new one on the same data
    /// directory, as after a crash.
    pub fn crash_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, stdout, base) = spawn(self.dir.path(), &self.extra, &self.env);
        self.child = child;
        self._stdout = stdout;
        self.base = base;
    }

    /// Waits up to `limit` for the server to exit by itself; its status, or `None` if it still runs.
    pub fn wait_for_exit(
        &mut self,
        limit: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Where on the host a path that containers see under `/paddock` (the workspace's part of the
    /// server's store, mounted read-only) lies.
    pub fn in_store(&self, ws: i64, container_path: &str) -> PathBuf {
        let rel = container_path
            .strip_prefix("/paddock/")
            .unwrap_or_else(|| panic!("{container_path} is not under /paddock"));
        self.dir.path().join(format!("data/store/w{ws}")).join(rel)
    }

    /// The run folder of a job run by the local executor (server-owned, outside every volume).
    pub fn local_run(&self, job: i64) -> PathBuf {
        self.dir.path().join(format!("data/runs/jobs/{job}"))
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("data").join("paddock.db")
    }

    /// Runs a `SELECT COUNT(*) ...` against the server's database file.
    /// Changes the database under the running server, for a test that must not wait for a clock (a
    /// time limit shortened from minutes to a second).
    pub async fn execute(&self, sql: &str) {
        let url = format!("sqlite://{}", self.db_path().display());
        let pool = sqlx::SqlitePool::connect(&url).await.expect("open db");
        sqlx::query(sql).execute(&pool).await.expect("statement");
        pool.close().await;
    }

    pub async fn count(&self, sql: &str) -> i64 {
        let url = format!("sqlite://{}?mode=ro", self.db_path().display());
        let pool = sqlx::SqlitePool::connect(&url)
            .await
            .expect("open db read-only");
        let n: i64 = sqlx::query_scalar(sql)
            .fetch_one(&pool)
            .await
            .expect("count query");
        pool.close().await;
        n
    }

    /// A client with its own cookie jar: one per simulated person.
    pub fn client(&self) -> Client {
        Client::builder()
            .cookie_store(true)
            .build()
            .expect("client")
    }

    /// Signs up `username` (with [`PASSWORD`]) in a new client.
    pub async fn signup(&self, username: &str) -> User {
        let client = self.client();
        let res = client
            .post(self.url("/api/v1/auth/signup"))
            .json(&json!({ "username": username, "password": PASSWORD }))
            .send()
            .await
            .expect("signup request");
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "signup {username}: {}",
            res.text().await.unwrap_or_default()
        );
        let me: Value = res.json().await.expect("signup json");
        User {
            client,
            id: me["id"].as_i64().expect("id"),
            is_admin: me["is_admin"].as_bool().expect("is_admin"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            eprintln!("---- server log ----\n{log}");
        }
    }
}

pub struct User {
    pub client: Client,
    pub id: i64,
    pub is_admin: bool,
}

/// Status and JSON body (`Value::Null` when the body is not JSON).
pub async fn status_json(res: Response) -> (StatusCode, Value) {
    let status = res.status();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Removes every container, volume and network labelled with the server's instance when dropped (also when the
/// test fails), and the images listed (an image with the runtime layer is gigabytes).
pub struct DockerCleanup {
    pub instance: String,
    pub images: Vec<String>,
}

impl DockerCleanup {
    /// A guard for `server`'s Docker objects (its instance label is in its database).
    pub async fn of(server: &Server) -> DockerCleanup {
        let url = format!("sqlite://{}?mode=ro", server.db_path().display());
        let pool = sqlx::SqlitePool::connect(&url)
            .await
            .expect("open db read-only");
        let instance: String = sqlx::query_scalar("SELECT instance FROM instance_identity")
            .fetch_one(&pool)
            .await
            .expect("instance label");
        pool.close().await;
        DockerCleanup {
            instance,
            images: Vec::new(),
        }
    }
}

impl Drop for DockerCleanup {
    fn drop(&mut self) {
        let label = format!("label=paddock.instance={}", self.instance);
        let script = format!(
            "docker ps -aq --filter {label} | xargs -r docker rm -f >/dev/null; \
             docker volume ls -q --filter {label} | xargs -r docker volume rm -f >/dev/null; \
             docker network ls -q --filter {label} | xargs -r docker network rm >/dev/null; \
             for image in {}; do docker rmi -f $image >/dev/null 2>&1; done",
            self.images.join(" ")
        );
        let _ = Command::new("sh").arg("-c").arg(script).status();
    }
}

/// A workspace named "nlp" owned by `user`: its id.
pub async fn workspace(user: &User, server: &Server) -> i64 {
    let res = user
        .client
        .post(server.url("/api/v1/workspaces"))
        .json(&json!({ "name": "nlp" }))
        .send()
        .await
        .unwrap();
    status_json(res).await.1["id"].as_i64().unwrap()
}

/// A workspace named "nlp" owned by `user`, with the built-in sample dataset: (workspace id, dataset id).
pub async fn workspace_with_sample(user: &User, server: &Server) -> (i64, i64) {
    let ws = workspace(user, server).await;
    let res = user
        .client
        .post(server.url(&format!("/api/v1/workspaces/{ws}/datasets/sample")))
        .send()
        .await
        .unwrap();
    let (status, ds) = status_json(res).await;
    assert_eq!(status, StatusCode::CREATED, "{ds}");
    (ws, ds["summary"]["id"].as_i64().unwrap())
}

/// `user` asks the playground of the endpoint at `ep_url` (its REST path) about `inputs`: (status, body).
pub async fn playground(user: &User, ep_url: &str, inputs: Value) -> (StatusCode, Value) {
    let res = user
        .client
        .post(format!("{ep_url}/playground"))
        .json(&json!({ "inputs": inputs }))
        .send()
        .await
        .unwrap();
    status_json(res).await
}

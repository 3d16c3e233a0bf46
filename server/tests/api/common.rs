//! Starting and stopping a real `paddock serve`, and calling it as a given person: [`Caller`] and
//! [`User`] send JSON to a path and answer (status, JSON), whatever port the server listens on now;
//! [`poll`] and its kin wait for what happens in the background; the fixtures most tests begin with
//! (a workspace, the sample dataset, a member, a Docker-backed server) are one call each.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use reqwest::{Client, RequestBuilder, Response, StatusCode};
use serde::Serialize;
use serde_json::{json, Value};

pub const PASSWORD: &str = "correct horse battery";

/// The server's address (`http://127.0.0.1:PORT`), shared with its users: a restart moves it to a new
/// port, and their calls follow.
type Base = Arc<RwLock<String>>;

/// A running server; killed when dropped (its log is printed if the test failed).
pub struct Server {
    child: Child,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    base: Base,
    pub dir: tempfile::TempDir,
    /// The extra arguments and environment variables, for restarts.
    extra: Vec<String>,
    env: Vec<(String, String)>,
}

/// Starts `paddock serve` on a free port with its state in `dir`; waits for its `listening on` line.
/// `wrapper`: a command that runs it (given the binary and its arguments), if any.
fn spawn(
    dir: &std::path::Path,
    extra: &[String],
    env: &[(String, String)],
    wrapper: &[String],
) -> (Child, BufReader<ChildStdout>, String) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .expect("log file");
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(env!("CARGO_BIN_EXE_paddock"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_paddock")),
    };
    let mut child = command
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
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Server::spawned(tempfile::tempdir().expect("tempdir"), extra, env, &[])
    }

    /// A server started in `dir` (through `wrapper`, if any).
    fn spawned(
        dir: tempfile::TempDir,
        extra: &[&str],
        env: Vec<(String, String)>,
        wrapper: &[String],
    ) -> Server {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let (child, stdout, base) = spawn(dir.path(), &extra, &env, wrapper);
        Server {
            base: Arc::new(RwLock::new(base)),
            child,
            _stdout: stdout,
            dir,
            extra,
            env,
        }
    }

    /// A server whose data directory is a tmpfs mounted in a mount namespace of its own: it sees its
    /// files, no other process on the machine does (as a login node whose data directory the cluster's
    /// nodes do not mount). Not restartable: a restart would start on an empty directory.
    pub fn start_private(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let mount = r#"mkdir -p "$1" && mount -t tmpfs tmpfs "$1" && shift && exec "$@""#;
        let wrapper: Vec<String> = ["unshare", "--mount", "--propagation", "private", "--"]
            .into_iter()
            .chain(["sh", "-c", mount, "sh"])
            .map(String::from)
            .chain([data.to_string_lossy().into_owned()])
            .collect();
        Server::spawned(dir, extra, Vec::new(), &wrapper)
    }

    /// Kills the server with SIGKILL (no shutdown code runs) and starts a new one on the same data
    /// directory, as after a crash.
    pub fn crash_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, stdout, base) = spawn(self.dir.path(), &self.extra, &self.env, &[]);
        self.child = child;
        self._stdout = stdout;
        *self.base.write().unwrap() = base;
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

    /// Where the server listens now (`http://127.0.0.1:PORT`).
    pub fn base(&self) -> String {
        self.base.read().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base(), path)
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
        self.data_dir().join("paddock.db")
    }

    /// The server's data directory (`--data-dir`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Changes the database under the running server, for a test that must not wait for a clock (a
    /// time limit shortened from minutes to a second).
    pub async fn execute(&self, sql: &str) {
        let url = format!("sqlite://{}", self.db_path().display());
        let pool = sqlx::SqlitePool::connect(&url).await.expect("open db");
        sqlx::query(sql).execute(&pool).await.expect("statement");
        pool.close().await;
    }

    /// Runs a `SELECT COUNT(*) ...` (or any query of one integer) against the server's database file.
    pub async fn count(&self, sql: &str) -> i64 {
        self.query_one(sql).await
    }

    /// The one value `sql` selects from the server's database file, opened read-only.
    async fn query_one<T>(&self, sql: &str) -> T
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send + Unpin,
    {
        let url = format!("sqlite://{}?mode=ro", self.db_path().display());
        let pool = sqlx::SqlitePool::connect(&url)
            .await
            .expect("open db read-only");
        let value = sqlx::query_scalar(sql)
            .fetch_one(&pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        pool.close().await;
        value
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
        self.session("/api/v1/auth/signup", username, StatusCode::CREATED)
            .await
    }

    /// Signs in `username` (with [`PASSWORD`]) in a new client: a second session of an account.
    pub async fn signin(&self, username: &str) -> User {
        self.session("/api/v1/auth/signin", username, StatusCode::OK)
            .await
    }

    async fn session(&self, path: &str, username: &str, expect: StatusCode) -> User {
        let caller = self.anonymous();
        let (status, me) = caller
            .post(path, json!({ "username": username, "password": PASSWORD }))
            .await;
        assert_eq!(status, expect, "{path} {username}: {me}");
        User {
            caller,
            id: me["id"].as_i64().expect("id"),
            is_admin: me["is_admin"].as_bool().expect("is_admin"),
        }
    }

    /// A client that has not signed in.
    pub fn anonymous(&self) -> Caller {
        Caller {
            client: self.client(),
            base: self.base.clone(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        kill_leftovers(self.dir.path());
        if std::thread::panicking() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            eprintln!("---- server log ----\n{log}");
        }
    }
}

/// Kills what the server started and left running. Trainers and model servers outlive their server by
/// design (a restarted server adopts them), so a test that ends with work running would leave it
/// behind, holding memory and CPU through every later test: each process whose command line or working
/// directory lies in the test's folder goes with it.
fn kill_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    // The folder as a whole path component in an argument: followed by `/` or by the argument's end.
    let within = |args: &[u8]| {
        let needle = dir.as_os_str().as_encoded_bytes();
        args.windows(needle.len() + 1)
            .any(|w| w.starts_with(needle) && matches!(w[needle.len()], b'/' | 0))
    };
    let ours = std::process::id().to_string();
    let leftovers: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().into_string().ok()?;
            if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == ours {
                return None;
            }
            let cwd = std::fs::read_link(entry.path().join("cwd"));
            let in_dir = cwd.is_ok_and(|cwd| cwd.starts_with(dir))
                || std::fs::read(entry.path().join("cmdline")).is_ok_and(|args| within(&args));
            in_dir.then_some(pid)
        })
        .collect();
    if !leftovers.is_empty() {
        let _ = Command::new("kill").arg("-KILL").args(&leftovers).status();
    }
}

/// A client with its own cookie jar, and the JSON calls tests make with it. Paths are the server's
/// (`/api/v1/...`); they follow the server across a restart.
pub struct Caller {
    pub client: Client,
    base: Base,
}

/// A signed-in person: a [`Caller`] with their session, and who they are.
pub struct User {
    caller: Caller,
    pub id: i64,
    pub is_admin: bool,
}

impl std::ops::Deref for User {
    type Target = Caller;

    fn deref(&self) -> &Caller {
        &self.caller
    }
}

impl Caller {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base.read().unwrap(), path)
    }

    /// Signs `username` in (with [`PASSWORD`]) on this caller's client: the session cookie the
    /// server set, as its `Set-Cookie` header reads.
    pub async fn sign_in_cookie(&self, username: &str) -> String {
        let res = self
            .client
            .post(self.url("/api/v1/auth/signin"))
            .json(&serde_json::json!({ "username": username, "password": PASSWORD }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        res.headers()
            .get("set-cookie")
            .expect("session cookie")
            .to_str()
            .unwrap()
            .to_string()
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        answer(self.client.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: impl Serialize) -> (StatusCode, Value) {
        answer(self.client.post(self.url(path)).json(&body)).await
    }

    /// A POST without a body (the actions: `up`, `cancel`, `undeploy`, ...).
    pub async fn post_empty(&self, path: &str) -> (StatusCode, Value) {
        answer(self.client.post(self.url(path))).await
    }

    pub async fn put(&self, path: &str, body: impl Serialize) -> (StatusCode, Value) {
        answer(self.client.put(self.url(path)).json(&body)).await
    }

    pub async fn patch(&self, path: &str, body: impl Serialize) -> (StatusCode, Value) {
        answer(self.client.patch(self.url(path)).json(&body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        answer(self.client.delete(self.url(path))).await
    }

    /// POSTs `body` as a file (`application/octet-stream`), as the upload routes take it.
    pub async fn upload(&self, path: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
        let req = self.client.post(self.url(path)).body(body);
        answer(req.header("content-type", "application/octet-stream")).await
    }

    /// GETs `path` until `done` holds of its answer, for at most `limit`: that answer, or the last one.
    pub async fn poll(
        &self,
        path: &str,
        limit: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Result<Value, Value> {
        poll(limit, async || {
            let (_, body) = self.get(path).await;
            if done(&body) {
                Ok(body)
            } else {
                Err(body)
            }
        })
        .await
    }

    /// [`Caller::poll`] for [`PATIENCE`], failing the test with `what` it waited for and the last answer.
    pub async fn wait_for(&self, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.poll(path, PATIENCE, done)
            .await
            .unwrap_or_else(|last| panic!("{path} never reached {what}: {last}"))
    }

    /// A personal API token named `name`: its secret.
    pub async fn token(&self, name: &str) -> String {
        let (status, created) = self.post("/api/v1/tokens", json!({ "name": name })).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["secret"].as_str().expect("secret").to_string()
    }
}

/// The `paddock` command line as a user sets it up: the server, a token and a workspace in its
/// environment.
pub struct Cli {
    env: Vec<(&'static str, String)>,
    dir: Option<PathBuf>,
}

impl Cli {
    /// `user`'s command line in workspace `ws`, with a new token named "cli".
    pub async fn of(user: &Caller, ws: i64) -> Cli {
        Cli {
            env: vec![
                ("PADDOCK_SERVER", user.url("")),
                ("PADDOCK_TOKEN", user.token("cli").await),
                ("PADDOCK_WORKSPACE", ws.to_string()),
            ],
            dir: None,
        }
    }

    /// Runs in `dir` (where relative paths in the arguments lie).
    pub fn in_dir(mut self, dir: &std::path::Path) -> Cli {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// `paddock ARGS`: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_paddock"));
        command
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let out = command.output().expect("run paddock");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

async fn answer(req: RequestBuilder) -> (StatusCode, Value) {
    status_json(req.send().await.expect("request")).await
}

/// Status and JSON body (`Value::Null` when the body is not JSON).
pub async fn status_json(res: Response) -> (StatusCode, Value) {
    let status = res.status();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// How long a test waits for something slow to happen (a tiny training run, an endpoint's start, a
/// purge): many times what it takes on 2 cores shared with other tests, so that a failure is a bug.
pub const PATIENCE: Duration = Duration::from_secs(150);

/// How often a waiting test looks again: often enough not to slow a test down, rarely enough not to
/// load the server (trainers share its 2 cores in CI).
const POLL: Duration = Duration::from_millis(200);

/// Runs `check` every [`POLL`] until it answers `Ok`, for at most `limit`; then its last `Err`.
pub async fn poll<T, E>(
    limit: Duration,
    mut check: impl AsyncFnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = Instant::now() + limit;
    loop {
        match check().await {
            Err(last) if Instant::now() >= deadline => return Err(last),
            Err(_) => tokio::time::sleep(POLL).await,
            done => return done,
        }
    }
}

/// Waits (at most `limit`) until `check` holds; fails the test naming `what` otherwise.
pub async fn eventually(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> bool) {
    let held = poll(limit, async || if check().await { Ok(()) } else { Err(()) }).await;
    assert!(held.is_ok(), "{what} did not happen within {limit:?}");
}

/// `docker ARGS` on the machine's daemon: its standard output (the test fails if the command does).
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("run docker");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that a command the test ran exited with 0, showing its stderr otherwise.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Removes every container, volume and network labelled with the server's instance when dropped (also when the
/// test fails), and the images listed (an image with the runtime layer is gigabytes).
pub struct DockerCleanup {
    pub instance: String,
    pub images: Vec<String>,
    /// Held by a test that built an image with the runtime (see [`runtime_environment`]) until its
    /// images are removed.
    runtime: Option<tokio::sync::MutexGuard<'static, ()>>,
}

impl DockerCleanup {
    /// A guard for `server`'s Docker objects (its instance label is in its database).
    pub async fn of(server: &Server) -> DockerCleanup {
        DockerCleanup {
            instance: server
                .query_one("SELECT instance FROM instance_identity")
                .await,
            images: Vec::new(),
            runtime: None,
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

/// Arguments for a server that must not use the machine's Docker daemon (jobs then run as local
/// processes): an address where no daemon can be.
pub const NO_DOCKER: &[&str] = &["--docker-host", "unix:///nonexistent.sock"];

/// A server started with `args`, its first account "owner" and their workspace with the sample
/// dataset: (server, owner, workspace id, dataset id).
pub async fn owner_with_sample(args: &[&str]) -> (Server, User, i64, i64) {
    let server = Server::start_with(args);
    let owner = server.signup("owner").await;
    let (ws, ds) = workspace_with_sample(&owner).await;
    (server, owner, ws, ds)
}

/// A server that uses the machine's Docker daemon, and the guard that removes what it makes there;
/// `None` (the test passes without running) when `PADDOCK_TEST_DOCKER=skip`.
pub async fn with_docker() -> Option<(Server, DockerCleanup)> {
    if std::env::var("PADDOCK_TEST_DOCKER").as_deref() == Ok("skip") {
        return None;
    }
    let server = Server::start();
    let cleanup = DockerCleanup::of(&server).await;
    Some((server, cleanup))
}

/// One test at a time with an image carrying the runtime, from its build until its images are removed:
/// the runtime's layers are gigabytes, which two builds at once would each copy into Docker, and their
/// intermediate images are shared, so one test's removal would pull them from under another's build.
static RUNTIME_IMAGES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An environment of `owner`'s workspace `ws` whose image carries the Paddock runtime (`spec` holds
/// what differs from the trainer environment the tests share: a name, variables, secrets), built; its
/// image is removed with `cleanup`. The environment as the API shows it.
pub async fn runtime_environment(
    owner: &User,
    ws: i64,
    spec: Value,
    cleanup: &mut DockerCleanup,
) -> Value {
    let mut trainer = json!({ "base_image": "paddock/base:busybox", "runtime": true, "cpus": 1,
                              "memory": "4g", "shm_size": "256m" });
    trainer
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    let environments = format!("/api/v1/workspaces/{ws}/environments");
    if cleanup.runtime.is_none() {
        cleanup.runtime = Some(RUNTIME_IMAGES.lock().await);
    }
    let (code, env) = owner.post(&environments, trainer).await;
    assert_eq!(code, StatusCode::CREATED, "{env}");
    let env_id = env["summary"]["id"].as_i64().unwrap();
    let building = |e: &Value| {
        ["queued", "building"].contains(&e["summary"]["build_status"].as_str().unwrap_or_default())
    };
    let built = owner
        .poll(
            &format!("{environments}/{env_id}"),
            Duration::from_secs(600),
            |e| !building(e),
        )
        .await
        .unwrap_or_else(|last| last);
    assert_eq!(built["summary"]["build_status"], "built", "{built}");
    cleanup
        .images
        .push(built["summary"]["image_id"].as_str().unwrap().to_string());
    built
}

/// A workspace named "nlp" owned by `user`: its id.
pub async fn workspace(user: &User) -> i64 {
    let (status, ws) = user
        .post("/api/v1/workspaces", json!({ "name": "nlp" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{ws}");
    ws["id"].as_i64().unwrap()
}

/// A workspace named "nlp" owned by `user`, with the built-in sample dataset: (workspace id, dataset id).
pub async fn workspace_with_sample(user: &User) -> (i64, i64) {
    let ws = workspace(user).await;
    let (status, ds) = user
        .post_empty(&format!("/api/v1/workspaces/{ws}/datasets/sample"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{ds}");
    (ws, ds["summary"]["id"].as_i64().unwrap())
}

/// `owner` adds `username` to workspace `ws` with `role`.
pub async fn add_member(owner: &User, ws: i64, username: &str, role: &str) {
    let (status, body) = owner
        .post(
            &format!("/api/v1/workspaces/{ws}/members"),
            json!({ "username": username, "role": role }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// `user` asks the playground of the endpoint at `endpoint` (its REST path) about `inputs`.
pub async fn playground(user: &User, endpoint: &str, inputs: Value) -> (StatusCode, Value) {
    user.post(
        &format!("{endpoint}/playground"),
        json!({ "inputs": inputs }),
    )
    .await
}

/// The fields an `Invalid` answer lists its problems at, in its order.
pub fn problem_fields(body: &Value) -> Vec<&str> {
    body["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("no problems listed: {body}"))
        .iter()
        .map(|p| p["field"].as_str().unwrap())
        .collect()
}

//! Jobs through the real binary with the local-process executor: a small model trains on the sample
//! dataset while its metrics, logs and checkpoints stream in; cancelling stops it gracefully with a
//! checkpoint; a server killed with SIGKILL mid-run is restarted and picks the job up again without
//! losing or duplicating anything; bad specs write nothing.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{
    add_member, docker, eventually, owner_with_sample, playground, poll, problem_fields,
    runtime_environment, with_docker, workspace_with_sample, Cli, DockerCleanup, Server, User,
    NO_DOCKER, PATIENCE,
};

fn tiny(name: &str, dataset: i64, max_steps: u32) -> Value {
    json!({
        "name": name, "dataset_id": dataset, "preset": "tiny", "epochs": 50, "batch_size": 16, "max_seq_len": 32,
        "learning_rate": 0.002, "max_steps": max_steps, "eval_every_steps": 5, "keep_best": 1,
    })
}

/// A run that outlasts any test on any CPU (the most epochs a spec may ask for, no evaluation until
/// it is stopped): for tests that stop, cancel or restart around a running job. `tiny` with a large
/// `max_steps` is not enough — its 50 epochs of the sample ended in 8 s on a fast CPU, mid-test.
fn endless(name: &str, dataset: i64) -> Value {
    let mut spec = tiny(name, dataset, 1_000_000);
    spec["epochs"] = json!(1000);
    spec["eval_every_steps"] = json!(1_000_000);
    spec
}

/// Job `id`'s REST path.
fn job_path(ws: i64, id: i64) -> String {
    format!("/api/v1/workspaces/{ws}/jobs/{id}")
}

/// Submits `spec` in `ws`: the new job's id.
pub(crate) async fn submit(user: &User, ws: i64, spec: Value) -> i64 {
    let (status, job) = user
        .post(&format!("/api/v1/workspaces/{ws}/jobs"), spec)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    job["summary"]["id"].as_i64().unwrap()
}

async fn job(user: &User, ws: i64, id: i64) -> Value {
    user.get(&job_path(ws, id)).await.1
}

/// Asks to cancel job `id`; the job as answered.
async fn cancel(user: &User, ws: i64, id: i64) -> Value {
    let cancel = format!("{}/cancel", job_path(ws, id));
    user.post_empty(&cancel).await.1
}

/// Polls until `done(job)`; the job's server-side log is printed if it never happens.
pub(crate) async fn wait_for(
    user: &User,
    ws: i64,
    id: i64,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let path = job_path(ws, id);
    match user.poll(&path, PATIENCE, done).await {
        Ok(job) => job,
        Err(last) => {
            let logs = user.get(&format!("{path}/logs")).await.1;
            panic!("job {id} never got {what}: {last}\nlogs: {logs}");
        }
    }
}

/// Waits for job `id` to end, whichever way: the job.
pub(crate) async fn finished(user: &User, ws: i64, id: i64) -> Value {
    wait_for(user, ws, id, "its end", |j| {
        j["summary"]["finished_at"].is_string()
    })
    .await
}

/// Waits for job `id` to have run `steps` steps.
async fn stepped(user: &User, ws: i64, id: i64, steps: i64) {
    wait_for(user, ws, id, "some steps", |j| {
        j["summary"]["step"].as_i64().unwrap_or(0) >= steps
    })
    .await;
}

/// A checkpoint of `job` that retention kept.
pub(crate) fn kept_checkpoint(job: &Value) -> &Value {
    job["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["deleted_at"].is_null())
        .unwrap_or_else(|| panic!("no kept checkpoint: {job}"))
}

/// The step numbers of a job's `step` metric points, in the order answered.
/// What `docker inspect --format FORMAT` says of the first running container that `filter` matches
/// (`label=paddock.job=3`), once one runs.
async fn inspect_running(filter: &str, format: &str) -> String {
    poll(Duration::from_secs(180), async || {
        let container = docker(&["ps", "-q", "--filter", filter]);
        match container.trim().lines().next() {
            None => Err(()),
            Some(container) => Ok(docker(&["inspect", "--format", format, container])),
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no container {filter} ran"))
}

/// Waits until no container, running or not, matches `filter`.
async fn no_container_left(what: &str, filter: &str, within: Duration) {
    eventually(what, within, async || {
        docker(&["ps", "-aq", "--filter", filter]).trim().is_empty()
    })
    .await;
}

fn steps(metrics: &Value) -> Vec<i64> {
    metrics
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "step")
        .map(|p| p["step"].as_i64().unwrap())
        .collect()
}

/// The lines of a `…/logs` answer.
fn log_lines(logs: &Value) -> Vec<&str> {
    logs.as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_str().unwrap())
        .collect()
}

fn status(j: &Value) -> &str {
    j["summary"]["status"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_job_trains_streams_metrics_and_tracks_checkpoints() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;

    // Bad hyper-parameters write nothing.
    let mut bad = tiny("bad", ds, 10);
    bad["learning_rate"] = json!(-0.1);
    bad["batch_size"] = json!(0);
    let (status_code, err) = owner
        .post(&format!("/api/v1/workspaces/{ws}/jobs"), bad)
        .await;
    assert_eq!(
        (status_code, err["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("batch_size")),
        "{err}"
    );
    assert!(err["message"].as_str().unwrap().contains("learning_rate"));
    // Each broken rule on its own, in form order, with what a client needs to word it.
    assert_eq!(
        err["problems"],
        json!([
            { "field": "batch_size", "message": "must be between 1 and 4096",
              "rule": { "kind": "between", "min": 1, "max": 4096 } },
            { "field": "learning_rate", "message": "must be greater than 0 and at most 1",
              "rule": { "kind": "interval", "min": 0.0, "min_included": false, "max": 1.0, "max_included": true } },
        ]),
        "{err}"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);

    let spec = tiny("tiny-run", ds, 20);
    let id = submit(&owner, ws, spec).await;
    let path = job_path(ws, id);

    // The live stream: metric points and status changes arrive while it runs, and it ends with the job.
    let mut res = owner
        .client
        .get(owner.url(&format!("{path}/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(180), res.chunk())
        .await
        .expect("stream stalled")
        .unwrap()
    {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.contains("event: metric"), "{text}");
    assert!(text.contains("event: status"));
    assert!(
        text.contains("\"succeeded\""),
        "the stream ends with the final status: {}",
        &text[text.len().saturating_sub(600)..]
    );
    assert!(
        text.rfind("event: ")
            .is_some_and(|last| text[last..].starts_with("event: end")),
        "the stream says it is complete before it closes: {}",
        &text[text.len().saturating_sub(200)..]
    );

    let done = job(&owner, ws, id).await;
    assert_eq!(status(&done), "succeeded", "{done}");
    assert_eq!(done["summary"]["exit_code"], 0);
    assert_eq!(done["summary"]["step"], 20);
    let metrics = owner.get(&format!("{path}/metrics")).await.1;
    assert_eq!(
        steps(&metrics),
        (1..=20).collect::<Vec<_>>(),
        "every step once, in order"
    );
    let points = metrics.as_array().unwrap();
    assert!(
        points
            .iter()
            .any(|p| p["kind"] == "eval" && p["data"]["accuracy"].is_number()),
        "{metrics}"
    );
    assert!(points
        .iter()
        .all(|p| p["kind"] != "step" || p["data"]["loss"].is_number()));

    // The trainer's own account of the run, line by line: start, steps, evaluations, checkpoints, end.
    let logs = owner.get(&format!("{path}/logs")).await.1;
    let lines = log_lines(&logs);
    let has = |text: &str| lines.iter().any(|l| l.contains(text));
    assert!(
        has("model: ") && has("start: preset:") && has("270 training rows"),
        "{lines:#?}"
    );
    assert!(
        has("step 20/20 (epoch") && has("loss ") && has("samples/s"),
        "{lines:#?}"
    );
    assert!(
        has("dev at step 5: accuracy ") && has("macro-F1 "),
        "{lines:#?}"
    );
    assert!(
        has("saved checkpoint ") && has("deleted checkpoint ") && has("end: completed at step 20"),
        "{lines:#?}"
    );
    let found = owner
        .get(&format!("{path}/logs?contains=end%3A%20completed"))
        .await
        .1;
    assert_eq!(
        found.as_array().unwrap().len(),
        1,
        "the log search finds the end: {found}"
    );

    // Checkpoints: recorded with hash and size; retention (keep_best 1 + latest) deleted the others' files.
    let checkpoints = done["checkpoints"].as_array().unwrap();
    assert!(!checkpoints.is_empty(), "{done}");
    let alive: Vec<&Value> = checkpoints
        .iter()
        .filter(|c| c["deleted_at"].is_null())
        .collect();
    assert!(!alive.is_empty() && alive.len() <= 2, "{checkpoints:?}");
    // Each checkpoint's epoch is the one it was written at: the dev evaluation of its step says the
    // same (not the epoch of the last logged step before it).
    for c in checkpoints {
        let eval = points
            .iter()
            .find(|p| p["kind"] == "eval" && p["step"] == c["step"])
            .unwrap_or_else(|| panic!("no evaluation at step {}: {metrics}", c["step"]));
        assert_eq!(c["epoch"], eval["epoch"], "{c} {eval}");
    }
    let ckpt = alive[0];
    // The store holds the copies; the ended local run's own were removed (they would take the disk twice).
    assert!(
        !server.local_run(id).join("output/checkpoints").exists(),
        "the run's checkpoint folders are gone"
    );
    let dir = server.in_store(ws, ckpt["container_path"].as_str().unwrap());
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    {
        use sha2::Digest;
        assert_eq!(
            ckpt["sha256"].as_str().unwrap(),
            hex::encode(sha2::Sha256::digest(&weights))
        );
    }
    let download = format!(
        "/api/v1/workspaces/{ws}/checkpoints/{}/download",
        ckpt["id"]
    );
    let res = owner.client.get(owner.url(&download)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let archive = res.bytes().await.unwrap();
    let mut names = Vec::new();
    for entry in tar::Archive::new(&archive[..]).entries().unwrap() {
        names.push(
            entry
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
    }
    assert!(
        names.iter().any(|n| n.ends_with("/model.safetensors")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.ends_with("/config.json")),
        "{names:?}"
    );

    // The dataset is in use now; the job can be retried and deleted.
    let (status, _) = owner
        .delete(&format!("/api/v1/workspaces/{ws}/datasets/{ds}"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(owner.delete(&path).await.0, StatusCode::NO_CONTENT);
    assert!(!dir.exists(), "the job's files are deleted with it");
}

#[tokio::test]
async fn cancelling_stops_gracefully_with_a_checkpoint() {
    let (_server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let id = submit(&owner, ws, endless("long", ds)).await;
    // Queued behind it (one CPU slot): cancelled at once.
    let second = tiny("second", ds, 10);
    let second = submit(&owner, ws, second).await;

    stepped(&owner, ws, id, 3).await;
    assert_eq!(status(&job(&owner, ws, second).await), "queued");
    assert_eq!(status(&cancel(&owner, ws, second).await), "cancelled");

    assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
    let done = wait_for(&owner, ws, id, "cancelled", |j| {
        status(j) == "cancelled" && !j["summary"]["finished_at"].is_null()
    })
    .await;
    assert!(
        !done["checkpoints"].as_array().unwrap().is_empty(),
        "a final checkpoint: {done}"
    );

    // Resume continues from that checkpoint.
    let retry = format!("{}/retry", job_path(ws, id));
    let (code, resumed) = owner.post(&retry, json!({ "resume": true })).await;
    assert_eq!(code, StatusCode::CREATED, "{resumed}");
    assert!(
        resumed["config_toml"]
            .as_str()
            .unwrap()
            .contains("resume_from"),
        "{resumed}"
    );
    let resumed_id = resumed["summary"]["id"].as_i64().unwrap();
    cancel(&owner, ws, resumed_id).await;
    finished(&owner, ws, resumed_id).await;
}

/// A run whose command overwrote its own `trainer.pid` (with a pid that is nobody's) never gets the
/// wrapper's TERM; a cancel still stops it, whole, once the grace is over, and its log says so.
#[tokio::test]
async fn a_cancel_stops_a_run_whatever_its_pid_file_says() {
    let args = [NO_DOCKER, &["--stop-grace-secs", "2"]].concat();
    let (server, owner, ws, ds) = owner_with_sample(&args).await;
    let id = submit(&owner, ws, endless("forged", ds)).await;
    stepped(&owner, ws, id, 1).await;
    let pid_file = server.local_run(id).join("trainer.pid");
    let trainer: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::fs::write(&pid_file, "999999999\n").unwrap();
    cancel(&owner, ws, id).await;
    let done = wait_for(&owner, ws, id, "cancelled", |j| {
        status(j) == "cancelled" && !j["summary"]["finished_at"].is_null()
    })
    .await;
    // Gone, or a zombie nobody has reaped yet (`pid (comm) Z …`).
    let alive = std::fs::read_to_string(format!("/proc/{trainer}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    });
    assert!(!alive, "the trainer {trainer} still runs: {done}");
    let (_, log) = owner.get(&format!("{}/logs", job_path(ws, id))).await;
    assert!(log.to_string().contains("did not stop within 2 s"), "{log}");
}

/// SIGTERM with a live stream open (one that never ends by itself while its job runs): the server
/// drains for its grace period, then closes the stream and exits cleanly instead of waiting forever. The
/// job goes on running without it and is found again by the next start.
#[tokio::test]
async fn a_shutdown_closes_live_streams_after_its_grace() {
    let (mut server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let id = submit(&owner, ws, endless("long", ds)).await;
    stepped(&owner, ws, id, 1).await;
    let stream = owner.url(&format!("{}/stream", job_path(ws, id)));
    let mut stream = owner.client.get(stream).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(
        stream.chunk().await.unwrap().is_some(),
        "the stream is live"
    );

    let term = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // Generous: the grace is seconds; without it this waited forever.
    let exited = server.wait_for_exit(Duration::from_secs(60));
    assert!(
        exited.is_some_and(|s| s.success()),
        "the server exits by itself, cleanly: {exited:?}"
    );
    drop(stream);

    server.crash_and_restart();
    assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
    wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
}

/// The time limit is a stop with its own reason, not a message read back: the run is asked to stop
/// (`cancelling`, reason `time_limit`), writes its checkpoint, and ends as failed saying why.
#[tokio::test]
async fn a_job_at_its_time_limit_stops_with_a_checkpoint_and_fails() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let mut spec = endless("limited", ds);
    spec["time_limit_minutes"] = json!(1);
    let id = submit(&owner, ws, spec).await;
    stepped(&owner, ws, id, 3).await;
    // The form's unit is minutes; a second here keeps the test from waiting one.
    server
        .execute(&format!(
            "UPDATE jobs SET time_limit_secs = 1 WHERE id = {id}"
        ))
        .await;
    let done = finished(&owner, ws, id).await;
    assert_eq!(status(&done), "failed", "{done}");
    assert!(
        done["summary"]["status_message"]
            .as_str()
            .is_some_and(|m| m.contains("time limit")),
        "{done}"
    );
    assert!(
        !done["checkpoints"].as_array().unwrap().is_empty(),
        "a final checkpoint: {done}"
    );
    let reason =
        format!("SELECT COUNT(*) FROM jobs WHERE id = {id} AND status_reason = 'time_limit'");
    assert_eq!(server.count(&reason).await, 1);
}

#[tokio::test]
async fn a_crashed_server_reattaches_to_its_running_job() {
    let (mut server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let spec = tiny("survivor", ds, 60);
    let id = submit(&owner, ws, spec).await;
    stepped(&owner, ws, id, 5).await;

    server.crash_and_restart();
    let done = wait_for(&owner, ws, id, "its end", |j| {
        status(j) == "succeeded" && j["summary"]["exit_code"] == 0
    })
    .await;
    assert_eq!(done["summary"]["step"], 60);
    let metrics = owner.get(&format!("{}/metrics", job_path(ws, id))).await.1;
    assert_eq!(
        steps(&metrics),
        (1..=60).collect::<Vec<_>>(),
        "nothing lost, nothing twice"
    );
    let checkpoint_steps: Vec<i64> = done["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["step"].as_i64().unwrap())
        .collect();
    let unique: HashSet<i64> = checkpoint_steps.iter().copied().collect();
    assert_eq!(unique.len(), checkpoint_steps.len(), "{checkpoint_steps:?}");
    assert!(
        checkpoint_steps.contains(&60),
        "the checkpoint written at the end is registered: {checkpoint_steps:?}"
    );
}

#[tokio::test]
async fn the_cli_submits_follows_and_downloads() {
    let (_server, owner, ws, _) = owner_with_sample(NO_DOCKER).await;
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(&spec, "name = \"from-cli\"\npreset = \"tiny\"\nmax_seq_len = 32\nbatch_size = 16\neval_every_steps = 5\n").unwrap();
    let cli = Cli::of(&owner, ws).await.in_dir(dir.path());
    let paddock = |args: &[&str]| cli.run(args);
    let spec_arg = spec.to_str().unwrap();
    // `paddock job submit --spec job.toml --dataset DATASET FLAGS...`
    let submit = |dataset: &str, flags: &[&str]| {
        let command = ["job", "submit", "--spec", spec_arg, "--dataset", dataset];
        paddock(&[&command[..], flags].concat())
    };
    // Two ranks (data parallelism on the CPU): the log it follows says which spoke.
    let (code, out, err) = submit(
        "snownlp-sample",
        &["--max-steps", "10", "--ranks", "2", "-f"],
    );
    assert_eq!(code, Some(0), "follows until it succeeds\n{out}\n{err}");
    assert!(err.contains("[status] succeeded"), "{err}");
    assert!(out.contains("[rank 0] "), "{out}");
    let (code, out, _) = paddock(&["job", "list"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("from-cli") && out.contains("succeeded") && out.contains("10/10"),
        "{out}"
    );
    let (code, out, _) = paddock(&["ckpt", "--json", "list"]);
    assert_eq!(code, Some(0));
    let checkpoints: Value = serde_json::from_str(&out).unwrap();
    let kept = checkpoints
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["deleted_at"].is_null())
        .expect("a kept checkpoint");
    let id = kept["id"].to_string();
    let (code, _, err) = paddock(&["ckpt", "download", &id, "-o", "model.tar"]);
    assert_eq!(code, Some(0), "{err}");
    let archive = std::fs::read(dir.path().join("model.tar")).unwrap();
    assert!(tar::Archive::new(&archive[..]).entries().unwrap().count() >= 3);
    // Bad input is refused with the field, and a failed job makes `-f` exit non-zero.
    let (code, _, err) = submit("snownlp-sample", &["--lr=-1"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("learning_rate"), "{err}");
    let (code, _, err) = submit("nope", &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no dataset \"nope\""), "{err}");
    // `--task` says what the job learns; reviews teach no entity model, and the server says so.
    let (code, _, err) = submit("snownlp-sample", &["--task", "ner"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("dataset_id") && err.contains("ner"), "{err}");
    let (code, _, err) = submit("snownlp-sample", &["--task", "poetry"]);
    assert_eq!(code, Some(2), "refused by the command line");
    assert!(
        err.contains("not a task (classification, matching, ner)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_job_runs_in_its_environments_container() {
    let Some((mut server, mut cleanup)) = with_docker().await else {
        return;
    };
    let owner = server.signup("owner").await;
    let (ws, ds) = workspace_with_sample(&owner).await;
    let environments = format!("/api/v1/workspaces/{ws}/environments");

    // Without the runtime layer the environment cannot run jobs.
    let plain = json!({ "name": "plain", "base_image": "paddock/base:busybox", "cpus": 1, "memory": "512m" });
    let plain_id = owner.post(&environments, plain).await.1["summary"]["id"]
        .as_i64()
        .unwrap();
    let mut spec = tiny("in-plain", ds, 5);
    spec["environment_id"] = json!(plain_id);
    let (code, err) = owner
        .post(&format!("/api/v1/workspaces/{ws}/jobs"), spec)
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(
        ["environment_without_runtime", "not_built"].contains(&err["code"].as_str().unwrap()),
        "{err}"
    );

    let trainer = json!({ "name": "trainer", "secret_env": { "HUB_TOKEN": "hub-secret-1" } });
    let built = runtime_environment(&owner, ws, trainer, &mut cleanup).await;
    let env_id = built["summary"]["id"].as_i64().unwrap();
    every_runtime_library_loads_in(built["summary"]["image_id"].as_str().unwrap());

    let mut spec = tiny("in-container", ds, 12);
    spec["environment_id"] = json!(env_id);
    let id = submit(&owner, ws, spec).await;
    // The environment's secrets reach the job's container as they reach the environment's own.
    let job_label = format!("label=paddock.job={id}");
    let env_of_container = inspect_running(&job_label, "{{json .Config.Env}}").await;
    assert!(
        env_of_container.contains("HUB_TOKEN=hub-secret-1"),
        "{env_of_container}"
    );
    let done = finished(&owner, ws, id).await;
    assert_eq!(status(&done), "succeeded", "{done}");
    assert_eq!(done["summary"]["executor"], "docker");
    assert_eq!(done["summary"]["exit_code"], 0);
    assert_eq!(done["summary"]["step"], 12);
    assert!(!done["checkpoints"].as_array().unwrap().is_empty());
    // The container is gone; its files stay in the job's directory on the host.
    assert!(
        docker(&["ps", "-aq", "--filter", &job_label])
            .trim()
            .is_empty(),
        "the job's container is removed"
    );
    let job_dir = server
        .dir
        .path()
        .join(format!("data/volumes/w{ws}/workspace/jobs/{id}"));
    assert!(job_dir.join("events.jsonl").exists());
    // The trainer's stderr went through `paddock log-sink` inside the container too.
    let raw = std::fs::read_to_string(job_dir.join("train.log")).unwrap();
    assert!(raw.contains("end: completed at step 12"), "{raw}");

    // Data parallelism inside the container: `launch` starts both ranks there, meeting in the run's
    // folder in the volume.
    let mut spec = tiny("two-ranks-in-container", ds, 6);
    spec["environment_id"] = json!(env_id);
    spec["ranks"] = json!(2);
    let two = submit(&owner, ws, spec).await;
    let done_two = finished(&owner, ws, two).await;
    let logs = owner.get(&format!("{}/logs", job_path(ws, two))).await.1;
    let lines = log_lines(&logs);
    assert_eq!(status(&done_two), "succeeded", "{done_two}\n{lines:#?}");
    assert_eq!(done_two["summary"]["step"], 6);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[rank 1] rank 1 of 2 on ")),
        "{lines:#?}"
    );

    // Its checkpoint deploys into replica containers from the same image.
    let ckpt = kept_checkpoint(&done)["id"].as_i64().unwrap();
    let (ep_id, ep) = crate::endpoints::deploy(
        &owner,
        ws,
        json!({ "name": "boxed", "slug": "boxed", "checkpoint_id": ckpt }),
    )
    .await;
    let detail = owner
        .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
        .await;
    assert_eq!(detail["summary"]["status"], "ready", "{detail}");
    assert_eq!(detail["parity_report"]["passed"], true, "{detail}");
    let endpoint_label = format!("label=paddock.endpoint={ep_id}");
    let replicas = || {
        docker(&["ps", "-q", "--filter", &endpoint_label])
            .lines()
            .count()
    };
    assert_eq!(replicas(), 1, "the replica runs in a container");
    let (code, answers) = playground(&owner, &ep, json!(["服务很好"])).await;
    assert_eq!(code, StatusCode::OK, "{answers}");

    // A replica container no replica row names (its endpoint deleted by a server that died before
    // removing it) is removed when the server comes back; the real replica is re-attached.
    let orphan = format!("paddock-{}-endpoint-999999-0", cleanup.instance);
    docker(&[
        "create",
        "--name",
        &orphan,
        "--label",
        "paddock.managed=true",
        "--label",
        &format!("paddock.instance={}", cleanup.instance),
        built["summary"]["image_id"].as_str().unwrap(),
        "sleep",
        "600",
    ]);
    server.crash_and_restart();
    let by_name = format!("name=^{orphan}$");
    let removed = "the orphaned replica container is removed";
    no_container_left(removed, &by_name, Duration::from_secs(60)).await;
    let answered = poll(Duration::from_secs(30), async || {
        let answer = playground(&owner, &ep, json!(["服务很好"])).await;
        if answer.0 == StatusCode::OK {
            Ok(())
        } else {
            Err(answer)
        }
    })
    .await;
    assert!(
        answered.is_ok(),
        "re-attached after the restart: {answered:?}"
    );
    assert_eq!(
        replicas(),
        1,
        "the same replica container, not a second one"
    );

    let (_, stopped) = owner.post_empty(&format!("{ep}/undeploy")).await;
    assert_eq!(stopped["summary"]["status"], "stopped");
    assert_eq!(replicas(), 0, "undeploying removes the replica container");
}

/// Data parallelism on the CPU: a job of two ranks is one run — its steps, evaluations and checkpoints
/// once, its log saying which rank spoke — and ranks or nodes that cannot be are refused at their field.
#[tokio::test]
async fn two_ranks_on_the_cpu_train_one_run() {
    let (_server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let jobs = format!("/api/v1/workspaces/{ws}/jobs");
    for (field, value, gpus, rule) in [
        (
            "ranks",
            0,
            0,
            json!({"kind": "between", "min": 1, "max": 64}),
        ),
        (
            "ranks",
            65,
            0,
            json!({"kind": "between", "min": 1, "max": 64}),
        ),
        ("ranks", 2, 1, json!({"kind": "ranks_per_gpu", "gpus": 1})),
        (
            "nodes",
            0,
            0,
            json!({"kind": "between", "min": 1, "max": 32}),
        ),
        ("nodes", 2, 0, json!({"kind": "nodes_need_cluster"})),
    ] {
        let mut spec = tiny("refused", ds, 4);
        spec[field] = json!(value);
        spec["gpus"] = json!(gpus);
        let (code, err) = owner.post(&jobs, spec).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
        let problem = err["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["field"] == field)
            .unwrap_or_else(|| panic!("{field} {value} with {gpus} GPU(s): {err}"));
        assert_eq!(problem["rule"], rule, "{err}");
    }

    let mut spec = tiny("two-ranks", ds, 10);
    spec["ranks"] = json!(2);
    let id = submit(&owner, ws, spec).await;
    let done = finished(&owner, ws, id).await;
    assert_eq!(status(&done), "succeeded", "{done}");
    assert_eq!(done["spec"]["ranks"], 2);
    let path = job_path(ws, id);
    let metrics = owner.get(&format!("{path}/metrics")).await.1;
    assert_eq!(
        steps(&metrics),
        (1..=10).collect::<Vec<_>>(),
        "every step once"
    );
    let checkpoints = done["checkpoints"].as_array().unwrap();
    assert!(!checkpoints.is_empty(), "{done}");
    let logs = owner.get(&format!("{path}/logs")).await.1;
    let lines = log_lines(&logs);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[rank 0] ") && l.contains("step 10/10")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("[rank ") || l.starts_with("[paddock] ")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn the_raw_log_is_capped_and_the_full_log_is_kept_in_rotated_files() {
    let args = [NO_DOCKER, &["--train-log-max-bytes", "1500"]].concat();
    let (server, owner, ws, ds) = owner_with_sample(&args).await;
    let id = submit(&owner, ws, tiny("chatty", ds, 20)).await;
    let done = finished(&owner, ws, id).await;
    assert_eq!(
        status(&done),
        "succeeded",
        "a cut log does not hurt the run: {done}"
    );

    // train.log stops at the limit with one line saying so; the trainer was never blocked.
    let data = server.dir.path().join("data");
    let raw = std::fs::read_to_string(server.local_run(id).join("train.log")).unwrap();
    let (kept, note) = raw.trim_end().rsplit_once('\n').unwrap();
    assert!(
        note.starts_with("[paddock] train.log reached its limit of 1500 bytes"),
        "{raw}"
    );
    assert!(kept.len() < 1500 && kept.contains("step 1/20"), "{raw}");
    assert!(!raw.contains("end: completed"), "{raw}");

    // The job's log on disk: what the supervisor read, each line stamped, then its own notes.
    let dir = data.join(format!("logs/jobs/{id}"));
    let file = std::fs::read_to_string(dir.join("job.log")).unwrap();
    let lines: Vec<&str> = file.lines().collect();
    assert_eq!(
        lines.len(),
        raw.lines().count(),
        "every line of train.log once: {file}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.len() > 21 && l.as_bytes()[20] == b' ' && l.starts_with("20")),
        "{file}"
    );
    assert!(
        lines.last().unwrap().contains("reached its limit"),
        "{file}"
    );
    // Through the API the note keeps its value, for a page to word in its reader's language; the
    // trainer's own lines carry none.
    let logs = owner.get(&format!("{}/logs", job_path(ws, id))).await.1;
    let logs = logs.as_array().unwrap();
    let (last, before) = logs.split_last().unwrap();
    assert_eq!(
        last["note"],
        json!({"kind": "train_log_full", "max_bytes": 1500}),
        "{last}"
    );
    assert!(before.iter().all(|l| l.get("note").is_none()), "{logs:?}");

    assert_eq!(
        owner.delete(&job_path(ws, id)).await.0,
        StatusCode::NO_CONTENT
    );
    assert!(!dir.exists(), "the job's log files go with it");
}

/// Jobs on the real two-node Slurm cluster `scripts/slurm.sh` starts, with the server on its login node
/// (the cluster's tools on this host, the data directory seen by the nodes at the same path).
mod on_slurm {
    use super::*;
    use crate::common::Server;

    /// The test cluster's configuration, or `None` (said on stderr) when PADDOCK_TEST_SLURM=skip and no
    /// cluster answers.
    fn slurm_conf() -> Option<String> {
        let conf = std::env::var("PADDOCK_TEST_SLURM_CONF").unwrap_or_else(|_| {
            format!("{}/../target/slurm/slurm.conf", env!("CARGO_MANIFEST_DIR"))
        });
        let ping = std::process::Command::new("scontrol")
            .arg("ping")
            .env("SLURM_CONF", &conf)
            .output();
        let up = ping.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP"));
        match (up, std::env::var("PADDOCK_TEST_SLURM").as_deref()) {
            (true, _) => Some(conf),
            (false, Ok("skip")) => {
                eprintln!("SKIPPING Slurm test: no cluster answers (PADDOCK_TEST_SLURM=skip)");
                None
            }
            (false, _) => panic!(
                "the Slurm tests need the test cluster ({conf}). Start it with scripts/slurm.sh, or set PADDOCK_TEST_SLURM=skip."
            ),
        }
    }

    /// The cluster's tests run side by side, but for those that take a node down: they run alone.
    static CLUSTER: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

    /// The test cluster's configuration, shared with the other tests that leave its nodes up.
    async fn shared_cluster() -> Option<(String, tokio::sync::RwLockReadGuard<'static, ()>)> {
        let conf = slurm_conf()?;
        Some((conf, CLUSTER.read().await))
    }

    /// The test cluster's configuration, for a test that disturbs its nodes: no other test uses it
    /// meanwhile.
    async fn cluster_alone() -> Option<(String, tokio::sync::RwLockWriteGuard<'static, ()>)> {
        let conf = slurm_conf()?;
        Some((conf, CLUSTER.write().await))
    }

    /// Brings a node taken down by a test back into service, however the test ends.
    struct Resume {
        conf: String,
        node: String,
    }

    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = std::process::Command::new("scontrol")
                .args(["update", &format!("nodename={}", self.node), "state=resume"])
                .env("SLURM_CONF", &self.conf)
                .status();
        }
    }

    /// A server with the test cluster (one CPU and 1000 MB a job, so that each node runs two) and its
    /// owner's workspace with the sample dataset.
    async fn with_cluster(conf: &str) -> (Server, User, i64, i64) {
        owner_with_sample(&[NO_DOCKER, &cluster_args(conf)].concat()).await
    }

    /// As [`with_cluster`], the cluster's GPU GRES taken as stand-ins: jobs ask for GPUs, Slurm places
    /// and counts them, the trainers compute on the CPU.
    async fn with_stand_in_gpus(conf: &str) -> (Server, User, i64, i64) {
        owner_with_sample(&[NO_DOCKER, &cluster_args(conf), &["--slurm-gpu-stand-ins"]].concat())
            .await
    }

    /// The arguments of a server on the test cluster at `conf`: one CPU and 1000 MB a job.
    fn cluster_args(conf: &str) -> [&str; 6] {
        [
            "--slurm-conf",
            conf,
            "--slurm-cpus",
            "1",
            "--slurm-memory-mb",
            "1000",
        ]
    }

    /// The arguments that reach the test cluster over SSH through its login node
    /// (root@127.0.0.1:2222, the key and known hosts `scripts/slurm.sh` made beside `conf`), with
    /// `known_hosts` instead of its own when given.
    fn over_ssh(conf: &str, known_hosts: Option<&std::path::Path>) -> Vec<String> {
        let ssh = std::path::Path::new(conf).parent().unwrap().join("ssh");
        let known = known_hosts.map_or_else(|| ssh.join("known_hosts"), |k| k.to_path_buf());
        [
            "--slurm-ssh",
            "root@127.0.0.1",
            "--slurm-ssh-port",
            "2222",
            "--slurm-ssh-key",
            &ssh.join("id_ed25519").to_string_lossy(),
            "--slurm-ssh-known-hosts",
            &known.to_string_lossy(),
            "--slurm-cpus",
            "1",
            "--slurm-memory-mb",
            "1000",
        ]
        .map(String::from)
        .into()
    }

    /// Runs one of Slurm's tools against the test cluster, as another user of the cluster would; its
    /// stdout.
    fn slurm(conf: &str, args: &[&str]) -> String {
        let out = std::process::Command::new(args[0])
            .args(&args[1..])
            .env("SLURM_CONF", conf)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `spec` on the cluster.
    fn on_cluster(mut spec: Value) -> Value {
        spec["cluster"] = json!("slurm");
        spec
    }

    #[tokio::test]
    async fn a_job_on_the_cluster_trains_streams_metrics_and_keeps_checkpoints() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_cluster(&conf).await;
        let mut spec = on_cluster(tiny("on-slurm", ds, 20));
        spec["time_limit_minutes"] = json!(30);
        let id = submit(&owner, ws, spec).await;
        let done = wait_for(&owner, ws, id, "success", |j| status(j) == "succeeded").await;
        assert_eq!(done["summary"]["cluster"], "slurm", "{done}");
        assert_eq!(done["summary"]["step"], 20);
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "{done}"
        );
        let metrics = owner.get(&format!("{}/metrics", job_path(ws, id))).await.1;
        assert_eq!(steps(&metrics), (1..=20).collect::<Vec<_>>());
        // It ran as a batch job named after it, which ends right after the run's exit status is written.
        let slurm_id = done["summary"]["cluster_job"].as_str().unwrap().to_string();
        let show = || {
            let shown = std::process::Command::new("scontrol")
                .args(["show", "job", "-o", &slurm_id])
                .env("SLURM_CONF", &conf)
                .output()
                .unwrap();
            String::from_utf8_lossy(&shown.stdout).into_owned()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut shown = show();
        while !shown.contains("JobState=COMPLETED") && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            shown = show();
        }
        assert!(shown.contains("JobState=COMPLETED"), "{shown}");
        assert!(
            shown.contains(&format!("JobName=paddock-job-{id} ")),
            "{shown}"
        );
        // The server stops it at its 30 minutes; the cluster's own limit, 10 minutes later, is a
        // backstop, with a TERM (a checkpoint) 5 minutes before it.
        assert!(shown.contains("TimeLimit=00:40:00"), "{shown}");
    }

    /// A job in an environment's image on the cluster: the node checks it has the image the job is
    /// locked to, runs the trainer in the environment's container (its secrets, the workspace's network,
    /// the container user) and removes it; the run's files come back as a container job's do here. A
    /// node without that image, or with another image under the environment's tag, fails the job before
    /// it trains, and the job's status says which.
    #[tokio::test]
    async fn a_job_in_an_environments_image_runs_on_a_node_that_has_it() {
        if std::env::var("PADDOCK_TEST_DOCKER").as_deref() == Ok("skip") {
            return;
        }
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let server = Server::start_with(&cluster_args(&conf));
        let mut cleanup = DockerCleanup::of(&server).await;
        let owner = server.signup("owner").await;
        let (ws, ds) = workspace_with_sample(&owner).await;
        let environment = json!({ "name": "on-nodes", "env": { "PADDOCK_TEST": "cluster" },
                                  "secret_env": { "HUB_TOKEN": "hub-secret-2" } });
        let built = runtime_environment(&owner, ws, environment, &mut cleanup).await;
        let env_id = built["summary"]["id"].as_i64().unwrap();
        let image = built["summary"]["image_id"].as_str().unwrap().to_string();
        let in_image = |name: &str| {
            let mut spec = on_cluster(tiny(name, ds, 12));
            spec["environment_id"] = json!(env_id);
            spec
        };
        // The status message of a job in the image that fails on the node.
        let failed_with = async |name: &str| {
            let id = submit(&owner, ws, in_image(name)).await;
            let failed = wait_for(&owner, ws, id, "failure", |j| status(j) == "failed").await;
            failed["summary"]["status_message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };

        let id = submit(&owner, ws, in_image("in-image")).await;
        let job_label = format!("label=paddock.job={id}");
        let format = "{{json .Config.Env}} {{.Config.User}} {{json .NetworkSettings.Networks}}";
        let inspected = inspect_running(&job_label, format).await;
        assert!(inspected.contains("HUB_TOKEN=hub-secret-2"), "{inspected}");
        assert!(inspected.contains("PADDOCK_TEST=cluster"), "{inspected}");
        assert!(inspected.contains(" 1000:1000 "), "{inspected}");
        assert!(
            inspected.contains(&format!("paddock-{}-net-w{ws}", cleanup.instance)),
            "the workspace's network: {inspected}"
        );
        let done = wait_for(&owner, ws, id, "success", |j| status(j) == "succeeded").await;
        assert_eq!(done["summary"]["cluster"], "slurm", "{done}");
        assert_eq!(done["summary"]["executor"], "docker", "{done}");
        assert_eq!(done["summary"]["step"], 12, "{done}");
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "{done}"
        );
        let metrics = owner.get(&format!("{}/metrics", job_path(ws, id))).await.1;
        assert_eq!(steps(&metrics), (1..=12).collect::<Vec<_>>());
        let data = server.dir.path().join("data");
        let volume_run = data.join(format!("volumes/w{ws}/workspace/jobs/{id}"));
        let raw = std::fs::read_to_string(volume_run.join("train.log")).unwrap();
        assert!(raw.contains("end: completed at step 12"), "{raw}");
        // The node removed the container, and the secrets' file once it read it.
        let removed = "the node removes the job's container";
        no_container_left(removed, &job_label, Duration::from_secs(30)).await;
        let private = data.join(format!("runs/jobs/{id}"));
        assert!(private.join("container.json").exists());
        assert!(!private.join("container.env").exists());

        // A cancel reaches the trainer in the container through the node: a final checkpoint.
        let mut spec = on_cluster(endless("cancelled-in-image", ds));
        spec["environment_id"] = json!(env_id);
        let id = submit(&owner, ws, spec).await;
        stepped(&owner, ws, id, 3).await;
        cancel(&owner, ws, id).await;
        let done = wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "a final checkpoint: {done}"
        );
        let removed = "the node removes the cancelled job's container";
        let label = format!("label=paddock.job={id}");
        no_container_left(removed, &label, Duration::from_secs(30)).await;

        // The image leaves the node's Docker: the next job fails there before it trains.
        docker(&["rmi", "-f", &image]);
        let message = failed_with("no-image").await;
        assert!(
            message.contains(&format!("the node has no image {image}")),
            "{message}"
        );

        // Another image under the environment's tag (a stale load on the node): said so.
        let tag = built["versions"][0]["image_tag"]
            .as_str()
            .unwrap()
            .to_string();
        docker(&["tag", "paddock/base:busybox", &tag]);
        let other = docker(&["image", "inspect", "--format", "{{.Id}}", &tag]);
        let message = failed_with("other-image").await;
        assert!(
            message.contains(&format!("{tag} is {}", other.trim()))
                && message.contains(&format!("locked to {image}")),
            "{message}"
        );
        docker(&["rmi", &tag]);
    }

    /// An endpoint's replicas go to the partition it picks (`short`: node2 alone); a partition the
    /// cluster does not have, or one without a cluster, is refused at its field and records nothing.
    #[tokio::test]
    async fn an_endpoints_replicas_go_to_the_partition_it_picks() {
        use crate::endpoints::{deploy, trained};
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (server, owner, _, _) = with_cluster(&conf).await;
        let (ws, _, checkpoints) = trained(&owner, 5).await;
        let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");
        let refused = [
            json!({ "name": "nowhere", "checkpoint_id": checkpoints[0], "cluster": "slurm", "partition": "nowhere" }),
            json!({ "name": "no-cluster", "checkpoint_id": checkpoints[0], "partition": "short" }),
        ];
        for spec in refused {
            let (code, body) = owner.post(&endpoints, spec).await;
            assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(
                (&body["code"], &body["field"]),
                (&json!("cluster_invalid"), &json!("partition")),
                "{body}"
            );
        }
        let (_, body) = owner
            .post(&endpoints, json!({ "name": "nowhere", "checkpoint_id": checkpoints[0], "cluster": "slurm", "partition": "nowhere" }))
            .await;
        assert!(
            body["problems"][0]["rule"]["values"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("short"))),
            "the partitions it has: {body}"
        );
        assert_eq!(server.count("SELECT COUNT(*) FROM endpoints").await, 0);

        let spec = json!({ "name": "short", "checkpoint_id": checkpoints[0], "cluster": "slurm", "partition": "short" });
        let (_, ep) = deploy(&owner, ws, spec).await;
        let ready = owner
            .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
            .await;
        assert_eq!(ready["summary"]["status"], "ready", "{ready}");
        assert_eq!(ready["spec"]["partition"], "short", "{ready}");
        let batch = ready["replicas"][0]["cluster_job"].as_str().unwrap();
        let shown = slurm(&conf, &["scontrol", "show", "job", "-o", batch]);
        assert!(shown.contains("Partition=short "), "{shown}");
        assert!(shown.contains("NodeList=node2 "), "{shown}");
        let (code, _) = owner.post_empty(&format!("{ep}/undeploy")).await;
        assert_eq!(code, StatusCode::OK);
    }

    /// Paddock off the cluster, reaching its tools over SSH on a login node: a job runs there, streams
    /// its steps, and a cancel (a TERM through `scancel` on the login node) ends it with a checkpoint.
    /// A login node whose host key is not on record is refused at start, before anything is sent.
    #[tokio::test]
    async fn over_ssh_to_a_login_node_a_job_runs_and_cancels_with_a_checkpoint() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let args = [
            NO_DOCKER.iter().map(|a| a.to_string()).collect(),
            over_ssh(&conf, None),
        ]
        .concat();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_server, owner, ws, ds) = owner_with_sample(&args).await;
        let clusters = owner.get("/api/v1/clusters").await.1;
        assert_eq!(clusters[0]["problem"], Value::Null, "{clusters}");
        assert_eq!(
            clusters[0]["nodes"].as_array().map(Vec::len),
            Some(2),
            "{clusters}"
        );
        let id = submit(&owner, ws, on_cluster(endless("over-ssh", ds))).await;
        stepped(&owner, ws, id, 3).await;
        assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
        let done = wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "a final checkpoint: {done}"
        );
        assert!(done["summary"]["cluster_job"].is_string(), "{done}");

        // Another host's key on record for 127.0.0.1:2222: the server does not start, and says why.
        let dir = tempfile::tempdir().unwrap();
        let stranger = dir.path().join("stranger");
        let keygen = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&stranger)
            .status()
            .unwrap();
        assert!(keygen.success());
        let key = std::fs::read_to_string(stranger.with_extension("pub")).unwrap();
        let known = dir.path().join("known_hosts");
        let key: Vec<&str> = key.split_whitespace().take(2).collect();
        std::fs::write(&known, format!("[127.0.0.1]:2222 {}\n", key.join(" "))).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
            .arg("serve")
            .args(["--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(NO_DOCKER)
            .args(over_ssh(&conf, Some(&known)))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("the Slurm cluster at ssh root@127.0.0.1 -p 2222")
                && stderr.contains("Host key verification failed"),
            "{stderr}"
        );
        assert!(
            !dir.path().join("data").exists(),
            "nothing kept of a server that did not start"
        );
    }

    #[tokio::test]
    async fn cancelling_a_job_on_the_cluster_stops_it_with_a_checkpoint() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_cluster(&conf).await;
        let id = submit(&owner, ws, on_cluster(endless("long-on-slurm", ds))).await;
        stepped(&owner, ws, id, 3).await;
        assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
        let done = wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "a final checkpoint: {done}"
        );
    }

    /// The cluster queues and places its own jobs: two on it and one here run at once, though this
    /// server has one CPU slot (which a cluster job does not take).
    #[tokio::test]
    async fn jobs_on_the_cluster_take_no_slot_of_this_server() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_cluster(&conf).await;
        let here = submit(&owner, ws, endless("here", ds)).await;
        let there: Vec<i64> = [
            submit(&owner, ws, on_cluster(endless("there-1", ds))).await,
            submit(&owner, ws, on_cluster(endless("there-2", ds))).await,
        ]
        .into();
        for id in there.iter().chain([&here]) {
            stepped(&owner, ws, *id, 1).await;
        }
        for id in there.iter().chain([&here]) {
            cancel(&owner, ws, *id).await;
        }
        for id in there.iter().chain([&here]) {
            wait_for(&owner, ws, *id, "cancelled", |j| status(j) == "cancelled").await;
        }
    }

    /// Killed with SIGKILL while its job runs on the cluster, the server finds the job again by the id
    /// recorded in its row: the steps go on counting, and a cancel still reaches it.
    #[tokio::test]
    async fn a_crashed_server_reattaches_to_its_job_on_the_cluster() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (mut server, owner, ws, ds) = with_cluster(&conf).await;
        let id = submit(&owner, ws, on_cluster(endless("survivor-on-slurm", ds))).await;
        stepped(&owner, ws, id, 3).await;
        let before = job(&owner, ws, id).await["summary"]["step"]
            .as_i64()
            .unwrap();
        server.crash_and_restart();
        stepped(&owner, ws, id, before + 3).await;
        assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
        let done = wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        assert!(
            !done["checkpoints"].as_array().unwrap().is_empty(),
            "a final checkpoint: {done}"
        );
        let metrics = owner.get(&format!("{}/metrics", job_path(ws, id))).await.1;
        let steps = steps(&metrics);
        let expected: Vec<i64> = (1..=*steps.last().unwrap()).collect();
        assert_eq!(steps, expected, "nothing lost, nothing twice");
    }

    /// `spec` on the cluster, asking for `gpus` of its GPUs.
    fn on_cluster_gpus(spec: Value, gpus: u32) -> Value {
        let mut spec = on_cluster(spec);
        spec["gpus"] = json!(gpus);
        spec
    }

    /// Job `id`'s placement as the cluster says it.
    async fn placement(owner: &User, ws: i64, id: i64) -> Value {
        owner
            .get(&format!("{}/placement", job_path(ws, id)))
            .await
            .1
    }

    /// GPU jobs on the cluster (its GPUs stand-ins, so the trainers compute on the CPU): two asking for
    /// both GPUs of a node run at once on the two nodes; a third waits in Slurm's queue with Slurm's
    /// reason and takes the node the first leaves. The workspace's GPU quota counts them: a job asking
    /// more than the quota is refused at submission, and one that would go over it waits in Paddock's
    /// queue, not handed to the cluster, until GPUs are given back.
    #[tokio::test]
    async fn gpu_jobs_spread_over_the_nodes_wait_in_slurms_queue_and_count_against_the_quota() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_stand_in_gpus(&conf).await;
        let two = |name: &str| on_cluster_gpus(endless(name, ds), 2);
        let (a, b) = (
            submit(&owner, ws, two("gpus-a")).await,
            submit(&owner, ws, two("gpus-b")).await,
        );
        stepped(&owner, ws, a, 1).await;
        stepped(&owner, ws, b, 1).await;
        let node_of = |p: &Value| p["nodes"].as_str().unwrap_or_default().to_string();
        let (on_a, on_b) = (
            node_of(&placement(&owner, ws, a).await),
            node_of(&placement(&owner, ws, b).await),
        );
        let mut nodes = [on_a.clone(), on_b.clone()];
        nodes.sort();
        assert_eq!(nodes, ["node1", "node2"], "one per node");
        let detail = job(&owner, ws, a).await;
        let config = detail["config_toml"].as_str().unwrap_or_default();
        assert!(
            config.contains(r#"device = "cpu""#),
            "stand-in GPUs: the trainer on the CPU: {config}"
        );

        let c = submit(&owner, ws, two("gpus-c")).await;
        let mut waiting = placement(&owner, ws, c).await;
        // Slurm gives its reason at its next scheduling pass.
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        while (waiting["state"] != "waiting" || waiting["reason"].is_null())
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(300)).await;
            waiting = placement(&owner, ws, c).await;
        }
        assert_eq!(waiting["state"], "waiting", "{waiting}");
        assert!(
            waiting["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{waiting}"
        );
        cancel(&owner, ws, a).await;
        stepped(&owner, ws, c, 1).await;
        assert_eq!(
            node_of(&placement(&owner, ws, c).await),
            on_a,
            "the node job a left"
        );
        for id in [b, c] {
            cancel(&owner, ws, id).await;
        }
        for id in [a, b, c] {
            wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        }

        // A quota of 2 GPUs, here and on the cluster together.
        let quota = format!("/api/v1/admin/workspaces/{ws}/gpu-quota");
        let (code, body) = owner.put(&quota, json!({ "max_gpus": 2 })).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let jobs = format!("/api/v1/workspaces/{ws}/jobs");
        let (code, body) = owner
            .post(&jobs, on_cluster_gpus(endless("too-big", ds), 3))
            .await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["field"], "gpus", "{body}");
        assert_eq!(
            body["problems"][0]["rule"]["kind"], "more_gpus_than_quota",
            "{body}"
        );
        let d = submit(&owner, ws, two("quota-d")).await;
        stepped(&owner, ws, d, 1).await;
        // The admin page's table: the quota and what the workspace holds now, counted as the quota is.
        let (code, quotas) = owner.get("/api/v1/admin/gpu-quotas").await;
        assert_eq!(code, StatusCode::OK, "{quotas}");
        let row = quotas
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["workspace_id"] == ws)
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (&row["max_gpus"], &row["gpus_held"]),
            (&json!(2), &json!(2)),
            "{quotas}"
        );
        let e = submit(&owner, ws, on_cluster_gpus(endless("quota-e", ds), 1)).await;
        tokio::time::sleep(Duration::from_secs(8)).await;
        let held = job(&owner, ws, e).await;
        assert_eq!(status(&held), "queued", "over the quota: {held}");
        assert!(
            held["summary"]["cluster_job"].is_null(),
            "not handed to the cluster: {held}"
        );
        cancel(&owner, ws, d).await;
        stepped(&owner, ws, e, 1).await;
        cancel(&owner, ws, e).await;
        for id in [d, e] {
            wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        }
    }

    /// A job across both nodes of the cluster, one GPU each (stand-ins: each node's rank trains on its
    /// CPU): one batch job of two nodes, which `launch` spreads over them with srun, two ranks of one
    /// run on two machines — every step once, its log saying which rank spoke, its placement both
    /// nodes; the quota counts the GPUs of every node; a cancel reaches both ranks and rank 0 writes
    /// the final checkpoint.
    #[tokio::test]
    async fn a_job_across_two_nodes_trains_one_run_and_stops_on_both() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_stand_in_gpus(&conf).await;
        let across = |spec: Value| {
            let mut spec = on_cluster_gpus(spec, 1);
            spec["nodes"] = json!(2);
            spec
        };
        let quota = format!("/api/v1/admin/workspaces/{ws}/gpu-quota");
        let (code, body) = owner.put(&quota, json!({ "max_gpus": 1 })).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let jobs = format!("/api/v1/workspaces/{ws}/jobs");
        let (code, body) = owner.post(&jobs, across(tiny("over", ds, 4))).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            body["problems"][0]["rule"],
            json!({"kind": "more_gpus_than_quota", "quota": 1}),
            "two nodes of one GPU are two GPUs: {body}"
        );
        let (code, body) = owner.put(&quota, json!({ "max_gpus": 2 })).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        // `short` has node2 alone: refused before anything is queued, not when Slurm is handed it.
        let mut short = across(tiny("short", ds, 4));
        short["partition"] = json!("short");
        let (code, body) = owner.post(&jobs, short).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["field"], "nodes", "{body}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("partition short has 1 node(s); the job asks for 2"),
            "{body}"
        );

        let id = submit(&owner, ws, across(tiny("two-nodes", ds, 10))).await;
        let done = wait_for(&owner, ws, id, "success", |j| {
            ["succeeded", "failed"].contains(&status(j))
        })
        .await;
        let path = job_path(ws, id);
        let logs = owner.get(&format!("{path}/logs")).await.1;
        let lines = log_lines(&logs);
        assert_eq!(status(&done), "succeeded", "{done}\n{lines:#?}");
        assert_eq!(done["spec"]["nodes"], 2);
        let metrics = owner.get(&format!("{path}/metrics")).await.1;
        assert_eq!(
            steps(&metrics),
            (1..=10).collect::<Vec<_>>(),
            "every step once"
        );
        // Each rank says where it runs: one on each node.
        let node_of = |rank: usize| {
            let said = format!("[rank {rank}] rank {rank} of 2 on ");
            lines
                .iter()
                .find_map(|l| l.strip_prefix(said.as_str()))
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("rank {rank} says where: {lines:#?}"))
                .to_string()
        };
        let mut nodes = [node_of(0), node_of(1)];
        nodes.sort();
        assert_eq!(nodes, ["node1", "node2"], "{lines:#?}");
        let slurm_id = done["summary"]["cluster_job"].as_str().unwrap().to_string();
        let shown = slurm(&conf, &["scontrol", "show", "job", "-o", &slurm_id]);
        assert!(shown.contains("NumNodes=2 "), "{shown}");
        assert!(shown.contains("NodeList=node[1-2] "), "{shown}");

        let id = submit(&owner, ws, across(endless("two-nodes-long", ds))).await;
        stepped(&owner, ws, id, 3).await;
        assert_eq!(placement(&owner, ws, id).await["nodes"], "node[1-2]");
        assert!(["cancelling", "cancelled"].contains(&status(&cancel(&owner, ws, id).await)));
        let done = wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
        let step = done["summary"]["step"].as_i64().unwrap();
        let last = done["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["step"].as_i64().unwrap())
            .max();
        assert_eq!(
            last,
            Some(step),
            "a final checkpoint at the step it stopped: {done}"
        );
    }

    /// Whether Slurm job `job` is still pending or running (a job it has forgotten is not).
    fn in_queue(conf: &str, job: &str) -> bool {
        let out = std::process::Command::new("squeue")
            .args(["-h", "-j", job, "-o", "%T"])
            .env("SLURM_CONF", conf)
            .output()
            .unwrap();
        out.status.success() && !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    }

    /// The total of each status the `load` clients saw.
    async fn answers(
        clients: Vec<tokio::task::JoinHandle<std::collections::BTreeMap<u16, u32>>>,
    ) -> std::collections::BTreeMap<u16, u32> {
        let mut seen = std::collections::BTreeMap::new();
        for client in clients {
            for (status, n) in client.await.unwrap() {
                *seen.entry(status).or_insert(0) += n;
            }
        }
        seen
    }

    /// An endpoint whose replicas are batch jobs on the cluster: it passes the parity gate and answers
    /// through the gateway; a rollout under load fails no request; a replica whose Slurm job is
    /// cancelled behind Paddock's back is started again; undeploying ends the jobs. A cluster the server
    /// does not have is refused and records nothing.
    #[tokio::test]
    async fn replicas_on_the_cluster_answer_roll_out_under_load_and_come_back() {
        use crate::endpoints::{deploy, load, new_key, predict, trained};
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (mut server, owner, _, _) = with_cluster(&conf).await;
        let (ws, _, checkpoints) = trained(&owner, 15).await;
        let (first, second) = (checkpoints[0], checkpoints[checkpoints.len() - 1]);
        assert_ne!(first, second, "{checkpoints:?}");
        let endpoints = format!("/api/v1/workspaces/{ws}/endpoints");
        let nowhere = json!({ "name": "nowhere", "checkpoint_id": first, "cluster": "nowhere" });
        let (code, body) = owner.post(&endpoints, nowhere).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            (&body["code"], &body["field"]),
            (&json!("cluster_invalid"), &json!("cluster"))
        );
        assert_eq!(server.count("SELECT COUNT(*) FROM endpoints").await, 0);

        let spec = json!({ "name": "on-slurm", "slug": "on-slurm", "checkpoint_id": first, "cluster": "slurm" });
        let (_, ep) = deploy(&owner, ws, spec).await;
        let ready = owner
            .wait_for(&ep, "a verdict", |d| d["summary"]["status"] != "starting")
            .await;
        assert_eq!(ready["summary"]["status"], "ready", "{ready}");
        assert_eq!(ready["summary"]["cluster"], "slurm", "{ready}");
        assert_eq!(ready["spec"]["cluster"], "slurm", "{ready}");
        assert_eq!(ready["parity_report"]["passed"], true, "{ready}");
        let job_of = |d: &Value| d["replicas"][0]["cluster_job"].as_str().map(str::to_string);
        let batch = job_of(&ready).expect("the replica's Slurm job");
        let shown = slurm(&conf, &["scontrol", "show", "job", "-o", &batch]);
        let id = ready["summary"]["id"].as_i64().unwrap();
        assert!(
            shown.contains(&format!("JobName=paddock-endpoint-{id}-0 ")),
            "{shown}"
        );
        assert!(shown.contains("JobState=RUNNING"), "{shown}");
        // It listens on its node for anyone on the cluster's network, but answers only the server,
        // whose token it read from a file that is gone now.
        let folder = server.dir.path().join(format!("data/endpoints/{id}"));
        let said = std::fs::read_to_string(folder.join("replica-0.out")).unwrap();
        let port = said.trim().rsplit(':').next().unwrap().to_string();
        let direct = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/predict"))
            .json(&json!({ "inputs": ["好"] }))
            .send()
            .await
            .unwrap();
        assert_eq!(direct.status(), StatusCode::UNAUTHORIZED, "{said}");
        assert!(!folder.join("replica-0.token").exists());

        let key = new_key(
            &owner,
            &ep,
            json!({ "name": "load", "rate_limit_per_minute": 1000000 }),
        )
        .await;
        let secret = key["secret"].as_str().unwrap().to_string();
        let public = server.url("/v1/endpoints/on-slurm/predict");
        let res = predict(&public, Some(&secret), json!({ "inputs": ["服务很好"] })).await;
        assert_eq!(res.status(), StatusCode::OK);

        // Another checkpoint rolled out under load: the new replica, another batch job, takes traffic
        // once it passed the gate, and the old one's job ends after it drained.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clients: Vec<_> = (0..3)
            .map(|_| load(public.clone(), secret.clone(), stop.clone()))
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (code, body) = owner.patch(&ep, json!({ "checkpoint_id": second })).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let rolled = owner
            .wait_for(&ep, "the new checkpoint", |d| {
                d["summary"]["checkpoint_id"] == second
                    && d["summary"]["change"].is_null()
                    && d["summary"]["ready_replicas"] == 1
                    && d["replicas"].as_array().unwrap().len() == 1
            })
            .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = answers(clients).await;
        assert_eq!(
            seen.keys().copied().collect::<Vec<_>>(),
            vec![200],
            "every request answered: {seen:?}"
        );
        assert!(seen[&200] >= 10, "{seen:?}");
        let rolled_job = job_of(&rolled).expect("the new replica's Slurm job");
        assert_ne!(rolled_job, batch, "{rolled}");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while in_queue(&conf, &batch) {
            assert!(
                std::time::Instant::now() < deadline,
                "the old replica's job still runs"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }

        // Its job cancelled on the cluster: the watcher starts another, and the endpoint answers again.
        slurm(&conf, &["scancel", &rolled_job]);
        let back = owner
            .wait_for(&ep, "a restarted replica", |d| {
                d["replicas"][0]["restarts"].as_u64().unwrap_or(0) >= 1
                    && d["replicas"][0]["status"] == "ready"
            })
            .await;
        let restarted = job_of(&back).expect("the restarted replica's Slurm job");
        assert_ne!(restarted, rolled_job, "{back}");
        let res = predict(&public, Some(&secret), json!({ "inputs": ["还行"] })).await;
        assert_eq!(res.status(), StatusCode::OK);

        // The server killed with SIGKILL re-attaches to the replica's job: the same job answers.
        server.crash_and_restart();
        let public = server.url("/v1/endpoints/on-slurm/predict");
        let res = predict(&public, Some(&secret), json!({ "inputs": ["不错"] })).await;
        assert_eq!(res.status(), StatusCode::OK);
        let after = owner.get(&ep).await.1;
        assert_eq!(
            job_of(&after).as_deref(),
            Some(restarted.as_str()),
            "{after}"
        );
        assert_eq!(
            after["replicas"][0]["restarts"], back["replicas"][0]["restarts"],
            "{after}"
        );

        // Undeployed: nothing of it is left running on the cluster.
        let (code, _) = owner.post_empty(&format!("{ep}/undeploy")).await;
        assert_eq!(code, StatusCode::OK);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while in_queue(&conf, &restarted) {
            assert!(
                std::time::Instant::now() < deadline,
                "the replica's job still runs"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// A job may pick one of the cluster's partitions: it runs there (`short` has node2 alone), and the
    /// job's page says which. A partition the cluster does not have, or one without a cluster, is
    /// refused at its field and nothing is queued.
    #[tokio::test]
    async fn a_job_goes_to_the_partition_it_picks_and_an_unknown_one_is_refused() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (server, owner, ws, ds) = with_cluster(&conf).await;
        let jobs = format!("/api/v1/workspaces/{ws}/jobs");
        let mut spec = on_cluster(tiny("nowhere", ds, 5));
        spec["partition"] = json!("debug");
        let (code, body) = owner.post(&jobs, spec).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            (&body["code"], &body["field"]),
            (&json!("cluster_invalid"), &json!("partition"))
        );
        let rule = &body["problems"][0]["rule"];
        assert_eq!(
            rule,
            &json!({ "kind": "one_of", "values": ["gpu", "short"] }),
            "{body}"
        );
        let mut spec = tiny("here", ds, 5);
        spec["partition"] = json!("short");
        let (code, body) = owner.post(&jobs, spec).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["field"], "partition", "{body}");
        assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);

        let mut spec = on_cluster(endless("short-one", ds));
        spec["partition"] = json!("short");
        let id = submit(&owner, ws, spec).await;
        stepped(&owner, ws, id, 1).await;
        let placed = placement(&owner, ws, id).await;
        assert_eq!(placed["nodes"], "node2", "{placed}");
        let detail = job(&owner, ws, id).await;
        assert_eq!(detail["spec"]["partition"], "short", "{detail}");
        let batch = detail["summary"]["cluster_job"]
            .as_str()
            .unwrap()
            .to_string();
        let shown = slurm(&conf, &["scontrol", "show", "job", "-o", &batch]);
        assert!(shown.contains("Partition=short "), "{shown}");
        cancel(&owner, ws, id).await;
        wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
    }

    /// An admin registers a cluster from the dashboard's API. Bad settings are refused at their field
    /// and leave nothing behind: fields that break their rules, a login node whose host key is not the
    /// one given, a default partition the cluster lacks, a name taken (by the server's own cluster).
    /// Registered over SSH with the server's own key, the cluster takes work in its default
    /// partition; it is not removed while a job runs there, and is still there after a restart; once
    /// removed, work for it is refused. The server's own cluster cannot be removed from here.
    #[tokio::test]
    async fn a_cluster_registered_from_the_dashboard_takes_work_and_goes_when_idle() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (mut server, admin, ws, ds) = with_cluster(&conf).await;
        let ssh = std::path::Path::new(&conf).parent().unwrap().join("ssh");
        let (_, key) = admin.get("/api/v1/admin/ssh-key").await;
        let key = key["public_key"].as_str().unwrap().to_string();
        assert!(key.starts_with("ssh-ed25519 "), "{key}");
        let again = admin.get("/api/v1/admin/ssh-key").await.1;
        assert_eq!(again["public_key"], key.as_str(), "one key, made once");
        // The login node lets the server's key in, as its admin would.
        let mut authorized = std::fs::OpenOptions::new()
            .append(true)
            .open(ssh.join("authorized_keys"))
            .unwrap();
        std::io::Write::write_all(&mut authorized, format!("{key}\n").as_bytes()).unwrap();
        let known_hosts = std::fs::read_to_string(ssh.join("known_hosts")).unwrap();
        let register = |name: &str, reach: Value| json!({ "name": name, "reach": reach, "partition": "short", "cpus": 1, "memory_mb": 1000 });
        let by_ssh = |known: &str| json!({ "kind": "ssh", "destination": "root@127.0.0.1", "port": 2222, "known_hosts": known });
        let clusters = "/api/v1/admin/clusters";
        let member = server.signup("member").await;
        let (code, _) = member
            .post(clusters, register("lab", by_ssh(&known_hosts)))
            .await;
        assert_eq!(code, StatusCode::FORBIDDEN);

        let mut bad = register("Lab 1", by_ssh("127.0.0.1 ssh-ed25519 not-base64"));
        bad["cpus"] = json!(0);
        let (code, body) = admin.post(clusters, bad).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["code"], "cluster_settings_invalid", "{body}");
        let fields = problem_fields(&body);
        assert_eq!(fields, ["name", "cpus", "reach.known_hosts"], "{body}");
        let host = known_hosts.split_whitespace().next().unwrap();
        let wrong_key = format!("{host} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH8ytBmIMXBNf0bOBUjq1hwQ4sLNHbSmyZ0wbpAdP1dX\n");
        let (code, body) = admin
            .post(clusters, register("lab", by_ssh(&wrong_key)))
            .await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            (&body["code"], &body["field"]),
            (&json!("cluster_unreachable"), &json!("reach")),
            "{body}"
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("ssh root@127.0.0.1 -p 2222"),
            "{body}"
        );
        let mut unknown = register("lab", json!({ "kind": "local", "slurm_conf": conf }));
        unknown["account"] = json!("no-such-team");
        let (code, body) = admin.post(clusters, unknown).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            (&body["code"], &body["field"]),
            (&json!("cluster_settings_invalid"), &json!("account")),
            "{body}"
        );
        let mut debug = register("lab", json!({ "kind": "local", "slurm_conf": conf }));
        debug["partition"] = json!("debug");
        let (code, body) = admin.post(clusters, debug).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["field"], "partition", "{body}");
        let (code, body) = admin
            .post(clusters, register("slurm", by_ssh(&known_hosts)))
            .await;
        assert_eq!(
            (code, &body["code"]),
            (StatusCode::CONFLICT, &json!("cluster_name_taken")),
            "{body}"
        );
        assert_eq!(server.count("SELECT COUNT(*) FROM clusters").await, 0);
        let left: Vec<String> = std::fs::read_dir(server.dir.path().join("data/clusters"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with("id_ed25519"))
            .collect();
        assert!(left.is_empty(), "refused registrations left {left:?}");

        let (code, lab) = admin
            .post(clusters, register("lab", by_ssh(&known_hosts)))
            .await;
        assert_eq!(code, StatusCode::CREATED, "{lab}");
        assert_eq!(
            (&lab["registered"], &lab["partition"]),
            (&json!(true), &json!("short")),
            "{lab}"
        );
        assert_eq!(lab["reached_by"], "ssh root@127.0.0.1 -p 2222", "{lab}");
        let (code, body) = admin
            .post(clusters, register("lab", by_ssh(&known_hosts)))
            .await;
        assert_eq!(
            (code, &body["code"]),
            (StatusCode::CONFLICT, &json!("cluster_name_taken")),
            "{body}"
        );
        let listed = admin.get("/api/v1/clusters").await.1;
        let names: Vec<(&str, bool)> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap(),
                    c["registered"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(names, [("slurm", false), ("lab", true)], "{listed}");

        // Work for it goes to its default partition, through the login node.
        let mut spec = endless("on-lab", ds);
        spec["cluster"] = json!("lab");
        let id = submit(&admin, ws, spec).await;
        stepped(&admin, ws, id, 1).await;
        let placed = placement(&admin, ws, id).await;
        assert_eq!(placed["nodes"], "node2", "{placed}");
        let (code, body) = admin.delete(&format!("{clusters}/lab")).await;
        assert_eq!(
            (code, &body["code"]),
            (StatusCode::CONFLICT, &json!("cluster_in_use")),
            "{body}"
        );
        // Still there after a restart, still following its job.
        server.crash_and_restart();
        let listed = admin.get("/api/v1/clusters").await.1;
        assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
        cancel(&admin, ws, id).await;
        // Cancelled once the trainer said so; over once its batch job ended too.
        wait_for(&admin, ws, id, "its end", |j| {
            status(j) == "cancelled" && !j["summary"]["finished_at"].is_null()
        })
        .await;

        let (code, body) = admin.delete(&format!("{clusters}/slurm")).await;
        assert_eq!(
            (code, &body["code"]),
            (StatusCode::CONFLICT, &json!("cluster_from_settings")),
            "{body}"
        );
        let (code, body) = admin.delete(&format!("{clusters}/lab")).await;
        assert_eq!(code, StatusCode::NO_CONTENT, "{body}");
        assert_eq!(
            admin.delete(&format!("{clusters}/lab")).await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(server.count("SELECT COUNT(*) FROM clusters").await, 0);
        assert!(!server.dir.path().join("data/clusters/lab").exists());
        let mut spec = tiny("after", ds, 2);
        spec["cluster"] = json!("lab");
        let (code, body) = admin
            .post(&format!("/api/v1/workspaces/{ws}/jobs"), spec)
            .await;
        assert_eq!(
            (code, &body["field"]),
            (StatusCode::UNPROCESSABLE_ENTITY, &json!("cluster")),
            "{body}"
        );
    }

    /// The shared-directory check of a server `start` gave, once it has run (it starts with the server).
    async fn shared_dir_check(user: &User) -> Value {
        let checked = user
            .poll("/api/v1/clusters", Duration::from_secs(180), |c| {
                !c[0]["shared_dir"].is_null()
            })
            .await;
        match checked {
            Ok(clusters) => clusters[0]["shared_dir"].clone(),
            Err(last) => panic!("no shared-directory check: {last}"),
        }
    }

    /// A server whose data directory the cluster's nodes do not see (it is mounted only where the
    /// server runs): the preflight finds it out on every partition, the admin page's view says so, and
    /// jobs and replicas for the cluster are refused at submission with the reason, recording nothing.
    #[tokio::test]
    async fn nodes_blind_to_the_data_directory_are_found_out_and_nothing_is_sent_to_them() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let server = Server::start_private(&[NO_DOCKER, &cluster_args(&conf)].concat());
        let owner = server.signup("owner").await;
        let (ws, ds) = workspace_with_sample(&owner).await;
        let check = shared_dir_check(&owner).await;
        let partitions = check["partitions"].as_array().unwrap();
        let names: Vec<&str> = partitions
            .iter()
            .map(|p| p["partition"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["gpu", "short"], "{check}");
        for p in partitions {
            assert_eq!(p["checked"], true, "{check}");
            let problem = p["problem"].as_str().unwrap_or_default();
            assert!(
                problem.contains("do not see this server's data directory"),
                "{check}"
            );
        }
        let jobs = format!("/api/v1/workspaces/{ws}/jobs");
        let (code, body) = owner.post(&jobs, on_cluster(tiny("blind", ds, 5))).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            (&body["code"], &body["field"]),
            (&json!("cluster_invalid"), &json!("cluster"))
        );
        assert!(
            body["message"].as_str().unwrap().contains("partition gpu"),
            "{body}"
        );
        // (Its database is in its private directory too: asked through the API.)
        assert_eq!(owner.get(&jobs).await.1, json!([]), "nothing queued");
        // Its own jobs run as ever.
        let here = submit(&owner, ws, tiny("here", ds, 2)).await;
        assert_eq!(status(&finished(&owner, ws, here).await), "succeeded");
    }

    /// An evaluation may run on the cluster: a batch job named after it, its metrics read back from the
    /// shared run folder as for one on this server; a cluster the server does not have is refused.
    #[tokio::test]
    async fn an_evaluation_runs_on_the_cluster() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (server, owner, _, _) = with_cluster(&conf).await;
        let (ws, _, checkpoints) = crate::endpoints::trained(&owner, 10).await;
        let ds = server
            .count(&format!(
                "SELECT id FROM datasets WHERE workspace_id = {ws}"
            ))
            .await;
        let evaluations = format!(
            "/api/v1/workspaces/{ws}/checkpoints/{}/evaluations",
            checkpoints[0]
        );
        let nowhere = json!({ "dataset_id": ds, "cluster": "nowhere" });
        let (code, body) = owner.post(&evaluations, nowhere).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["field"], "cluster", "{body}");
        let (code, started) = owner
            .post(
                &evaluations,
                json!({ "dataset_id": ds, "cluster": "slurm" }),
            )
            .await;
        assert_eq!(code, StatusCode::CREATED, "{started}");
        let id = started["id"].as_i64().unwrap();
        let over = crate::evaluations::until_over(&owner, &format!("{evaluations}/{id}")).await;
        assert_eq!(over["status"], "succeeded", "{over}");
        assert_eq!(over["cluster"], "slurm", "{over}");
        assert!(over["accuracy"].as_f64().is_some(), "{over}");
        let batch = over["cluster_job"]
            .as_str()
            .expect("its Slurm job")
            .to_string();
        let shown = slurm(&conf, &["scontrol", "show", "job", "-o", &batch]);
        assert!(
            shown.contains(&format!("JobName=paddock-evaluation-{id} ")),
            "{shown}"
        );

        // The CLI sends one there too, waits for it and prints its numbers.
        let cli = Cli::of(&owner, ws).await;
        let ckpt = checkpoints[0].to_string();
        let dataset = ds.to_string();
        let args = [
            "ckpt",
            "eval",
            &ckpt,
            "--dataset",
            &dataset,
            "--cluster",
            "slurm",
        ];
        let (code, out, err) = cli.run(&args);
        assert_eq!(code, Some(0), "{out}\n{err}");
        assert!(out.contains("accuracy"), "{out}");
        let listed = owner.get(&evaluations).await.1;
        let on_cluster = listed.as_array().unwrap().iter();
        let on_cluster = on_cluster.filter(|e| e["cluster_job"].is_string()).count();
        assert_eq!(on_cluster, 2, "{listed}");
    }

    /// An instance admin maps a workspace onto the cluster's accounting: its jobs are then charged to
    /// that Slurm account (and QoS); members cannot change it, bad names and unknown clusters are
    /// refused, and clearing it brings back the server's default.
    #[tokio::test]
    async fn a_workspaces_jobs_are_charged_to_the_account_an_admin_maps_it_to() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (server, owner, ws, ds) = with_cluster(&conf).await;
        let mapping = format!("/api/v1/admin/workspaces/{ws}/clusters/slurm");
        let member = server.signup("member").await;
        add_member(&owner, ws, "member", "owner").await;
        let (code, _) = member.put(&mapping, json!({ "account": "team-a" })).await;
        assert_eq!(
            code,
            StatusCode::FORBIDDEN,
            "a workspace owner is not an instance admin"
        );
        for (path, body, field) in [
            (mapping.clone(), json!({ "account": "team a" }), "account"),
            (mapping.clone(), json!({ "qos": "x".repeat(65) }), "qos"),
            (
                format!("/api/v1/admin/workspaces/{ws}/clusters/nowhere"),
                json!({}),
                "cluster",
            ),
        ] {
            let (code, answer) = owner.put(&path, body).await;
            assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
            assert_eq!(answer["field"], field, "{answer}");
            if field != "cluster" {
                let rule = &answer["problems"][0]["rule"]["kind"];
                assert_eq!(rule, "scheduler_name", "{answer}");
            }
        }
        // The cluster enforces its accounting: what it does not know is refused when it is set.
        for (body, field, said) in [
            (
                json!({ "account": "no-such-team" }),
                "account",
                "Invalid account",
            ),
            (
                json!({ "account": "team-a", "qos": "no-such-qos" }),
                "qos",
                "qos",
            ),
        ] {
            let (code, answer) = owner.put(&mapping, body).await;
            assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
            assert_eq!(
                (&answer["code"], &answer["field"]),
                (&json!("cluster_account_invalid"), &json!(field)),
                "{answer}"
            );
            let message = answer["problems"][0]["message"].as_str().unwrap();
            assert!(
                message.to_lowercase().contains(&said.to_lowercase()),
                "{answer}"
            );
        }
        let (code, set) = owner
            .put(&mapping, json!({ "account": "team-a", "qos": "normal" }))
            .await;
        assert_eq!(
            (code, &set),
            (
                StatusCode::OK,
                &json!({ "account": "team-a", "qos": "normal" })
            )
        );
        // The admin's table: every workspace, with what it is charged to (here: only this one).
        let accounts = "/api/v1/admin/clusters/slurm/accounts";
        let (code, listed) = owner.get(accounts).await;
        assert_eq!(code, StatusCode::OK, "{listed}");
        assert_eq!(
            listed,
            json!([{ "workspace_id": ws, "workspace": "nlp", "account": "team-a", "qos": "normal" }])
        );
        assert_eq!(member.get(accounts).await.0, StatusCode::FORBIDDEN);

        // The account of Slurm job `batch`, as Slurm recorded it.
        let account = |batch: &str| {
            let shown = slurm(&conf, &["scontrol", "show", "job", "-o", batch]);
            let word = shown.split_whitespace().find(|w| w.starts_with("Account="));
            word.unwrap_or_default().to_string()
        };
        let account_of = |id: i64| {
            let owner = &owner;
            async move {
                let detail = job(owner, ws, id).await;
                account(detail["summary"]["cluster_job"].as_str().unwrap())
            }
        };
        let charged = submit(&owner, ws, on_cluster(tiny("charged", ds, 2))).await;
        let done = finished(&owner, ws, charged).await;
        assert_eq!(account_of(charged).await, "Account=team-a");
        // An evaluation of its checkpoint on the cluster is charged there too.
        let checkpoint = done["checkpoints"][0]["id"].as_i64().unwrap();
        let evaluations = format!("/api/v1/workspaces/{ws}/checkpoints/{checkpoint}/evaluations");
        let request = json!({ "dataset_id": ds, "cluster": "slurm" });
        let (code, started) = owner.post(&evaluations, request).await;
        assert_eq!(code, StatusCode::CREATED, "{started}");
        let path = format!("{evaluations}/{}", started["id"]);
        let evaluated = crate::evaluations::until_over(&owner, &path).await;
        assert_eq!(evaluated["status"], "succeeded", "{evaluated}");
        assert_eq!(
            account(evaluated["cluster_job"].as_str().unwrap()),
            "Account=team-a"
        );
        let (code, _) = owner
            .put(&mapping, json!({ "account": null, "qos": null }))
            .await;
        assert_eq!(code, StatusCode::OK);
        let default = submit(&owner, ws, on_cluster(tiny("default", ds, 2))).await;
        finished(&owner, ws, default).await;
        assert_ne!(account_of(default).await, "Account=team-a");
    }

    /// The node a cluster job runs on goes down: the job ends failed, and its message says what Slurm
    /// did and why the admin took the node out; a retry is a new batch job that runs.
    #[tokio::test]
    async fn a_job_whose_node_goes_down_fails_with_slurms_reason_and_a_retry_runs() {
        let Some((conf, _alone)) = cluster_alone().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_cluster(&conf).await;
        let id = submit(&owner, ws, on_cluster(endless("node-lost", ds))).await;
        stepped(&owner, ws, id, 2).await;
        let node = placement(&owner, ws, id).await["nodes"]
            .as_str()
            .expect("the job's node")
            .to_string();
        let resume = Resume {
            conf: conf.clone(),
            node: node.clone(),
        };
        let down = format!("nodename={node}");
        slurm(
            &conf,
            &[
                "scontrol",
                "update",
                &down,
                "state=down",
                "reason=power lost",
            ],
        );
        let done = finished(&owner, ws, id).await;
        drop(resume);
        assert_eq!(status(&done), "failed", "{done}");
        let message = done["summary"]["status_message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.contains("NODE_FAIL")
                && message.contains(&node)
                && message.contains("power lost"),
            "{message}"
        );

        let retry = format!("{}/retry", job_path(ws, id));
        let (code, again) = owner.post(&retry, json!({ "resume": false })).await;
        assert_eq!(code, StatusCode::CREATED, "{again}");
        let again = again["summary"]["id"].as_i64().unwrap();
        stepped(&owner, ws, again, 1).await;
        let batch = job(&owner, ws, again).await["summary"]["cluster_job"].clone();
        assert_ne!(batch, done["summary"]["cluster_job"], "a new batch job");
        cancel(&owner, ws, again).await;
        wait_for(&owner, ws, again, "cancelled", |j| status(j) == "cancelled").await;
    }

    #[tokio::test]
    async fn a_cluster_the_server_does_not_have_is_refused_and_nothing_is_queued() {
        let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
        let jobs = format!("/api/v1/workspaces/{ws}/jobs");
        let (code, body) = owner.post(&jobs, on_cluster(tiny("nowhere", ds, 5))).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["code"], "cluster_invalid", "{body}");
        assert_eq!(body["field"], "cluster", "{body}");
        assert_eq!(server.count("SELECT COUNT(*) FROM jobs").await, 0);
        let (code, clusters) = owner.get("/api/v1/clusters").await;
        assert_eq!(
            (code, clusters),
            (StatusCode::OK, json!([])),
            "no cluster, none offered"
        );
    }

    /// The cluster view: partitions and the two nodes with their GPUs as the scheduler counts them, the
    /// GPUs a running batch job holds shown allocated; signed-in users only.
    #[tokio::test]
    async fn the_cluster_view_shows_nodes_partitions_and_gpus_in_use() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (server, owner, _ws, _ds) = with_cluster(&conf).await;
        let view = || async { owner.get("/api/v1/clusters").await.1[0].clone() };
        let cluster = view().await;
        assert_eq!(
            (&cluster["name"], &cluster["executor"], &cluster["problem"]),
            (&json!("slurm"), &json!("slurm"), &Value::Null),
            "{cluster}"
        );
        let nodes = cluster["nodes"].as_array().unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["node1", "node2"], "{cluster}");
        for node in nodes {
            assert_eq!(node["gpus"]["total"], 2, "{node}");
            assert_eq!(node["cpus"]["total"], 2, "{node}");
        }
        let partition = cluster["partition"]
            .as_str()
            .expect("the default partition");
        let listed = cluster["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == partition)
            .cloned()
            .unwrap();
        assert_eq!(listed["default"], true, "{listed}");
        assert_eq!(listed["gpus"]["total"], 4, "both nodes' GPUs: {listed}");

        // Someone else's 2-GPU batch job on the cluster: the view counts its GPUs as the scheduler does.
        let other = slurm(
            &conf,
            &[
                "sbatch",
                "--parsable",
                "--gres=gpu:2",
                "--cpus-per-task=1",
                "--mem=100",
                "--output=/dev/null",
                "--wrap",
                "sleep 120",
            ],
        );
        // It may wait for a CPU while the other cluster tests' jobs run.
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        let held = loop {
            let busy = view().await;
            let held: u64 = busy["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["gpus"]["allocated"].as_u64().unwrap())
                .sum();
            if held > 0 || std::time::Instant::now() > deadline {
                break held;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        slurm(&conf, &["scancel", &other]);
        assert_eq!(held, 2, "the running batch job's GPUs");

        let (code, _) = server.anonymous().get("/api/v1/clusters").await;
        assert_eq!(code, StatusCode::UNAUTHORIZED);

        // The nodes see the data directory: every partition passes the check the server ran at
        // start, and an admin may run it again (a member may not).
        let check = shared_dir_check(&owner).await;
        for p in check["partitions"].as_array().unwrap() {
            assert_eq!(
                (&p["checked"], &p["problem"]),
                (&json!(true), &Value::Null),
                "{check}"
            );
            assert!(
                p["node"].as_str().is_some_and(|n| n.starts_with("node")),
                "{check}"
            );
            // The job read the node's NVIDIA driver: none here (GPU jobs still run, on stand-ins).
            assert_eq!(p["driver"], Value::Null, "{check}");
        }
        let member = server.signup("member").await;
        let preflight = "/api/v1/admin/clusters/slurm/preflight";
        assert_eq!(member.post_empty(preflight).await.0, StatusCode::FORBIDDEN);
        let (code, again) = owner.post_empty(preflight).await;
        assert_eq!(code, StatusCode::OK, "{again}");
        assert_eq!(
            again["partitions"].as_array().map(Vec::len),
            Some(2),
            "{again}"
        );
        let (code, _) = owner
            .post_empty("/api/v1/admin/clusters/nowhere/preflight")
            .await;
        assert_eq!(code, StatusCode::NOT_FOUND);
    }

    /// A job the cluster cannot place yet waits in its queue, and its placement says why in Slurm's
    /// words; once the nodes are free it runs, and the placement says where.
    #[tokio::test]
    async fn a_job_waiting_in_the_cluster_queue_says_why() {
        let Some((conf, _shared)) = shared_cluster().await else {
            return;
        };
        let (_server, owner, ws, ds) = with_cluster(&conf).await;
        let here = submit(&owner, ws, tiny("here", ds, 2)).await;
        let placement = |id: i64| {
            let owner = &owner;
            async move {
                owner
                    .get(&format!("{}/placement", job_path(ws, id)))
                    .await
                    .1
            }
        };
        assert_eq!(placement(here).await, Value::Null, "a job of this server");
        // Both nodes taken whole by someone else's job, running before ours is submitted.
        let blocker = slurm(
            &conf,
            &[
                "sbatch",
                "--parsable",
                "-N2",
                "--exclusive",
                "--output=/dev/null",
                "--wrap",
                "sleep 300",
            ],
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        while slurm(&conf, &["squeue", "-h", "-j", &blocker, "-o", "%T"]) != "RUNNING" {
            assert!(
                std::time::Instant::now() < deadline,
                "the blocker never ran"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let id = submit(&owner, ws, on_cluster(endless("waits", ds))).await;
        let mut waiting = placement(id).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while waiting["state"] != "waiting" && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(300)).await;
            waiting = placement(id).await;
        }
        slurm(&conf, &["scancel", &blocker]);
        assert_eq!(waiting["state"], "waiting", "{waiting}");
        assert!(
            waiting["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "Slurm's reason: {waiting}"
        );
        stepped(&owner, ws, id, 1).await;
        let running = placement(id).await;
        assert_eq!(running["state"], "running", "{running}");
        assert!(
            running["nodes"]
                .as_str()
                .is_some_and(|n| n.starts_with("node")),
            "{running}"
        );
        cancel(&owner, ws, id).await;
        wait_for(&owner, ws, id, "cancelled", |j| status(j) == "cancelled").await;
    }
}

/// Every library of the runtime layer loads with what the image holds, as its own loader resolves it,
/// and the libraries libtorch opens by name only on a GPU (cuDNN's parts, NVRTC's builtins, libtorch's
/// own) are there. `libcuda` and NVML come from the host's driver at run time (the NVIDIA container
/// runtime mounts them): empty stand-ins under those names are mounted for the check, which loads
/// libraries without binding their symbols.
fn every_runtime_library_loads_in(image: &str) {
    use std::os::unix::fs::PermissionsExt;
    const CHECK: &str = r#"for f in /opt/paddock/lib/*.so*; do
  out=$(/lib64/ld-linux-x86-64.so.2 --library-path /opt/paddock/lib:/driver --list "$f" 2>&1) || echo "UNLOADABLE $f: $out"
  echo "$out" | grep "not found" | sed "s|^|MISSING $f: |"
done
ls /opt/paddock/lib"#;
    let driver = tempfile::tempdir().unwrap();
    std::fs::set_permissions(driver.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = driver.path().join("empty.c");
    std::fs::write(&source, "").unwrap();
    for soname in ["libcuda.so.1", "libnvidia-ml.so.1"] {
        let made = std::process::Command::new("cc")
            .args(["-shared", "-o"])
            .arg(driver.path().join(soname))
            .arg(format!("-Wl,-soname,{soname}"))
            .arg(&source)
            .status()
            .unwrap();
        assert!(made.success(), "cc could not make a stand-in {soname}");
    }
    let mount = format!("{}:/driver:ro", driver.path().display());
    let out = docker(&[
        "run",
        "--rm",
        "-v",
        &mount,
        "--entrypoint",
        "/bin/sh",
        image,
        "-c",
        CHECK,
    ]);
    let problems: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("UNLOADABLE") || l.starts_with("MISSING"))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for opened_by_name in [
        "libtorch_cuda.so",
        "libcaffe2_nvrtc.so",
        "libtorch_cuda_linalg.so",
        "libcudnn_graph.so.9",
        "libcudnn_engines_precompiled.so.9",
        "libnvrtc-builtins.so.13.0",
    ] {
        assert!(
            out.lines().any(|l| l == opened_by_name),
            "{opened_by_name} is not in the runtime layer"
        );
    }
}

/// A host with NVIDIA GPUs, as a fake `nvidia-smi` on the server's PATH reports them (this machine has
/// none): each GPU is read on its own, and those Paddock's own CUDA runtime cannot use are left out with
/// the reason, read from the libtorch the binary loaded; the detection runs again on the reconcile tick.
/// A job given a GPU on a machine whose CUDA cannot use it fails saying why, instead of training on the
/// CPU.
#[tokio::test]
async fn gpus_are_detected_one_by_one_against_the_runtime_they_must_run() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let report = bin.path().join("gpus.csv");
    let fake = bin.path().join("nvidia-smi");
    std::fs::write(&fake, "#!/bin/sh\ncat \"$(dirname \"$0\")/gpus.csv\"\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let usable = "0, GPU-0a0a0a0a-1111-2222-3333-444444444444, 00000000:18:00.0, 580.95.05, 81559 MiB, Disabled, 9.0, NVIDIA H100 80GB HBM3";
    std::fs::write(
        &report,
        format!(
            "{usable}\n\
             1, GPU-1b1b1b1b-1111-2222-3333-444444444444, 00000000:3B:00.0, 580.95.05, 16384 MiB, Disabled, 7.0, Tesla V100-SXM2-16GB\n\
             2, GPU-2c2c2c2c-1111-2222-3333-444444444444, 00000000:86:00.0, 580.95.05, 81920 MiB, Enabled, 8.0, NVIDIA A100-SXM4-80GB\n"
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let server = Server::start_with_env(&["--reconcile-seconds", "1"], &[("PATH", &path)]);
    let owner = server.signup("owner").await;
    let (ws, ds) = workspace_with_sample(&owner).await;

    let (code, engine) = owner.get("/api/v1/docker").await;
    assert_eq!(code, StatusCode::OK, "{engine}");
    // The V100 can still take an environment of its own image; the MIG one is no GPU Paddock places.
    let uuids = |engine: &Value, runtime: bool| -> Vec<String> {
        engine["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| !runtime || g["runtime_usable"] == true)
            .filter_map(|g| g["uuid"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(
        uuids(&engine, false),
        [
            "GPU-0a0a0a0a-1111-2222-3333-444444444444",
            "GPU-1b1b1b1b-1111-2222-3333-444444444444"
        ],
        "{engine}"
    );
    assert_eq!(
        uuids(&engine, true),
        ["GPU-0a0a0a0a-1111-2222-3333-444444444444"]
    );
    let left_out = engine["gpus_left_out"].to_string();
    assert!(
        left_out.contains("GPU 1 (Tesla V100-SXM2-16GB): compute capability 7.0 is below the 7.5"),
        "{left_out}"
    );
    assert!(
        left_out.contains("GPU 2 (NVIDIA A100-SXM4-80GB) has MIG enabled"),
        "{left_out}"
    );

    // Two GPUs asked of a host that can use one: refused with the others' reasons.
    let mut two = tiny("two", ds, 5);
    two["gpus"] = json!(2);
    let (code, err) = owner
        .post(&format!("/api/v1/workspaces/{ws}/jobs"), two)
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(err.to_string().contains("has MIG enabled"), "{err}");

    // One GPU: placed on the usable one, where this machine's CUDA (no driver at all) cannot run it;
    // the trainer says so rather than train on the CPU.
    let mut one = tiny("one", ds, 5);
    one["gpus"] = json!(1);
    let id = submit(&owner, ws, one).await;
    let failed = wait_for(&owner, ws, id, "failure", |j| status(j) == "failed").await;
    let message = failed["summary"]["status_message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("CUDA cannot be used"), "{failed}");
    assert_eq!(failed["summary"]["gpu_indices"], json!([0]), "{failed}");

    // The driver is downgraded under the running server: at the next tick no GPU is usable, and the
    // reason names both versions.
    std::fs::write(
        &report,
        format!("{}\n", usable.replace("580.95.05", "550.54.15")),
    )
    .unwrap();
    let gone = owner
        .poll("/api/v1/docker", Duration::from_secs(30), |e| {
            e["gpus"]
                .as_array()
                .is_some_and(|g| g.iter().all(|g| g["runtime_usable"] == false))
        })
        .await
        .expect("the GPU is left out at the next detection");
    assert!(
        gone["gpus_left_out"]
            .to_string()
            .contains("550.54.15 is older than the 580.65.06"),
        "{gone}"
    );
}

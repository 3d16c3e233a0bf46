//! A bounded schema-driven fuzz of the REST API: schemathesis (installed into `.venv-fuzz` by
//! `scripts/setup.sh`) reads the OpenAPI document the real server serves, generates requests from it —
//! valid ones, boundary values, and invalid ones (wrong types, ids past `i64`, missing fields, stray
//! bytes) — and sends them as the instance admin with an API token. It fails on any server error (bad
//! input must never answer 500; the one 5xx allowed is the documented 503 of environments, and of
//! loading an image archive, without Docker), on any status the document does not list for that
//! route, and on a body that does not match the documented schema. A failure prints schemathesis'
//! report: each case with its `curl`.
//!
//! Before it starts, the test makes what the routes behind an id need — a workspace with a dataset, a
//! trained job and its checkpoint, an evaluation, an endpoint serving it with a key, a member — and
//! hands their ids to schemathesis as fuzz dictionaries, so most cases of those routes reach their
//! handler's own checks instead of stopping at 404. What a case could start is bounded: new jobs are
//! posted to a workspace without datasets (a generated spec can never be valid there, so no
//! fuzz-chosen model trains), a retried job is the tiny one made here, and trainers get one thread.
//!
//! An error of schemathesis itself (its generator or its coverage phase raising) is not a finding about
//! the server, and must not pass or fail the suite by chance: a run with errors and no failures is run
//! again with another seed, and only an error that repeats fails the test (both reports are printed).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{self, Server, User};
use crate::endpoints::{deploy, new_key};
use crate::jobs::{finished, kept_checkpoint, submit};

/// Generated cases per operation and phase: enough to reach every route's decoding and validation with
/// a few dozen shapes each, small enough that the whole run stays within a few minutes on 2 cores.
const MAX_EXAMPLES: &str = "50";
/// The same cases on every run, so a failure reproduces; `PADDOCK_FUZZ_SEED` picks others to explore.
const SEED: u64 = 20261203;
/// A run is killed (and the test fails) past this: the cases above take a fraction of it.
const TIME_LIMIT: Duration = Duration::from_secs(420);

/// Schemathesis' configuration: the ids to use, what is left out of the fuzz, and why. Upper-case
/// words are replaced by the ids the test made.
const CONFIG: &str = r#"
# The ids of what the test made, drawn for a route's parameter of that name in 9 cases of 10 (the others
# still try made-up ids, which must answer 404).
[dictionaries.workspace]
values = [WORKSPACE]
[dictionaries.dataset]
values = [DATASET]
[dictionaries.job]
values = [JOB]
[dictionaries.checkpoint]
values = [CHECKPOINT]
[dictionaries.evaluation]
values = [EVALUATION]
[dictionaries.endpoint]
values = [ENDPOINT]
[dictionaries.key]
values = [KEY]
[dictionaries.member]
values = [MEMBER]

[parameters]
"path.dataset_id" = { dictionary = "dataset", probability = 0.9 }
"path.job_id" = { dictionary = "job", probability = 0.9 }
"path.checkpoint_id" = { dictionary = "checkpoint", probability = 0.9 }
"path.evaluation_id" = { dictionary = "evaluation", probability = 0.9 }
"path.endpoint_id" = { dictionary = "endpoint", probability = 0.9 }
"path.key_id" = { dictionary = "key", probability = 0.9 }
"path.user_id" = { dictionary = "member", probability = 0.9 }

# Revoking a token: the fuzz would revoke its own (id 1), and every later request would answer 401.
[[operations]]
include-name = "DELETE /api/v1/tokens/{id}"
enabled = false

# Making a dataset: a workspace the fuzz posts jobs to must stay without one (below). Bad files:
# `datasets::bad_files_are_refused_with_…`.
[[operations]]
include-path-regex = "^/api/v1/workspaces/\\{id\\}/datasets/(sample|upload)$"
enabled = false

# New jobs go to a workspace with no dataset, so that no generated spec is valid: a fuzz-chosen model
# (the largest preset, thousands of rows a batch) would take the machine's memory. Their checks of the
# spec still run; `jobs::a_job_trains_streams_metrics_and_tracks_checkpoints` covers valid ones.
[[operations]]
include-name = "POST /api/v1/workspaces/{id}/jobs"
parameters = { "path.id" = EMPTY_WORKSPACE }
# A sweep's trials are jobs: the same.
[[operations]]
include-name = "POST /api/v1/workspaces/{id}/sweeps"
parameters = { "path.id" = EMPTY_WORKSPACE }

# Deleting: only what was made to be deleted, so that the rest of the run still finds the others.
# (The first entry that names parameters decides them all for a route, hence the workspace here too.)
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}"
parameters = { "path.id" = DOOMED_WORKSPACE }
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}/datasets/{dataset_id}"
parameters = { "path.id" = WORKSPACE, "path.dataset_id" = DOOMED_DATASET }
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}/endpoints/{endpoint_id}"
parameters = { "path.id" = WORKSPACE, "path.endpoint_id" = DOOMED_ENDPOINT }
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}/jobs/{job_id}"
parameters = { "path.id" = WORKSPACE, "path.job_id" = DOOMED_JOB }
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}/pretrained-models/{model_id}"
parameters = { "path.id" = WORKSPACE, "path.model_id" = DOOMED_MODEL }
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}/endpoints/{endpoint_id}/keys/{key_id}"
parameters = { "path.id" = WORKSPACE, "path.endpoint_id" = ENDPOINT, "path.key_id" = DOOMED_KEY }

# Most routes sit under a workspace: most of their cases name the one the test made.
[[operations]]
include-path-regex = "^/api/v1/workspaces/\\{id\\}/"
parameters = { "path.id" = { dictionary = "workspace", probability = 0.9 } }

# Without Docker, environments answer 503 `docker_unavailable`, documented on their routes: a service
# the server depends on is missing, not a failure of the server.
[[operations]]
include-tag = "environments"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

# An endpoint's playground and its public route answer the documented 503 `endpoint_unavailable` while
# no replica is ready (the fuzz undeploys and redeploys the endpoint it was given): the model is not
# up, not a failure of the server.
[[operations]]
include-name = "POST /api/v1/workspaces/{id}/endpoints/{endpoint_id}/playground"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
[[operations]]
include-name = "POST /v1/endpoints/{slug}/predict"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

# Loading an image archive goes to Docker too: the same documented 503.
[[operations]]
include-name = "POST /api/v1/admin/images/load"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_undocumented_answer() {
    let schemathesis = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../.venv-fuzz/bin/schemathesis"
    );
    assert!(
        Path::new(schemathesis).exists(),
        "{schemathesis} is missing: run `scripts/setup.sh fuzz` (or `make setup`) to install it"
    );
    // A Docker endpoint that cannot exist, so that a Docker daemon on the machine is never used; jobs
    // run as local processes, one at a time, on one thread.
    let server = Server::start_with(&[
        "--docker-host",
        "unix:///dev/null/no-docker.sock",
        "--cpu-job-threads",
        "1",
    ]);
    let admin = server.signup("fuzzadmin").await;
    assert!(admin.is_admin);
    let secret = admin.token("fuzz").await;
    let made = Made::new(&server, &admin).await;

    let work = tempfile::tempdir().expect("tempdir");
    let config = work.path().join("schemathesis.toml");
    std::fs::write(&config, made.config()).expect("write config");
    let seed = std::env::var("PADDOCK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let run = |seed| fuzz(schemathesis, &server, &secret, &config, work.path(), seed);

    let first = run(seed).await;
    let outcome = match first.outcome {
        Outcome::FuzzerErrors => {
            println!(
                "schemathesis raised errors of its own with seed {seed}, and found no fault of the \
                 server; running it again with seed {}:\n{}",
                seed + 1,
                failures_last(&first.report)
            );
            run(seed + 1).await
        }
        _ => first,
    };
    match outcome.outcome {
        Outcome::Passed => {
            for path in made.doomed() {
                let (status, body) = admin.get(&path).await;
                assert_eq!(
                    status,
                    StatusCode::NOT_FOUND,
                    "the fuzz never deleted {path}: its ids did not reach the route ({body})"
                );
            }
            let (_, models) = admin
                .get(&format!("/api/v1/workspaces/{}/pretrained-models", made.workspace))
                .await;
            assert!(
                !models.to_string().contains("\"doomed\""),
                "the fuzz never deleted the doomed model: {models}"
            );
        }
        Outcome::ServerFaults => panic!(
            "schemathesis found faults of the server, seed {}:\n{}",
            outcome.seed,
            failures_last(&outcome.report)
        ),
        Outcome::FuzzerErrors => panic!(
            "schemathesis raised errors again with seed {} (not by chance, then: an error it hits on \
             this document or server, which must be understood):\n{}",
            outcome.seed,
            failures_last(&outcome.report)
        ),
        Outcome::TimedOut => panic!(
            "schemathesis ran past {} s and was stopped, seed {}:\n{}",
            TIME_LIMIT.as_secs(),
            outcome.seed,
            outcome.report
        ),
    }
}

/// What the test makes before the fuzz, for the routes behind each id.
struct Made {
    workspace: i64,
    empty_workspace: i64,
    doomed_workspace: i64,
    dataset: i64,
    doomed_dataset: i64,
    job: i64,
    doomed_job: i64,
    checkpoint: i64,
    evaluation: i64,
    endpoint: i64,
    doomed_endpoint: i64,
    key: i64,
    doomed_key: i64,
    doomed_model: i64,
    member: i64,
}

impl Made {
    async fn new(server: &Server, admin: &User) -> Made {
        let (workspace, dataset) = common::workspace_with_sample(admin).await;
        let empty_workspace = common::workspace(admin).await;
        let doomed_workspace = common::workspace(admin).await;
        let doomed_dataset = crate::evaluations::upload(
            admin,
            workspace,
            "doomed",
            "text\tlabel\n很好\tpositive\n很差\tnegative\n"
                .as_bytes()
                .to_vec(),
        )
        .await;
        let spec = json!({ "name": "fuzzed", "dataset_id": dataset, "preset": "tiny", "max_seq_len": 32,
                           "batch_size": 16, "max_steps": 4, "eval_every_steps": 2, "keep_best": 1 });
        let job = submit(admin, workspace, spec.clone()).await;
        let doomed_job = submit(admin, workspace, spec).await;
        let done = finished(admin, workspace, job).await;
        assert_eq!(done["summary"]["status"], "succeeded", "{done}");
        finished(admin, workspace, doomed_job).await;
        let checkpoint = id(kept_checkpoint(&done));
        let ws = format!("/api/v1/workspaces/{workspace}");
        let (status, evaluation) = admin
            .post(
                &format!("{ws}/checkpoints/{checkpoint}/evaluations"),
                json!({ "dataset_id": dataset }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{evaluation}");
        let evaluation = id(&evaluation);
        let serve =
            |name: &str| json!({ "name": name, "checkpoint_id": checkpoint, "replicas": 1 });
        let (endpoint, endpoint_path) = deploy(admin, workspace, serve("fuzzed")).await;
        let (doomed_endpoint, _) = deploy(admin, workspace, serve("doomed")).await;
        let key = id(&new_key(admin, &endpoint_path, json!({ "name": "app" })).await["key"]);
        let doomed_key =
            id(&new_key(admin, &endpoint_path, json!({ "name": "doomed" })).await["key"]);
        let dir = server.in_store(workspace, done_checkpoint_path(&done));
        let tar = crate::pretrained::tar_of(&dir, "doomed", &[], None);
        let (status, model) = admin
            .upload(
                &format!("{ws}/pretrained-models/upload?name=doomed&filename=doomed.tar"),
                tar,
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{model}");
        let doomed_model = id(&model);
        let member = server.signup("fuzzmember").await;
        common::add_member(admin, workspace, "fuzzmember", "viewer").await;
        Made {
            workspace,
            empty_workspace,
            doomed_workspace,
            dataset,
            doomed_dataset,
            job,
            doomed_job,
            checkpoint,
            evaluation,
            endpoint,
            doomed_endpoint,
            key,
            doomed_key,
            doomed_model,
            member: member.id,
        }
    }

    /// The REST paths of what was made to be deleted: the fuzz must have deleted each (its delete route
    /// was reached with the id it was given, not only with made-up ones).
    fn doomed(&self) -> Vec<String> {
        let ws = format!("/api/v1/workspaces/{}", self.workspace);
        vec![
            format!("/api/v1/workspaces/{}", self.doomed_workspace),
            format!("{ws}/datasets/{}", self.doomed_dataset),
            format!("{ws}/jobs/{}", self.doomed_job),
            format!("{ws}/endpoints/{}", self.doomed_endpoint),
        ]
    }

    /// [`CONFIG`] with these ids in place of its upper-case words.
    fn config(&self) -> String {
        let ids = [
            ("EMPTY_WORKSPACE", self.empty_workspace),
            ("DOOMED_WORKSPACE", self.doomed_workspace),
            ("DOOMED_DATASET", self.doomed_dataset),
            ("DOOMED_ENDPOINT", self.doomed_endpoint),
            ("DOOMED_KEY", self.doomed_key),
            ("DOOMED_MODEL", self.doomed_model),
            ("DOOMED_JOB", self.doomed_job),
            ("WORKSPACE", self.workspace),
            ("DATASET", self.dataset),
            ("JOB", self.job),
            ("CHECKPOINT", self.checkpoint),
            ("EVALUATION", self.evaluation),
            ("ENDPOINT", self.endpoint),
            ("KEY", self.key),
            ("MEMBER", self.member),
        ];
        // Longer names first, so that `WORKSPACE` does not eat the end of `EMPTY_WORKSPACE`.
        ids.iter().fold(CONFIG.to_string(), |text, (name, id)| {
            text.replace(name, &id.to_string())
        })
    }
}

/// Where the store holds the kept checkpoint of the finished job `done`, as its container sees it.
fn done_checkpoint_path(done: &Value) -> &str {
    kept_checkpoint(done)["container_path"]
        .as_str()
        .unwrap_or_else(|| panic!("no path: {done}"))
}

/// The `id` of a created thing as the API answered it (`summary.id` or `id`).
fn id(answer: &Value) -> i64 {
    answer["summary"]["id"]
        .as_i64()
        .or_else(|| answer["id"].as_i64())
        .unwrap_or_else(|| panic!("no id in {answer}"))
}

/// How a run of schemathesis ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    Passed,
    /// A check failed: a 5xx, an undocumented status, a body off its schema.
    ServerFaults,
    /// No check failed, but schemathesis reported errors (its own exceptions, or requests it could not
    /// make).
    FuzzerErrors,
    TimedOut,
}

struct Run {
    seed: u64,
    outcome: Outcome,
    report: String,
}

/// One run of schemathesis against `server` with `seed`: its outcome and report, and a line with the
/// counts (cases, and the operations it says stayed at 404) for whoever reads the test's output.
async fn fuzz(
    schemathesis: &str,
    server: &Server,
    secret: &str,
    config: &Path,
    work: &Path,
    seed: u64,
) -> Run {
    let log = work.join(format!("schemathesis-{seed}.log"));
    let output = std::fs::File::create(&log).expect("log");
    let started = Instant::now();
    let mut child = Command::new(schemathesis)
        .arg("--config-file")
        .arg(config)
        .arg("--no-color")
        .arg("run")
        .arg(server.url("/api/v1/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {secret}")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", MAX_EXAMPLES, "--seed", &seed.to_string()])
        // Generous: `make test` runs other servers and trainers beside this one on 2 cores, and a request
        // that times out counts as a failure.
        // One worker: with two, hypothesis describes strategies' lambdas from both threads at once and
        // fails inside itself now and then (a KeyError in its lambda cache, "AST constructor recursion
        // depth mismatch"), twice in a row in two clean clones.
        .args(["--workers", "1", "--request-timeout", "60"])
        // Hypothesis' "generating data is too slow" is about the machine's load, not about the server.
        .args(["--suppress-health-check", "too_slow"])
        // Failing examples are not kept between runs (the seed reproduces them).
        .args(["--generation-database", "none"])
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(output.try_clone().expect("log"))
        .stderr(output)
        .spawn()
        .expect("start schemathesis");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let report = std::fs::read_to_string(&log).unwrap_or_default();
    let mut lines = report.lines();
    let cases = lines
        .find(|l| l.trim() == "Test cases:")
        .and_then(|_| lines.next())
        .unwrap_or("no count")
        .trim();
    let stuck = stuck_at_404(&report);
    println!(
        "schemathesis (seed {seed}): {cases}, in {:.0} s; {} operations repeatedly answered 404 \
         (a route of something made to be deleted answers 404 once it is): {}",
        started.elapsed().as_secs_f64(),
        stuck.len(),
        stuck.join("; ")
    );
    let outcome = match status {
        None => Outcome::TimedOut,
        Some(status) if status.success() => Outcome::Passed,
        Some(_) => outcome_of(&report),
    };
    Run {
        seed,
        outcome,
        report,
    }
}

/// The operations schemathesis warns "repeatedly returned 404 Not Found": each listed as `  - METHOD
/// /path` under that warning, in groups with a heading and a tip of their own.
fn stuck_at_404(report: &str) -> Vec<&str> {
    report
        .lines()
        .skip_while(|l| !l.contains("repeatedly returned 404 Not Found"))
        .skip(1)
        .take_while(|l| {
            l.is_empty() || l.starts_with("  ") || l.starts_with("No links") || l.starts_with('💡')
        })
        .filter_map(|l| l.strip_prefix("  - "))
        .collect()
}

/// A failed run's outcome from its report's sections: FAILURES holds what a check found of the server,
/// ERRORS what stopped schemathesis itself from testing.
fn outcome_of(report: &str) -> Outcome {
    let has = |title: &str| {
        report
            .lines()
            .any(|l| l.starts_with("====") && l.trim().trim_matches('=').trim() == title)
    };
    if has("FAILURES") || !has("ERRORS") {
        Outcome::ServerFaults
    } else {
        Outcome::FuzzerErrors
    }
}

/// Schemathesis' report with its FAILURES and ERRORS sections (each failed case with its `curl`, each
/// error with its traceback) moved to the end, and after them the operations they are about, so that
/// the end of a long log, which is what a CI page shows, says what failed.
fn failures_last(report: &str) -> String {
    // Sections open with a line of `=` around their title.
    let mut sections: Vec<(&str, String)> = vec![("", String::new())];
    for line in report.split_inclusive('\n') {
        if line.starts_with("====") {
            let title = line.trim().trim_matches('=').trim();
            sections.push((title, String::new()));
        }
        sections.last_mut().expect("one section").1.push_str(line);
    }
    let at_end = |title: &str| title == "ERRORS" || title == "FAILURES";
    let mut out: String = sections
        .iter()
        .filter(|(title, _)| !at_end(title))
        .map(|(_, text)| text.as_str())
        .collect();
    let mut about = Vec::new();
    for (title, text) in sections.iter().filter(|(title, _)| at_end(title)) {
        out.push_str(text);
        // Each case or error is headed `___ METHOD /path ___`.
        for line in text.lines().filter(|l| l.starts_with("__")) {
            about.push(format!("{} ({title})", line.trim_matches('_').trim()));
        }
    }
    if !about.is_empty() {
        out.push_str(&format!("\nwhat failed: {}\n", about.join("; ")));
    }
    out
}

#[test]
fn a_report_with_errors_alone_is_the_fuzzers_and_any_failure_is_the_servers() {
    let errors =
        "Test cases:\n1\n===== ERRORS =====\n__ GET /y __\nKeyError\n===== SUMMARY =====\n";
    assert_eq!(outcome_of(errors), Outcome::FuzzerErrors);
    let both = "===== ERRORS =====\nKeyError\n===== FAILURES =====\n__ GET /x __\n- Server error\n";
    assert_eq!(outcome_of(both), Outcome::ServerFaults);
    // A failed run without either section (a crash before the report): not the fuzzer's to excuse.
    assert_eq!(outcome_of("Traceback …\n"), Outcome::ServerFaults);
}

#[test]
fn the_operations_stuck_at_404_are_read_from_the_warning() {
    let report = "WARNINGS\n\nMissing test data: 2 operations repeatedly returned 404 Not Found, preventing …\n\n\
        No links point to these operations - POST /w appears to supply the data they need (1 operation):\n\
        \x20 - DELETE /w/{id}\n\n💡 Add a link\n\nNo links point to these operations (1 operation):\n\
        \x20 - GET /w/{id}/x\n\n💡 Add a link\n\nSchema validation mismatch: 1 operation\n\n  - POST /y\n";
    assert_eq!(stuck_at_404(report), ["DELETE /w/{id}", "GET /w/{id}/x"]);
    assert!(stuck_at_404("no warnings\n").is_empty());
}

#[test]
fn the_failures_come_last_and_are_named() {
    let report = "Test cases:\n1\n===== ERRORS =====\n__ POST /y __\nRuntime Error\n===== FAILURES =====\n__ POST /x __\n- Server error\n===== SUMMARY =====\nFailures: 1\n";
    assert_eq!(
        failures_last(report),
        "Test cases:\n1\n===== SUMMARY =====\nFailures: 1\n===== ERRORS =====\n__ POST /y __\nRuntime Error\n===== FAILURES =====\n__ POST /x __\n- Server error\n\nwhat failed: POST /y (ERRORS); POST /x (FAILURES)\n"
    );
    assert_eq!(failures_last("no sections\n"), "no sections\n");
}

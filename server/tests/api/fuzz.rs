//! A bounded schema-driven fuzz of the REST API: schemathesis (installed into `.venv` by
//! `scripts/setup.sh`) reads the OpenAPI document the real server serves, generates requests from it —
//! valid ones, boundary values, and invalid ones (wrong types, ids past `i64`, missing fields, stray
//! bytes) — and sends them as the instance admin with an API token. It fails on any server error (bad
//! input must never answer 500; the one 5xx allowed is the documented 503 of environments, and of
//! loading an image archive, without Docker), on any status the document does not list for that
//! route, and on a body that does not match the documented schema. A failure prints schemathesis'
//! report: each case with its `curl`.
//!
//! The server runs without Docker and without any dataset, so nothing the fuzz asks for can start work
//! that outlives the test: no image builds, no containers, and no training job (one needs a dataset).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, Server};

/// Generated cases per operation and phase: enough to reach every route's decoding and validation with
/// a few dozen shapes each, small enough that the whole run stays within about a minute on 2 cores.
const MAX_EXAMPLES: &str = "50";
/// The same cases on every run, so a failure reproduces; `PADDOCK_FUZZ_SEED` picks others to explore.
const SEED: &str = "20261203";
/// The run is killed (and the test fails) past this: the cases above take a fraction of it.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// Schemathesis' configuration: what is left out of the fuzz, and why.
const CONFIG: &str = r#"
# Revoking a token: the fuzz would revoke its own (id 1), and every later request would answer 401.
[[operations]]
include-name = "DELETE /api/v1/tokens/{id}"
enabled = false

# Making a dataset: with one, a generated job spec can be valid, and its trainer (a process of its own)
# would train on the CPU after the test ends. Bad files: `datasets::bad_files_are_refused_with_…`.
[[operations]]
include-path-regex = "^/api/v1/workspaces/\\{id\\}/datasets/(sample|upload)$"
enabled = false

# Most routes sit under a workspace: with only made-up ids they would stop at 404 before their own checks,
# so most of their cases name the one the test made (the others still try made-up ids).
[dictionaries.workspace]
values = [WORKSPACE_ID]

[[operations]]
include-path-regex = "^/api/v1/workspaces/\\{id\\}/"
parameters = { "path.id" = { dictionary = "workspace", probability = 0.9 } }

# Deleting a workspace: only one made to be deleted. A made-up id is often 1, the workspace above, and
# without it the rest of the run would stop at 404 again; every other route's cases try made-up ids.
[[operations]]
include-name = "DELETE /api/v1/workspaces/{id}"
parameters = { "path.id" = DOOMED_ID }

# Without Docker, environments answer 503 `docker_unavailable`, documented on their routes: a service
# the server depends on is missing, not a failure of the server.
[[operations]]
include-tag = "environments"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

# Loading an image archive goes to Docker too: the same documented 503.
[[operations]]
include-name = "POST /api/v1/admin/images/load"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_undocumented_answer() {
    let schemathesis = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/schemathesis");
    assert!(
        std::path::Path::new(schemathesis).exists(),
        "{schemathesis} is missing: run `scripts/setup.sh fuzz` (or `make setup`) to install it"
    );
    // A Docker endpoint that cannot exist, so that a Docker daemon on the machine is never used.
    let server = Server::start_with(&["--docker-host", "unix:///dev/null/no-docker.sock"]);
    let admin = server.signup("fuzzadmin").await;
    assert!(admin.is_admin);
    let secret = admin.token("fuzz").await;
    let workspace = common::workspace(&admin).await;
    let doomed = common::workspace(&admin).await;

    let work = tempfile::tempdir().expect("tempdir");
    let config = work.path().join("schemathesis.toml");
    let config_text = CONFIG
        .replace("WORKSPACE_ID", &workspace.to_string())
        .replace("DOOMED_ID", &doomed.to_string());
    std::fs::write(&config, config_text).expect("write config");
    let output = std::fs::File::create(work.path().join("schemathesis.log")).expect("log");
    let seed = std::env::var("PADDOCK_FUZZ_SEED").unwrap_or_else(|_| SEED.to_string());
    let started = Instant::now();
    let mut child = Command::new(schemathesis)
        .arg("--config-file")
        .arg(&config)
        .arg("--no-color")
        .arg("run")
        .arg(server.url("/api/v1/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {secret}")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", MAX_EXAMPLES, "--seed", &seed])
        // Generous: `make test` runs other servers and trainers beside this one on 2 cores, and a request
        // that times out counts as a failure.
        .args(["--workers", "2", "--request-timeout", "60"])
        // Hypothesis' "generating data is too slow" is about the machine's load, not about the server.
        .args(["--suppress-health-check", "too_slow"])
        // Failing examples are not kept between runs (the seed reproduces them).
        .args(["--generation-database", "none"])
        .current_dir(work.path())
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
    let report = std::fs::read_to_string(work.path().join("schemathesis.log")).unwrap_or_default();
    // The counts, for whoever reads the test's output (`--nocapture`).
    let mut lines = report.lines();
    let cases = lines
        .find(|l| l.trim() == "Test cases:")
        .and_then(|_| lines.next())
        .unwrap_or("no count")
        .trim();
    println!(
        "schemathesis (seed {seed}): {cases}, in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!(
            "schemathesis failed ({status}), seed {seed}:\n{}",
            failures_last(&report)
        ),
        None => panic!(
            "schemathesis ran past {} s and was stopped:\n{report}",
            TIME_LIMIT.as_secs()
        ),
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
fn the_failures_come_last_and_are_named() {
    let report = "Test cases:\n1\n===== ERRORS =====\n__ POST /y __\nRuntime Error\n===== FAILURES =====\n__ POST /x __\n- Server error\n===== SUMMARY =====\nFailures: 1\n";
    assert_eq!(
        failures_last(report),
        "Test cases:\n1\n===== SUMMARY =====\nFailures: 1\n===== ERRORS =====\n__ POST /y __\nRuntime Error\n===== FAILURES =====\n__ POST /x __\n- Server error\n\nwhat failed: POST /y (ERRORS); POST /x (FAILURES)\n"
    );
    assert_eq!(failures_last("no sections\n"), "no sections\n");
}

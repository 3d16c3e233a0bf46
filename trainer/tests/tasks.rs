//! The tasks beside sentiment classification learn from their shipped samples, from scratch, and their
//! checkpoints say what they are: text matching on the synthetic question pairs of
//! `scripts/dataset/make_matching.py`.

mod common;

use std::path::Path;

use common::fixture;
use trainer::events::EventSink;
use trainer::predict::encode_rows;
use trainer::task::Task;
use trainer::train::{train, EndStatus, JobConfig, RunControl};

/// A matching job on the sample pairs: a 1-layer model, 20 epochs, dev at each epoch's end.
fn matching_job(out: &Path) -> JobConfig {
    let toml = format!(
        r#"task = "matching"
[data]
train = {train:?}
dev = {dev:?}
[data.columns]
text = "text_a"
text_pair = "text_b"
[model]
preset = "tiny"
vocab_size = 2000
max_seq_len = 48
[train]
epochs = 20
batch_size = 32
lr = 2e-3
warmup_ratio = 0.1
seed = 42
threads = 1
device = "cpu"
log_every_steps = 50
[output]
dir = {out:?}
"#,
        train = fixture("matching_train.tsv").display().to_string(),
        dev = fixture("matching_dev.tsv").display().to_string(),
        out = out.display().to_string(),
    );
    JobConfig::from_toml_str(&toml).unwrap()
}

#[test]
fn a_matching_model_learns_to_judge_pairs_it_never_saw() {
    let tmp = tempfile::tempdir().unwrap();
    let job = matching_job(&tmp.path().join("run"));
    let outcome = train(&job, &EventSink::memory(), &RunControl::default()).unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    // Dev is 120 `same` and 120 `different` pairs, none of them a training pair: chance is 0.5 (macro-F1
    // 0.33 for one answer). This seed reaches about 0.69; a TF-IDF cosine threshold gets 0.76.
    let best = outcome.best_metric.unwrap();
    eprintln!("best dev macro-F1 {best:.3}");
    assert!(best >= 0.6, "best dev macro-F1 {best:.3} is near chance");

    // The checkpoint says its task, and reads pairs back as training did: its metrics on the dev pairs
    // are the ones training reported for it.
    let dir = outcome.best_checkpoint.unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["paddock_task"], "matching");
    assert_eq!(config["architectures"][0], "ErnieForSequenceClassification");
    let loaded = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    assert_eq!(loaded.config.task(), Task::Matching);
    let text = std::fs::read_to_string(fixture("matching_dev.tsv")).unwrap();
    let labels = loaded.config.labels();
    let (items, gold): (Vec<_>, Vec<_>) = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].to_string(), Some(f[1].to_string())),
                labels.iter().position(|x| x == f[2]),
            )
        })
        .unzip();
    let rows = encode_rows(&loaded.tokenizer, &items, Some(&gold), 48).unwrap();
    let inference = trainer::predict::Inference {
        model: &loaded.model,
        device: tch::Device::Cpu,
        precision: trainer::Precision::Fp32,
        pad_id: loaded.tokenizer.pad_id(),
        batch_size: 64,
    };
    let metrics = inference.evaluate(&rows, &labels, Task::Matching).unwrap();
    assert!(
        (metrics.macro_f1 - best).abs() < 1e-9,
        "reloaded {} vs {best}",
        metrics.macro_f1
    );
}

/// A matching job whose file lacks the second text is refused before anything is written, at the column;
/// a row without its second text is refused at its line.
#[test]
fn matching_data_needs_the_second_text_of_every_pair() {
    let tmp = tempfile::tempdir().unwrap();
    let mut job = matching_job(&tmp.path().join("run"));
    job.data.columns.text_pair = "question_b".into();
    let err = train(&job, &EventSink::memory(), &RunControl::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("question_b"), "{err}");
    assert!(!tmp.path().join("run").join("checkpoints").exists());

    let file = tmp.path().join("pairs.tsv");
    std::fs::write(
        &file,
        "text_a\ttext_b\tlabel\n怎么改密码\t密码忘了\tsame\n怎么挂失\t\tdifferent\n",
    )
    .unwrap();
    let mut opts = trainer::data::DataOptions {
        task: Task::Matching,
        ..Default::default()
    };
    opts.columns.text = "text_a".into();
    opts.columns.text_pair = "text_b".into();
    let v = trainer::data::validate_file(&file, &opts, None, None, None).unwrap();
    assert!(!v.report.ok);
    let issue = &v.report.errors[0];
    assert_eq!(
        (issue.line, issue.field.as_deref()),
        (Some(3), Some("text_b"))
    );
}

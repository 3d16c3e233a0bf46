//! PaddleNLP import and export against PaddleNLP itself: `scripts/paddle/fixtures.py`, run with the pinned
//! PaddleNLP of `.venv-paddle` (`scripts/setup.sh paddle`, part of `make test`), writes small ERNIE
//! directories with random weights and what Paddle computes on them; Paddock imports them and must give
//! the same token ids and logits within 1e-4, refuse what it cannot import by name, and export
//! directories PaddleNLP's `from_pretrained` loads and answers the same from.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use tch::{Device, Kind, Tensor};
use trainer::events::EventSink;
use trainer::paddle::{self, pickle};
use trainer::train::{train, EndStatus, RunControl};
use trainer::{checkpoint, Inputs};

const TOLERANCE: f64 = 1e-4;

fn python() -> PathBuf {
    let path = std::env::var_os("PADDOCK_PADDLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-paddle/bin/python")
        });
    assert!(
        path.exists(),
        "{} is missing: `scripts/setup.sh paddle` installs the pinned PaddleNLP these tests compare with",
        path.display()
    );
    path
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/paddle/fixtures.py")
}

/// Runs the Paddle side; its stdout.
fn paddle_side(command: &str, path: &Path) -> String {
    let out = Command::new(python())
        .arg(script())
        .arg(command)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fixtures.py {command} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The fixtures, made once per test process (Paddle takes seconds to start).
fn fixtures() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        paddle_side("make", dir.path());
        dir
    })
    .path()
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
        .unwrap()
}

fn ints(v: &Value) -> Tensor {
    let rows: Vec<Vec<i64>> = serde_json::from_value(v.clone()).unwrap();
    let (b, s) = (rows.len() as i64, rows[0].len() as i64);
    Tensor::from_slice(&rows.concat()).view([b, s])
}

/// Paddle's outputs as rows: one per text, or for a token classifier one per real token of `batch`.
fn floats_of(v: &Value, batch: &Value) -> Vec<Vec<f64>> {
    if let Ok(rows) = serde_json::from_value(v.clone()) {
        return rows;
    }
    let texts: Vec<Vec<Vec<f64>>> = serde_json::from_value(v.clone()).unwrap();
    let mask: Vec<Vec<i64>> = serde_json::from_value(batch["attention_mask"].clone()).unwrap();
    texts
        .into_iter()
        .zip(mask)
        .flat_map(|(tokens, mask)| {
            tokens
                .into_iter()
                .zip(mask)
                .filter(|(_, m)| *m == 1)
                .map(|(t, _)| t)
        })
        .collect()
}

/// Paddock's outputs as rows, like [`floats_of`]: a token classifier's `[B, S, L]` logits become the
/// real tokens' rows.
fn rows_of(t: &Tensor, mask: &Tensor) -> Vec<Vec<f64>> {
    let cols = *t.size().last().unwrap();
    let t = t.to_kind(Kind::Double).contiguous();
    let t = match t.dim() {
        3 => t
            .view([-1, cols])
            .index_select(0, &mask.view([-1]).nonzero().squeeze_dim(1)),
        _ => t,
    };
    let cols = cols as usize;
    let flat: Vec<f64> = Vec::try_from(t.view([-1])).unwrap();
    flat.chunks(cols).map(<[f64]>::to_vec).collect()
}

fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f64::max)
}

/// Paddock's tokenizer gives PaddleNLP's ids for every text of the batch (unpadded).
fn assert_same_ids(tokenizer: &trainer::Tokenizer, texts: &Value, batch: &Value) {
    for (i, pair) in texts.as_array().unwrap().iter().enumerate() {
        let e = tokenizer
            .encode(pair[0].as_str().unwrap(), pair[1].as_str(), 64)
            .unwrap();
        let mask: Vec<i64> = serde_json::from_value(batch["attention_mask"][i].clone()).unwrap();
        let len = mask.iter().filter(|&&m| m == 1).count();
        let ids: Vec<i64> = serde_json::from_value(batch["input_ids"][i].clone()).unwrap();
        let types: Vec<i64> = serde_json::from_value(batch["token_type_ids"][i].clone()).unwrap();
        assert_eq!(e.input_ids, ids[..len], "ids of {pair}");
        assert_eq!(e.token_type_ids, types[..len], "token types of {pair}");
    }
}

/// Paddock's logits (or pooled output) for PaddleNLP's batch.
fn paddock_outputs(model: &trainer::TaskModel, batch: &Value, pooled: bool) -> Vec<Vec<f64>> {
    let ids = ints(&batch["input_ids"]);
    let mask = ints(&batch["attention_mask"]);
    let types = ints(&batch["token_type_ids"]);
    let inputs = Inputs {
        input_ids: &ids,
        attention_mask: &mask,
        token_type_ids: Some(&types),
        task_type_ids: None,
    };
    tch::no_grad(|| {
        if pooled {
            rows_of(
                &model
                    .ernie()
                    .forward_t(inputs, false)
                    .pooled_output
                    .unwrap(),
                &mask,
            )
        } else {
            rows_of(&model.forward_t(inputs, false), &mask)
        }
    })
}

#[test]
fn paddle_models_import_and_answer_as_paddle_does() {
    let expected = expected();
    let cases = [
        (
            "cls_relu_task",
            "ErnieForSequenceClassification",
            "float32",
            vec!["负面", "正面"],
        ),
        (
            "cls_gelu_fp16",
            "ErnieForSequenceClassification",
            "float16",
            vec!["LABEL_0", "LABEL_1", "LABEL_2"],
        ),
        ("bare_silu_bf16", "ErnieModel", "bfloat16", vec![]),
        (
            "legacy_p2",
            "ErnieForSequenceClassification",
            "float32",
            vec!["LABEL_0", "LABEL_1"],
        ),
        (
            "token_classifier",
            "ErnieForTokenClassification",
            "float32",
            vec!["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (name, architecture, saved_as, labels) in cases {
        let out = tmp.path().join(name);
        let report = paddle::import(&fixtures().join(name), &out).unwrap();
        assert_eq!(report.architecture, architecture, "{name}");
        assert_eq!(report.saved_as, [saved_as], "{name}");
        assert_eq!(report.labels, labels, "{name}");
        assert!(report.parity.passed(), "{name}: {:?}", report.parity);
        assert_eq!(report.parity.samples.len(), paddle::parity::SAMPLES.len());
        // Every Linear weight (4 attention + 2 feed-forward per layer, the pooler, the classifier) turned;
        // a token classifier's pooler is PaddleNLP's alone, unused and not loaded.
        let tokens = architecture == "ErnieForTokenClassification";
        let linears = 2 * 6 + usize::from(!tokens) + usize::from(architecture != "ErnieModel");
        assert_eq!(
            report.unused,
            match tokens {
                true => vec!["ernie.pooler.dense.bias", "ernie.pooler.dense.weight"],
                false => vec![],
            },
            "{name}"
        );
        assert_eq!(
            report.tensors.iter().filter(|t| t.transposed).count(),
            linears,
            "{name}"
        );

        let loaded = checkpoint::load(&out, Device::Cpu, None).unwrap();
        assert!(
            loaded.report.unexpected.is_empty(),
            "{name}: {:?}",
            loaded.report
        );
        assert_same_ids(&loaded.tokenizer, &expected["texts"], &expected["batch"]);
        let pooled = architecture == "ErnieModel";
        let want = &expected["models"][name][if pooled { "pooled" } else { "logits" }];
        let got = paddock_outputs(&loaded.model, &expected["batch"], pooled);
        let diff = max_diff(&got, &floats_of(want, &expected["batch"]));
        assert!(
            diff <= TOLERANCE,
            "{name}: Paddock differs from Paddle by {diff:e}"
        );
    }
}

#[test]
fn an_imported_model_fine_tunes() {
    let tmp = tempfile::tempdir().unwrap();
    let imported = tmp.path().join("imported");
    paddle::import(&fixtures().join("bare_silu_bf16"), &imported).unwrap();
    let job = common::sample_job(
        &format!(
            "pretrained = {:?}\nmax_seq_len = 32",
            imported.display().to_string()
        ),
        "epochs = 1\nbatch_size = 32\nlr = 1e-3\nseed = 7\nthreads = 1\ndevice = \"cpu\"",
        &tmp.path().join("run"),
    );
    let outcome = train(&job, &EventSink::memory(), &RunControl::default()).unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    let best = outcome.best_checkpoint.or(outcome.last_checkpoint).unwrap();
    let loaded = checkpoint::load(&best, Device::Cpu, None).unwrap();
    assert_eq!(
        loaded.config.architectures,
        ["ErnieForSequenceClassification"]
    );
    assert_eq!(loaded.config.hidden_act, "silu");
    assert!(loaded.config.use_task_id);
}

#[test]
fn what_cannot_be_imported_is_refused_by_name_and_nothing_is_written() {
    let cases = [
        ("question_answering", "ErnieForQuestionAnswering"),
        (
            "stray_parameter",
            "`ernie.encoder.layers.0.self_attn.qkv_proj.weight` is not a parameter",
        ),
        ("missing_parameter", "ernie.encoder.layers.1.norm2.bias"),
        (
            "misshapen_parameter",
            "`ernie.encoder.layers.0.linear1.weight` has shape [64, 32]",
        ),
        ("runs_a_command", "system"),
        ("vocab.txt", "not a PaddleNLP model directory"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (name, says) in cases {
        let out = tmp.path().join(name);
        let e = paddle::import(&fixtures().join(name), &out)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{name}: {e}");
        assert!(!out.exists(), "{name}: the output was created");
    }
    assert!(
        !fixtures().join("pwned").exists(),
        "the pickle's command ran"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "temporary directories left"
    );

    // Without its weights file.
    let dir = tmp.path().join("no_weights");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(
        fixtures().join("cls_relu_task/config.json"),
        dir.join("config.json"),
    )
    .unwrap();
    let e = paddle::import(&dir, &tmp.path().join("out"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no model_state.pdparams"), "{e}");
}

/// The gate itself: the same Paddle arrays against a Paddock model whose query weight was copied without
/// its transpose (the classic conversion mistake) fail it, with the figures.
#[test]
fn the_parity_gate_catches_a_missed_transpose() {
    let dir = fixtures().join("cls_relu_task");
    let tmp = tempfile::tempdir().unwrap();
    paddle::import(&dir, &tmp.path().join("ok")).unwrap();
    let loaded = checkpoint::load(&tmp.path().join("ok"), Device::Cpu, None).unwrap();
    let config = paddle::config::PaddleConfig::from_dir(&dir).unwrap();
    let arrays =
        pickle::load_state_dict(&std::fs::read(dir.join("model_state.pdparams")).unwrap()).unwrap();
    let params = arrays
        .iter()
        .map(|(name, a)| {
            let shape: Vec<i64> = a.shape.iter().map(|&d| d as i64).collect();
            let t = Tensor::from_data_size(&a.data, &shape, Kind::Float).to_kind(Kind::Double);
            (name.clone(), t)
        })
        .collect();
    let report = paddle::parity::check(&config, &params, &loaded.model, &loaded.tokenizer).unwrap();
    assert!(report.max_abs_diff <= TOLERANCE);

    let query = loaded
        .vs
        .variables()
        .remove("ernie.encoder.layer.0.attention.self.query.weight")
        .unwrap();
    tch::no_grad(|| query.shallow_clone().copy_(&query.tr().contiguous()));
    let e = paddle::parity::check(&config, &params, &loaded.model, &loaded.tokenizer)
        .unwrap_err()
        .to_string();
    assert!(e.contains("parity") && e.contains("tolerance 1e-4"), "{e}");
}

#[test]
fn exports_load_in_paddlenlp_and_answer_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, architecture, labels, task) in [
        (
            "cls_relu_task",
            "ErnieForSequenceClassification",
            vec!["负面", "正面"],
            "classification",
        ),
        (
            "token_classifier",
            "ErnieForTokenClassification",
            vec!["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
            "ner",
        ),
    ] {
        let imported = tmp.path().join(format!("{name}-imported"));
        paddle::import(&fixtures().join(name), &imported).unwrap();
        let exported = tmp.path().join(format!("{name}-exported"));
        let report = paddle::export(&imported, &exported).unwrap();
        assert_eq!(report.architecture, architecture);
        assert_eq!(report.labels, labels);
        assert!(report.parity.passed(), "{name}");
        let config: Value =
            serde_json::from_slice(&std::fs::read(exported.join("config.json")).unwrap()).unwrap();
        assert_eq!(
            config["paddock_task"], task,
            "{name}: the task goes out with it"
        );

        // The written pickle reads back to the arrays the import started from (less the token
        // classifier's unused pooler).
        let read = |dir: &Path| {
            let mut state =
                pickle::load_state_dict(&std::fs::read(dir.join("model_state.pdparams")).unwrap())
                    .unwrap();
            state.retain(|n, _| {
                architecture != "ErnieForTokenClassification" || !n.contains("pooler")
            });
            state
        };
        assert_eq!(read(&exported), read(&fixtures().join(name)), "{name}");

        let answer: Value = serde_json::from_str(&paddle_side("predict", &exported)).unwrap();
        let loaded = checkpoint::load(&imported, Device::Cpu, None).unwrap();
        assert_same_ids(&loaded.tokenizer, &expected()["texts"], &answer["batch"]);
        let got = paddock_outputs(&loaded.model, &answer["batch"], false);
        let diff = max_diff(&got, &floats_of(&answer["logits"], &answer["batch"]));
        assert!(
            diff <= TOLERANCE,
            "{name}: PaddleNLP's answer differs from Paddock's by {diff:e}"
        );
    }
}

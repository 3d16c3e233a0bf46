//! Training and inference throughput of the classification model on identical padded batches, the Rust
//! half of `make bench-train` (`scripts/bench/bench_train.sh` runs it next to `scripts/bench/bench_torch.py`).
//!
//! The batch is deterministic and reproduced exactly by the Python benchmark: token
//! `5 + (b * 131 + s * 17) % (vocab - 5)`, length `64 + (b * 37) % 65`, padded to `--seq` with `[PAD]` = 0.
//! A training step is forward (dropout on) + cross-entropy + backward + AdamW (lr 5e-5, weight decay 0.01).
//! Prints one JSON object; FLOP counts are the nominal dense-model counts (the same for both implementations,
//! so skipped work shows up as a higher effective FLOP/s).
//!
//! Usage: `cargo run --release -p trainer --example bench -- [--preset nano] [--batch 32] [--seq 128]
//!         [--steps 10] [--threads N] [--full] [--no-unpad]`

use std::time::Instant;

use tch::nn::{OptimizerConfig, VarStore};
use tch::{Device, Kind, Tensor};
use trainer::{ErnieConfig, ErnieForSequenceClassification};

struct Args {
    preset: String,
    batch: i64,
    seq: i64,
    steps: usize,
    threads: i32,
    /// Every sequence as long as `seq` (no padding at all).
    full: bool,
    /// Disable unpadding, to measure what it contributes.
    no_unpad: bool,
}

fn parse() -> Args {
    let mut a = Args {
        preset: "nano".into(),
        batch: 32,
        seq: 128,
        steps: 10,
        threads: 0,
        full: false,
        no_unpad: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let v = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--full" => {
                a.full = true;
                i += 1;
                continue;
            }
            "--no-unpad" => {
                a.no_unpad = true;
                i += 1;
                continue;
            }
            "--preset" => a.preset = v,
            "--batch" => a.batch = v.parse().expect("--batch N"),
            "--seq" => a.seq = v.parse().expect("--seq N"),
            "--steps" => a.steps = v.parse().expect("--steps N"),
            "--threads" => a.threads = v.parse().expect("--threads N"),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    a
}

/// The shared deterministic batch: `(input_ids, attention_mask)`, `[B, S]` Int64.
fn batch(b: i64, s: i64, vocab: i64, full: bool) -> (Tensor, Tensor) {
    let mut ids = Vec::with_capacity((b * s) as usize);
    let mut mask = Vec::with_capacity((b * s) as usize);
    for r in 0..b {
        let len = if full { s } else { (64 + (r * 37) % 65).min(s) };
        for c in 0..s {
            let real = c < len;
            ids.push(if real {
                5 + (r * 131 + c * 17) % (vocab - 5)
            } else {
                0
            });
            mask.push(real as i64);
        }
    }
    (
        Tensor::from_slice(&ids).view([b, s]),
        Tensor::from_slice(&mask).view([b, s]),
    )
}

/// Nominal forward FLOPs of one sequence of `s` tokens (matmuls and attention; embeddings, norms ignored).
fn forward_flops(c: &ErnieConfig, s: f64) -> f64 {
    let (h, f) = (c.hidden_size as f64, c.intermediate_size as f64);
    let per_token_layer = 2.0 * (4.0 * h * h + 2.0 * h * f) + 4.0 * s * h;
    c.num_hidden_layers as f64 * s * per_token_layer + 2.0 * h * h + 2.0 * h * c.num_labels as f64
}

fn main() {
    let args = parse();
    let threads = if args.threads > 0 {
        args.threads
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get() as i32)
            .unwrap_or(1)
    };
    tch::set_num_threads(threads);
    tch::manual_seed(0);
    let config = ErnieConfig::preset(&args.preset, 40000, 2).expect("preset");
    let vs = VarStore::new(Device::Cpu);
    let mut model = ErnieForSequenceClassification::new(&vs.root(), &config);
    model.ernie.unpad = !args.no_unpad;
    let (ids, mask) = batch(args.batch, args.seq, config.vocab_size as i64, args.full);
    let types = ids.zeros_like();
    let labels = Tensor::arange(args.batch, (Kind::Int64, Device::Cpu)).remainder(2);
    let mut opt = tch::nn::AdamW {
        beta1: 0.9,
        beta2: 0.999,
        wd: 0.01,
        eps: 1e-8,
        amsgrad: false,
    }
    .build(&vs, 5e-5)
    .expect("optimizer");

    let mut train_step = || {
        let logits = model.forward_t(&ids, &mask, Some(&types), None, true);
        let loss = logits.cross_entropy_for_logits(&labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss.double_value(&[])
    };
    for _ in 0..2 {
        train_step();
    }
    let start = Instant::now();
    let mut last_loss = 0.0;
    for _ in 0..args.steps {
        last_loss = train_step();
    }
    let train_s = start.elapsed().as_secs_f64();

    let infer = || {
        tch::no_grad(|| {
            model
                .forward_t(&ids, &mask, Some(&types), None, false)
                .double_value(&[0, 0])
        })
    };
    for _ in 0..2 {
        infer();
    }
    let infer_steps = args.steps * 3;
    let start = Instant::now();
    for _ in 0..infer_steps {
        infer();
    }
    let infer_s = start.elapsed().as_secs_f64();

    let samples = args.batch as f64;
    let fwd = forward_flops(&config, args.seq as f64);
    let train_sps = samples * args.steps as f64 / train_s;
    let infer_sps = samples * infer_steps as f64 / infer_s;
    let report = serde_json::json!({
        "impl": "paddock (tch)",
        "preset": args.preset, "batch": args.batch, "seq": args.seq, "threads": threads,
        "full_length": args.full, "unpad": !args.no_unpad,
        "real_tokens": mask.sum(Kind::Int64).int64_value(&[]),
        "train_samples_per_s": train_sps,
        "infer_samples_per_s": infer_sps,
        "train_flops_per_s": train_sps * 3.0 * fwd,
        "infer_flops_per_s": infer_sps * fwd,
        "last_loss": last_loss,
    });
    println!("{report}");
}

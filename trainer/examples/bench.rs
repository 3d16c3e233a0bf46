//! Training and inference throughput of the classification model on identical batches, the Rust half of
//! `make bench-train` (`scripts/bench/bench_train.sh` runs it next to `scripts/bench/bench_torch.py`).
//!
//! Synthetic scenarios: one deterministic batch, reproduced exactly by the Python benchmark: token
//! `5 + (b * 131 + s * 17) % (vocab - 5)`, length `64 + (b * 37) % 65` (or `--seq` with `--full`), padded
//! to `--seq` with `[PAD]` = 0, vocabulary 40000. FLOP counts are the nominal dense-model counts at `--seq`
//! (the same for both implementations, so skipped padding shows up as a higher effective FLOP/s).
//!
//! Real data (`--data FILE --write-batches OUT`): the file is read and validated by the trainer's loader,
//! a vocabulary is built from it and the preset model created exactly as `paddock train` does from scratch
//! (`model_init::from_scratch`), rows are tokenized to `--seq` tokens, and the batches are the first
//! `--steps` of the training loop's first epoch (`bucketed_batches` with the default seed), each padded to
//! its own longest row by `collate`. Those batches (and the model's config) are written to OUT so that the
//! Python side runs the very same tensors through the same shape. One pass over them is measured for
//! training, three for inference; FLOPs are counted per row at its real length (padding not counted).
//!
//! A training step is forward (dropout on) + cross-entropy + backward + AdamW (lr 5e-5, weight decay 0.01).
//! With `--precision bf16` the forward runs under bf16 autocast (float32 master weights and loss), as
//! `paddock train --precision bf16` does.
//! Prints one JSON object.
//!
//! Started as one of several ranks (`WORLD_SIZE` > 1, `RANK`, `PADDOCK_MEETING_FILE`, as `make bench-train`
//! starts them), it measures the training step a rank of a data-parallel job runs
//! (`trainer::train::parallel`): its share of each batch, the gradients summed over the ranks, the
//! trainer's own AdamW; rank 0 prints the run's samples/s and the time spent summing, per step.
//!
//! Usage: `cargo run --release -p trainer --example bench -- [--preset nano] [--batch 32] [--seq 128]
//!         [--steps 10] [--threads N] [--full] [--no-unpad] [--precision fp32|bf16]
//!         [--data FILE --write-batches OUT]`

use std::path::{Path, PathBuf};
use std::time::Instant;

use tch::nn::{OptimizerConfig, VarStore};
use tch::{Device, Kind, Tensor};
use trainer::collectives::Rank;
use trainer::data::batch::{bucketed_batches, collate, Batch, Features};
use trainer::data::{validate_file, DataOptions, LabelMap};
use trainer::predict::encode_rows;
use trainer::train::config::{ModelSection, TrainSection};
use trainer::train::model_init;
use trainer::train::optimizer::{AdamW, AdamWConfig};
use trainer::train::parallel::DataParallel;
use trainer::train::run::write_atomic;
use trainer::{ErnieConfig, Precision, TaskModel};

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
    /// fp32, or bf16 (autocast, on a CPU with native bfloat16).
    precision: Precision,
    /// A labelled data file: measure length-bucketed batches of it instead of the synthetic batch.
    data: Option<PathBuf>,
    /// Where the real-data batches are written for the Python side (required with `data`).
    write_batches: Option<PathBuf>,
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
        precision: Precision::Fp32,
        data: None,
        write_batches: None,
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
            "--precision" => a.precision = Precision::parse(&v).unwrap_or_else(|e| fail(e)),
            "--data" => a.data = Some(v.into()),
            "--write-batches" => a.write_batches = Some(v.into()),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    if a.data.is_some() != a.write_batches.is_some() {
        panic!("--data FILE and --write-batches OUT go together");
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

/// What is measured: a model and the batches it runs, cycled through in order.
struct Workload {
    vs: VarStore,
    model: TaskModel,
    batches: Vec<Batch>,
    /// Forward FLOPs of each batch, as counted for the FLOP/s figures.
    flops: Vec<f64>,
    /// Fields added to the report (what the data was; empty for the synthetic batch).
    extra: serde_json::Map<String, serde_json::Value>,
}

/// The synthetic scenarios: one batch of `args.batch` rows at `args.seq`, vocabulary 40000.
fn synthetic(args: &Args) -> Workload {
    let config = ErnieConfig::preset(&args.preset, 40000, 2).expect("preset");
    let vs = VarStore::new(Device::Cpu);
    let model = TaskModel::new(&vs.root(), &config);
    let (ids, mask) = batch(args.batch, args.seq, config.vocab_size as i64, args.full);
    let tokens = mask.sum(Kind::Int64).int64_value(&[]) as usize;
    let b = Batch {
        token_type_ids: ids.zeros_like(),
        labels: Some(Tensor::arange(args.batch, (Kind::Int64, Device::Cpu)).remainder(2)),
        input_ids: ids,
        attention_mask: mask,
        rows: args.batch as usize,
        tokens,
    };
    let flops = vec![args.batch as f64 * forward_flops(&config, args.seq as f64)];
    Workload {
        vs,
        model,
        batches: vec![b],
        flops,
        extra: serde_json::Map::new(),
    }
}

/// The training step of one rank of a data-parallel run, timed; rank 0 prints the figures.
fn data_parallel(args: &Args, w: &Workload, rank: &Rank, threads: i32) {
    let mut group = DataParallel::join(rank).unwrap_or_else(|e| fail(e));
    group.same_start(&w.vs).unwrap_or_else(|e| fail(e));
    let mut opt = AdamW::new(
        &w.vs,
        AdamWConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        },
    );
    opt.materialize_grads();
    // This rank's rows of each batch, as the trainer shards them.
    let shards: Vec<Batch> = w
        .batches
        .iter()
        .map(|b| {
            let rows = group.shard(0..b.rows as i64);
            let index = Tensor::from_slice(&rows);
            let pick = |t: &Tensor| t.index_select(0, &index);
            Batch {
                input_ids: pick(&b.input_ids),
                attention_mask: pick(&b.attention_mask),
                token_type_ids: pick(&b.token_type_ids),
                labels: b.labels.as_ref().map(pick),
                rows: rows.len(),
                tokens: pick(&b.attention_mask).sum(Kind::Int64).int64_value(&[]) as usize,
            }
        })
        .collect();
    let n = shards.len();
    let mut summing = 0.0;
    let mut step = |i: usize, summing: &mut f64| {
        let (shard, whole) = (&shards[i % n], &w.batches[i % n]);
        opt.zero_grad();
        let logits = args
            .precision
            .autocast(Device::Cpu, || w.model.forward_t(shard.inputs(), true))
            .expect("autocast")
            .to_kind(Kind::Float);
        let share = shard.rows as f64 / whole.rows as f64;
        let loss = logits.cross_entropy_for_logits(shard.labels.as_ref().expect("labels"));
        (&loss * share).backward();
        let at = Instant::now();
        group
            .sum_step(&mut opt, &[loss.double_value(&[]) * share])
            .unwrap_or_else(|e| fail(e));
        *summing += at.elapsed().as_secs_f64();
        opt.step(5e-5);
    };
    for i in 0..2 {
        step(i, &mut 0.0);
    }
    let start = Instant::now();
    for i in 0..args.steps {
        step(i, &mut summing);
    }
    let secs = start.elapsed().as_secs_f64();
    if group.rank() == 0 {
        let rows: usize = (0..args.steps).map(|i| w.batches[i % n].rows).sum();
        let report = serde_json::json!({
            "impl": "paddock (tch, c10d Gloo)",
            "ranks": group.world(), "threads_per_rank": threads, "preset": args.preset,
            "batch": args.batch, "precision": args.precision.as_str(),
            "train_samples_per_s": rows as f64 / secs,
            "allreduce_ms_per_step": 1e3 * summing / args.steps as f64,
            "step_ms": 1e3 * secs / args.steps as f64,
        });
        println!("{report}");
    }
}

/// Exits with `message` (bad input to the benchmark is not a crash).
fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("bench: {message}");
    std::process::exit(2)
}

/// The real-data scenario: `path` read, tokenized and batched as `paddock train` does from scratch (every
/// row of the file is a training row, as with a job that names its dev file), the model built with the
/// vocabulary built from it; the first `args.steps` batches of epoch 0 are kept and written to `out`.
fn real(args: &Args, path: &Path, out: &Path) -> Workload {
    let opts = DataOptions::default();
    let read = validate_file(path, &opts, None, None, None)
        .and_then(|v| trainer::data::report::to_result(&v.report).map(|()| v))
        .unwrap_or_else(|e| fail(e));
    let labels = LabelMap::infer(read.rows.iter().filter_map(|r| r.label.as_deref()))
        .unwrap_or_else(|e| fail(e));
    let examples = read
        .into_examples(Some(&labels))
        .unwrap_or_else(|e| fail(e));
    let model_section = ModelSection {
        preset: args.preset.clone(),
        max_seq_len: args.seq as usize,
        ..ModelSection::default()
    };
    let corpus = examples
        .iter()
        .flat_map(|e| std::iter::once(e.text.as_str()).chain(e.text_pair.as_deref()));
    let built = model_init::from_scratch(
        &model_section,
        contracts::task::Task::Classification,
        corpus,
        labels.names(),
        Device::Cpu,
    )
    .unwrap_or_else(|e| fail(e));
    let items: Vec<(String, Option<String>)> = examples
        .iter()
        .map(|e| (e.text.clone(), e.text_pair.clone()))
        .collect();
    let row_labels: Vec<Option<usize>> = examples.iter().map(|e| e.label).collect();
    let rows = encode_rows(
        &built.tokenizer,
        &items,
        Some(&row_labels),
        model_section.max_seq_len,
    )
    .unwrap_or_else(|e| fail(e));
    let lengths: Vec<usize> = rows.iter().map(|r| r.input_ids.len()).collect();
    let seed = TrainSection::default().seed;
    let order = bucketed_batches(&lengths, args.batch as usize, seed, 0);
    let epoch_batches = order.len();
    let kept: Vec<Vec<usize>> = order.into_iter().take(args.steps.max(1)).collect();
    let pad = built.tokenizer.pad_id();
    let batches: Vec<Batch> = kept
        .iter()
        .map(|idx| {
            let refs: Vec<&Features> = idx.iter().map(|&i| &rows[i]).collect();
            collate(&refs, pad, Device::Cpu)
        })
        .collect();
    let flops: Vec<f64> = kept
        .iter()
        .map(|idx| {
            idx.iter()
                .map(|&i| forward_flops(&built.config, lengths[i] as f64))
                .sum()
        })
        .collect();

    let as_rows = |t: &Tensor| Vec::<Vec<i64>>::try_from(t).expect("2-d Int64 tensor");
    let written: Vec<serde_json::Value> = batches
        .iter()
        .map(|b| {
            serde_json::json!({
                "input_ids": as_rows(&b.input_ids),
                "attention_mask": as_rows(&b.attention_mask),
                "token_type_ids": as_rows(&b.token_type_ids),
                "labels": Vec::<i64>::try_from(b.labels.as_ref().expect("labelled rows")).expect("labels"),
            })
        })
        .collect();
    let config_json: serde_json::Value =
        serde_json::from_str(&built.config.to_json_string().unwrap_or_else(|e| fail(e)))
            .expect("config.json is JSON");
    let file = serde_json::json!({
        "data": path.display().to_string(),
        "preset": args.preset,
        "config": config_json,
        "batches": written,
    });
    write_atomic(out, file.to_string().as_bytes()).unwrap_or_else(|e| fail(e));

    let kept_lengths: Vec<usize> = kept.iter().flatten().map(|&i| lengths[i]).collect();
    let padded: i64 = batches.iter().map(|b| b.input_ids.numel() as i64).sum();
    let mut extra = serde_json::Map::new();
    for (k, v) in [
        ("data", serde_json::json!(path.display().to_string())),
        ("data_rows", serde_json::json!(rows.len())),
        ("labels", serde_json::json!(labels.names())),
        ("vocab_size", serde_json::json!(built.config.vocab_size)),
        ("epoch_batches", serde_json::json!(epoch_batches)),
        ("batches", serde_json::json!(batches.len())),
        ("rows", serde_json::json!(kept_lengths.len())),
        ("min_len", serde_json::json!(kept_lengths.iter().min())),
        ("max_len", serde_json::json!(kept_lengths.iter().max())),
        ("padded_tokens", serde_json::json!(padded)),
        ("flops_count", serde_json::json!("real tokens only")),
    ] {
        extra.insert(k.into(), v);
    }
    Workload {
        vs: built.vs,
        model: built.model,
        batches,
        flops,
        extra,
    }
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
    let mut w = match (&args.data, &args.write_batches) {
        (Some(data), Some(out)) => {
            if args.full {
                fail("--full is for the synthetic batch, not with --data");
            }
            real(&args, data, out)
        }
        _ => synthetic(&args),
    };
    w.model.ernie_mut().unpad = !args.no_unpad;
    if let Some(rank) = Rank::from_env(|k| std::env::var(k).ok()).unwrap_or_else(|e| fail(e)) {
        return data_parallel(&args, &w, &rank, threads);
    }
    let precision = args.precision;
    if let Err(e) = precision.check(Device::Cpu) {
        fail(e);
    }
    // The forward pass under the requested precision (a no-op scope for fp32).
    let forward = |b: &Batch, train: bool| {
        precision
            .autocast(Device::Cpu, || w.model.forward_t(b.inputs(), train))
            .expect("autocast")
            .to_kind(Kind::Float)
    };
    let mut opt = tch::nn::AdamW {
        beta1: 0.9,
        beta2: 0.999,
        wd: 0.01,
        eps: 1e-8,
        amsgrad: false,
    }
    .build(&w.vs, 5e-5)
    .expect("optimizer");

    // Iteration `i` runs batch `i % n`: the synthetic scenarios repeat their one batch, the real one
    // passes over its batches in the training loop's order.
    let n = w.batches.len();
    let batches = &w.batches;
    let mut train_step = |i: usize| {
        let b = &batches[i % n];
        let logits = forward(b, true);
        let loss = logits.cross_entropy_for_logits(b.labels.as_ref().expect("labels"));
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss.double_value(&[])
    };
    for i in 0..2 {
        train_step(i);
    }
    let start = Instant::now();
    let mut last_loss = 0.0;
    for i in 0..args.steps {
        last_loss = train_step(i);
    }
    let train_s = start.elapsed().as_secs_f64();

    let infer = |i: usize| {
        let b = &batches[i % n];
        tch::no_grad(|| forward(b, false).double_value(&[0, 0]))
    };
    for i in 0..2 {
        infer(i);
    }
    let infer_steps = args.steps * 3;
    let start = Instant::now();
    for i in 0..infer_steps {
        infer(i);
    }
    let infer_s = start.elapsed().as_secs_f64();

    // Rows and FLOPs of the iterations run (batches may differ in rows, lengths and FLOPs).
    let work = |iters: usize| -> (f64, f64) {
        (0..iters).fold((0.0, 0.0), |(r, f), i| {
            (r + batches[i % n].rows as f64, f + w.flops[i % n])
        })
    };
    let (train_rows, train_fwd) = work(args.steps);
    let (infer_rows, infer_fwd) = work(infer_steps);
    // For the synthetic batch `seq` is the padded length; for real data the longest row measured.
    let seq = batches
        .iter()
        .map(|b| b.input_ids.size()[1])
        .max()
        .unwrap_or(0);
    let mut report = serde_json::json!({
        "impl": "paddock (tch)",
        "preset": args.preset, "batch": args.batch, "seq": seq, "threads": threads,
        "full_length": args.full, "unpad": !args.no_unpad, "precision": precision.as_str(),
        "real_tokens": batches.iter().map(|b| b.tokens).sum::<usize>(),
        "train_samples_per_s": train_rows / train_s,
        "infer_samples_per_s": infer_rows / infer_s,
        "train_flops_per_s": 3.0 * train_fwd / train_s,
        "infer_flops_per_s": infer_fwd / infer_s,
        "last_loss": last_loss,
    });
    if !w.extra.is_empty() {
        let o = report.as_object_mut().expect("object");
        o.append(&mut w.extra);
        o.insert("scenario".into(), "real".into());
    }
    println!("{report}");
}

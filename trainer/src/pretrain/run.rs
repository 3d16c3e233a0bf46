//! The pretraining loop. Reads the corpus, builds or reuses the tokenizer and an `ErnieForMaskedLM`
//! (a preset from scratch, or a Hugging Face model to continue), splits every row into whole words once,
//! then takes AdamW steps with linear warm-up and decay over length-bucketed batches, each row masked
//! afresh per epoch (see `masking`). Only masked positions go through the vocabulary projection.
//!
//! Like training, it reports JSON-lines events, re-seeds libtorch from (seed, step) before every step so
//! a rerun is identical, and on SIGTERM finishes the step, writes a checkpoint and ends with `stopped`.
//! Checkpoints are Hugging Face `ErnieForMaskedLM` directories without the (untrained) pooler; only the
//! newest is kept, and `paddock train` starts from it as `[model] pretrained`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use super::config::PretrainArgs;
use super::corpus::read_corpus;
use super::masking::{mask_whole_words, row_rng, MaskVocab, Masked, MaskingPolicy, IGNORE};
use super::words::{WordSegmenter, WordTokens};
use crate::checkpoint::{load_weights, save_only, INITIALISABLE};
use crate::data::batch::{bucketed_batches, collate, Features};
use crate::events::{Event, EventSink, Start, Task};
use crate::train::optimizer::AdamW;
use crate::train::parallel::DataParallel;
use crate::train::run::write_atomic;
use crate::train::schedule::LinearSchedule;
use crate::train::state::LossRecord;
use crate::train::{checkpoints, model_init, EndStatus, RunControl};
use crate::{pick_device, ErnieConfig, ErnieForMaskedLM, Error, Precision, Result, Tokenizer};

/// What a pretraining run produced.
#[derive(Debug, Clone)]
pub struct PretrainOutcome {
    pub status: EndStatus,
    pub global_step: usize,
    /// Every step's masked-LM loss.
    pub losses: Vec<LossRecord>,
    /// The checkpoint written last (the one to fine-tune from).
    pub last_checkpoint: Option<PathBuf>,
}

/// The labels written into a masked-LM `config.json`. They mean nothing; two is what transformers
/// assumes for a config without labels, and fine-tuning replaces them with the job's.
const PLACEHOLDER_LABELS: [&str; 2] = ["LABEL_0", "LABEL_1"];

/// Runs `paddock pretrain`. On failure an `error` and an `end` (`failed`) event are emitted and the
/// error returned. Of several ranks (`control.rank`), each computes its share of every batch through
/// the training's data-parallel step, and only rank 0 reports and writes, as in training.
pub fn pretrain(
    args: &PretrainArgs,
    events: &EventSink,
    control: &RunControl,
) -> Result<PretrainOutcome> {
    let silent = EventSink::memory();
    let lead = control.rank.as_ref().is_none_or(|r| r.rank == 0);
    let events = if lead { events } else { &silent };
    match Pretrainer::prepare(args, control).and_then(|p| p.run(events, control)) {
        Ok(outcome) => Ok(outcome),
        Err(e) => {
            events.failed(&e.to_string());
            Err(e)
        }
    }
}

struct Pretrainer<'a> {
    args: &'a PretrainArgs,
    precision: Precision,
    vs: VarStore,
    model: ErnieForMaskedLM,
    config: ErnieConfig,
    tokenizer: Tokenizer,
    origin: String,
    rows: Vec<WordTokens>,
    skipped_rows: usize,
    vocab: MaskVocab,
    policy: MaskingPolicy,
    opt: AdamW,
    schedule: LinearSchedule,
    total_steps: usize,
    ckpt_root: PathBuf,
    parallel: Option<DataParallel>,
    /// A stop asked of any rank, as the last step's sums said.
    stop_seen: bool,
}

/// The model's configuration and tokenizer: from `--pretrained`, or a preset with `--tokenizer`'s
/// vocabulary or one built from the corpus.
fn model_parts(args: &PretrainArgs, texts: &[String]) -> Result<(ErnieConfig, Tokenizer, String)> {
    let m = args.model_section();
    let labels: Vec<String> = PLACEHOLDER_LABELS.iter().map(|s| s.to_string()).collect();
    if let Some(dir) = &args.pretrained {
        let (mut config, tokenizer) = crate::checkpoint::config_and_tokenizer(dir)?;
        model_init::apply_overrides(&mut config, &m);
        if args.max_seq_len > config.max_position_embeddings {
            return Err(Error::Config(format!(
                "--max-seq-len ({}) exceeds the model's max_position_embeddings ({})",
                args.max_seq_len, config.max_position_embeddings
            )));
        }
        return Ok((config, tokenizer, dir.display().to_string()));
    }
    let tokenizer = match &args.tokenizer {
        Some(dir) => Tokenizer::from_dir(dir)?,
        None => Tokenizer::build_from_corpus(texts.iter().map(String::as_str), args.vocab_size)?,
    };
    let config = model_init::scratch_config(&m, tokenizer.vocab_size(), &labels)?;
    Ok((
        config,
        tokenizer,
        format!("preset:{} (from scratch)", args.preset),
    ))
}

impl<'a> Pretrainer<'a> {
    fn prepare(args: &'a PretrainArgs, control: &RunControl) -> Result<Self> {
        args.validate()?;
        if args.threads > 0 {
            tch::set_num_threads(args.threads as i32);
        }
        let device = pick_device(&args.device)?;
        let precision = Precision::parse(&args.precision)?;
        precision.check(device)?;
        let texts = read_corpus(&args.corpus_source()?)?;

        // Same initial weights for the same seed, whatever ran before in this process.
        tch::manual_seed(args.seed as i64);
        let (config, tokenizer, origin) = model_parts(args, &texts)?;
        let vs = VarStore::new(device);
        let model = ErnieForMaskedLM::new(&vs.root(), &config);
        if let Some(dir) = &args.pretrained {
            let report = load_weights(&vs, dir, INITIALISABLE, &[])?;
            if !report.initialised.is_empty() {
                tracing::info!("initialised fresh: {}", report.initialised.join(", "));
            }
        }
        let mut parallel = DataParallel::for_rank(control.rank.as_ref(), &device)?;
        if let Some(p) = parallel.as_mut() {
            p.same_start(&vs)?;
        }

        let segmenter = WordSegmenter::new();
        let mut rows = Vec::with_capacity(texts.len());
        let mut skipped_rows = 0;
        for text in &texts {
            let row = segmenter.word_tokens(&tokenizer, text, args.max_seq_len)?;
            if row.words == 0 {
                skipped_rows += 1;
            } else {
                rows.push(row);
            }
        }
        if rows.is_empty() {
            return Err(Error::Data {
                line: None,
                field: None,
                message: "no text of the corpus has a word the vocabulary knows, so there is nothing to mask".into(),
            });
        }

        let planned = rows.len().div_ceil(args.batch_size) * args.epochs;
        let total_steps = args.max_steps.map_or(planned, |m| m.min(planned));
        let mut opt = AdamW::new(&vs, args.adamw());
        if parallel.is_some() {
            opt.materialize_grads();
        }
        Ok(Pretrainer {
            args,
            precision,
            opt,
            schedule: LinearSchedule::new(args.lr, args.warmup_ratio, total_steps),
            vocab: MaskVocab::of(&tokenizer),
            policy: args.masking(),
            ckpt_root: args.output_dir.join("checkpoints"),
            vs,
            model,
            config,
            tokenizer,
            origin,
            rows,
            skipped_rows,
            total_steps,
            parallel,
            stop_seen: false,
        })
    }

    /// Whether this rank reports and writes: rank 0, or the only one.
    fn lead(&self) -> bool {
        self.parallel.as_ref().is_none_or(|p| p.rank() == 0)
    }

    fn run(mut self, events: &EventSink, control: &RunControl) -> Result<PretrainOutcome> {
        let args = self.args;
        if self.lead() {
            std::fs::create_dir_all(&self.ckpt_root).map_err(|e| Error::io(&self.ckpt_root, e))?;
            checkpoints::clean_partial(&self.ckpt_root)?;
        }
        events.emit(Event::Start(Start {
            model: self.origin.clone(),
            device: format!("{:?}", self.vs.device()),
            precision: self.precision.as_str().into(),
            precision_choice: None,
            epochs: args.epochs,
            total_steps: self.total_steps,
            batch_size: args.batch_size,
            parameters: self.opt_parameters(),
            output_dir: args.output_dir.display().to_string(),
            task: Task::Pretrain {
                corpus_rows: self.rows.len(),
                skipped_rows: self.skipped_rows,
                vocab_size: self.tokenizer.vocab_size(),
                max_seq_len: args.max_seq_len,
                mask_rate: self.policy.rate,
            },
        }));

        let started = Instant::now();
        let lengths: Vec<usize> = self.rows.iter().map(|r| r.input_ids.len()).collect();
        let mut losses: Vec<LossRecord> = Vec::new();
        let mut last: Option<(usize, PathBuf)> = None;
        let mut window = (Instant::now(), 0usize, 0usize); // (since, rows, tokens) for throughput
        let mut status = EndStatus::Completed;
        let mut step = 0;
        'epochs: for epoch in 0..args.epochs {
            let batches = bucketed_batches(&lengths, args.batch_size, args.seed, epoch as u64);
            for (i, batch) in batches.iter().enumerate() {
                if step >= self.total_steps {
                    break 'epochs;
                }
                let lr = self.schedule.lr(step);
                let (loss, norm, tokens) = self.step(batch, epoch, step, lr, control)?;
                step += 1;
                losses.push(LossRecord { step, loss, lr });
                window.1 += batch.len();
                window.2 += tokens;
                if step.is_multiple_of(args.log_every_steps) || step == self.total_steps {
                    let secs = window.0.elapsed().as_secs_f64().max(1e-9);
                    events.emit(Event::Step {
                        step,
                        epoch: epoch as f64 + (i + 1) as f64 / batches.len() as f64,
                        loss,
                        lr,
                        samples_per_s: window.1 as f64 / secs,
                        tokens_per_s: window.2 as f64 / secs,
                        grad_norm: norm,
                    });
                    window = (Instant::now(), 0, 0);
                }
                if args.save_every_steps > 0
                    && step.is_multiple_of(args.save_every_steps)
                    && step < self.total_steps
                {
                    last = Some((step, self.save(events, step)?));
                }
                let halted = control.halt_after_step.is_some_and(|h| step >= h);
                let asked = match self.parallel {
                    None => control.stop.requested(),
                    Some(_) => self.stop_seen,
                };
                if (asked || halted) && step < self.total_steps {
                    status = EndStatus::Stopped;
                    break 'epochs;
                }
            }
        }
        let last = match last {
            Some((s, path)) if s == step => path,
            _ => self.save(events, step)?,
        };
        let outcome = PretrainOutcome {
            status,
            global_step: step,
            losses,
            last_checkpoint: Some(last.clone()),
        };
        if self.lead() {
            self.write_summary(&outcome, started.elapsed().as_secs_f64())?;
        }
        events.emit(Event::End {
            status,
            step,
            best_checkpoint: Some(last.display().to_string()),
            best_metric: None,
        });
        Ok(outcome)
    }

    fn opt_parameters(&self) -> i64 {
        self.vs
            .trainable_variables()
            .iter()
            .map(Tensor::numel)
            .sum::<usize>() as i64
    }

    /// One optimizer step on the rows `batch` of `epoch`. Returns (loss, gradient norm before clipping,
    /// real tokens). The loss is the mean over the batch's masked tokens; of several ranks, each sums
    /// its share's and divides by the whole batch's count (every rank masks every row alike, from the
    /// row's own generator), so the summed gradients are those of one rank.
    fn step(
        &mut self,
        batch: &[usize],
        epoch: usize,
        step: usize,
        lr: f64,
        control: &RunControl,
    ) -> Result<(f64, f64, usize)> {
        let args = self.args;
        // Dropout masks are a function of (seed, step) only, as in training.
        tch::manual_seed(
            (args.seed as i64)
                .wrapping_mul(1_000_003)
                .wrapping_add(step as i64),
        );
        let device = self.vs.device();
        let masked: Vec<Masked> = batch
            .iter()
            .map(|&r| {
                let mut rng = row_rng(args.seed, epoch as u64, r as u64);
                mask_whole_words(&self.rows[r], &self.policy, &self.vocab, &mut rng)
            })
            .collect();
        let targets_in_batch: usize = masked
            .iter()
            .map(|m| m.labels.iter().filter(|&&l| l != IGNORE).count())
            .sum();
        let mine = match &self.parallel {
            Some(p) => p.shard(masked),
            None => masked,
        };
        self.opt.zero_grad();
        let (mut value, mut tokens) = (0.0, 0);
        if !mine.is_empty() {
            let (b, positions, targets) = mlm_batch(&mine, self.tokenizer.pad_id(), device);
            let logits = self.precision.autocast(device, || {
                self.model.forward_masked_t(b.inputs(), &positions, true)
            })?;
            let loss = logits.to_kind(Kind::Float).cross_entropy_loss::<Tensor>(
                &targets,
                None,
                tch::Reduction::Sum,
                IGNORE,
                0.0,
            ) / targets_in_batch.max(1) as f64;
            loss.backward();
            value = f64::try_from(&loss)?;
            tokens = b.tokens;
        }
        if let Some(p) = self.parallel.as_mut() {
            let asked = f64::from(u8::from(control.stop.requested()));
            let sums = p.sum_step(&mut self.opt, &[value, tokens as f64, asked])?;
            (value, tokens) = (sums[0], sums[1] as usize);
            self.stop_seen = sums[2] > 0.0;
        }
        if !value.is_finite() {
            return Err(Error::Config(format!(
                "the masked-LM loss became {value} at step {}; lower --lr or enable --max-grad-norm",
                step + 1
            )));
        }
        let norm = self.opt.clip_grad_norm(args.max_grad_norm);
        self.opt.step(lr);
        Ok((value, norm, tokens))
    }

    /// Writes `checkpoints/step-NNNNNNN` (without the pooler) and then deletes the older ones (rank
    /// 0's to do, of several).
    fn save(&self, events: &EventSink, step: usize) -> Result<PathBuf> {
        let dir = self.ckpt_root.join(checkpoints::dir_name(step));
        if !self.lead() {
            return Ok(dir);
        }
        let saved = save_only(&dir, &self.vs, &self.config, &self.tokenizer, &|name| {
            !name.contains(".pooler.")
        })?;
        events.emit(Event::Checkpoint {
            path: saved.dir.display().to_string(),
            step,
            epoch: None,
            metrics: None,
            sha256: saved.sha256,
            bytes: saved.bytes,
            best: true,
        });
        remove_older(&self.ckpt_root, &dir, events)?;
        Ok(saved.dir)
    }

    /// `OUT/summary.json`: the outcome and the settings, for people and for the platform after the fact.
    fn write_summary(&self, o: &PretrainOutcome, wall_seconds: f64) -> Result<()> {
        let tail = &o.losses[o.losses.len().saturating_sub(50)..];
        let summary = serde_json::json!({
            "task": "pretrain",
            "status": o.status.as_str(),
            "global_step": o.global_step,
            "total_steps": self.total_steps,
            "last_checkpoint": o.last_checkpoint,
            "wall_seconds": wall_seconds,
            "corpus_rows": self.rows.len(),
            "skipped_rows": self.skipped_rows,
            "vocab_size": self.tokenizer.vocab_size(),
            "max_seq_len": self.args.max_seq_len,
            "mask_rate": self.policy.rate,
            "seed": self.args.seed,
            "first_loss": o.losses.first().map(|l| l.loss),
            "mean_loss_last_50_steps": (!tail.is_empty()).then(|| tail.iter().map(|l| l.loss).sum::<f64>() / tail.len() as f64),
            "losses": o.losses,
        });
        let path = self.args.output_dir.join("summary.json");
        write_atomic(
            &path,
            serde_json::to_string_pretty(&summary)
                .unwrap_or_default()
                .as_bytes(),
        )
    }
}

/// Pads the masked rows into a batch and lists the target positions (flattened `row * seq + column`)
/// with their labels.
fn mlm_batch(
    masked: &[Masked],
    pad_id: i64,
    device: Device,
) -> (crate::data::Batch, Tensor, Tensor) {
    let features: Vec<Features> = masked
        .iter()
        .map(|m| Features::unlabelled(m.input_ids.clone(), vec![0; m.input_ids.len()]))
        .collect();
    let refs: Vec<&Features> = features.iter().collect();
    let b = collate(&refs, pad_id, device);
    let seq = masked
        .iter()
        .map(|m| m.input_ids.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let (mut positions, mut targets) = (Vec::new(), Vec::new());
    for (r, m) in masked.iter().enumerate() {
        for (s, &label) in m.labels.iter().enumerate() {
            if label != IGNORE {
                positions.push((r * seq + s) as i64);
                targets.push(label);
            }
        }
    }
    (
        b,
        Tensor::from_slice(&positions).to_device(device),
        Tensor::from_slice(&targets).to_device(device),
    )
}

/// Deletes every `step-*` checkpoint in `root` except `keep`, saying so on `events`' human side.
fn remove_older(root: &Path, keep: &Path, events: &EventSink) -> Result<()> {
    for entry in std::fs::read_dir(root)
        .map_err(|e| Error::io(root, e))?
        .flatten()
    {
        let path = entry.path();
        if path != keep && entry.file_name().to_string_lossy().starts_with("step-") && path.is_dir()
        {
            std::fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
            events.note(&format!(
                "deleted checkpoint {} (pretraining keeps only the latest)",
                path.display()
            ));
        }
    }
    Ok(())
}

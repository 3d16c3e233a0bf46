//! The training loop: prepare data and model, then optimizer steps over length-bucketed batches with
//! gradient accumulation, clipping and (on CUDA) fp16 autocast with loss scaling; evaluation and a
//! checkpoint every `eval_every_steps` and at each epoch's end; best-k retention, early stopping, a
//! graceful stop on request, and a final test evaluation with the best checkpoint.
//!
//! Reproducibility: libtorch's generator is re-seeded from (seed, step) before every step, so dropout
//! masks depend only on the step, and the batch order is a function of (seed, epoch). A resumed run
//! therefore replays exactly what the uninterrupted run would have done.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tch::Tensor;

use super::checkpoints;
use super::config::{JobConfig, JobFile};
use super::model_init::{self, Built};
use super::optimizer::{AdamW, AdamWConfig, LossScaler};
use super::parallel::DataParallel;
use super::prepare::{load_data, PreparedData};
use super::schedule::LinearSchedule;
use super::signal::StopFlag;
use super::state::{KeptCheckpoint, LossRecord, TrainerState, OPTIMIZER_FILE};
use crate::collectives::Rank;
use crate::data::batch::{bucketed_batches, collate, Features};
use crate::data::Example;
use crate::events::{Event, EventSink, Start, Task};
use crate::metrics::Metrics;
use crate::predict::{encode_examples, Inference};
use crate::{pick_device, precision, Error, Precision, Result, TaskModel};
use contracts::precision::{PrecisionChoice, Work};

/// How a run ended (`stopped`: on request, by a signal or `halt_after_step`; the last checkpoint resumes
/// it). A run that fails returns an error instead.
pub use crate::events::EndStatus;

/// Outside control of a run.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    /// Set by a signal handler (or anyone) to stop after the current step.
    pub stop: StopFlag,
    /// Stop as if requested once this many optimizer steps are done (without changing the schedule):
    /// for splitting a run in parts, and for tests.
    pub halt_after_step: Option<usize>,
    /// This process's place among several that train the run together (data parallelism); `None`:
    /// it trains alone.
    pub rank: Option<Rank>,
}

/// What a finished (or stopped) run produced.
#[derive(Debug, Clone)]
pub struct TrainOutcome {
    pub status: EndStatus,
    pub global_step: usize,
    /// Every step's loss since step 1 (a resumed run includes the earlier part's).
    pub losses: Vec<LossRecord>,
    pub best_checkpoint: Option<PathBuf>,
    pub best_metric: Option<f64>,
    pub last_checkpoint: Option<PathBuf>,
    pub dev_metrics: Option<Metrics>,
    pub test_metrics: Option<Metrics>,
}

/// Runs `job`, reporting on `events`. On failure an `error` and an `end` (`failed`) event are emitted
/// and the error returned.
///
/// Of several ranks, only rank 0 reports on `events` and writes checkpoints; the others' failures are
/// their caller's to tell (the error names the rank where a collective failed).
pub fn train(job: &JobConfig, events: &EventSink, control: &RunControl) -> Result<TrainOutcome> {
    let silent = EventSink::memory();
    let lead = control.rank.as_ref().is_none_or(|r| r.rank == 0);
    let events = if lead { events } else { &silent };
    match Trainer::prepare(job, control).and_then(|t| t.run(events, control)) {
        Ok(outcome) => Ok(outcome),
        Err(e) => {
            events.failed(&e.to_string());
            Err(e)
        }
    }
}

struct Trainer<'a> {
    job: &'a JobConfig,
    precision: Precision,
    /// Why `precision`: asked, measured for `auto`, or kept from the run resumed.
    precision_choice: PrecisionChoice,
    data: PreparedData,
    built: Built,
    train_rows: Vec<Features>,
    dev_rows: Vec<Features>,
    test_rows: Option<Vec<Features>>,
    opt: AdamW,
    schedule: LinearSchedule,
    state: TrainerState,
    steps_per_epoch: usize,
    ckpt_root: PathBuf,
    /// Set when this rank trains with others.
    parallel: Option<DataParallel>,
    /// A stop asked of any rank, as the last step's sum over the ranks said.
    stop_seen: bool,
}

/// Resolves `output.resume_from` ("latest" → newest checkpoint in the output directory).
fn resume_dir(job: &JobConfig) -> Result<Option<PathBuf>> {
    let Some(from) = &job.output.resume_from else {
        return Ok(None);
    };
    let root = job.output.dir.join("checkpoints");
    let dir = if from.file_name().is_some_and(|n| n == "latest") && !from.exists() {
        checkpoints::latest(&root).ok_or_else(|| {
            Error::Checkpoint(format!(
                "resume_from = latest: no checkpoint in {}",
                root.display()
            ))
        })?
    } else {
        from.clone()
    };
    if !dir.join(super::state::STATE_FILE).is_file() {
        return Err(Error::Checkpoint(format!(
            "{} is not a resumable checkpoint (no {})",
            dir.display(),
            super::state::STATE_FILE
        )));
    }
    Ok(Some(dir))
}

impl<'a> Trainer<'a> {
    fn prepare(job: &'a JobConfig, control: &RunControl) -> Result<Self> {
        job.validate()?;
        let t = &job.train;
        if t.threads > 0 {
            tch::set_num_threads(t.threads as i32);
        }
        let device = pick_device(&t.device)?;
        if !t.precision.trim().eq_ignore_ascii_case("auto") {
            // An asked precision that cannot run here fails before any data is read; `auto` is settled
            // once the model's shape is known.
            Precision::parse(&t.precision)?.check(device)?;
        }
        if device.is_cuda() {
            // Resuming replays the first run's steps only with deterministic kernels.
            crate::device::deterministic_cuda()?;
        }

        let resume = resume_dir(job)?;
        let resumed_state = resume.as_deref().map(TrainerState::read).transpose()?;
        let data = load_data(job, resumed_state.as_ref().map(|s| s.labels.clone()))?;
        let names = data.labels.names().to_vec();

        // Same initial weights for the same seed, whatever ran before in this process.
        tch::manual_seed(t.seed as i64);
        let built = match (&resume, &job.model.pretrained) {
            (Some(dir), _) => {
                model_init::from_dir(dir, &job.model, job.task, &names, device, true)?
            }
            (None, Some(dir)) => {
                model_init::from_dir(dir, &job.model, job.task, &names, device, false)?
            }
            (None, None) => {
                let corpus = data
                    .train
                    .iter()
                    .flat_map(|e| std::iter::once(e.text.as_str()).chain(e.text_pair.as_deref()));
                model_init::from_scratch(&job.model, job.task, corpus, &names, device)?
            }
        };
        // Of several ranks, all meet before training; a run of one rank is a run alone.
        let mut parallel = DataParallel::for_rank(control.rank.as_ref(), &device)?;
        if let Some(p) = parallel.as_mut() {
            p.same_start(&built.vs)?;
        }
        let max_len = job.model.max_seq_len;
        // A resumed `auto` run goes on in what its first part measured, so that it replays the same steps.
        let (precision, precision_choice) =
            match resumed_state.as_ref().and_then(|s| s.precision.as_deref()) {
                Some(ran) if t.precision.trim().eq_ignore_ascii_case("auto") => {
                    precision::resumed(ran, device)?
                }
                _ => precision::choose(&t.precision, device, || {
                    precision::measure(
                        &built.config,
                        t.batch_size,
                        max_len,
                        Work::Train,
                        device,
                        precision::BATCHES,
                    )
                })?,
            };
        // Ranks measure `auto` each on their own; they run in what rank 0 measured.
        let precision = match parallel.as_mut() {
            Some(p) => p.same_precision(precision)?,
            None => precision,
        };
        let features =
            |rows: &[Example]| encode_examples(job.task, &built.tokenizer, rows, &names, max_len);
        let train_rows = features(&data.train)?;
        let dev_rows = features(&data.dev)?;
        let test_rows = data.test.as_deref().map(features).transpose()?;

        let micro_per_epoch = train_rows.len().div_ceil(t.batch_size);
        let steps_per_epoch = micro_per_epoch.div_ceil(t.grad_accum_steps);
        let mut total_steps = steps_per_epoch * t.epochs;
        if let Some(m) = t.max_steps {
            total_steps = total_steps.min(m);
        }
        let schedule = LinearSchedule::new(t.lr, t.warmup_ratio, total_steps);
        let mut opt = AdamW::new(
            &built.vs,
            AdamWConfig {
                beta1: t.adam_beta1,
                beta2: t.adam_beta2,
                eps: t.adam_eps,
                weight_decay: t.weight_decay,
            },
        );
        let state = match (resumed_state, &resume) {
            (Some(s), Some(dir)) => {
                if s.total_steps != total_steps || s.seed != t.seed {
                    return Err(Error::Checkpoint(format!(
                        "{}: saved with seed {} and {} total steps, but this job has seed {} and {} total steps; \
                         resuming would not continue the same run",
                        dir.display(),
                        s.seed,
                        s.total_steps,
                        t.seed,
                        total_steps
                    )));
                }
                opt.load(&dir.join(OPTIMIZER_FILE), s.global_step as i64)?;
                s
            }
            _ => {
                let mut s = TrainerState::new(
                    t.seed,
                    total_steps,
                    max_len,
                    names,
                    job.metric_for_best().to_string(),
                );
                if precision.needs_loss_scaling() {
                    s.loss_scaler = Some(LossScaler::default());
                }
                s.precision = Some(precision.as_str().into());
                s
            }
        };
        if parallel.is_some() {
            opt.materialize_grads();
        }
        let ckpt_root = job.output.dir.join("checkpoints");
        Ok(Trainer {
            job,
            precision,
            precision_choice,
            data,
            built,
            train_rows,
            dev_rows,
            test_rows,
            opt,
            schedule,
            state,
            steps_per_epoch,
            ckpt_root,
            parallel,
            stop_seen: false,
        })
    }

    fn inference(&self) -> Inference<'_> {
        inference(&self.built, self.job, self.precision)
    }

    /// Whether this rank reports and writes: rank 0, or the only one.
    fn lead(&self) -> bool {
        self.parallel.as_ref().is_none_or(|p| p.rank() == 0)
    }

    /// Whether a stop was asked: of this process alone, or of any rank by the last step.
    fn stop_asked(&self, control: &RunControl) -> bool {
        match self.parallel {
            None => control.stop.requested(),
            Some(_) => self.stop_seen,
        }
    }

    fn epoch_float(&self) -> f64 {
        self.state.epoch as f64
            + self.state.steps_in_epoch as f64 / self.steps_per_epoch.max(1) as f64
    }

    fn run(mut self, events: &EventSink, control: &RunControl) -> Result<TrainOutcome> {
        let job = self.job;
        let t = &job.train;
        if self.lead() {
            std::fs::create_dir_all(&self.ckpt_root).map_err(|e| Error::io(&self.ckpt_root, e))?;
            checkpoints::clean_partial(&self.ckpt_root)?;
        }
        let resumed_from = self.state.global_step;
        let c = &self.built.config;
        events.note(&format!(
            "model: {} layers, hidden size {}, {} attention heads, feed-forward {}, vocabulary {}, \
             {} positions; sequences cut at {} tokens",
            c.num_hidden_layers,
            c.hidden_size,
            c.num_attention_heads,
            c.intermediate_size,
            c.vocab_size,
            c.max_position_embeddings,
            job.model.max_seq_len
        ));
        events.note(&precision::describe(&self.precision_choice));
        events.emit(Event::Start(Start {
            model: self.built.origin.clone(),
            device: format!("{:?}", self.built.vs.device()),
            precision: self.precision.as_str().into(),
            precision_choice: Some(self.precision_choice.clone()),
            epochs: t.epochs,
            total_steps: self.state.total_steps,
            batch_size: t.batch_size,
            output_dir: self.job.output.dir.display().to_string(),
            task: Task::Train {
                labels: self.data.labels.names().to_vec(),
                train_rows: self.train_rows.len(),
                dev_rows: self.dev_rows.len(),
                grad_accum_steps: t.grad_accum_steps,
                resumed_from_step: resumed_from,
            },
            parameters: self
                .built
                .vs
                .trainable_variables()
                .iter()
                .map(Tensor::numel)
                .sum::<usize>() as i64,
        }));

        let lengths: Vec<usize> = self.train_rows.iter().map(|r| r.input_ids.len()).collect();
        let mut last_saved: Option<PathBuf> = None;
        let mut last_metrics: Option<Metrics> = None;
        let mut window = (Instant::now(), 0usize, 0usize); // (since, rows, tokens) for throughput
        let mut status = EndStatus::Completed;

        'epochs: while self.state.epoch < t.epochs {
            let batches = bucketed_batches(&lengths, t.batch_size, t.seed, self.state.epoch as u64);
            let steps: Vec<&[Vec<usize>]> = batches.chunks(t.grad_accum_steps).collect();
            while self.state.steps_in_epoch < steps.len() {
                if self.state.global_step >= self.state.total_steps {
                    break 'epochs;
                }
                let group = steps[self.state.steps_in_epoch];
                let (loss, norm, rows, tokens) = self.step(group, control)?;
                let lr = self.schedule.lr(self.state.global_step - 1);
                self.state.losses.push(LossRecord {
                    step: self.state.global_step,
                    loss,
                    lr,
                });
                window.1 += rows;
                window.2 += tokens;
                let step = self.state.global_step;
                if step.is_multiple_of(t.log_every_steps) || step == self.state.total_steps {
                    let secs = window.0.elapsed().as_secs_f64().max(1e-9);
                    events.emit(Event::Step {
                        step,
                        epoch: self.epoch_float(),
                        loss,
                        lr,
                        samples_per_s: window.1 as f64 / secs,
                        tokens_per_s: window.2 as f64 / secs,
                        grad_norm: norm,
                    });
                    window = (Instant::now(), 0, 0);
                }
                let epoch_done = self.state.steps_in_epoch == steps.len();
                let run_done = step >= self.state.total_steps;
                let scheduled_eval =
                    t.eval_every_steps > 0 && step.is_multiple_of(t.eval_every_steps);
                if (scheduled_eval || run_done) && !epoch_done {
                    let (path, m, stop_early) = self.evaluate_and_save(events)?;
                    last_saved = Some(path);
                    last_metrics = Some(m);
                    if stop_early {
                        status = EndStatus::EarlyStopped;
                        break 'epochs;
                    }
                }
                let halted = control.halt_after_step.is_some_and(|h| step >= h);
                if (self.stop_asked(control) || halted) && !epoch_done && !run_done {
                    if last_saved.as_deref()
                        != Some(&*self.ckpt_root.join(checkpoints::dir_name(step)))
                    {
                        last_saved = Some(self.save(events, None)?);
                    }
                    status = EndStatus::Stopped;
                    break 'epochs;
                }
            }
            // End of epoch: the next step is the first of the next epoch.
            self.state.epoch += 1;
            self.state.steps_in_epoch = 0;
            let (path, m, stop_early) = self.evaluate_and_save(events)?;
            last_saved = Some(path);
            last_metrics = Some(m);
            if stop_early {
                status = EndStatus::EarlyStopped;
                break;
            }
            let halted = control
                .halt_after_step
                .is_some_and(|h| self.state.global_step >= h);
            if (self.stop_asked(control) || halted) && self.state.epoch < t.epochs {
                status = EndStatus::Stopped;
                break;
            }
            if self.state.global_step >= self.state.total_steps {
                break;
            }
        }

        let best = self
            .state
            .best_checkpoint
            .as_ref()
            .map(|n| self.ckpt_root.join(n));
        let test_metrics = match (&self.test_rows, &best, status) {
            (Some(rows), Some(dir), EndStatus::Completed | EndStatus::EarlyStopped)
                if self.lead() =>
            {
                let names = self.data.labels.names().to_vec();
                let loaded = model_init::from_dir(
                    dir,
                    &self.job.model,
                    self.job.task,
                    &names,
                    self.built.vs.device(),
                    true,
                )?;
                let inf = Inference {
                    model: &loaded.model,
                    ..self.inference()
                };
                let m = inf.evaluate(rows, &names, self.job.task)?;
                events.emit(Event::Eval {
                    step: self.state.global_step,
                    epoch: self.epoch_float(),
                    split: "test".into(),
                    metrics: m.clone(),
                });
                Some(m)
            }
            _ => None,
        };
        let outcome = TrainOutcome {
            status,
            global_step: self.state.global_step,
            losses: self.state.losses.clone(),
            best_checkpoint: best.clone(),
            best_metric: self.state.best_metric,
            last_checkpoint: last_saved,
            dev_metrics: last_metrics,
            test_metrics,
        };
        if self.lead() {
            self.write_summary(&outcome)?;
        }
        events.emit(Event::End {
            status,
            step: self.state.global_step,
            best_checkpoint: best.map(|p| p.display().to_string()),
            best_metric: self.state.best_metric,
        });
        Ok(outcome)
    }

    /// One optimizer step over the micro-batches in `group`. Returns (mean loss, gradient norm before
    /// clipping, rows, tokens).
    fn step(
        &mut self,
        group: &[Vec<usize>],
        control: &RunControl,
    ) -> Result<(f64, f64, usize, usize)> {
        let job = self.job;
        let t = &job.train;
        // Dropout masks are a function of (seed, step) only; see the module docs.
        tch::manual_seed(
            (t.seed as i64)
                .wrapping_mul(1_000_003)
                .wrapping_add(self.state.global_step as i64),
        );
        let device = self.built.vs.device();
        let pad = self.built.tokenizer.pad_id();
        let rows_in_step: usize = group.iter().map(Vec::len).sum();
        // Every gold answer of the step (all ranks' shares) weighs the same: a row's label, or a token's.
        let scored_in_step: usize = group
            .iter()
            .flatten()
            .map(|&i| self.train_rows[i].scored())
            .sum::<usize>()
            .max(1);
        let scale = self.state.loss_scaler.as_ref().map_or(1.0, |s| s.scale);
        self.opt.zero_grad();
        let (mut loss_sum, mut tokens) = (0.0, 0);
        for micro in group {
            // Of several ranks, this one computes its share of each batch (see `parallel`).
            let micro = match &self.parallel {
                Some(p) => p.shard(micro.iter().copied()),
                None => micro.clone(),
            };
            if micro.is_empty() {
                continue;
            }
            let refs: Vec<&Features> = micro.iter().map(|&i| &self.train_rows[i]).collect();
            let b = collate(&refs, pad, device);
            let labels = b.labels.as_ref().ok_or_else(|| Error::Data {
                line: None,
                field: None,
                message: "a training row has no label".into(),
            })?;
            let logits = self
                .precision
                .autocast(device, || self.built.model.forward_t(b.inputs(), true))?;
            // The summed loss over the step's answers makes the step's gradient the mean over all of
            // them, whatever the accumulation, the size of the last batch and the shares of the ranks.
            let loss = TaskModel::loss_sum(&logits, labels) / scored_in_step as f64;
            (&loss * scale).backward();
            loss_sum += f64::try_from(&loss)?;
            tokens += b.tokens;
        }
        if let Some(p) = self.parallel.as_mut() {
            let asked = f64::from(u8::from(control.stop.requested()));
            let sums = p.sum_step(&mut self.opt, &[loss_sum, tokens as f64, asked])?;
            (loss_sum, tokens) = (sums[0], sums[1] as usize);
            self.stop_seen = sums[2] > 0.0;
        }
        let mut take_step = true;
        if let Some(scaler) = self.state.loss_scaler.as_mut() {
            self.opt.scale_grads(1.0 / scale);
            take_step = scaler.update(self.opt.grad_norm().is_finite());
        }
        let norm = self.opt.clip_grad_norm(t.max_grad_norm);
        let lr = self.schedule.lr(self.state.global_step);
        if take_step {
            self.opt.step(lr);
        } else {
            tracing::warn!(
                step = self.state.global_step + 1,
                "fp16 gradients overflowed; step skipped"
            );
        }
        self.state.global_step += 1;
        self.state.steps_in_epoch += 1;
        // In fp16 a forward pass that overflows is skipped with its step, as PyTorch's GradScaler does;
        // only when that goes on whatever the scale is the run given up.
        if let Some(scaler) = self.state.loss_scaler.as_ref().filter(|s| s.gave_up()) {
            return Err(Error::Config(format!(
                "fp16 overflowed on {} steps in a row, down to a loss scale of {} (at step {}): this \
                 model's activations do not fit in float16; use precision bf16 or fp32",
                scaler.skipped_in_a_row, scaler.scale, self.state.global_step
            )));
        }
        if !loss_sum.is_finite() && self.state.loss_scaler.is_none() {
            return Err(Error::Config(format!(
                "the training loss became {loss_sum} at step {}; lower train.lr or enable gradient clipping",
                self.state.global_step
            )));
        }
        Ok((loss_sum, norm, rows_in_step, tokens))
    }

    /// Dev evaluation, then a checkpoint ranked by its metric. Returns the checkpoint, the metrics and
    /// whether early stopping triggers.
    fn evaluate_and_save(&mut self, events: &EventSink) -> Result<(PathBuf, Metrics, bool)> {
        let names = self.data.labels.names().to_vec();
        let metrics = match self.parallel.as_mut() {
            Some(p) => p.evaluate(
                &inference(&self.built, self.job, self.precision),
                &self.dev_rows,
                &names,
                self.job.task,
            )?,
            None => self
                .inference()
                .evaluate(&self.dev_rows, &names, self.job.task)?,
        };
        events.emit(Event::Eval {
            step: self.state.global_step,
            epoch: self.epoch_float(),
            split: "dev".into(),
            metrics: metrics.clone(),
        });
        let value = metrics.get(&self.state.metric_for_best);
        let patience = self.job.train.early_stopping_patience;
        match value {
            Some(v) if self.state.improves(v) => {
                self.state.best_metric = Some(v);
                self.state.best_checkpoint = Some(checkpoints::dir_name(self.state.global_step));
                self.state.evals_without_improvement = 0;
            }
            _ => self.state.evals_without_improvement += 1,
        }
        let path = self.save(events, Some(metrics.clone()))?;
        let stop = patience > 0 && self.state.evals_without_improvement >= patience;
        Ok((path, metrics, stop))
    }

    /// Writes the checkpoint for the current step and applies retention (rank 0's to do, of several).
    fn save(&mut self, events: &EventSink, metrics: Option<Metrics>) -> Result<PathBuf> {
        let name = checkpoints::dir_name(self.state.global_step);
        if !self.lead() {
            return Ok(self.ckpt_root.join(name));
        }
        let metric = metrics
            .as_ref()
            .and_then(|m| m.get(&self.state.metric_for_best));
        self.state.kept.retain(|k| k.name != name);
        self.state.kept.push(KeptCheckpoint {
            name: name.clone(),
            step: self.state.global_step,
            metric,
        });
        let (keep, drop) = checkpoints::retain(
            &self.state.kept,
            self.job.train.keep_best,
            Metrics::higher_is_better(&self.state.metric_for_best),
        );
        self.state.kept = keep;
        let saved = checkpoints::write(
            &self.ckpt_root,
            &self.built.vs,
            &self.built.config,
            &self.built.tokenizer,
            &self.opt,
            &self.state,
        )?;
        // Delete only after the new checkpoint is safely in place.
        let mut deleted = Vec::new();
        for old in drop {
            let dir = self.ckpt_root.join(&old);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                deleted.push(dir);
            }
        }
        let best = self.state.best_checkpoint.as_deref() == Some(name.as_str());
        events.emit(Event::Checkpoint {
            path: saved.dir.display().to_string(),
            step: self.state.global_step,
            epoch: Some(self.epoch_float()),
            metrics,
            sha256: saved.sha256,
            bytes: saved.bytes,
            best,
        });
        for dir in deleted {
            events.note(&format!(
                "deleted checkpoint {} (retention keeps the best {} by {} and the latest)",
                dir.display(),
                self.job.train.keep_best,
                self.state.metric_for_best
            ));
        }
        Ok(saved.dir)
    }

    /// `OUT/summary.json`: the outcome in one file, for people and for the platform after the fact.
    fn write_summary(&self, o: &TrainOutcome) -> Result<()> {
        let summary = serde_json::json!({
            "status": o.status.as_str(),
            "global_step": o.global_step,
            "best_checkpoint": o.best_checkpoint,
            "best_metric": o.best_metric,
            "metric_for_best": self.state.metric_for_best,
            "last_checkpoint": o.last_checkpoint,
            "dev_metrics": o.dev_metrics,
            "test_metrics": o.test_metrics,
            "labels": self.data.labels.names(),
            "data_reports": self.data.reports,
        });
        let path = self.job.output.dir.join("summary.json");
        write_atomic(
            &path,
            serde_json::to_string_pretty(&summary)
                .unwrap_or_default()
                .as_bytes(),
        )
    }
}

fn inference<'m>(built: &'m Built, job: &JobConfig, precision: Precision) -> Inference<'m> {
    Inference {
        model: &built.model,
        device: built.vs.device(),
        precision,
        pad_id: built.tokenizer.pad_id(),
        batch_size: job.eval_batch_size(),
    }
}

/// Writes `bytes` to a temporary sibling and renames it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

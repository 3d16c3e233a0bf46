//! The machine-readable event stream a training run writes to stdout, one JSON object per line, which the
//! platform parses to drive its job page (schema in `trainer/EVENTS.md`). Human-facing output goes to
//! stderr instead ([`crate::progress`]: a bar on a terminal, else a line per event), never into the
//! stream.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::metrics::Metrics;
use crate::progress::Progress;

/// One event. Serialised with an `event` field holding the variant name in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run is configured and about to take its first step.
    Start {
        /// `"train"`; pretraining's `start` (below) says `"pretrain"`.
        task: String,
        model: String,
        device: String,
        precision: String,
        labels: Vec<String>,
        train_rows: usize,
        dev_rows: usize,
        epochs: usize,
        /// Optimizer steps the whole run will take (after gradient accumulation).
        total_steps: usize,
        batch_size: usize,
        grad_accum_steps: usize,
        parameters: i64,
        /// Step the run resumes from (0 for a fresh run).
        resumed_from_step: usize,
        output_dir: String,
    },
    /// `paddock pretrain` is configured and about to take its first step. Serialised as `start` too, with
    /// `task = "pretrain"`, so that a consumer follows either run with one parser.
    #[serde(rename = "start")]
    PretrainStart {
        /// Always `"pretrain"`.
        task: String,
        model: String,
        device: String,
        precision: String,
        /// Corpus rows used (texts with at least one maskable word).
        corpus_rows: usize,
        /// Corpus rows left out because nothing in them could be masked (only unknown characters).
        skipped_rows: usize,
        vocab_size: usize,
        max_seq_len: usize,
        /// Fraction of each row's whole words that are masked.
        mask_rate: f64,
        epochs: usize,
        total_steps: usize,
        batch_size: usize,
        parameters: i64,
        output_dir: String,
    },
    /// One optimizer step (emitted every `log_every_steps`).
    Step {
        step: usize,
        /// Fractional epoch: 1.5 is halfway through the second epoch.
        epoch: f64,
        /// Mean training loss of the step's micro-batches.
        loss: f64,
        lr: f64,
        samples_per_s: f64,
        tokens_per_s: f64,
        grad_norm: f64,
    },
    /// An evaluation on the dev set (or, with `split = "test"`, on the test set at the end).
    Eval {
        step: usize,
        epoch: f64,
        split: String,
        metrics: Metrics,
    },
    /// A checkpoint has been written completely.
    Checkpoint {
        path: String,
        step: usize,
        metrics: Option<Metrics>,
        /// sha256 of `model.safetensors`.
        sha256: String,
        /// Total size of the checkpoint directory.
        bytes: u64,
        /// Whether this is the best checkpoint so far by `metric_for_best`.
        best: bool,
    },
    /// The run is over; `status` is `completed`, `early_stopped`, `stopped` (SIGTERM) or `failed`.
    End {
        status: String,
        step: usize,
        best_checkpoint: Option<String>,
        best_metric: Option<f64>,
    },
    /// A fatal error; an `end` event with status `failed` follows.
    Error { message: String },
}

#[derive(Serialize)]
struct Envelope<'a> {
    /// RFC 3339 UTC with milliseconds.
    ts: String,
    #[serde(flatten)]
    event: &'a Event,
}

/// Renders one event as its JSON line (without the newline).
pub fn to_json_line(event: &Event) -> String {
    let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // Serialising plain data with string keys cannot fail.
    serde_json::to_string(&Envelope { ts, event }).unwrap_or_default()
}

/// Where events go. Cloneable handles share one writer so that lines never interleave.
#[derive(Clone)]
pub struct EventSink {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    /// The human-readable account on stderr, for runs started from the command line.
    progress: Option<Arc<Progress>>,
    /// Every event emitted, kept for callers (tests, the CLI's exit status) that want them back.
    history: Arc<Mutex<Vec<Event>>>,
}

impl EventSink {
    /// Events on stdout; their human-readable account on stderr.
    pub fn stdout() -> Self {
        EventSink::new(Box::new(std::io::stdout())).with_progress(Progress::stderr())
    }

    /// The same sink, also telling its events to `progress`.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Events written to `out` (no human-readable account).
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        EventSink {
            out: Arc::new(Mutex::new(out)),
            progress: None,
            history: Arc::default(),
        }
    }

    /// Events only kept in memory.
    pub fn memory() -> Self {
        EventSink::new(Box::new(std::io::sink()))
    }

    /// Writes one event line and flushes, so a consumer sees it at once. A closed stdout (the platform
    /// went away) is not a reason to stop training, so write errors are only logged.
    pub fn emit(&self, event: Event) {
        if let Some(progress) = &self.progress {
            progress.event(&event);
        }
        let line = to_json_line(&event);
        if let Ok(mut out) = self.out.lock() {
            if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                tracing::warn!("could not write event: {e}");
            }
        }
        if let Ok(mut h) = self.history.lock() {
            h.push(event);
        }
    }

    /// A line for people only (stderr), about something no event carries.
    pub fn note(&self, line: &str) {
        if let Some(progress) = &self.progress {
            progress.note(line);
        }
    }

    /// A copy of every event emitted so far.
    pub fn history(&self) -> Vec<Event> {
        self.history.lock().map(|h| h.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_json_with_event_and_ts() {
        let buf = Shared::default();
        let sink = EventSink::new(Box::new(buf.clone()));
        sink.emit(Event::Step {
            step: 3,
            epoch: 0.5,
            loss: 0.25,
            lr: 1e-4,
            samples_per_s: 10.0,
            tokens_per_s: 100.0,
            grad_norm: 1.0,
        });
        sink.emit(Event::End {
            status: "completed".into(),
            step: 3,
            best_checkpoint: None,
            best_metric: None,
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "step");
        assert_eq!(lines[0]["step"], 3);
        assert_eq!(lines[0]["loss"], 0.25);
        assert_eq!(lines[1]["event"], "end");
        assert_eq!(lines[1]["status"], "completed");
        let ts = lines[0]["ts"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(sink.history().len(), 2);
    }
}

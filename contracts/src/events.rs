//! The event stream a training run writes to stdout, one JSON object per line (schema in
//! `trainer/EVENTS.md`), which the platform reads to drive the job's page. Each line is a [`Line`]: the
//! time and an [`Event`]. Readers ignore fields they do not know, and [`Event::Unknown`] stands for an
//! event type added after them, so the stream can grow without breaking older readers.

use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

/// One line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// RFC 3339 UTC with milliseconds.
    pub ts: String,
    #[serde(flatten)]
    pub event: Event,
}

impl Line {
    /// The line as written (without the newline).
    pub fn to_json(&self) -> String {
        // Plain data with string keys cannot fail to serialise.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line; an error says which field is missing or of the wrong type.
    pub fn parse(text: &str) -> Result<Line, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// One event, with an `event` field holding the variant name in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run is configured and about to take its first step.
    Start(Start),
    /// One optimizer step (emitted every `log_every_steps`): what the loss chart plots.
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
        /// The epoch it was written at (fractional mid-epoch). A trainer before this field did not
        /// send it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epoch: Option<f64>,
        metrics: Option<Metrics>,
        /// sha256 of `model.safetensors`.
        sha256: String,
        /// Total size of the checkpoint directory.
        bytes: u64,
        /// Whether this is the best checkpoint so far by `metric_for_best`.
        best: bool,
    },
    /// The run is over.
    End {
        status: EndStatus,
        step: usize,
        best_checkpoint: Option<String>,
        best_metric: Option<f64>,
    },
    /// A fatal error; an `end` event with status `failed` follows.
    Error { message: String },
    /// An event type this reader does not know (written by a newer trainer); never written.
    #[serde(other)]
    Unknown,
}

/// What every `start` says, and what its task adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// Where the weights come from: a directory, or `preset:NAME (from scratch)`.
    pub model: String,
    /// `Cpu`, `Cuda(0)`, …
    pub device: String,
    /// `fp32`, `fp16`, `bf16`: what runs.
    pub precision: String,
    /// Why: asked, or measured at start for `auto` (trainers before issue 34 did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_choice: Option<crate::precision::PrecisionChoice>,
    pub epochs: usize,
    /// Optimizer steps the whole run will take (after gradient accumulation).
    pub total_steps: usize,
    pub batch_size: usize,
    /// Trainable parameters.
    pub parameters: i64,
    pub output_dir: String,
    #[serde(flatten)]
    pub task: Task,
}

/// The run's task (`task` in `start`) and what only it reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum Task {
    /// `paddock train`: sequence classification.
    Train {
        labels: Vec<String>,
        train_rows: usize,
        dev_rows: usize,
        grad_accum_steps: usize,
        /// Step the run resumes from (0 for a fresh run).
        resumed_from_step: usize,
    },
    /// `paddock pretrain`: whole-word masked language modelling.
    Pretrain {
        /// Corpus rows used (texts with at least one maskable word).
        corpus_rows: usize,
        /// Corpus rows left out because nothing in them could be masked (only unknown characters).
        skipped_rows: usize,
        vocab_size: usize,
        max_seq_len: usize,
        /// Fraction of each row's whole words that are masked.
        mask_rate: f64,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    Completed,
    /// The dev metric stopped improving (`early_stopping_patience`).
    EarlyStopped,
    /// Stopped on request (a signal, or `halt_after_step`); the last checkpoint resumes it.
    Stopped,
    Failed,
}

impl EndStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            EndStatus::Completed => "completed",
            EndStatus::EarlyStopped => "early_stopped",
            EndStatus::Stopped => "stopped",
            EndStatus::Failed => "failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(event: Event) -> serde_json::Value {
        let line = Line {
            ts: "2026-12-04T03:00:00.000Z".into(),
            event,
        };
        let text = line.to_json();
        assert_eq!(Line::parse(&text).unwrap(), line, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn a_start_is_flat_and_names_its_task() {
        let start = Start {
            model: "preset:nano (from scratch)".into(),
            device: "Cpu".into(),
            precision: "fp32".into(),
            precision_choice: None,
            epochs: 1,
            total_steps: 10,
            batch_size: 8,
            parameters: 1234,
            output_dir: "output".into(),
            task: Task::Train {
                labels: vec!["neg".into(), "pos".into()],
                train_rows: 80,
                dev_rows: 20,
                grad_accum_steps: 1,
                resumed_from_step: 0,
            },
        };
        let json = round_trip(Event::Start(start.clone()));
        assert_eq!(
            (json["event"].as_str(), json["task"].as_str()),
            (Some("start"), Some("train"))
        );
        assert_eq!(json["labels"][1], "pos");
        assert_eq!(json["total_steps"], 10);
        let json = round_trip(Event::Start(Start {
            task: Task::Pretrain {
                corpus_rows: 5,
                skipped_rows: 1,
                vocab_size: 100,
                max_seq_len: 32,
                mask_rate: 0.15,
            },
            ..start
        }));
        assert_eq!(json["task"], "pretrain");
        assert_eq!(json["mask_rate"], 0.15);
    }

    #[test]
    fn every_other_kind_round_trips() {
        let step = round_trip(Event::Step {
            step: 3,
            epoch: 0.5,
            loss: 0.25,
            lr: 1e-4,
            samples_per_s: 10.0,
            tokens_per_s: 100.0,
            grad_norm: 1.0,
        });
        assert_eq!(
            (step["event"].as_str(), step["loss"].as_f64()),
            (Some("step"), Some(0.25))
        );
        let metrics = Metrics::compute(&["a".into(), "b".into()], &[0, 1], &[0, 0], Some(0.7));
        round_trip(Event::Eval {
            step: 3,
            epoch: 0.5,
            split: "dev".into(),
            metrics: metrics.clone(),
        });
        round_trip(Event::Checkpoint {
            path: "output/checkpoints/step-0000003".into(),
            step: 3,
            epoch: Some(1.5),
            metrics: Some(metrics),
            sha256: "ab".repeat(32),
            bytes: 42,
            best: true,
        });
        let end = round_trip(Event::End {
            status: EndStatus::EarlyStopped,
            step: 3,
            best_checkpoint: None,
            best_metric: Some(0.5),
        });
        assert_eq!(end["status"], "early_stopped");
        round_trip(Event::Error {
            message: "out of memory".into(),
        });
    }

    #[test]
    fn newer_events_and_fields_are_read_and_a_broken_line_names_its_field() {
        let line = Line::parse(r#"{"ts":"t","event":"profile","flops":1}"#).unwrap();
        assert_eq!(line.event, Event::Unknown);
        let line = Line::parse(r#"{"ts":"t","event":"error","message":"m","hint":"new"}"#).unwrap();
        assert_eq!(
            line.event,
            Event::Error {
                message: "m".into()
            }
        );
        let err = Line::parse(r#"{"ts":"t","event":"step","step":"three"}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
        assert!(Line::parse(r#"{"event":"end"}"#).is_err());
    }
}

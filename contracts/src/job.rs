//! The trainer's job file, `job.toml`: data files and columns, the model to start from, the
//! optimisation hyper-parameters and where to write. Every field has a default except the training file
//! and the output directory. The web side builds one from a job's spec and writes it with
//! [`JobConfig::to_toml`]; the trainer reads it with [`JobConfig::from_toml_str`] and checks its ranges
//! (`trainer::train::config`), since which presets and precisions exist is the trainer's to say.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::{Columns, DataFormat};
use crate::task::Task;

/// A whole job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    /// What the model learns to do; `classification` when the file does not say.
    #[serde(default)]
    pub task: Task,
    pub data: DataSection,
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub train: TrainSection,
    pub output: OutputSection,
}

/// `[data]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSection {
    pub train: PathBuf,
    /// When absent, `dev_ratio` of the training rows (stratified, by `train.seed`) become the dev set.
    #[serde(default)]
    pub dev: Option<PathBuf>,
    /// Evaluated once at the end with the best checkpoint.
    #[serde(default)]
    pub test: Option<PathBuf>,
    #[serde(default = "default_dev_ratio")]
    pub dev_ratio: f64,
    /// Label names in id order; inferred (sorted) from the training file when absent.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub format: DataFormat,
    #[serde(default)]
    pub columns: Columns,
    /// Convert GBK/GB18030 files to UTF-8 on reading instead of refusing them.
    #[serde(default)]
    pub convert_encoding: bool,
}

/// The most ranks (processes) one run may have on one machine: as many GPUs as a machine has, with room.
pub const MAX_RANKS: u32 = 64;
/// The most machines (cluster nodes) one run may span.
pub const MAX_NODES: u32 = 32;

/// The model shapes a job may train from scratch: the published ERNIE 3.0 ones, and `tiny` (one
/// layer, 32 wide) for smoke tests and demos that must finish in seconds on a CPU. The trainer holds
/// each one's numbers; the form and the spec check offer and accept these names.
pub const PRESETS: [&str; 6] = ["base", "medium", "mini", "micro", "nano", "tiny"];

/// `[model]`: where the weights come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// A Hugging Face model directory (config.json, vocab.txt, weights). Takes precedence over `preset`.
    pub pretrained: Option<PathBuf>,
    /// A shape trained from scratch, one of [`PRESETS`].
    pub preset: String,
    /// From scratch: the vocabulary built from the training corpus has at most this many tokens.
    pub vocab_size: usize,
    /// From scratch: override the preset's shape (all optional).
    pub num_hidden_layers: Option<usize>,
    pub hidden_size: Option<usize>,
    pub num_attention_heads: Option<usize>,
    pub intermediate_size: Option<usize>,
    /// Override the model's dropout probabilities.
    pub hidden_dropout: Option<f64>,
    pub attention_dropout: Option<f64>,
    /// Tokens per row after truncation, [CLS]/[SEP] included.
    pub max_seq_len: usize,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            pretrained: None,
            preset: "nano".into(),
            vocab_size: 8000,
            num_hidden_layers: None,
            hidden_size: None,
            num_attention_heads: None,
            intermediate_size: None,
            hidden_dropout: None,
            attention_dropout: None,
            max_seq_len: 128,
        }
    }
}

/// `[train]`: optimisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainSection {
    pub epochs: usize,
    /// Rows per micro-batch; an optimizer step sees `batch_size * grad_accum_steps` rows.
    pub batch_size: usize,
    pub grad_accum_steps: usize,
    /// Stop after this many optimizer steps (the schedule is planned for it) even if epochs remain.
    pub max_steps: Option<usize>,
    /// Peak learning rate.
    pub lr: f64,
    /// Decoupled weight decay; never applied to biases and LayerNorm weights.
    pub weight_decay: f64,
    /// Fraction of the steps spent warming up linearly from 0 to `lr`; then linear decay to 0.
    pub warmup_ratio: f64,
    pub adam_beta1: f64,
    pub adam_beta2: f64,
    pub adam_eps: f64,
    /// Clip the global gradient L2 norm to this; 0 disables clipping.
    pub max_grad_norm: f64,
    pub seed: u64,
    /// CPU threads for libtorch; 0 keeps libtorch's default (all cores).
    pub threads: usize,
    /// auto, cpu, cuda, cuda:N
    pub device: String,
    /// fp32, fp16 (CUDA autocast + loss scaling), bf16
    pub precision: String,
    /// Evaluate (and checkpoint) every N optimizer steps; 0: only at the end of each epoch.
    pub eval_every_steps: usize,
    /// Emit a `step` event every N optimizer steps.
    pub log_every_steps: usize,
    /// The metric checkpoints are ranked by, one of the task's ([`Task::metric_names`]); `None`: the
    /// task's default.
    pub metric_for_best: Option<String>,
    /// Stop after this many evaluations without improvement; 0 disables early stopping.
    pub early_stopping_patience: usize,
    /// Checkpoints kept by metric, besides the latest one.
    pub keep_best: usize,
    /// Rows per evaluation batch (0: twice `batch_size`).
    pub eval_batch_size: usize,
}

impl Default for TrainSection {
    fn default() -> Self {
        TrainSection {
            epochs: 3,
            batch_size: 32,
            grad_accum_steps: 1,
            max_steps: None,
            lr: 5e-5,
            weight_decay: 0.01,
            warmup_ratio: 0.1,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_eps: 1e-8,
            max_grad_norm: 1.0,
            seed: 42,
            threads: 0,
            device: "auto".into(),
            precision: "fp32".into(),
            eval_every_steps: 0,
            log_every_steps: 10,
            metric_for_best: None,
            early_stopping_patience: 0,
            keep_best: 1,
            eval_batch_size: 0,
        }
    }
}

/// `[output]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Checkpoints go to `dir/checkpoints/step-NNNNNNN/`.
    pub dir: PathBuf,
    /// Continue from this checkpoint (one written by Paddock, with `trainer_state.json`), or `"latest"`
    /// for the newest checkpoint in `dir`.
    #[serde(default)]
    pub resume_from: Option<PathBuf>,
}

impl DataSection {
    /// The share of the training rows held out as the dev set when no dev file is given.
    pub const DEFAULT_DEV_RATIO: f64 = 0.1;
}

fn default_dev_ratio() -> f64 {
    DataSection::DEFAULT_DEV_RATIO
}

impl JobConfig {
    /// Parses a job file (without checking ranges).
    pub fn from_toml_str(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// The job file's text: every field written out, so that what a job ran with is on record even
    /// when a default changes later — except the from-scratch shape (`preset`, `vocab_size`) of a run
    /// that starts from a model directory, whose shape is that model's own: the file would otherwise
    /// say "nano" of a fine-tuned ERNIE 3.0 base (issue 33).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        let mut value = toml::Table::try_from(self)?;
        if self.model.pretrained.is_some() {
            if let Some(toml::Value::Table(model)) = value.get_mut("model") {
                model.remove("preset");
                model.remove("vocab_size");
            }
        }
        toml::to_string(&value)
    }

    /// Resolves relative paths against `base` (the job file's directory), so a job directory can be
    /// moved as a whole. `resume_from = "latest"` stays as it is.
    pub fn resolve_paths(&mut self, base: &Path) {
        self.map_paths(|p| {
            if p.is_relative() && p.as_os_str() != "latest" {
                *p = base.join(&*p);
            }
        });
    }

    /// Applies `f` to every path the job names (inputs, output, resume point).
    pub fn map_paths(&mut self, mut f: impl FnMut(&mut PathBuf)) {
        f(&mut self.data.train);
        self.data.dev.as_mut().map(&mut f);
        self.data.test.as_mut().map(&mut f);
        self.model.pretrained.as_mut().map(&mut f);
        f(&mut self.output.dir);
        self.output.resume_from.as_mut().map(&mut f);
    }

    /// The metric checkpoints are ranked by: the job's, else its task's default.
    pub fn metric_for_best(&self) -> &str {
        self.train
            .metric_for_best
            .as_deref()
            .unwrap_or(self.task.default_metric())
    }

    /// Rows per evaluation batch.
    pub fn eval_batch_size(&self) -> usize {
        if self.train.eval_batch_size > 0 {
            self.train.eval_batch_size
        } else {
            self.train.batch_size * 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "[data]\ntrain = \"train.tsv\"\n[output]\ndir = \"out\"\n";

    #[test]
    fn defaults_fill_a_minimal_job_and_it_round_trips() {
        let job = JobConfig::from_toml_str(MINIMAL).unwrap();
        assert_eq!(job.train.epochs, 3);
        assert_eq!(job.model.preset, "nano");
        assert_eq!(job.data.columns.text, "text");
        assert_eq!(
            (job.task, job.metric_for_best()),
            (Task::Classification, "macro_f1")
        );
        let text = job.to_toml().unwrap();
        assert_eq!(JobConfig::from_toml_str(&text).unwrap(), job);
    }

    /// A run from a model directory has that model's shape: its file names no from-scratch preset or
    /// vocabulary, and still reads back as the same job.
    #[test]
    fn a_run_from_a_model_names_no_preset() {
        let mut job = JobConfig::from_toml_str(MINIMAL).unwrap();
        job.model.pretrained = Some("models/3".into());
        let text = job.to_toml().unwrap();
        assert!(
            !text.contains("preset") && !text.contains("vocab_size"),
            "{text}"
        );
        assert!(
            text.contains("max_seq_len"),
            "the rest is on record: {text}"
        );
        assert_eq!(JobConfig::from_toml_str(&text).unwrap(), job);
        job.model.pretrained = None;
        assert!(job.to_toml().unwrap().contains("preset = \"nano\""));
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        let err = JobConfig::from_toml_str(&format!("{MINIMAL}[train]\nlearning_rate = 0.1\n"))
            .unwrap_err();
        assert!(err.to_string().contains("learning_rate"), "{err}");
    }

    #[test]
    fn relative_paths_resolve_against_the_job_file_but_latest_stays() {
        let text = MINIMAL.replace("dir = \"out\"", "dir = \"out\"\nresume_from = \"latest\"");
        let mut job = JobConfig::from_toml_str(&text).unwrap();
        job.data.dev = Some("/abs/dev.tsv".into());
        job.resolve_paths(Path::new("/jobs/7"));
        assert_eq!(job.data.train, Path::new("/jobs/7/train.tsv"));
        assert_eq!(job.data.dev.as_deref(), Some(Path::new("/abs/dev.tsv")));
        assert_eq!(job.output.dir, Path::new("/jobs/7/out"));
        assert_eq!(job.output.resume_from.as_deref(), Some(Path::new("latest")));
    }
}

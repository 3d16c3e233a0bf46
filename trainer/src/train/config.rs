//! The training job description, `job.toml`: data files and columns, the model to start from, the
//! optimisation hyper-parameters and where to write. Every field has a default except the training file
//! and the output directory; `validate` checks ranges and names the offending field (`train.lr`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::{Columns, DataFormat, DataOptions};
use crate::metrics::METRIC_NAMES;
use crate::{Error, Result};

/// A whole job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
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

impl DataSection {
    /// How to read the labelled files of this job.
    pub fn options(&self) -> DataOptions {
        DataOptions {
            format: self.format,
            columns: self.columns.clone(),
            convert_encoding: self.convert_encoding,
            require_labels: true,
        }
    }
}

/// `[model]`: where the weights come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// A Hugging Face model directory (config.json, vocab.txt, weights). Takes precedence over `preset`.
    pub pretrained: Option<PathBuf>,
    /// An ERNIE 3.0 shape trained from scratch: base, medium, mini, micro, nano.
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
    /// accuracy, macro_f1 or loss.
    pub metric_for_best: String,
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
            metric_for_best: "macro_f1".into(),
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

fn default_dev_ratio() -> f64 {
    0.1
}

impl JobConfig {
    /// Reads and validates a `job.toml`. Relative paths in it are resolved against the file's directory,
    /// so a job directory can be moved as a whole.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut job = Self::from_toml_str(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            other => other,
        })?;
        if let Some(base) = path.parent() {
            job.resolve_paths(base);
        }
        Ok(job)
    }

    /// Parses (without validating ranges; see [`JobConfig::validate`]).
    pub fn from_toml_str(text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| Error::Config(e.to_string().trim_end().to_string()))
    }

    fn resolve_paths(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() && p.as_os_str() != "latest" {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.data.train);
        self.data.dev.as_mut().map(fix);
        self.data.test.as_mut().map(fix);
        self.model.pretrained.as_mut().map(fix);
        fix(&mut self.output.dir);
        self.output.resume_from.as_mut().map(fix);
    }

    /// Checks every range; the error names the field, e.g. `train.lr must be > 0 (got 0)`.
    pub fn validate(&self) -> Result<()> {
        let t = &self.train;
        let m = &self.model;
        let d = &self.data;
        let mut problems = Vec::new();
        let mut check = |ok: bool, msg: String| {
            if !ok {
                problems.push(msg)
            }
        };
        check(
            t.epochs > 0,
            format!("train.epochs must be > 0 (got {})", t.epochs),
        );
        check(
            t.batch_size > 0,
            format!("train.batch_size must be > 0 (got {})", t.batch_size),
        );
        check(
            t.grad_accum_steps > 0,
            format!(
                "train.grad_accum_steps must be > 0 (got {})",
                t.grad_accum_steps
            ),
        );
        check(
            t.max_steps != Some(0),
            "train.max_steps must be > 0 when set".into(),
        );
        check(
            t.lr > 0.0 && t.lr.is_finite(),
            format!("train.lr must be > 0 (got {})", t.lr),
        );
        check(
            t.weight_decay >= 0.0,
            format!("train.weight_decay must be >= 0 (got {})", t.weight_decay),
        );
        check(
            (0.0..1.0).contains(&t.warmup_ratio),
            format!(
                "train.warmup_ratio must be in [0, 1) (got {})",
                t.warmup_ratio
            ),
        );
        check(
            (0.0..1.0).contains(&t.adam_beta1),
            format!("train.adam_beta1 must be in [0, 1) (got {})", t.adam_beta1),
        );
        check(
            (0.0..1.0).contains(&t.adam_beta2),
            format!("train.adam_beta2 must be in [0, 1) (got {})", t.adam_beta2),
        );
        check(
            t.adam_eps > 0.0,
            format!("train.adam_eps must be > 0 (got {})", t.adam_eps),
        );
        check(
            t.max_grad_norm >= 0.0,
            format!("train.max_grad_norm must be >= 0 (got {})", t.max_grad_norm),
        );
        check(
            t.log_every_steps > 0,
            format!(
                "train.log_every_steps must be > 0 (got {})",
                t.log_every_steps
            ),
        );
        check(
            METRIC_NAMES.contains(&t.metric_for_best.as_str()),
            format!(
                "train.metric_for_best must be one of {} (got `{}`)",
                METRIC_NAMES.join(", "),
                t.metric_for_best
            ),
        );
        check(
            t.threads <= 1024,
            format!("train.threads must be <= 1024 (got {})", t.threads),
        );
        if let Err(e) = crate::device::Precision::parse(&t.precision) {
            check(false, format!("train.precision: {e}"));
        }
        check(
            (8..=2048).contains(&m.max_seq_len),
            format!(
                "model.max_seq_len must be in 8..=2048 (got {})",
                m.max_seq_len
            ),
        );
        check(
            m.vocab_size >= 100,
            format!("model.vocab_size must be >= 100 (got {})", m.vocab_size),
        );
        for (name, p) in [
            ("model.hidden_dropout", m.hidden_dropout),
            ("model.attention_dropout", m.attention_dropout),
        ] {
            if let Some(p) = p {
                check(
                    (0.0..1.0).contains(&p),
                    format!("{name} must be in [0, 1) (got {p})"),
                );
            }
        }
        if m.pretrained.is_none() {
            check(
                crate::config::ErnieConfig::preset_names().contains(&m.preset.as_str()),
                format!(
                    "model.preset must be one of {} (got `{}`)",
                    crate::config::ErnieConfig::preset_names().join(", "),
                    m.preset
                ),
            );
        }
        if let (Some(h), Some(a)) = (m.hidden_size, m.num_attention_heads) {
            check(
                a > 0 && h % a == 0,
                format!(
                    "model.hidden_size ({h}) must be a multiple of model.num_attention_heads ({a})"
                ),
            );
        }
        if d.dev.is_none() {
            check(
                d.dev_ratio > 0.0 && d.dev_ratio < 0.5,
                format!(
                    "data.dev_ratio must be in (0, 0.5) when data.dev is not given (got {})",
                    d.dev_ratio
                ),
            );
        }
        if let Some(labels) = &d.labels {
            if let Err(e) = crate::data::LabelMap::new(labels.clone()) {
                check(false, format!("data.labels: {e}"));
            }
        }
        check(
            !self.output.dir.as_os_str().is_empty(),
            "output.dir must not be empty".into(),
        );
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(problems.join("; ")))
        }
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
    fn defaults_fill_a_minimal_job() {
        let job = JobConfig::from_toml_str(MINIMAL).unwrap();
        job.validate().unwrap();
        assert_eq!(job.train.epochs, 3);
        assert_eq!(job.model.preset, "nano");
        assert_eq!(job.data.options().columns.text, "text");
        assert!(job.data.options().require_labels);
    }

    #[test]
    fn every_bad_field_is_named() {
        let text = format!(
            "{MINIMAL}[train]\nepochs = 0\nlr = 0.0\nwarmup_ratio = 1.0\nmetric_for_best = \"f2\"\n[model]\nmax_seq_len = 4\n"
        );
        let text = text.replace("[output]\ndir = \"out\"\n", "") + "[output]\ndir = \"out\"\n";
        let err = JobConfig::from_toml_str(&text)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        for field in [
            "train.epochs",
            "train.lr",
            "train.warmup_ratio",
            "train.metric_for_best",
            "model.max_seq_len",
        ] {
            assert!(err.contains(field), "{field} missing from: {err}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_types_are_refused() {
        let err = JobConfig::from_toml_str(&format!("{MINIMAL}[train]\nepoch = 3\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("epoch"), "{err}");
        let err = JobConfig::from_toml_str(&format!("{MINIMAL}[train]\nbatch_size = \"big\"\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch_size"), "{err}");
    }

    #[test]
    fn data_columns_are_configurable() {
        let text = "[data]\ntrain = \"t.csv\"\nformat = \"csv\"\nconvert_encoding = true\n\
                    [data.columns]\ntext = \"review\"\nlabel = \"y\"\n[output]\ndir = \"o\"\n";
        let job = JobConfig::from_toml_str(text).unwrap();
        assert_eq!(job.data.columns.text, "review");
        assert_eq!(job.data.columns.text_pair, "text_pair");
        assert!(job.data.options().convert_encoding);
    }
}

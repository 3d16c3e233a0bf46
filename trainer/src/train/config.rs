//! The training job description, `job.toml`: data files and columns, the model to start from, the
//! optimisation hyper-parameters and where to write. Every field has a default except the training file
//! and the output directory; `validate` checks ranges and names the offending field (`train.lr`).

use std::path::Path;

use crate::data::DataOptions;
use crate::{Error, Result};

pub use contracts::job::{DataSection, JobConfig, ModelSection, OutputSection, TrainSection};

/// How the trainer reads and checks a job file. The job file's types are the contract crate's (the
/// platform writes them); which presets, precisions and label lists are accepted is the trainer's to
/// say, so the checks live here.
pub trait JobFile: Sized {
    /// Reads a `job.toml` (its ranges are checked by [`JobFile::validate`]). Relative paths in it are
    /// resolved against the file's directory, so a job directory can be moved as a whole.
    fn from_file(path: &Path) -> Result<Self>;
    /// Checks every range; the error names the field, e.g. `train.lr must be > 0 (got 0)`.
    fn validate(&self) -> Result<()>;
}

/// How to read the labelled files of a job.
pub fn data_options(job: &JobConfig) -> DataOptions {
    let data = &job.data;
    DataOptions {
        format: data.format,
        columns: data.columns.clone(),
        convert_encoding: data.convert_encoding,
        require_labels: true,
        task: job.task,
    }
}

impl JobFile for JobConfig {
    fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut job = JobConfig::from_toml_str(&text).map_err(|e| {
            Error::Config(format!("{}: {}", path.display(), e.to_string().trim_end()))
        })?;
        if let Some(base) = path.parent() {
            job.resolve_paths(base);
        }
        Ok(job)
    }

    fn validate(&self) -> Result<()> {
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
        let metrics = self.task.metric_names();
        check(
            metrics.contains(&self.metric_for_best()),
            format!(
                "train.metric_for_best must be one of {} for a {} job (got `{}`)",
                metrics.join(", "),
                self.task,
                self.metric_for_best()
            ),
        );
        check(
            t.threads <= 1024,
            format!("train.threads must be <= 1024 (got {})", t.threads),
        );
        // `auto` is measured at start (crate::precision); anything else must name a precision.
        if !t.precision.trim().eq_ignore_ascii_case("auto") {
            if let Err(e) = crate::device::Precision::parse(&t.precision) {
                check(false, format!("train.precision: {e} or auto"));
            }
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
        assert_eq!(data_options(&job).columns.text, "text");
        assert!(data_options(&job).require_labels);
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
        assert!(data_options(&job).convert_encoding);
    }
}

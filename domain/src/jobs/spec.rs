//! A job's spec: the checks a submission must pass (every field named) and the trainer's job file it
//! becomes (`contracts::job::JobConfig`, written with `toml`). Inputs are named by absolute path into the
//! workspace's store as the run sees it (the host path for a local run, `/paddock` in a container); the
//! output goes to the run's own folder.

use std::path::{Path, PathBuf};

use contracts::data::{Columns, DataFormat};
use contracts::job::{DataSection, JobConfig, ModelSection, OutputSection, TrainSection};

use contracts::error::{AppError, ErrorCode};
use contracts::types::JobSpec;

/// Model shapes the form offers. `tiny` is a 1-layer, 32-wide encoder for smoke tests and demos.
pub const PRESETS: [&str; 6] = ["base", "medium", "mini", "micro", "nano", "tiny"];

/// Every broken rule of `spec`, as `(field, message)`, in form order; `cpu_bf16`: whether this host's CPU
/// has native bfloat16 (`hostcaps::cpu_bf16`, a parameter so tests walk both answers on any CPU).
fn problems(spec: &JobSpec, cpu_bf16: bool) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if crate::names::display_name(&spec.name).is_none() {
        out.push(("name", format!("must be {}", crate::names::NAME_RULE)));
    }
    if !PRESETS.contains(&spec.preset.as_str()) {
        out.push(("preset", format!("must be one of {}", PRESETS.join(", "))));
    }
    if !(1..=1000).contains(&spec.epochs) {
        out.push(("epochs", "must be between 1 and 1000".into()));
    }
    if !(1..=4096).contains(&spec.batch_size) {
        out.push(("batch_size", "must be between 1 and 4096".into()));
    }
    if !(spec.learning_rate.is_finite() && spec.learning_rate > 0.0 && spec.learning_rate <= 1.0) {
        out.push((
            "learning_rate",
            "must be greater than 0 and at most 1".into(),
        ));
    }
    if !(spec.warmup_ratio.is_finite() && (0.0..1.0).contains(&spec.warmup_ratio)) {
        out.push(("warmup_ratio", "must be at least 0 and below 1".into()));
    }
    if !(8..=2048).contains(&spec.max_seq_len) {
        out.push(("max_seq_len", "must be between 8 and 2048".into()));
    }
    if !(1..=1024).contains(&spec.grad_accum_steps) {
        out.push(("grad_accum_steps", "must be between 1 and 1024".into()));
    }
    if spec.max_steps == Some(0) {
        out.push(("max_steps", "must be at least 1 (or left empty)".into()));
    }
    if !["fp32", "fp16", "bf16"].contains(&spec.precision.as_str()) {
        out.push(("precision", "must be fp32, fp16 or bf16".into()));
    } else if spec.gpus == 0 {
        match spec.precision.as_str() {
            "fp16" => out.push(("precision", "fp16 needs a GPU; use fp32 or bf16 on CPU".into())),
            "bf16" if !cpu_bf16 => out.push((
                "precision",
                "bf16 on CPU needs AVX512-BF16 instructions, which this server's CPU lacks; use fp32 or a GPU"
                    .into(),
            )),
            _ => {}
        }
    }
    if spec.eval_every_steps == 0 {
        out.push(("eval_every_steps", "must be at least 1".into()));
    }
    if spec.gpus > 64 {
        out.push(("gpus", "must be at most 64".into()));
    }
    if !(-100..=100).contains(&spec.priority) {
        out.push(("priority", "must be between -100 and 100".into()));
    }
    if !(1..=100).contains(&spec.keep_best) {
        out.push(("keep_best", "must be between 1 and 100".into()));
    }
    if spec.base_checkpoint_id.is_some() && spec.pretrained_model_id.is_some() {
        out.push((
            "pretrained_model_id",
            "start from an earlier checkpoint or from an uploaded model, not both".into(),
        ));
    }
    if spec.time_limit_minutes == Some(0) {
        out.push((
            "time_limit_minutes",
            "must be at least 1 (or left empty)".into(),
        ));
    }
    out
}

/// `Invalid` naming the first bad field and listing all.
pub fn check(spec: &JobSpec) -> Result<(), AppError> {
    check_with(spec, hostcaps::cpu_bf16())
}

fn check_with(spec: &JobSpec, cpu_bf16: bool) -> Result<(), AppError> {
    let all = problems(spec, cpu_bf16);
    match all.first() {
        None => Ok(()),
        Some((field, _)) => Err(AppError::invalid(
            *field,
            ErrorCode::JobSpecInvalid,
            all.iter()
                .map(|(f, m)| format!("{f}: {m}"))
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

/// What the job file refers to: paths relative to the workspace's store, and where the run sees it.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The store as the trainer sees it: its host path for a local run, `/paddock` in a container.
    pub store: String,
    pub train: String,
    pub dev: Option<String>,
    /// A checkpoint directory to start from.
    pub pretrained: Option<String>,
    /// A checkpoint of this job's own lineage to continue from (`resume`).
    pub resume_from: Option<String>,
    /// Columns of the training file.
    pub text_column: String,
    pub label_column: String,
    /// Label names in id order (from the training data's distribution).
    pub labels: Vec<String>,
}

impl Inputs {
    /// `path` (relative to the store) as the run sees it.
    pub fn in_store(&self, path: &str) -> PathBuf {
        Path::new(&self.store).join(path)
    }
}

/// The trainer's job file for `spec`: inputs by absolute path into the store (which the run cannot
/// write), output in the run's own folder. Every field is written out, so that what a job ran with stays
/// on record when a default of the trainer changes.
pub fn job_config(spec: &JobSpec, inputs: &Inputs, threads: usize) -> JobConfig {
    let mut model = ModelSection {
        max_seq_len: spec.max_seq_len as usize,
        ..ModelSection::default()
    };
    if let Some(pretrained) = &inputs.pretrained {
        model.pretrained = Some(inputs.in_store(pretrained));
    } else if spec.preset == "tiny" {
        // A one-layer model for smoke tests and demos: seconds on a CPU.
        model.preset = "nano".into();
        model.num_hidden_layers = Some(1);
        model.hidden_size = Some(32);
        model.num_attention_heads = Some(2);
        model.intermediate_size = Some(64);
        model.vocab_size = 2000;
    } else {
        model.preset = spec.preset.clone();
        model.vocab_size = 8000;
    }
    JobConfig {
        data: DataSection {
            train: inputs.in_store(&inputs.train),
            dev: inputs.dev.as_deref().map(|d| inputs.in_store(d)),
            test: None,
            dev_ratio: DataSection::DEFAULT_DEV_RATIO,
            labels: Some(inputs.labels.clone()),
            format: DataFormat::Auto,
            columns: Columns {
                text: inputs.text_column.clone(),
                label: inputs.label_column.clone(),
                ..Columns::default()
            },
            convert_encoding: false,
        },
        model,
        train: TrainSection {
            epochs: spec.epochs as usize,
            batch_size: spec.batch_size as usize,
            grad_accum_steps: spec.grad_accum_steps as usize,
            max_steps: spec.max_steps.map(|s| s as usize),
            lr: spec.learning_rate,
            warmup_ratio: spec.warmup_ratio,
            seed: spec.seed,
            precision: spec.precision.clone(),
            device: if spec.gpus > 0 { "cuda" } else { "cpu" }.into(),
            threads,
            eval_every_steps: spec.eval_every_steps as usize,
            keep_best: spec.keep_best as usize,
            log_every_steps: 1,
            ..TrainSection::default()
        },
        output: OutputSection {
            dir: "output".into(),
            resume_from: inputs.resume_from.as_deref().map(|r| inputs.in_store(r)),
        },
    }
}

/// [`job_config`] as the text the trainer reads (`job.toml`) and the job page shows.
pub fn render_toml(spec: &JobSpec, inputs: &Inputs, threads: usize) -> Result<String, AppError> {
    let text = job_config(spec, inputs, threads)
        .to_toml()
        .map_err(|e| contracts::error::internal("writing the job file", e))?;
    Ok(format!(
        "# Generated by Paddock from the job's spec; runs as `paddock train --config job.toml`.\n{text}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_hyperparameters_are_named() {
        let mut spec = JobSpec::new("run", 1);
        assert!(check(&spec).is_ok());
        spec.learning_rate = -0.1;
        spec.batch_size = 0;
        let err = check(&spec).unwrap_err();
        assert_eq!(err.field(), Some("batch_size"));
        assert!(err.to_string().contains("learning_rate"), "{err}");
        let mut spec = JobSpec::new("run", 1);
        spec.precision = "fp16".into();
        assert_eq!(
            check(&spec).unwrap_err().field(),
            Some("precision"),
            "fp16 needs a GPU"
        );
        // bf16 runs on a CPU with native bfloat16 and is refused, named, on one without: both answers on
        // any CPU, and the real check follows the host's.
        spec.precision = "bf16".into();
        assert!(check_with(&spec, true).is_ok());
        let err = check_with(&spec, false).unwrap_err();
        assert_eq!(err.field(), Some("precision"));
        assert!(err.to_string().contains("AVX512-BF16"), "{err}");
        assert_eq!(check(&spec).is_ok(), hostcaps::cpu_bf16());
    }

    #[test]
    fn the_job_file_reads_from_the_store_and_parses_as_the_trainers_job() {
        let mut spec = JobSpec::new("run", 1);
        spec.max_steps = Some(20);
        let inputs = Inputs {
            store: "/paddock/".into(),
            train: "datasets/3/train \"x\".tsv".into(),
            dev: None,
            pretrained: None,
            resume_from: Some("checkpoints/4/step-10".into()),
            text_column: "text".into(),
            label_column: "label".into(),
            labels: vec!["negative".into(), "positive".into()],
        };
        let text = render_toml(&spec, &inputs, 2).unwrap();
        let job = JobConfig::from_toml_str(&text).unwrap();
        assert_eq!(job, job_config(&spec, &inputs, 2));
        assert_eq!(
            job.data.train,
            Path::new("/paddock/datasets/3/train \"x\".tsv")
        );
        assert_eq!(job.train.max_steps, Some(20));
        assert_eq!(job.train.lr, 5e-4);
        assert_eq!(job.output.dir, Path::new("output"));
        assert_eq!(
            job.output.resume_from.as_deref(),
            Some(Path::new("/paddock/checkpoints/4/step-10"))
        );
    }
}

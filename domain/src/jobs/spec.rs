//! A job's spec: the checks a submission must pass (every field named) and the trainer's job file it
//! becomes (`contracts::job::JobConfig`, written with `toml`). Inputs are named by absolute path into the
//! workspace's store as the run sees it (the host path for a local run, `/paddock` in a container); the
//! output goes to the run's own folder.

use std::path::{Path, PathBuf};

use contracts::data::{Columns, DataFormat};
use contracts::job::{DataSection, JobConfig, ModelSection, OutputSection, TrainSection};

use contracts::error::{AppError, ErrorCode, FieldProblem, Rule};
use contracts::job::{MAX_NODES, MAX_RANKS, PRESETS};
use contracts::precision::CHOICES;
use contracts::types::JobSpec;

/// Every broken rule of `spec`, in form order; `cpu_bf16`: whether this host's CPU has native bfloat16
/// (`hostcaps::cpu::bf16`, a parameter so tests walk both answers on any CPU). `auto` is taken everywhere:
/// the run measures, or runs float32 where bf16 is not native.
fn problems(spec: &JobSpec, cpu_bf16: bool) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    let mut between = |field: &str, value: i64, min: i64, max: i64| {
        if !(min..=max).contains(&value) {
            out.push(FieldProblem::new(
                field,
                Rule::Between { min, max },
                format!("must be between {min} and {max}"),
            ));
        }
    };
    between("epochs", i64::from(spec.epochs), 1, 1000);
    between("batch_size", i64::from(spec.batch_size), 1, 4096);
    between("max_seq_len", i64::from(spec.max_seq_len), 8, 2048);
    between(
        "grad_accum_steps",
        i64::from(spec.grad_accum_steps),
        1,
        1024,
    );
    between("priority", i64::from(spec.priority), -100, 100);
    between("keep_best", i64::from(spec.keep_best), 1, 100);
    if crate::names::display_name(&spec.name).is_none() {
        out.push(FieldProblem::new(
            "name",
            Rule::Name,
            format!("must be {}", crate::names::NAME_RULE),
        ));
    }
    let one_of = |values: &[&str]| Rule::OneOf {
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    if !PRESETS.contains(&spec.preset.as_str()) {
        out.push(FieldProblem::new(
            "preset",
            one_of(&PRESETS),
            format!("must be one of {}", PRESETS.join(", ")),
        ));
    }
    if !(spec.learning_rate.is_finite() && spec.learning_rate > 0.0 && spec.learning_rate <= 1.0) {
        out.push(FieldProblem::new(
            "learning_rate",
            Rule::Interval {
                min: 0.0,
                min_included: false,
                max: 1.0,
                max_included: true,
            },
            "must be greater than 0 and at most 1",
        ));
    }
    if !(spec.warmup_ratio.is_finite() && (0.0..1.0).contains(&spec.warmup_ratio)) {
        out.push(FieldProblem::new(
            "warmup_ratio",
            Rule::Interval {
                min: 0.0,
                min_included: true,
                max: 1.0,
                max_included: false,
            },
            "must be at least 0 and below 1",
        ));
    }
    let at_least_or_empty = |field: &str| {
        FieldProblem::new(
            field,
            Rule::AtLeastOrEmpty { min: 1 },
            "must be at least 1 (or left empty)",
        )
    };
    if spec.max_steps == Some(0) {
        out.push(at_least_or_empty("max_steps"));
    }
    if !CHOICES.contains(&spec.precision.as_str()) {
        out.push(FieldProblem::new(
            "precision",
            one_of(&CHOICES),
            "must be auto, fp32, fp16 or bf16",
        ));
    } else if spec.gpus == 0 {
        match spec.precision.as_str() {
            "fp16" => out.push(FieldProblem::new(
                "precision",
                Rule::Fp16NeedsGpu,
                "fp16 needs a GPU; use fp32 or bf16 on CPU",
            )),
            "bf16" if !cpu_bf16 => out.push(FieldProblem::new(
                "precision",
                Rule::Bf16NeedsCpuSupport,
                "bf16 on CPU needs AVX512-BF16 instructions, which this server's CPU lacks; use fp32 or a GPU",
            )),
            _ => {}
        }
    }
    if spec.eval_every_steps == 0 {
        out.push(FieldProblem::new(
            "eval_every_steps",
            Rule::AtLeast { min: 1 },
            "must be at least 1",
        ));
    }
    if spec.gpus > 64 {
        out.push(FieldProblem::new(
            "gpus",
            Rule::AtMost { max: 64 },
            "must be at most 64",
        ));
    }
    match spec.ranks {
        Some(ranks) if !(1..=MAX_RANKS).contains(&ranks) => out.push(FieldProblem::new(
            "ranks",
            Rule::Between {
                min: 1,
                max: i64::from(MAX_RANKS),
            },
            format!("must be between 1 and {MAX_RANKS}"),
        )),
        Some(ranks) if spec.gpus > 0 && ranks != spec.gpus => out.push(FieldProblem::new(
            "ranks",
            Rule::RanksPerGpu {
                gpus: i64::from(spec.gpus),
            },
            format!(
                "one rank per GPU: with {} GPU(s), {} rank(s) (or leave it empty)",
                spec.gpus, spec.gpus
            ),
        )),
        _ => {}
    }
    match spec.nodes {
        Some(nodes) if !(1..=MAX_NODES).contains(&nodes) => out.push(FieldProblem::new(
            "nodes",
            Rule::Between {
                min: 1,
                max: i64::from(MAX_NODES),
            },
            format!("must be between 1 and {MAX_NODES}"),
        )),
        Some(2..) if spec.cluster.is_none() => out.push(FieldProblem::new(
            "nodes",
            Rule::NodesNeedCluster,
            "a run spans several nodes only on a cluster: choose one, or leave it empty",
        )),
        Some(2..) if spec.environment_id.is_some() => out.push(FieldProblem::new(
            "nodes",
            Rule::NodesNotInImage,
            "a run across nodes runs natively on the cluster, not in an environment's image: leave the environment empty, or run on one node",
        )),
        _ => {}
    }
    if spec.base_checkpoint_id.is_some() && spec.pretrained_model_id.is_some() {
        out.push(FieldProblem::new(
            "pretrained_model_id",
            Rule::NotWith {
                other: "base_checkpoint_id".into(),
            },
            "start from an earlier checkpoint or from an uploaded model, not both",
        ));
    }
    if spec.time_limit_minutes == Some(0) {
        out.push(at_least_or_empty("time_limit_minutes"));
    }
    out.sort_by_key(|p| FORM_ORDER.iter().position(|f| *f == p.field));
    out
}

/// The job form's fields top to bottom: problems are listed (and the first named) in this order.
const FORM_ORDER: [&str; 18] = [
    "name",
    "preset",
    "epochs",
    "batch_size",
    "learning_rate",
    "warmup_ratio",
    "max_seq_len",
    "grad_accum_steps",
    "max_steps",
    "precision",
    "eval_every_steps",
    "nodes",
    "gpus",
    "ranks",
    "priority",
    "keep_best",
    "pretrained_model_id",
    "time_limit_minutes",
];

/// `Invalid` naming the first bad field and listing all.
pub fn check(spec: &JobSpec) -> Result<(), AppError> {
    check_with(spec, hostcaps::cpu::bf16().is_native())
}

/// Every broken rule of `spec` on this host ([`check`]'s list, for a caller that places the problems
/// elsewhere, as a sweep does under its own paths).
pub(crate) fn problems_here(spec: &JobSpec) -> Vec<FieldProblem> {
    problems(spec, hostcaps::cpu::bf16().is_native())
}

fn check_with(spec: &JobSpec, cpu_bf16: bool) -> Result<(), AppError> {
    match AppError::invalid_fields(ErrorCode::JobSpecInvalid, problems(spec, cpu_bf16)) {
        None => Ok(()),
        Some(err) => Err(err),
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
    /// Columns of the training file (the pair column for a task of pairs).
    pub text_column: String,
    pub pair_column: Option<String>,
    pub label_column: String,
    /// Names for the label column's values, read into the training and dev rows.
    pub label_names: std::collections::BTreeMap<String, String>,
    /// Label names in id order (from the training data's distribution).
    pub labels: Vec<String>,
    /// The device a job given GPUs trains on where it runs (see [`crate::executor::Executor::gpu_device`]).
    pub gpu_device: &'static str,
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
    } else {
        model.preset = spec.preset.clone();
        // A one-layer model needs no large vocabulary to finish in seconds.
        model.vocab_size = if spec.preset == "tiny" { 2000 } else { 8000 };
    }
    JobConfig {
        task: spec.task,
        data: DataSection {
            train: inputs.in_store(&inputs.train),
            dev: inputs.dev.as_deref().map(|d| inputs.in_store(d)),
            test: None,
            dev_ratio: DataSection::DEFAULT_DEV_RATIO,
            labels: Some(inputs.labels.clone()),
            format: DataFormat::Auto,
            columns: Columns {
                text: inputs.text_column.clone(),
                text_pair: inputs
                    .pair_column
                    .clone()
                    .unwrap_or_else(|| Columns::default().text_pair),
                label: inputs.label_column.clone(),
                label_names: inputs.label_names.clone(),
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
            device: if spec.gpus > 0 {
                inputs.gpu_device
            } else {
                "cpu"
            }
            .into(),
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
    use contracts::ids::DatasetId;

    #[test]
    fn bad_hyperparameters_are_named() {
        let mut spec = JobSpec::new("run", DatasetId::new(1));
        assert!(check(&spec).is_ok());
        spec.learning_rate = -0.1;
        spec.batch_size = 0;
        let err = check(&spec).unwrap_err();
        assert_eq!(err.field(), Some("batch_size"));
        assert!(err.to_string().contains("learning_rate"), "{err}");
        let mut spec = JobSpec::new("run", DatasetId::new(1));
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
        assert_eq!(check(&spec).is_ok(), hostcaps::cpu::bf16().is_native());
        // `auto` is taken on every CPU: the run measures, or runs float32 where bf16 is not native.
        spec.precision = "auto".into();
        assert!(check_with(&spec, false).is_ok() && check_with(&spec, true).is_ok());
    }

    #[test]
    fn the_job_file_reads_from_the_store_and_parses_as_the_trainers_job() {
        let mut spec = JobSpec::new("run", DatasetId::new(1));
        spec.max_steps = Some(20);
        let inputs = Inputs {
            store: "/paddock/".into(),
            train: "datasets/3/train \"x\".tsv".into(),
            dev: None,
            pretrained: None,
            resume_from: Some("checkpoints/4/step-10".into()),
            text_column: "text".into(),
            pair_column: None,
            label_column: "label".into(),
            label_names: Default::default(),
            labels: vec!["negative".into(), "positive".into()],
            gpu_device: "cuda",
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

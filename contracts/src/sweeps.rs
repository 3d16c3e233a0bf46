//! Sweeps: one job spec tried with several settings, each try (a trial) an ordinary job of the
//! workspace's queue, compared on one objective, the poor ones stopped early. What a client sends
//! ([`SweepSpec`]) and what it reads back ([`SweepSummary`], [`SweepDetail`]).
//!
//! The search space names job fields ([`PARAMETERS`]) with the values to try ([`Distribution`]); a
//! trial's job is the sweep's `job` with its sampled values put in, checked like any submission. Early
//! stopping is asynchronous successive halving (ASHA, Li et al. 2020): at rungs of `min_steps`,
//! `min_steps·η`, `min_steps·η²`, … steps, a trial goes on only when its objective is among the best
//! 1/η of the trials that reached that rung so far; the others stop there, keeping their checkpoints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{CheckpointId, JobId, SweepId, WorkspaceId};
use crate::types::{JobSpec, JobSummary};

/// The job fields a sweep may vary: what fine-tuning is searched over (how fast and how long it
/// learns, what it sees, where it starts). Fields that say where a job runs (GPUs, cluster,
/// environment) or what it learns from (datasets, task) stay the sweep's own for every trial, so the
/// trials differ only in what is being compared.
pub const PARAMETERS: [&str; 10] = [
    "learning_rate",
    "batch_size",
    "epochs",
    "warmup_ratio",
    "max_seq_len",
    "grad_accum_steps",
    "seed",
    "preset",
    "pretrained_model_id",
    "base_checkpoint_id",
];

/// The most trials one sweep may hold (extensions included).
pub const MAX_TRIALS: u32 = 1000;

/// The most trials of one sweep queued or running at once.
pub const MAX_PARALLELISM: u32 = 64;

/// How trials' values are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Each trial draws every parameter independently (a list: one of its values, uniformly).
    #[default]
    Random,
    /// Every combination of the lists' values once, in an order shuffled by the sweep's seed (so that a
    /// grid capped by `max_trials` is an even sample of it, not its first corner). Lists only.
    Grid,
}

/// The values one parameter takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum Distribution {
    /// These values: a grid's axis, or a random sweep's choice.
    Values {
        #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
        values: Vec<serde_json::Value>,
    },
    /// A number drawn evenly from `min` to `max`.
    Uniform { min: f64, max: f64 },
    /// A number whose logarithm is drawn evenly: as many tries from 1e-5 to 1e-4 as from 1e-4 to 1e-3,
    /// what learning rates need. `min` above 0.
    LogUniform { min: f64, max: f64 },
    /// A whole number from `min` to `max`, both included.
    IntUniform { min: i64, max: i64 },
}

/// Whether the objective is better higher or lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    Maximize,
    Minimize,
}

impl Goal {
    /// Whether `a` is better than `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Goal::Maximize => a > b,
            Goal::Minimize => a < b,
        }
    }
}

/// What the trials are compared on: a dev metric the trainer reports at its evaluations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Objective {
    /// One of the job's task's metrics (`Task::metric_names`): `macro_f1`, `accuracy`, `loss`, and for
    /// entity extraction `f1`, `precision`, `recall`.
    pub metric: String,
    /// Left out: `minimize` for `loss`, `maximize` for the others. A stored sweep always says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
}

impl Objective {
    pub fn goal(&self) -> Goal {
        self.goal.unwrap_or(match self.metric.as_str() {
            "loss" => Goal::Minimize,
            _ => Goal::Maximize,
        })
    }
}

/// When trials stop before their last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum EarlyStopping {
    /// Every trial runs to its end.
    #[default]
    None,
    /// Asynchronous successive halving (module docs): rungs at `min_steps · reduction_factor^k` steps;
    /// at each, the best `1/reduction_factor` of the trials that reached it go on.
    Asha {
        /// Steps every trial runs before it is first judged (its first rung).
        min_steps: u32,
        /// η: how much the field thins at each rung (2 to 8; 3 keeps a third).
        #[serde(default = "default_reduction_factor")]
        reduction_factor: u32,
    },
}

fn default_reduction_factor() -> u32 {
    3
}

impl EarlyStopping {
    /// The rungs' steps below `last` (a trial's last step): none without a rule.
    pub fn rungs(self, last: u64) -> Vec<u64> {
        let EarlyStopping::Asha {
            min_steps,
            reduction_factor,
        } = self
        else {
            return Vec::new();
        };
        let (mut rung, eta) = (
            u64::from(min_steps.max(1)),
            u64::from(reduction_factor.max(2)),
        );
        let mut out = Vec::new();
        while rung < last {
            out.push(rung);
            rung = rung.saturating_mul(eta);
        }
        out
    }
}

/// A sweep as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub name: String,
    /// What every trial runs, but for the parameters; its name is the trials' (`name #3`).
    pub job: JobSpec,
    /// Job field → the values it takes ([`PARAMETERS`] says which fields).
    pub parameters: BTreeMap<String, Distribution>,
    #[serde(default)]
    pub method: Method,
    /// Trials in all (a grid: at most its size; left out: the whole grid, or 10 at random).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
    /// Trials queued or running at once (the workspace's GPU quota still applies to each).
    #[serde(default = "default_parallelism")]
    pub parallelism: u32,
    pub objective: Objective,
    #[serde(default)]
    pub early_stopping: EarlyStopping,
    /// Seeds the draws (and a grid's order): the same spec and seed give the same trials.
    #[serde(default)]
    pub seed: u64,
}

fn default_parallelism() -> u32 {
    2
}

/// Where a sweep is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Starting trials as others end, and judging them at their rungs.
    Running,
    /// No new trials; those queued or running go on (and are still judged).
    Paused,
    /// Every trial it was given has ended. Extending it runs it again.
    Finished,
    /// Stopped by a person: its queued and running trials were cancelled (keeping their checkpoints).
    Cancelled,
}

impl SweepStatus {
    pub const ALL: [SweepStatus; 4] = [
        SweepStatus::Running,
        SweepStatus::Paused,
        SweepStatus::Finished,
        SweepStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SweepStatus::Running => "running",
            SweepStatus::Paused => "paused",
            SweepStatus::Finished => "finished",
            SweepStatus::Cancelled => "cancelled",
        }
    }

    /// Over: it will not change any more.
    pub fn is_final(self) -> bool {
        self == SweepStatus::Cancelled
    }

    /// A running sweep pauses, finishes or is cancelled; a paused one resumes or is cancelled; a
    /// finished one runs again when extended, or is closed for good by a cancel. Cancelled is final.
    pub fn can_become(self, to: SweepStatus) -> bool {
        use SweepStatus::*;
        match self {
            Running => matches!(to, Paused | Finished | Cancelled),
            Paused => matches!(to, Running | Cancelled),
            Finished => matches!(to, Running | Cancelled),
            Cancelled => false,
        }
    }
}

/// Why a sweep's status last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SweepReason {
    PauseRequested,
    ResumeRequested,
    /// More trials were allowed.
    Extended,
    /// Its last trial ended.
    Completed,
    CancelRequested,
    /// A trial's job could not be queued (its creator may no longer submit, a dataset is gone, …):
    /// the message says why; resuming tries again.
    TrialRefused,
}

impl SweepReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepReason::PauseRequested => "pause_requested",
            SweepReason::ResumeRequested => "resume_requested",
            SweepReason::Extended => "extended",
            SweepReason::Completed => "completed",
            SweepReason::CancelRequested => "cancel_requested",
            SweepReason::TrialRefused => "trial_refused",
        }
    }
}

/// A trial's objective at its best evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ObjectiveValue {
    pub value: f64,
    /// The step of the evaluation that reached it.
    pub step: i64,
}

/// The sweep's best trial so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BestTrial {
    pub trial: u32,
    pub job_id: JobId,
    pub objective: ObjectiveValue,
    /// Its best checkpoint (by the job's own ranking), once it wrote one.
    pub checkpoint_id: Option<CheckpointId>,
}

/// How many of a sweep's trials are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrialCounts {
    /// Queued, starting, running or stopping.
    pub active: u32,
    /// Ran to their end (the trainer's own early stopping included).
    pub completed: u32,
    /// Stopped at a rung by the sweep's early stopping.
    pub pruned: u32,
    /// Failed or cancelled.
    pub failed: u32,
}

/// A sweep in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SweepSummary {
    pub id: SweepId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub status: SweepStatus,
    pub status_reason: Option<SweepReason>,
    pub status_message: Option<String>,
    pub method: Method,
    /// With its goal said.
    pub objective: Objective,
    pub early_stopping: EarlyStopping,
    /// Trials it may start in all.
    pub max_trials: u32,
    pub parallelism: u32,
    /// Trials started so far.
    pub trials: u32,
    pub counts: TrialCounts,
    pub best: Option<BestTrial>,
    /// Optimizer steps its trials ran, together: what early stopping saves is measured in these.
    pub steps_run: i64,
    pub created_by: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

/// A decision at a rung.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RungDecision {
    /// The rung's step.
    pub step: i64,
    /// The trial's best objective by then.
    pub value: f64,
    /// Trials that had reached this rung when it did, itself included.
    pub peers: u32,
    /// Whether it went on (else it was stopped there).
    pub continued: bool,
}

/// One trial of a sweep: its job, the values it was given, how it fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trial {
    /// 1, 2, … in the order started.
    pub trial: u32,
    pub job: JobSummary,
    /// Parameter → the value this trial ran with.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// Its best objective so far.
    pub objective: Option<ObjectiveValue>,
    pub rungs: Vec<RungDecision>,
    /// Stopped at a rung by the sweep.
    pub pruned: bool,
}

/// A sweep with its spec and every trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SweepDetail {
    pub summary: SweepSummary,
    pub spec: SweepSpec,
    /// Best objective first; trials without one yet last, newest first.
    pub trials: Vec<Trial>,
    /// Whether the caller may pause, resume, extend or cancel it.
    pub can_edit: bool,
}

/// What a sweep's buttons ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepVerb {
    Pause,
    Resume,
    Cancel,
}

/// More trials for a sweep (a finished one runs again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SweepExtend {
    /// The new total, above what it has.
    pub max_trials: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_grow_by_the_reduction_factor_and_stop_before_the_last_step() {
        let asha = EarlyStopping::Asha {
            min_steps: 10,
            reduction_factor: 3,
        };
        assert_eq!(asha.rungs(100), vec![10, 30, 90]);
        assert_eq!(asha.rungs(90), vec![10, 30]);
        assert_eq!(asha.rungs(10), Vec::<u64>::new());
        assert_eq!(EarlyStopping::None.rungs(1000), Vec::<u64>::new());
    }

    #[test]
    fn a_spec_reads_with_defaults_and_refuses_unknown_fields() {
        let spec: SweepSpec = serde_json::from_value(serde_json::json!({
            "name": "lr",
            "job": { "name": "sentiment", "dataset_id": 1 },
            "parameters": {
                "learning_rate": { "distribution": "log_uniform", "min": 1e-5, "max": 1e-3 },
                "batch_size": { "distribution": "values", "values": [16, 32] }
            },
            "objective": { "metric": "loss" },
            "early_stopping": { "rule": "asha", "min_steps": 20 }
        }))
        .unwrap();
        assert_eq!(spec.method, Method::Random);
        assert_eq!(spec.parallelism, 2);
        assert_eq!(spec.objective.goal(), Goal::Minimize);
        assert_eq!(
            spec.early_stopping,
            EarlyStopping::Asha {
                min_steps: 20,
                reduction_factor: 3
            }
        );
        let typo = serde_json::from_value::<SweepSpec>(serde_json::json!({
            "name": "lr", "job": { "name": "s", "dataset_id": 1 }, "parameters": {},
            "objective": { "metric": "loss" }, "max_trial": 3
        }));
        assert!(typo.unwrap_err().to_string().contains("max_trial"));
    }

    #[test]
    fn the_machine_moves_as_documented() {
        use SweepStatus::*;
        assert!(Finished.can_become(Running));
        assert!(!Cancelled.can_become(Running));
        for s in SweepStatus::ALL {
            assert!(!s.can_become(s), "{s:?} moves to itself");
        }
    }
}

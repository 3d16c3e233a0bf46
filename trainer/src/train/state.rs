//! `trainer_state.json`: everything besides the weights and the optimizer moments that a resumed run
//! needs to continue exactly where the saved one was — the step, the position in the epoch (the batch
//! order itself is a function of seed and epoch, see `data::batch`), the best-checkpoint bookkeeping, the
//! fp16 loss scale and the loss history.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::optimizer::LossScaler;
use crate::{Error, Result};

pub const STATE_FILE: &str = "trainer_state.json";
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";

/// Bumped when the meaning of a field changes; older states are refused rather than misread.
pub const STATE_VERSION: u32 = 1;

/// A checkpoint the run keeps, with the metric it was ranked by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptCheckpoint {
    /// Directory name under `checkpoints/`.
    pub name: String,
    pub step: usize,
    /// `metric_for_best` at this checkpoint, when it was evaluated.
    pub metric: Option<f64>,
}

/// The training loss of one optimizer step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossRecord {
    pub step: usize,
    pub loss: f64,
    pub lr: f64,
}

/// The resumable state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    pub version: u32,
    /// Optimizer steps completed.
    pub global_step: usize,
    /// The epoch (0-based) the next step belongs to.
    pub epoch: usize,
    /// Optimizer steps of `epoch` already taken; the next step starts after them.
    pub steps_in_epoch: usize,
    pub total_steps: usize,
    pub seed: u64,
    /// Truncation length the model was trained with; prediction uses it by default.
    pub max_seq_len: usize,
    pub labels: Vec<String>,
    pub metric_for_best: String,
    pub best_metric: Option<f64>,
    pub best_checkpoint: Option<String>,
    /// Consecutive evaluations without improvement, for early stopping.
    pub evals_without_improvement: usize,
    pub kept: Vec<KeptCheckpoint>,
    /// Present when training in fp16.
    pub loss_scaler: Option<LossScaler>,
    pub losses: Vec<LossRecord>,
    /// What the run trains in (`fp32`, `fp16`, `bf16`): a resumed `auto` run keeps it rather than
    /// measuring again. States written before issue 34 lack it.
    #[serde(default)]
    pub precision: Option<String>,
}

impl TrainerState {
    pub fn new(
        seed: u64,
        total_steps: usize,
        max_seq_len: usize,
        labels: Vec<String>,
        metric_for_best: String,
    ) -> Self {
        TrainerState {
            version: STATE_VERSION,
            global_step: 0,
            epoch: 0,
            steps_in_epoch: 0,
            total_steps,
            seed,
            max_seq_len,
            labels,
            metric_for_best,
            best_metric: None,
            best_checkpoint: None,
            evals_without_improvement: 0,
            kept: Vec::new(),
            loss_scaler: None,
            losses: Vec::new(),
            precision: None,
        }
    }

    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let state: TrainerState = serde_json::from_str(&text)
            .map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))?;
        if state.version != STATE_VERSION {
            return Err(Error::Checkpoint(format!(
                "{}: trainer state version {} is not the supported {STATE_VERSION}",
                path.display(),
                state.version
            )));
        }
        Ok(state)
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(STATE_FILE);
        let text =
            serde_json::to_string_pretty(self).map_err(|e| Error::Checkpoint(e.to_string()))?;
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
    }

    /// Whether `value` improves on the best so far.
    pub fn improves(&self, value: f64) -> bool {
        match self.best_metric {
            None => true,
            Some(best) if crate::metrics::Metrics::higher_is_better(&self.metric_for_best) => {
                value > best
            }
            Some(best) => value < best,
        }
    }
}

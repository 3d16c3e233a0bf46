//! Inference with a classification model: batched forward passes over encoded rows (sorted by length
//! so each batch pads little), results put back in input order as logits, probabilities and the
//! predicted label; and evaluation of the same against gold labels. Used by training (dev/test
//! evaluation) and by the `eval` / `predict` commands.

use std::path::Path;

use tch::{Device, Kind, Tensor};

use crate::data::batch::{collate, sorted_batches, Features};
use crate::metrics::Metrics;
use crate::{ErnieForSequenceClassification, Precision, Result, Tokenizer};

/// One prediction (with its logits): what `paddock predict --json` prints and the model server answers.
pub use contracts::serving::Prediction;

/// A model ready for inference.
pub struct Inference<'a> {
    pub model: &'a ErnieForSequenceClassification,
    pub device: Device,
    pub precision: Precision,
    pub pad_id: i64,
    pub batch_size: usize,
}

impl Inference<'_> {
    /// Logits `[rows.len(), num_labels]` (Float, on the CPU) in the order of `rows`.
    pub fn logits(&self, rows: &[Features]) -> Result<Tensor> {
        let lengths: Vec<usize> = rows.iter().map(|r| r.input_ids.len()).collect();
        let mut parts: Vec<(Vec<usize>, Tensor)> = Vec::new();
        tch::no_grad(|| -> Result<()> {
            for idx in sorted_batches(&lengths, self.batch_size) {
                let refs: Vec<&Features> = idx.iter().map(|&i| &rows[i]).collect();
                let b = collate(&refs, self.pad_id, self.device);
                let forward = || self.model.forward_t(b.inputs(), false);
                // Weights cast for inference (`LoadedModel::cast_weights`) run as they are; float32 weights
                // (training's evaluations) run under autocast when a reduced precision is asked for.
                let logits = if self.model.kind() == Kind::Float {
                    self.precision.autocast(self.device, forward)?
                } else {
                    forward()
                };
                parts.push((idx, logits.to_kind(Kind::Float).to_device(Device::Cpu)));
            }
            Ok(())
        })?;
        if parts.is_empty() {
            return Ok(Tensor::zeros([0, 0], (Kind::Float, Device::Cpu)));
        }
        let order: Vec<i64> = parts
            .iter()
            .flat_map(|(idx, _)| idx.iter().map(|&i| i as i64))
            .collect();
        let stacked = Tensor::cat(&parts.iter().map(|(_, t)| t).collect::<Vec<_>>(), 0);
        // `order[j]` is the input row of stacked row j; invert it to read rows back in input order.
        let mut inverse = vec![0i64; order.len()];
        for (j, &i) in order.iter().enumerate() {
            inverse[i as usize] = j as i64;
        }
        Ok(stacked.index_select(0, &Tensor::from_slice(&inverse)))
    }

    /// Predictions for `rows`, in order.
    pub fn predict(&self, rows: &[Features], labels: &[String]) -> Result<Vec<Prediction>> {
        let logits = self.logits(rows)?;
        Ok(to_predictions(&logits, labels))
    }

    /// Metrics of the model on labelled `rows` (mean cross-entropy included).
    pub fn evaluate(&self, rows: &[Features], labels: &[String]) -> Result<Metrics> {
        let logits = self.logits(rows)?;
        let gold: Vec<i64> = rows.iter().map(|r| r.label.unwrap_or(-1)).collect();
        let pred: Vec<usize> = if rows.is_empty() {
            Vec::new()
        } else {
            Vec::<i64>::try_from(logits.argmax(-1, false))?
                .into_iter()
                .map(|p| p as usize)
                .collect()
        };
        let loss = if rows.is_empty() || gold.iter().any(|&g| g < 0) {
            None
        } else {
            Some(f64::try_from(
                logits.cross_entropy_for_logits(&Tensor::from_slice(&gold)),
            )?)
        };
        let gold: Vec<usize> = gold.into_iter().map(|g| g.max(0) as usize).collect();
        Ok(Metrics::compute(labels, &gold, &pred, loss))
    }
}

/// Turns a `[n, L]` logits tensor into predictions.
pub fn to_predictions(logits: &Tensor, labels: &[String]) -> Vec<Prediction> {
    let n = logits.size().first().copied().unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    let probs = logits.softmax(-1, Kind::Float);
    let l: Vec<Vec<f32>> = Vec::<Vec<f32>>::try_from(logits).unwrap_or_default();
    let p: Vec<Vec<f32>> = Vec::<Vec<f32>>::try_from(&probs).unwrap_or_default();
    l.into_iter()
        .zip(p)
        .map(|(logits, probabilities)| {
            let label_id = logits
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, _)| i)
                .unwrap_or(0);
            Prediction {
                label: labels
                    .get(label_id)
                    .cloned()
                    .unwrap_or_else(|| label_id.to_string()),
                label_id,
                probabilities,
                logits: Some(logits),
            }
        })
        .collect()
}

/// Encodes `(text, pair, label)` rows with `tokenizer`, truncated to `max_len`.
pub fn encode_rows(
    tokenizer: &Tokenizer,
    rows: &[(String, Option<String>)],
    labels: Option<&[Option<usize>]>,
    max_len: usize,
) -> Result<Vec<Features>> {
    let encoded = tokenizer.encode_batch(rows, max_len)?;
    Ok(encoded
        .into_iter()
        .enumerate()
        .map(|(i, e)| Features {
            input_ids: e.input_ids,
            token_type_ids: e.token_type_ids,
            label: labels.and_then(|l| l[i]).map(|l| l as i64),
        })
        .collect())
}

/// The truncation length to use with a checkpoint: what it was trained with (from
/// `trainer_state.json`), else 512 capped by the model's position table.
pub fn default_max_len(dir: &Path, max_positions: usize) -> usize {
    crate::train::state::TrainerState::read(dir)
        .map(|s| s.max_seq_len)
        .unwrap_or(512)
        .min(max_positions)
}

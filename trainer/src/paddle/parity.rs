//! The parity gate of an import or export: Paddock's model on the converted weights against
//! [`reference::PaddleErnie`] on the Paddle arrays, over a few Chinese texts, within [`TOLERANCE`].

use std::collections::BTreeMap;

use tch::{Device, Kind, Tensor};

use super::config::PaddleConfig;
use super::reference::PaddleErnie;
pub use contracts::types::{ParityOutput, ParityReport, ParitySample};

use crate::data::batch::{collate, Features};
use crate::{Error, Result, TaskModel, Tokenizer};

/// The largest difference accepted, in logits (each real token's, for a token classifier; pooled
/// outputs for a bare encoder).
pub const TOLERANCE: f64 = 1e-4;

/// Sentiment-style sentences of the kind these models are fine-tuned on: short and long, a pair, and
/// Latin letters and digits among the Chinese, so that padding, both token types and WordPiece all play.
pub const SAMPLES: &[(&str, Option<&str>)] = &[
    ("这家酒店的早餐很好吃，服务也周到。", None),
    ("电影太长了，剧情拖沓，不推荐。", None),
    ("物流很快", Some("包装有点破损，客服态度还行")),
    (
        "ERNIE 3.0 在中文任务上表现不错，GPU 训练只要 20 分钟！",
        None,
    ),
];

/// The longest sample, in tokens, the gate feeds (the model's positions permitting).
const MAX_TOKENS: usize = 64;

/// Runs both models on [`SAMPLES`]. `params` are the Paddle arrays (Paddle layout) and `model`
/// Paddock's network holding the converted weights; a difference over [`TOLERANCE`] is an error that
/// gives the figures.
pub fn check(
    config: &PaddleConfig,
    params: &BTreeMap<String, Tensor>,
    model: &TaskModel,
    tokenizer: &Tokenizer,
) -> Result<ParityReport> {
    let max_len = MAX_TOKENS.min(config.max_position_embeddings);
    let mut rows = Vec::with_capacity(SAMPLES.len());
    for (text, pair) in SAMPLES {
        let e = tokenizer.encode(text, *pair, max_len)?;
        rows.push(Features::unlabelled(e.input_ids, e.token_type_ids));
    }
    let refs: Vec<&Features> = rows.iter().collect();
    let batch = collate(&refs, tokenizer.pad_id(), Device::Cpu);
    let reference = PaddleErnie::new(config, params).forward(
        &batch.input_ids,
        &batch.token_type_ids,
        &batch.attention_mask,
    )?;
    let classifier = reference.logits.is_some();
    let (want, got) = match reference.logits {
        Some(logits) => (
            logits,
            tch::no_grad(|| model.forward_t(batch.inputs(), false)),
        ),
        None => (
            reference.pooled.ok_or_else(|| {
                Error::Checkpoint("parity: a bare encoder without its pooler".into())
            })?,
            tch::no_grad(|| model.ernie().forward_pooled_t(batch.inputs(), false))
                .pooled_output
                .ok_or_else(|| {
                    Error::Checkpoint("parity: Paddock's encoder has no pooler".into())
                })?,
        ),
    };
    if want.size() != got.size() {
        return Err(Error::Checkpoint(format!(
            "parity: Paddle's layout gives outputs of shape {:?}, Paddock's {:?}",
            want.size(),
            got.size()
        )));
    }
    let mut diff = (got.to_kind(Kind::Double) - want).abs();
    if diff.dim() == 3 {
        // A token classifier's logits: each row's real tokens (padding answers nothing).
        let padding = batch.attention_mask.eq(0).unsqueeze(-1);
        diff = diff.masked_fill(&padding, 0.0).amax([2], false);
    }
    let per_row: Vec<f64> = Vec::<f64>::try_from(diff.amax([1], false).nan_to_num(
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
    ))?;
    let samples: Vec<ParitySample> = SAMPLES
        .iter()
        .zip(&rows)
        .zip(&per_row)
        .map(|(((text, pair), row), &d)| ParitySample {
            text: text.to_string(),
            pair: pair.map(String::from),
            tokens: row.input_ids.len(),
            max_abs_diff: d,
        })
        .collect();
    let report = ParityReport {
        compared: if classifier {
            ParityOutput::Logits
        } else {
            ParityOutput::Pooled
        },
        tolerance: TOLERANCE,
        max_abs_diff: per_row.iter().copied().fold(0.0, f64::max),
        samples,
    };
    if !report.passed() {
        return Err(Error::Checkpoint(format!(
            "parity: Paddock's {} differ from what Paddle's layout computes by up to {:.3e} (tolerance {:.0e}) \
             on {:?}; the conversion would change the model's answers, so nothing was written",
            report.compared.as_str(),
            report.max_abs_diff,
            TOLERANCE,
            report
                .samples
                .iter()
                .max_by(|a, b| a.max_abs_diff.total_cmp(&b.max_abs_diff))
                .map(|s| s.text.as_str())
                .unwrap_or_default()
        )));
    }
    Ok(report)
}

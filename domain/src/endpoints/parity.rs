//! The parity gate: before an endpoint takes traffic, held-out texts go through the trainer's own predict
//! path (`paddock predict --json`, float32) and through the freshly started replica, which must say it
//! serves in the endpoint's precision; every logit (each token's, for an entity model) must agree within
//! that precision's [`Tolerance`], and every label (or entity) too unless the reference itself is that
//! close to a tie. A mismatch — a different tokenizer, label map, truncation length or numerics — fails
//! the deployment with a report, instead of serving numbers that differ from what training measured.

use contracts::ids::EndpointId;
use std::path::Path;

use contracts::serving::{
    Answer, Health, Input, Pair, ParityMismatch, ParityReport, ParityTolerance, PredictReply,
    PredictRequest,
};
use contracts::task::Task;
use contracts::types::DatasetPreview;
use sqlx::SqlitePool;

use crate::storage::Storage;

/// How far a served logit may be from the float32 reference: `abs + rel * |reference|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

impl Tolerance {
    /// float32 serving reproduces the reference up to summation order: on the same CPU to 1e-4, on a
    /// GPU (other kernels, other reduction trees, over a dozen layers) to 1e-3 and 1e-4 of the value.
    /// bf16 and fp16 round every matmul input to 8 and 11 significant bits, and the rounding adds up
    /// over the layers; what the gate is for (a wrong tokenizer, label map or truncation) moves logits by
    /// whole units, far beyond any of these slacks.
    pub fn for_precision(precision: &str, on_gpu: bool) -> Tolerance {
        match precision {
            "bf16" => Tolerance {
                abs: 5e-2,
                rel: 2e-2,
            },
            "fp16" => Tolerance {
                abs: 1e-2,
                rel: 5e-3,
            },
            _ if on_gpu => Tolerance {
                abs: 1e-3,
                rel: 1e-4,
            },
            _ => Tolerance {
                abs: 1e-4,
                rel: 0.0,
            },
        }
    }

    fn allows(&self, reference: f64) -> f64 {
        self.abs + self.rel * reference.abs()
    }
}

/// Texts compared.
const SAMPLES: usize = 16;
/// Used when the checkpoint's job has no readable dataset preview.
const FALLBACK: [&str; 4] = [
    "这家银行的服务态度很差，等了半小时还没人理我。",
    "质量很好，物流也快。",
    "一般般吧",
    "还会再来",
];

/// Runs the gate; the report says `passed` and why not.
pub async fn check(
    storage: &Storage,
    db: &SqlitePool,
    endpoint_id: EndpointId,
    model: &Path,
    replica: &str,
    token: &str,
    precision: &str,
) -> ParityReport {
    let texts = match samples(db, endpoint_id).await {
        Some(inputs) => inputs,
        None => fallback(model_task(model)),
    };
    match compare(storage, model, replica, token, precision, &texts).await {
        Ok(report) => report,
        Err(message) => ParityReport {
            passed: false,
            samples: texts.len(),
            message,
            ..Default::default()
        },
    }
}

/// Held-out inputs: the dev set (else training set) preview of the job that wrote the checkpoint, as
/// texts or, where the data has a pair column, pairs.
async fn samples(db: &SqlitePool, endpoint_id: EndpointId) -> Option<Vec<Input>> {
    let row: Option<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT d.preview_json, d.text_column, d.pair_column FROM endpoints e
         JOIN checkpoints c ON c.id = e.checkpoint_id
         JOIN jobs j ON j.id = c.job_id JOIN datasets d ON d.id = COALESCE(j.dev_dataset_id, j.dataset_id)
         WHERE e.id = ?",
    )
    .bind(endpoint_id)
    .fetch_optional(db)
    .await
    .ok()
    .flatten();
    // One line of `paddock predict --file` per input: no line breaks, and no tabs (they part a pair).
    let clean = |t: &String| t.replace(['\n', '\r', '\t'], " ");
    let from_preview = row.and_then(|(preview, column, pair_column)| {
        let preview: DatasetPreview = serde_json::from_str(&preview).ok()?;
        let index = |name: &str| preview.columns.iter().position(|c| c == name);
        let text = index(&column)?;
        let pair = match pair_column {
            Some(name) => Some(index(&name)?),
            None => None,
        };
        let inputs: Vec<Input> = preview
            .rows
            .iter()
            .filter_map(|r| {
                let a = clean(r.get(text)?);
                match pair {
                    None => Some(Input::Text(a)),
                    Some(p) => Some(Input::Pair(Pair {
                        text_a: a,
                        text_b: clean(r.get(p)?),
                    })),
                }
            })
            .filter(|input| input.texts().iter().all(|t| !t.trim().is_empty()))
            .take(SAMPLES)
            .collect();
        (!inputs.is_empty()).then_some(inputs)
    });
    from_preview
}

/// The task a checkpoint's `config.json` records (`paddock_task`; a model from elsewhere classifies).
pub(crate) fn model_task(model: &Path) -> Task {
    std::fs::read(model.join("config.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .map_or_else(Task::default, |config| crate::jobs::config_task(&config))
}

/// [`FALLBACK`] as inputs of `task`: the texts, or each paired with the next.
fn fallback(task: Task) -> Vec<Input> {
    let text = |i: usize| FALLBACK[i % FALLBACK.len()].to_string();
    (0..FALLBACK.len())
        .map(|i| match task.pairs() {
            false => Input::Text(text(i)),
            true => Input::Pair(Pair {
                text_a: text(i),
                text_b: text(i + 1),
            }),
        })
        .collect()
}

/// The replica's JSON answer to `request`; a failure says whether asking or reading the `what` failed.
async fn ask<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    what: &str,
) -> Result<T, String> {
    let response = request
        .send()
        .await
        .map_err(|e| format!("asking the replica: {e}"))?;
    response
        .json()
        .await
        .map_err(|e| format!("reading the replica's {what}: {e}"))
}

async fn compare(
    storage: &Storage,
    model: &Path,
    replica: &str,
    token: &str,
    precision: &str,
    texts: &[Input],
) -> Result<ParityReport, String> {
    let client = reqwest::Client::new();
    let health: Health = ask(client.get(format!("{replica}/health")), "health").await?;
    let served_precision = health.precision;
    // `auto` is whatever the replica measured, float32 or bf16; anything else must be served as asked.
    let as_asked = match precision {
        "auto" => ["fp32", "bf16"].contains(&served_precision.as_str()),
        asked => served_precision == asked,
    };
    if !as_asked {
        return Err(format!(
            "the replica serves in {served_precision}, not the endpoint's {precision}"
        ));
    }
    let precision = served_precision.as_str();
    // The reference runs on the CPU; a replica on a GPU sums in another order.
    let tolerance = Tolerance::for_precision(precision, health.device == "cuda");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("samples.txt");
    let lines: Vec<String> = texts.iter().map(|input| input.texts().join("\t")).collect();
    std::fs::write(&file, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    let args = [
        "predict".as_ref(),
        "--json".as_ref(),
        "--model".as_ref(),
        model.as_os_str(),
    ]
    .into_iter()
    .chain(["--file".as_ref(), file.as_os_str()]);
    let model_bytes = crate::pretrained::dir_size(model);
    let stdout = storage
        .run_trainer(args, model_bytes)
        .await
        .map_err(|e| format!("running paddock predict: {e}"))?
        .map_err(|failure| format!("paddock predict failed: {failure}"))?;
    let reference: Vec<Answer> = String::from_utf8_lossy(&stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reading paddock predict's answers: {e}"))?;
    let request = client
        .post(format!("{replica}/predict"))
        .bearer_auth(token)
        .json(&PredictRequest::many(texts.to_vec(), true));
    let served: PredictReply = ask(request, "answer").await?;
    let served = served.predictions;
    if served.len() != texts.len() || reference.len() != texts.len() {
        return Err(format!(
            "expected {} answers, the replica gave {} and predict {}",
            texts.len(),
            served.len(),
            reference.len()
        ));
    }
    let mut max_diff: f64 = 0.0;
    let mut mismatch: Option<ParityMismatch> = None;
    for (i, (s, r)) in served.iter().zip(&reference).enumerate() {
        let logits = |answer: &Answer| -> Vec<Vec<f64>> {
            answer
                .logit_rows()
                .into_iter()
                .map(|row| row.iter().map(|&x| f64::from(x)).collect())
                .collect()
        };
        let (a, b) = (logits(s), logits(r));
        // Every row (the sequence's, or each token's) within the slack, as many rows as the reference.
        let (diff, agrees) = match a.len() == b.len() && !b.is_empty() {
            true => a.iter().zip(&b).fold((0.0_f64, true), |(max, ok), (a, b)| {
                let (d, agrees) = agreement(a, b, tolerance);
                (max.max(d), ok && agrees)
            }),
            false => (f64::INFINITY, false),
        };
        // The same label, or the same entities, unless a row is so close to a tie that rounding may
        // rightly tip it.
        let labels_ok = s.same_reading(r) || b.iter().any(|row| near_tie(row, tolerance));
        if !(agrees && labels_ok) && mismatch.is_none() {
            let (text, text_pair) = texts[i].clone().into_texts();
            mismatch = Some(ParityMismatch {
                index: i,
                text,
                text_pair,
                served: s.clone(),
                reference: r.clone(),
            });
        }
        max_diff = max_diff.max(if diff.is_nan() { f64::INFINITY } else { diff });
    }
    let message = match &mismatch {
        None => "served logits match the trainer's predict path".to_string(),
        Some(m) => format!(
            "sample {} differs (largest logit difference {max_diff:.2e})",
            m.index
        ),
    };
    Ok(ParityReport {
        passed: mismatch.is_none(),
        samples: texts.len(),
        precision: Some(precision.to_string()),
        precision_choice: health.precision_choice,
        max_abs_diff: Some(max_diff),
        tolerance: Some(ParityTolerance {
            abs: tolerance.abs,
            rel: tolerance.rel,
        }),
        mismatch,
        message,
    })
}

/// The largest logit difference, and whether every logit is within `tolerance` of its reference (`false`
/// for a different number of logits, none, or a NaN).
fn agreement(served: &[f64], reference: &[f64], tolerance: Tolerance) -> (f64, bool) {
    if served.len() != reference.len() || served.is_empty() {
        return (f64::INFINITY, false);
    }
    served
        .iter()
        .zip(reference)
        .fold((0.0_f64, true), |(max, ok), (s, r)| {
            let d = (s - r).abs();
            (max.max(d), ok && d <= tolerance.allows(*r))
        })
}

/// Whether the reference's two best logits are within twice the tolerance of each other, where a
/// rounding difference may rightly pick the other label.
fn near_tie(reference: &[f64], tolerance: Tolerance) -> bool {
    let mut sorted: Vec<f64> = reference.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    match sorted.as_slice() {
        [first, second, ..] => first - second <= 2.0 * tolerance.allows(*first),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_must_reproduce_and_reduced_precision_gets_its_slack() {
        let fp32 = Tolerance::for_precision("fp32", false);
        let bf16 = Tolerance::for_precision("bf16", false);
        let fp32_gpu = Tolerance::for_precision("fp32", true);
        let reference = [2.0, -1.5];
        assert!(agreement(&[2.00005, -1.5], &reference, fp32).1);
        assert!(!agreement(&[2.01, -1.5], &reference, fp32).1);
        assert!(!agreement(&[2.0005, -1.5], &reference, fp32).1);
        assert!(agreement(&[2.0005, -1.5], &reference, fp32_gpu).1);
        assert!(!agreement(&[2.01, -1.5], &reference, fp32_gpu).1);
        assert!(agreement(&[2.07, -1.48], &reference, bf16).1);
        // A wrong label map swaps the logits: far beyond any precision's slack.
        assert!(!agreement(&[-1.5, 2.0], &reference, bf16).1);
        assert!(!agreement(&[2.0], &reference, bf16).1);
        assert!(!agreement(&[f64::NAN, -1.5], &reference, bf16).1);
        assert!(!near_tie(&reference, bf16));
        assert!(near_tie(&[0.30, 0.25], bf16));
        assert!(!near_tie(&[0.30, 0.25], fp32));
    }
}

//! The parity gate: before an endpoint takes traffic, held-out texts go through the trainer's own predict
//! path (`paddock predict --json`) and through the freshly started replica; every logit must agree within
//! [`TOLERANCE`]. A mismatch — a different tokenizer, label map, truncation length or numerics — fails the
//! deployment with a report, instead of serving numbers that differ from what training measured.

use std::path::Path;

use serde_json::{json, Value};
use sqlx::SqlitePool;

use crate::ssr::storage::Storage;

/// Largest allowed difference between a served and a reference logit.
pub const TOLERANCE: f64 = 1e-4;
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
    endpoint_id: i64,
    model: &Path,
    replica: &str,
) -> Value {
    let texts = samples(db, endpoint_id).await;
    match compare(storage, model, replica, &texts).await {
        Ok(report) => report,
        Err(message) => json!({ "passed": false, "samples": texts.len(), "message": message }),
    }
}

/// Held-out texts: the dev set (else training set) preview of the job that wrote the checkpoint.
async fn samples(db: &SqlitePool, endpoint_id: i64) -> Vec<String> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT d.preview_json, d.text_column FROM endpoints e JOIN checkpoints c ON c.id = e.checkpoint_id
         JOIN jobs j ON j.id = c.job_id JOIN datasets d ON d.id = COALESCE(j.dev_dataset_id, j.dataset_id)
         WHERE e.id = ?",
    )
    .bind(endpoint_id)
    .fetch_optional(db)
    .await
    .ok()
    .flatten();
    let from_preview = row.and_then(|(preview, column)| {
        let preview: Value = serde_json::from_str(&preview).ok()?;
        let index = preview["columns"]
            .as_array()?
            .iter()
            .position(|c| c.as_str() == Some(column.as_str()))?;
        let texts: Vec<String> = preview["rows"]
            .as_array()?
            .iter()
            .filter_map(|r| r.get(index)?.as_str().map(|t| t.replace(['\n', '\r'], " ")))
            .filter(|t| !t.trim().is_empty())
            .take(SAMPLES)
            .collect();
        (!texts.is_empty()).then_some(texts)
    });
    from_preview.unwrap_or_else(|| FALLBACK.iter().map(|t| t.to_string()).collect())
}

async fn compare(
    storage: &Storage,
    model: &Path,
    replica: &str,
    texts: &[String],
) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("samples.txt");
    std::fs::write(&file, texts.join("\n") + "\n").map_err(|e| e.to_string())?;
    let output = tokio::process::Command::new(&storage.paddock_binary)
        .args(["predict", "--json", "--model"])
        .arg(model)
        .arg("--file")
        .arg(&file)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("running paddock predict: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "paddock predict failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let reference: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let served: Value = reqwest::Client::new()
        .post(format!("{replica}/predict"))
        .json(&json!({ "inputs": texts, "return_logits": true }))
        .send()
        .await
        .map_err(|e| format!("asking the replica: {e}"))?
        .json()
        .await
        .map_err(|e| format!("reading the replica's answer: {e}"))?;
    let served = served["predictions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if served.len() != texts.len() || reference.len() != texts.len() {
        return Err(format!(
            "expected {} answers, the replica gave {} and predict {}",
            texts.len(),
            served.len(),
            reference.len()
        ));
    }
    let mut max_diff: f64 = 0.0;
    let mut mismatch = Value::Null;
    for (i, (s, r)) in served.iter().zip(&reference).enumerate() {
        let (a, b) = (
            s["logits"].as_array().cloned().unwrap_or_default(),
            r["logits"].as_array().cloned().unwrap_or_default(),
        );
        let diff = if a.len() != b.len() || a.is_empty() {
            f64::INFINITY
        } else {
            a.iter()
                .zip(&b)
                .map(|(x, y)| {
                    (x.as_f64().unwrap_or(f64::NAN) - y.as_f64().unwrap_or(f64::NAN)).abs()
                })
                .fold(0.0, f64::max)
        };
        if (diff > TOLERANCE || diff.is_nan() || s["label"] != r["label"]) && mismatch.is_null() {
            mismatch = json!({ "index": i, "text": texts[i], "served": s, "reference": r });
        }
        max_diff = max_diff.max(if diff.is_nan() { f64::INFINITY } else { diff });
    }
    let passed = mismatch.is_null();
    Ok(json!({
        "passed": passed,
        "samples": texts.len(),
        "max_abs_diff": if max_diff.is_finite() { json!(max_diff) } else { json!("inf") },
        "tolerance": TOLERANCE,
        "mismatch": mismatch,
        "message": if passed { "served logits match the trainer's predict path".to_string() }
                   else { format!("sample {} differs (largest logit difference {max_diff:.2e})", mismatch["index"]) },
    }))
}

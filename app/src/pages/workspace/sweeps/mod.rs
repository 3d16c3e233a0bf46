//! `/w/{id}/sweeps/...`: searches over a job's settings — the list (status, trials, the best so far),
//! the form that starts one from a job (`?from=JOB`), and one page per sweep with its best trial, the
//! control buttons and every trial with its values, objective and the decisions at its rungs. A
//! trial is a job: its row links to the job's page, where its charts and checkpoints are.
//!
//! # Layout
//! - [`list`]: the list. [`form`]: new, from a job. [`detail`]: one sweep.

use contracts::ids::{SweepId, WorkspaceId};
use contracts::sweeps::{Goal, Objective, SweepStatus};

use crate::i18n::*;

pub mod detail;
pub mod form;
pub mod list;
pub mod promote;

/// `/w/{id}/sweeps/{sweep}`.
pub fn sweep_href(workspace_id: WorkspaceId, sweep_id: SweepId) -> String {
    format!("/w/{workspace_id}/sweeps/{sweep_id}")
}

pub fn status_text(locale: Locale, status: SweepStatus) -> &'static str {
    match status {
        SweepStatus::Running => td_string!(locale, sweeps.status_running),
        SweepStatus::Paused => td_string!(locale, sweeps.status_paused),
        SweepStatus::Finished => td_string!(locale, sweeps.status_finished),
        SweepStatus::Cancelled => td_string!(locale, sweeps.status_cancelled),
    }
}

/// `macro_f1 ↑` / `loss ↓`: the metric and which way is better.
pub fn objective_text(objective: &Objective) -> String {
    let arrow = match objective.goal() {
        Goal::Maximize => "↑",
        Goal::Minimize => "↓",
    };
    format!("{} {arrow}", objective.metric)
}

/// A value as a person reads it: four significant digits for a fraction, the number as given else.
pub fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or_default();
            if x != 0.0 && x.abs() < 1e-3 {
                format!("{x:.2e}")
            } else {
                format!("{}", (x * 1e4).round() / 1e4)
            }
        }
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "—".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_read_as_people_write_them() {
        assert_eq!(value_text(&json!(0.0001)), "1.00e-4");
        assert_eq!(value_text(&json!(0.123456)), "0.1235");
        assert_eq!(value_text(&json!(32)), "32");
        assert_eq!(value_text(&json!("tiny")), "tiny");
        assert_eq!(value_text(&json!(null)), "—");
        let loss = Objective {
            metric: "loss".into(),
            goal: None,
        };
        assert_eq!(objective_text(&loss), "loss ↓");
    }
}

//! Pieces every job page shows: the status badge, the progress bar, and the arithmetic behind the ETA.
//! The formatting is pure so that the server and the browser render the same text (hydration compares
//! them) and so that it is tested here.

use leptos::prelude::*;

use crate::components::badges::StateBadge;
use crate::i18n::*;
use contracts::types::{JobStatus, JobSummary, MetricPoint};

pub fn status_text(locale: Locale, status: JobStatus) -> &'static str {
    match status {
        JobStatus::Queued => td_string!(locale, jobs.status_queued),
        JobStatus::Starting => td_string!(locale, jobs.status_starting),
        JobStatus::Running => td_string!(locale, jobs.status_running),
        JobStatus::Cancelling => td_string!(locale, jobs.status_cancelling),
        JobStatus::Succeeded => td_string!(locale, jobs.status_succeeded),
        JobStatus::Failed => td_string!(locale, jobs.status_failed),
        JobStatus::Cancelled => td_string!(locale, jobs.status_cancelled),
    }
}

/// `data-status` carries the raw value for tests and styling.
#[component]
pub fn JobStatusBadge(
    #[prop(into)] status: Signal<JobStatus>,
    #[prop(default = "job-status")] testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || status_text(i18n.get_locale(), status.get());
    view! { <StateBadge kind="job" testid state=move || status.get().as_str() text /> }
}

/// `12 / 30`, or the step alone while the total is unknown.
pub fn progress_text(step: i64, total: Option<i64>) -> String {
    match total {
        Some(total) if total > 0 => format!("{step} / {total}"),
        _ => step.to_string(),
    }
}

/// A bar and the step count. Before the trainer reports its total there is no bar.
#[component]
pub fn JobProgress(#[prop(into)] summary: Signal<JobSummary>) -> impl IntoView {
    view! {
        <span class="job-progress">
            {move || {
                let s = summary.get();
                s.total_steps.filter(|t| *t > 0).map(|total| view! {
                    <progress max=total.to_string() value=s.step.min(total).to_string() data-testid="job-progress-bar"></progress>
                })
            }}
            <span class="num" data-testid="job-progress">{move || summary.with(|s| progress_text(s.step, s.total_steps))}</span>
        </span>
    }
}

/// How many recent step points the ETA averages over: enough to smooth a slow step, few enough to
/// follow a change of pace (after an evaluation, or when another job starts on the machine).
const ETA_WINDOW: usize = 20;

/// Seconds left, from the pace of the recent `step` points (wall time per optimizer step, evaluations
/// included); `None` until two points tell a pace or when the total is unknown.
pub fn eta_seconds(points: &[MetricPoint], step: i64, total: Option<i64>) -> Option<f64> {
    let total = total?;
    if step >= total {
        return Some(0.0);
    }
    let timed: Vec<(i64, f64)> = points
        .iter()
        .filter(|p| p.kind == "step")
        .filter_map(|p| {
            let at = chrono::DateTime::parse_from_rfc3339(&p.at).ok()?;
            Some((p.step, at.timestamp_millis() as f64 / 1000.0))
        })
        .collect();
    let recent = &timed[timed.len().saturating_sub(ETA_WINDOW)..];
    let (first, last) = (recent.first()?, recent.last()?);
    let steps = (last.0 - first.0) as f64;
    if steps <= 0.0 {
        return None;
    }
    let per_step = (last.1 - first.1) / steps;
    Some((per_step * (total - step) as f64).max(0.0))
}

/// `2 h 05 min`, `3 min 20 s`, `45 s`.
pub fn duration_text(locale: Locale, seconds: f64) -> String {
    let s = seconds.round() as u64;
    let (h, m, sec) = (s / 3600, (s % 3600) / 60, s % 60);
    match locale {
        Locale::zh if h > 0 => format!("{h} 小时 {m:02} 分"),
        Locale::zh if m > 0 => format!("{m} 分 {sec:02} 秒"),
        Locale::zh => format!("{sec} 秒"),
        Locale::en if h > 0 => format!("{h} h {m:02} min"),
        Locale::en if m > 0 => format!("{m} min {sec:02} s"),
        Locale::en => format!("{sec} s"),
    }
}

/// A metric value as the tables show it: four decimals, or `–`.
pub fn metric_text(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), |v| format!("{v:.4}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: i64, at: &str) -> MetricPoint {
        MetricPoint {
            id: step,
            kind: "step".into(),
            step,
            epoch: None,
            data: serde_json::json!({ "loss": 0.5 }),
            at: at.into(),
        }
    }

    #[test]
    fn eta_follows_the_recent_pace() {
        let points = vec![
            point(1, "2026-12-02T10:00:00Z"),
            point(2, "2026-12-02T10:00:02Z"),
            point(3, "2026-12-02T10:00:04Z"),
        ];
        // 2 s per step, 27 steps to go.
        assert_eq!(eta_seconds(&points, 3, Some(30)), Some(54.0));
        assert_eq!(eta_seconds(&points, 30, Some(30)), Some(0.0));
        assert_eq!(eta_seconds(&points, 3, None), None);
        assert_eq!(
            eta_seconds(&points[..1], 1, Some(30)),
            None,
            "one point tells no pace"
        );
    }

    #[test]
    fn durations_and_progress_read_in_both_languages() {
        assert_eq!(duration_text(Locale::en, 200.0), "3 min 20 s");
        assert_eq!(duration_text(Locale::en, 7500.0), "2 h 05 min");
        assert_eq!(duration_text(Locale::zh, 45.2), "45 秒");
        assert_eq!(progress_text(12, Some(30)), "12 / 30");
        assert_eq!(progress_text(0, None), "0");
        assert_eq!(metric_text(Some(0.86)), "0.8600");
        assert_eq!(metric_text(None), "–");
        assert_eq!(status_text(Locale::en, JobStatus::Running), "Running");
    }
}

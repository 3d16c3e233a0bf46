//! The validator's report, drawn: row counts and encoding, the label distribution as bars, text lengths
//! (p50, p95, max and a histogram) and the warnings with their line numbers. The report is the JSON
//! `paddock validate` printed; it is read leniently (missing parts are left out) because the trainer may
//! add fields.

use std::collections::BTreeMap;

use leptos::prelude::*;
use serde::Deserialize;

use super::percent;
use crate::i18n::*;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Report {
    pub encoding: String,
    pub rows: u64,
    pub valid_rows: u64,
    pub label_distribution: BTreeMap<String, u64>,
    pub lengths: Lengths,
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
    pub error_count: u64,
    pub warning_count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Lengths {
    /// `chars` or `tokens`.
    pub unit: String,
    pub p50: u64,
    pub p95: u64,
    pub max: u64,
    pub histogram: Vec<Bucket>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Bucket {
    pub from: u64,
    pub to: u64,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Problem {
    pub line: Option<u64>,
    pub field: Option<String>,
    pub kind: String,
    pub message: String,
}

impl Report {
    pub fn parse(value: &serde_json::Value) -> Report {
        Report::deserialize(value).unwrap_or_default()
    }
}

#[component]
pub fn ReportView(report: Report) -> impl IntoView {
    let i18n = use_i18n();
    let Report {
        encoding,
        rows,
        valid_rows,
        label_distribution,
        lengths,
        errors,
        warnings,
        warning_count,
        ..
    } = report;
    let biggest_label = label_distribution.values().copied().max().unwrap_or(0);
    let biggest_bucket = lengths.histogram.iter().map(|b| b.count).max().unwrap_or(0);
    let unit = lengths.unit.clone();
    let problems: Vec<Problem> = errors.into_iter().chain(warnings).collect();
    view! {
        <section class="card" aria-labelledby="report-title" data-testid="dataset-report">
            <h2 id="report-title">{t!(i18n, dataset_detail.report_title)}</h2>
            <dl class="facts">
                <div><dt>{t!(i18n, dataset_detail.rows)}</dt><dd data-testid="report-rows">{rows}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.valid_rows)}</dt><dd data-testid="report-valid-rows">{valid_rows}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.encoding)}</dt><dd>{encoding}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.warnings)}</dt><dd data-testid="report-warning-count">{warning_count}</dd></div>
            </dl>
            <div class="report-grid">
                <div>
                    <h3>{t!(i18n, dataset_detail.labels_title)}</h3>
                    <ul class="bars" data-testid="report-labels">
                        {label_distribution
                            .into_iter()
                            .enumerate()
                            .map(|(i, (label, n))| view! {
                                <li class="bar-row" data-label=label.clone() data-count=n>
                                    <span class="bar-label">{label.clone()}</span>
                                    <span class="bar-track" aria-hidden="true">
                                        <span class=format!("bar label-color-{}", i % 6) style:width=percent(n, biggest_label)></span>
                                    </span>
                                    <span class="bar-value">{n}" ("{percent(n, rows.max(1))}")"</span>
                                </li>
                            })
                            .collect_view()}
                    </ul>
                </div>
                <div>
                    <h3>
                        {move || if unit == "tokens" {
                            t_string!(i18n, dataset_detail.lengths_tokens)
                        } else {
                            t_string!(i18n, dataset_detail.lengths_chars)
                        }}
                    </h3>
                    <dl class="facts facts-compact" data-testid="report-lengths">
                        <div><dt>"p50"</dt><dd data-testid="report-p50">{lengths.p50}</dd></div>
                        <div><dt>"p95"</dt><dd data-testid="report-p95">{lengths.p95}</dd></div>
                        <div><dt>{t!(i18n, dataset_detail.max)}</dt><dd data-testid="report-max">{lengths.max}</dd></div>
                    </dl>
                    <div class="histogram" role="img" data-testid="report-histogram"
                        aria-label=move || t_string!(i18n, dataset_detail.histogram_aria).to_string()>
                        {lengths
                            .histogram
                            .into_iter()
                            .map(|b| view! {
                                <div class="histogram-col" title=format!("{}–{}: {}", b.from, b.to, b.count)>
                                    <span class="histogram-count">{b.count}</span>
                                    <span class="histogram-bar" style:height=percent(b.count, biggest_bucket)></span>
                                    <span class="histogram-from">{b.from}</span>
                                </div>
                            })
                            .collect_view()}
                    </div>
                </div>
            </div>
            <h3>{t!(i18n, dataset_detail.problems_title)}</h3>
            {if problems.is_empty() {
                view! { <p class="muted" data-testid="report-no-problems">{t!(i18n, dataset_detail.no_problems)}</p> }.into_any()
            } else {
                view! {
                    <ul class="problems" data-testid="report-problems">
                        {problems
                            .into_iter()
                            .map(|p| {
                                let place = match (p.line, p.field.clone()) {
                                    (Some(line), Some(field)) => format!("{line} · {field}"),
                                    (Some(line), None) => line.to_string(),
                                    (None, Some(field)) => field,
                                    (None, None) => String::new(),
                                };
                                view! {
                                    <li data-kind=p.kind.clone()>
                                        <span class="problem-line">{move || t_string!(i18n, dataset_detail.line, place = place.clone()).to_string()}</span>
                                        " "
                                        <span>{p.message}</span>
                                    </li>
                                }
                            })
                            .collect_view()}
                    </ul>
                }
                .into_any()
            }}
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_validator_report_is_read_and_unknown_fields_ignored() {
        let value = serde_json::json!({
            "encoding": "utf8", "rows": 8, "valid_rows": 5, "ok": false, "brand_new": 1,
            "label_distribution": { "negative": 1, "positive": 4 },
            "lengths": { "unit": "chars", "p50": 9, "p95": 9, "max": 9, "mean": 7.2, "over_limit": null,
                         "histogram": [{ "from": 0, "to": 1, "count": 0 }] },
            "errors": [{ "severity": "error", "kind": "missing_label", "line": 7, "field": "label", "message": "missing label" }],
            "warnings": [{ "severity": "warning", "kind": "duplicate", "line": 9, "field": "text", "message": "duplicate of line 2" }],
            "warning_count": 1
        });
        let r = Report::parse(&value);
        assert_eq!((r.rows, r.valid_rows, r.lengths.p95), (8, 5, 9));
        assert_eq!(r.errors[0].line, Some(7));
        assert_eq!(r.warnings[0].message, "duplicate of line 2");
        assert_eq!(r.label_distribution["positive"], 4);
        assert_eq!(
            Report::parse(&serde_json::json!("nonsense")),
            Report::default()
        );
    }
}

//! The validator's report, drawn: row counts and encoding, the label distribution as bars, text lengths
//! in characters and in tokens (p50, p95, max and a histogram each; for tokens also the rows longer than
//! 128, 256 and 512, what each usual `max_seq_len` would cut) and the warnings with their line numbers.
//! The report is `contracts::data::ValidationReport`, what `paddock validate` printed.

use contracts::data::{
    Issue, LengthStats, LengthUnit, TextEncoding, TokenLengths, Tokenization, ValidationReport,
};
use leptos::prelude::*;

use super::percent;
use crate::i18n::*;

/// How the file's encoding is named to people.
fn encoding_text(encoding: Option<TextEncoding>) -> &'static str {
    match encoding {
        Some(TextEncoding::Utf8) => "UTF-8",
        Some(TextEncoding::Utf8Bom) => "UTF-8 (BOM)",
        Some(TextEncoding::Gb18030) => "GBK / GB18030",
        Some(TextEncoding::Big5) => "Big5",
        None => "—",
    }
}

#[component]
pub fn ReportView(report: ValidationReport) -> impl IntoView {
    let i18n = use_i18n();
    let ValidationReport {
        encoding,
        rows,
        valid_rows,
        label_distribution,
        lengths,
        tokens,
        errors,
        warnings,
        warning_count,
        ..
    } = report;
    let biggest_label = label_distribution.values().copied().max().unwrap_or(0);
    let unit = lengths.as_ref().map_or(LengthUnit::Chars, |l| l.unit);
    let problems: Vec<Issue> = errors.into_iter().chain(warnings).collect();
    view! {
        <section class="card" aria-labelledby="report-title" data-testid="dataset-report">
            <h2 id="report-title">{t!(i18n, dataset_detail.report_title)}</h2>
            {matches!(encoding, Some(TextEncoding::Gb18030 | TextEncoding::Big5)).then(|| view! {
                <p class="notice notice-info" data-testid="dataset-converted">
                    {move || t_string!(i18n, dataset_detail.converted, from = encoding_text(encoding)).to_string()}
                </p>
            })}
            <dl class="facts">
                <div><dt>{t!(i18n, dataset_detail.rows)}</dt><dd data-testid="report-rows">{rows}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.valid_rows)}</dt><dd data-testid="report-valid-rows">{valid_rows}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.encoding)}</dt><dd>{encoding_text(encoding)}</dd></div>
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
                        {move || if unit == LengthUnit::Tokens {
                            t_string!(i18n, dataset_detail.lengths_tokens)
                        } else {
                            t_string!(i18n, dataset_detail.lengths_chars)
                        }}
                    </h3>
                    {lengths.map(|lengths| view! {
                        <dl class="facts facts-compact" data-testid="report-lengths">
                            <div><dt>"p50"</dt><dd data-testid="report-p50">{lengths.p50}</dd></div>
                            <div><dt>"p95"</dt><dd data-testid="report-p95">{lengths.p95}</dd></div>
                            <div><dt>{t!(i18n, dataset_detail.max)}</dt><dd data-testid="report-max">{lengths.max}</dd></div>
                        </dl>
                        <Histogram lengths testid="report-histogram" />
                    })}
                </div>
                {tokens.map(|t| view! { <TokenReport t rows=valid_rows /> })}
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
                                // The English sentence stays at hand for a report to a maintainer.
                                let (english, kind) = (p.message.clone(), p.kind.as_str());
                                view! {
                                    <li data-kind=kind title=english>
                                        <span class="problem-line">{move || t_string!(i18n, dataset_detail.line, place = place.clone()).to_string()}</span>
                                        " "
                                        <span>{move || issue_text(i18n.get_locale(), &p)}</span>
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

/// Rows per length bucket, as bars.
#[component]
fn Histogram(lengths: LengthStats, testid: &'static str) -> impl IntoView {
    let i18n = use_i18n();
    let biggest_bucket = lengths.histogram.iter().map(|b| b.count).max().unwrap_or(0);
    let labels = axis_labels(&lengths.histogram);
    view! {
        <div class="histogram" role="img" data-testid=testid
            aria-label=move || t_string!(i18n, dataset_detail.histogram_aria).to_string()>
            {lengths
                .histogram
                .into_iter()
                .zip(labels)
                .map(|(b, label)| view! {
                    <div class="histogram-col" title=format!("{}–{}: {}", b.from, b.to - 1, b.count)>
                        <span class="histogram-count">{b.count}</span>
                        <span class="histogram-bar" style:height=percent(b.count, biggest_bucket)></span>
                        <span class="histogram-from">{label}</span>
                    </div>
                })
                .collect_view()}
        </div>
    }
}

/// Each bin's label under the axis: its start, on every other bin when there are many (so that
/// four-digit numbers do not run together), and `≥N` on a last bin that holds the long tail (wider
/// than the others).
pub fn axis_labels(bins: &[contracts::data::HistogramBin]) -> Vec<String> {
    let width = bins.first().map_or(1, |b| b.to - b.from);
    let every = if bins.len() > 9 { 2 } else { 1 };
    bins.iter()
        .enumerate()
        .map(|(i, b)| {
            if i + 1 == bins.len() && i > 0 && b.to - b.from != width {
                format!("≥{}", b.from)
            } else if i % every == 0 {
                b.from.to_string()
            } else {
                String::new()
            }
        })
        .collect()
}

/// Lengths in tokens, how they were counted, and what each usual sequence limit would cut.
#[component]
fn TokenReport(t: TokenLengths, rows: usize) -> impl IntoView {
    let i18n = use_i18n();
    let basic = t.tokenizer == Tokenization::Basic;
    let TokenLengths { stats, over, .. } = t;
    view! {
        <div data-testid="report-tokens" data-tokenizer=if basic { "basic" } else { "wordpiece" }>
            <h3>{t!(i18n, dataset_detail.lengths_tokens)}</h3>
            <p class="hint">
                {move || if basic {
                    t_string!(i18n, dataset_detail.tokens_basic)
                } else {
                    t_string!(i18n, dataset_detail.tokens_wordpiece)
                }}
            </p>
            <dl class="facts facts-compact">
                <div><dt>"p50"</dt><dd data-testid="report-tokens-p50">{stats.p50}</dd></div>
                <div><dt>"p95"</dt><dd data-testid="report-tokens-p95">{stats.p95}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.max)}</dt><dd data-testid="report-tokens-max">{stats.max}</dd></div>
            </dl>
            <Histogram lengths=stats testid="report-tokens-histogram" />
            <ul class="bars token-limits" data-testid="report-tokens-over">
                {over
                    .into_iter()
                    .map(|o| {
                        let max_len = o.max_len;
                        view! {
                            <li class="bar-row" data-max-len=max_len data-rows=o.rows>
                                <span class="bar-label">{move || t_string!(i18n, dataset_detail.tokens_over, max_len = max_len).to_string()}</span>
                                <span class="bar-track" aria-hidden="true">
                                    <span class="bar label-color-3" style:width=percent(o.rows, rows.max(1))></span>
                                </span>
                                <span class="bar-value">{o.rows}" ("{percent(o.rows, rows.max(1))}")"</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_bins_label_every_other_start_and_the_long_tail_as_at_least() {
        let bin = |from, to| contracts::data::HistogramBin { from, to, count: 1 };
        let mut bins: Vec<_> = (0..12).map(|i| bin(i * 256, (i + 1) * 256)).collect();
        bins.push(bin(3072, 9001));
        let labels = axis_labels(&bins);
        assert_eq!(&labels[..4], ["0", "", "512", ""]);
        assert_eq!(labels.last().unwrap(), "≥3072");
        let few = axis_labels(&[bin(0, 8), bin(8, 16)]);
        assert_eq!(few, ["0", "8"]);
    }

    /// The dashboard reads the report the trainer writes with the same declaration; stored reports from
    /// before tokens were counted, or with fields a later trainer adds, still read.
    #[test]
    fn a_stored_report_is_read_whatever_version_wrote_it() {
        let stored = serde_json::json!({
            "encoding": "utf8", "rows": 8, "valid_rows": 5, "ok": false, "brand_new": 1,
            "label_distribution": { "negative": 1, "positive": 4 },
            "lengths": { "unit": "chars", "p50": 9, "p95": 9, "max": 9, "mean": 7.2, "over_limit": null,
                         "histogram": [{ "from": 0, "to": 1, "count": 0 }] },
            "errors": [{ "severity": "error", "kind": "missing_label", "line": 7, "field": "label", "message": "missing label" }],
            "warnings": [{ "severity": "warning", "kind": "duplicate", "line": 9, "field": "text", "message": "duplicate of line 2" }],
            "warning_count": 1
        });
        let r: ValidationReport = serde_json::from_value(stored).unwrap();
        assert_eq!((r.rows, r.valid_rows), (8, 5));
        assert_eq!(
            r.lengths.as_ref().map(|l| (l.unit, l.p95)),
            Some((LengthUnit::Chars, 9))
        );
        assert_eq!(r.errors[0].line, Some(7));
        assert_eq!(r.errors[0].located(), "line 7, label: missing label");
        assert_eq!(r.warnings[0].message, "duplicate of line 2");
        assert_eq!(r.label_distribution["positive"], 4);
        assert_eq!(encoding_text(r.encoding), "UTF-8");
        assert_eq!(r.tokens, None, "a report from before tokens were counted");
        let with_tokens = serde_json::json!({
            "tokens": { "tokenizer": "basic", "unit": "tokens", "p50": 33, "p95": 70, "max": 600, "mean": 36.3,
                        "histogram": [{ "from": 0, "to": 64, "count": 5 }],
                        "over": [{ "max_len": 128, "rows": 2 }, { "max_len": 512, "rows": 1 }] }
        });
        let t = serde_json::from_value::<ValidationReport>(with_tokens)
            .unwrap()
            .tokens
            .unwrap();
        assert_eq!(
            (t.tokenizer, t.stats.p95, t.stats.max),
            (Tokenization::Basic, 70, 600)
        );
        assert_eq!((t.over[1].max_len, t.over[1].rows), (512, 1));
        assert!(serde_json::from_value::<ValidationReport>(serde_json::json!("nonsense")).is_err());
    }
}

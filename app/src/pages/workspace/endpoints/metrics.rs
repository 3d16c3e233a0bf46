//! An endpoint's traffic: the gateway's numbers (requests per second and p50/p95/p99 latency over the
//! last minute; requests, errors and 429s since the server started) as figures, two live charts of the
//! per-minute figures as this page samples them, and the histogram of rows per forward pass — how much
//! the dynamic batching actually batches. The charts are the jobs' `<paddock-chart>` (uPlot through
//! `public/charts.js`) with seconds since the page opened on the x axis.

use leptos::prelude::*;

use crate::i18n::*;
use crate::pages::workspace::jobs::charts::{Chart, Row};
use contracts::types::EndpointMetrics;

/// The per-minute figures at one moment the page asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Seconds since the page's first sample.
    pub at_s: f64,
    pub qps: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl Sample {
    pub fn of(at_s: f64, m: &EndpointMetrics) -> Sample {
        Sample {
            at_s,
            qps: m.qps,
            p50_ms: m.p50_ms,
            p95_ms: m.p95_ms,
            p99_ms: m.p99_ms,
        }
    }
}

/// Whole tenths of a second, so the chart's x values and tooltip stay readable.
fn tenths(s: f64) -> f64 {
    (s * 10.0).round() / 10.0
}

pub fn qps_rows(samples: &[Sample]) -> Vec<Row> {
    samples
        .iter()
        .map(|s| vec![Some(tenths(s.at_s)), Some(s.qps)])
        .collect()
}

pub fn latency_rows(samples: &[Sample]) -> Vec<Row> {
    samples
        .iter()
        .map(|s| vec![Some(tenths(s.at_s)), s.p50_ms, s.p95_ms, s.p99_ms])
        .collect()
}

/// `12.3 ms`, or `–` before any request.
pub fn ms_text(ms: Option<f64>) -> String {
    ms.map_or_else(|| "–".to_string(), |v| format!("{v:.1} ms"))
}

/// Each forward-pass size with its share of the largest count (0–100), for the histogram's bars.
pub fn batch_bars(m: &EndpointMetrics) -> Vec<(u32, u64, f64)> {
    let biggest = m.batch_rows.values().copied().max().unwrap_or(0).max(1);
    m.batch_rows
        .iter()
        .map(|(&rows, &count)| (rows, count, count as f64 * 100.0 / biggest as f64))
        .collect()
}

#[component]
pub fn MetricsCard(
    #[prop(into)] metrics: Signal<EndpointMetrics>,
    #[prop(into)] samples: Signal<Vec<Sample>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let qps = Memo::new(move |_| samples.with(|s| qps_rows(s)));
    let latency = Memo::new(move |_| samples.with(|s| latency_rows(s)));
    let in_browser = RwSignal::new(false);
    Effect::new(move |_| in_browser.set(true));
    let figure = move |testid: &'static str, label: ViewFn, value: Signal<String>| {
        view! { <div><dt>{label.run()}</dt><dd class="num metric-figure" data-testid=testid>{move || value.get()}</dd></div> }
    };
    let m = move |f: fn(&EndpointMetrics) -> String| Signal::derive(move || metrics.with(f));
    view! {
        <section class="card" aria-labelledby="endpoint-metrics-title" data-testid="endpoint-metrics">
            <h2 id="endpoint-metrics-title">{t!(i18n, endpoint_detail.metrics_title)}</h2>
            <p class="hint">{t!(i18n, endpoint_detail.metrics_hint)}</p>
            <dl class="facts metric-figures">
                {figure("metric-qps", ViewFn::from(move || t!(i18n, endpoint_detail.qps)), m(|m| format!("{:.2}", m.qps)))}
                {figure("metric-p50", ViewFn::from(|| "p50"), m(|m| ms_text(m.p50_ms)))}
                {figure("metric-p95", ViewFn::from(|| "p95"), m(|m| ms_text(m.p95_ms)))}
                {figure("metric-p99", ViewFn::from(|| "p99"), m(|m| ms_text(m.p99_ms)))}
                {figure("metric-requests", ViewFn::from(move || t!(i18n, endpoint_detail.requests_total)), m(|m| m.requests_total.to_string()))}
                {figure("metric-errors", ViewFn::from(move || t!(i18n, endpoint_detail.errors_total)), m(|m| m.errors_total.to_string()))}
                {figure("metric-rate-limited", ViewFn::from(move || t!(i18n, endpoint_detail.rate_limited_total)), m(|m| m.rate_limited_total.to_string()))}
            </dl>
            <div class="charts">
                <Chart testid="chart-qps" in_browser title=move || t_string!(i18n, endpoint_detail.chart_qps).to_string()
                    series=move || vec![t_string!(i18n, endpoint_detail.series_qps).to_string()]
                    x_label=move || t_string!(i18n, endpoint_detail.axis_time).to_string()
                    y_label=move || t_string!(i18n, endpoint_detail.axis_qps).to_string() digits=2 rows=qps />
                <Chart testid="chart-latency" in_browser title=move || t_string!(i18n, endpoint_detail.chart_latency).to_string()
                    series=move || vec!["p50".to_string(), "p95".to_string(), "p99".to_string()]
                    x_label=move || t_string!(i18n, endpoint_detail.axis_time).to_string()
                    y_label=move || t_string!(i18n, endpoint_detail.axis_ms).to_string() digits=1 rows=latency />
            </div>
            <h3>{t!(i18n, endpoint_detail.batch_title)}</h3>
            {move || {
                let bars = metrics.with(batch_bars);
                if bars.is_empty() {
                    view! { <p class="muted" data-testid="batch-empty">{t!(i18n, endpoint_detail.batch_empty)}</p> }.into_any()
                } else {
                    view! {
                        <div class="histogram histogram-discrete" role="img" data-testid="batch-histogram"
                            aria-label=move || t_string!(i18n, endpoint_detail.batch_aria).to_string()>
                            {bars
                                .into_iter()
                                .map(|(rows, count, share)| view! {
                                    <div class="histogram-col" title=format!("{rows}: {count}") data-rows=rows data-count=count>
                                        <span class="histogram-count">{count}</span>
                                        <span class="histogram-bar" style:height=format!("{share:.1}%")></span>
                                        <span class="histogram-size">{rows}</span>
                                    </div>
                                })
                                .collect_view()}
                        </div>
                    }
                    .into_any()
                }
            }}
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_become_chart_rows_and_batches_bars() {
        let mut m = EndpointMetrics {
            qps: 2.5,
            p50_ms: Some(4.0),
            p95_ms: Some(9.5),
            p99_ms: None,
            ..Default::default()
        };
        let samples = vec![Sample::of(0.0, &m), Sample::of(3.04, &m)];
        assert_eq!(
            qps_rows(&samples),
            vec![vec![Some(0.0), Some(2.5)], vec![Some(3.0), Some(2.5)]]
        );
        assert_eq!(
            latency_rows(&samples)[1],
            vec![Some(3.0), Some(4.0), Some(9.5), None],
            "a missing percentile is a gap"
        );
        assert_eq!(ms_text(Some(9.46)), "9.5 ms");
        assert_eq!(ms_text(None), "–");
        assert!(batch_bars(&m).is_empty());
        m.batch_rows.insert(1, 4);
        m.batch_rows.insert(8, 2);
        assert_eq!(batch_bars(&m), vec![(1, 4, 100.0), (8, 2, 50.0)]);
    }
}

//! The job's live charts: training loss, learning rate, samples per second, and dev accuracy with
//! macro-F1. Each is a `<paddock-chart>` (`public/charts.js`, drawing with uPlot: axes, tick labels, a
//! hover tooltip with the step and values, a legend). The page owns the points (from the SSE stream);
//! this component turns them into rows `[step, value…]` and hands the chart only the rows it has not
//! seen, so a long run costs the browser one append per event, not a redraw from scratch.
//!
//! The element exists only in the browser (created after hydration, like the terminal), and is created
//! again when the language changes, because its axis titles and legend are translated text.

use leptos::prelude::*;

use crate::i18n::*;
use contracts::types::MetricPoint;

/// One chart row: the step, then one value per series (`None` where a point lacks it).
pub type Row = Vec<Option<f64>>;

/// `[step, data[key]]` for every `step` point.
pub fn step_rows(points: &[MetricPoint], key: &str) -> Vec<Row> {
    points
        .iter()
        .filter(|p| p.kind == "step")
        .map(|p| vec![Some(p.step as f64), p.data[key].as_f64()])
        .collect()
}

/// `[step, data at p1, data at p2…]` for every evaluation on the dev set; `pointers` are JSON pointers
/// into the evaluation's metrics (`/accuracy`, `/entities/f1`).
pub fn dev_rows(points: &[MetricPoint], pointers: &[&str]) -> Vec<Row> {
    points
        .iter()
        .filter(|p| p.kind == "eval" && p.data["split"].as_str().is_none_or(|s| s == "dev"))
        .map(|p| {
            std::iter::once(Some(p.step as f64))
                .chain(
                    pointers
                        .iter()
                        .map(|k| p.data.pointer(k).and_then(serde_json::Value::as_f64)),
                )
                .collect()
        })
        .collect()
}

/// Whether the evaluations are an entity model's (they carry entity scores).
pub fn of_entities(points: &[MetricPoint]) -> bool {
    points
        .iter()
        .any(|p| p.kind == "eval" && p.data["entities"].is_object())
}

/// All four charts of a job, fed from `points`.
#[component]
pub fn JobCharts(#[prop(into)] points: Signal<Vec<MetricPoint>>) -> impl IntoView {
    let i18n = use_i18n();
    let loss = Memo::new(move |_| points.with(|p| step_rows(p, "loss")));
    let lr = Memo::new(move |_| points.with(|p| step_rows(p, "lr")));
    let speed = Memo::new(move |_| points.with(|p| step_rows(p, "samples_per_s")));
    // An entity model is judged by entity F1, precision and recall; the others by accuracy and macro-F1.
    let entities = Memo::new(move |_| points.with(|p| of_entities(p)));
    let dev = Memo::new(move |_| {
        points.with(|p| match entities.get() {
            true => dev_rows(
                p,
                &["/entities/f1", "/entities/precision", "/entities/recall"],
            ),
            false => dev_rows(p, &["/accuracy", "/macro_f1"]),
        })
    });
    let dev_series = move || match entities.get() {
        true => vec![
            t_string!(i18n, job_detail.series_entity_f1).to_string(),
            t_string!(i18n, job_detail.series_precision).to_string(),
            t_string!(i18n, job_detail.series_recall).to_string(),
        ],
        false => vec![
            t_string!(i18n, job_detail.series_accuracy).to_string(),
            "macro-F1".to_string(),
        ],
    };
    let in_browser = RwSignal::new(false);
    Effect::new(move |_| in_browser.set(true));
    view! {
        <section class="card" aria-labelledby="job-charts-title" data-testid="job-charts">
            <h2 id="job-charts-title">{t!(i18n, job_detail.charts_title)}</h2>
            <div class="charts">
                <Chart testid="chart-loss" in_browser title=move || t_string!(i18n, job_detail.chart_loss).to_string()
                    series=move || vec![t_string!(i18n, job_detail.series_train_loss).to_string()]
                    y_label=move || t_string!(i18n, job_detail.axis_loss).to_string() digits=4 rows=loss />
                <Chart testid="chart-eval" in_browser title=move || t_string!(i18n, job_detail.chart_dev).to_string()
                    series=dev_series
                    y_label=move || t_string!(i18n, job_detail.axis_score).to_string() digits=4 rows=dev />
                <Chart testid="chart-lr" in_browser title=move || t_string!(i18n, job_detail.chart_lr).to_string()
                    series=move || vec![t_string!(i18n, job_detail.series_lr).to_string()]
                    y_label=move || t_string!(i18n, job_detail.axis_lr).to_string() digits=6 rows=lr />
                <Chart testid="chart-speed" in_browser title=move || t_string!(i18n, job_detail.chart_speed).to_string()
                    series=move || vec![t_string!(i18n, job_detail.series_speed).to_string()]
                    y_label=move || t_string!(i18n, job_detail.axis_speed).to_string() digits=1 rows=speed />
            </div>
        </section>
    }
    .into_any()
}

/// One `<paddock-chart>` fed with `rows`; also used for an endpoint's traffic (with another x axis).
#[component]
pub fn Chart(
    testid: &'static str,
    in_browser: RwSignal<bool>,
    #[prop(into)] title: Signal<String>,
    #[prop(into)] series: Signal<Vec<String>>,
    #[prop(into)] y_label: Signal<String>,
    /// The x axis' title; the training step when not given.
    #[prop(optional, into)]
    x_label: Option<Signal<String>>,
    digits: u8,
    #[prop(into)] rows: Signal<Vec<Row>>,
    /// One colour per series (CSS colours), when the page says which series is which colour
    /// elsewhere too; the chart's own otherwise.
    #[prop(optional)]
    colours: Option<Vec<&'static str>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let host = NodeRef::<leptos::html::Div>::new();
    // What the current element holds: the language it was made in and how many rows it got.
    let fed = StoredValue::new((None::<Locale>, 0usize));
    // Bumped to try again when the element was not ready (its script not loaded yet).
    let retry = RwSignal::new(0u32);
    Effect::new(move |_| {
        retry.track();
        let locale = i18n.get_locale();
        let Some(host) = host.get() else { return };
        let (made_in, sent) = fed.get_value();
        let sent = if made_in == Some(locale) { sent } else { 0 };
        let json = rows.with(|r| {
            (r.len() > sent).then(|| serde_json::to_string(&r[sent..]).unwrap_or_default())
        });
        let total = rows.with(Vec::len);
        match json {
            None => fed.set_value((Some(locale), sent)),
            Some(json) => {
                if element::push(&host, &json) {
                    fed.set_value((Some(locale), total));
                } else {
                    fed.set_value((Some(locale), sent));
                    set_timeout(
                        move || {
                            retry.try_update(|n| *n += 1);
                        },
                        std::time::Duration::from_millis(200),
                    );
                }
            }
        }
    });
    view! {
        <figure class="chart" data-testid=testid>
            <figcaption>{move || title.get()}</figcaption>
            <div class="chart-host" node_ref=host>
                {move || in_browser.get().then(|| {
                    let series = serde_json::to_string(&series.get()).unwrap_or_default();
                    let colours = colours.as_ref().map(|c| serde_json::to_string(c).unwrap_or_default());
                    view! {
                        <paddock-chart
                            data-series=series
                            data-colours=colours
                            data-x-label=x_label.map_or_else(|| t_string!(i18n, job_detail.axis_step).to_string(), |l| l.get())
                            data-y-label=y_label.get()
                            data-digits=digits.to_string()
                        ></paddock-chart>
                    }
                })}
            </div>
            {move || rows.with(Vec::is_empty).then(|| view! { <p class="muted chart-empty">{t!(i18n, job_detail.chart_waiting)}</p> })}
        </figure>
    }
    .into_any()
}

#[cfg(feature = "hydrate")]
mod element {
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    #[wasm_bindgen]
    extern "C" {
        type ChartElement;
        #[wasm_bindgen(method, catch)]
        fn push(this: &ChartElement, json: &str) -> Result<(), JsValue>;
    }

    /// Appends rows to the `<paddock-chart>` inside `host`; false when it is not there or not ready.
    pub fn push(host: &leptos::web_sys::HtmlDivElement, json: &str) -> bool {
        let Some(el) = host.first_element_child() else {
            return false;
        };
        let chart: &ChartElement = el.unchecked_ref();
        chart.push(json).is_ok()
    }
}

#[cfg(not(feature = "hydrate"))]
mod element {
    pub fn push(_host: &leptos::web_sys::HtmlDivElement, _json: &str) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(id: i64, kind: &str, step: i64, data: serde_json::Value) -> MetricPoint {
        MetricPoint {
            id,
            kind: kind.into(),
            step,
            epoch: None,
            data,
            at: "2026-12-02T10:00:00Z".into(),
        }
    }

    #[test]
    fn rows_come_from_the_right_kind_of_point() {
        let points = vec![
            point(1, "step", 1, serde_json::json!({ "loss": 0.7, "lr": 1e-4 })),
            point(2, "step", 2, serde_json::json!({ "loss": 0.6 })),
            point(
                3,
                "eval",
                2,
                serde_json::json!({ "accuracy": 0.8, "macro_f1": 0.75, "split": "dev" }),
            ),
            point(
                4,
                "eval",
                2,
                serde_json::json!({ "accuracy": 0.7, "macro_f1": 0.7, "split": "test" }),
            ),
        ];
        assert_eq!(
            step_rows(&points, "loss"),
            vec![vec![Some(1.0), Some(0.7)], vec![Some(2.0), Some(0.6)]]
        );
        assert_eq!(
            step_rows(&points, "lr")[1],
            vec![Some(2.0), None],
            "a missing value is a gap"
        );
        assert_eq!(
            dev_rows(&points, &["/accuracy", "/macro_f1"]),
            vec![vec![Some(2.0), Some(0.8), Some(0.75)]]
        );
        assert!(!of_entities(&points));
        let entity = point(
            5,
            "eval",
            4,
            serde_json::json!({ "accuracy": 0.9, "entities": { "f1": 0.6, "precision": 0.5, "recall": 0.75 } }),
        );
        let points = [points, vec![entity]].concat();
        assert!(of_entities(&points));
        assert_eq!(
            dev_rows(&points, &["/entities/f1", "/entities/recall"])[1],
            vec![Some(4.0), Some(0.6), Some(0.75)]
        );
    }
}

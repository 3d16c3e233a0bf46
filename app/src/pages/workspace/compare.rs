//! `/w/{id}/compare?jobs=1,2,3`: runs side by side — one metric's curves of every run overlaid,
//! against the step or the time since each started; a table of the spec fields that differ with
//! the best and last dev scores, sorted by any column and downloadable as CSV; and parallel
//! coordinates of the differing numeric settings against the run's best score. The runs come from
//! the jobs list (ticked rows) or a sweep's page (its trials).

use contracts::ids::{JobId, WorkspaceId};
use contracts::runs::{higher_is_better, ComparedRun, Comparison};
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::jobs::compare_runs;
use crate::components::page::{Loaded, Page};
use crate::i18n::*;
use crate::pages::workspace::jobs::charts::{Chart, Row};
use crate::pages::workspace::jobs::job_href;
use crate::pages::workspace::jobs::parts::{duration_text, metric_text, JobStatusBadge};
use crate::pages::workspace::use_current_workspace;

/// One colour per run, in the order the runs are listed: the curves, the swatches and the parallel
/// coordinates say the same run in the same colour (Tableau's ten, told apart in print and by most
/// colour-blind readers).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The comparison page of runs `ids`.
pub fn compare_href(workspace_id: WorkspaceId, ids: &[JobId]) -> String {
    let ids: Vec<String> = ids.iter().map(JobId::to_string).collect();
    format!("/w/{workspace_id}/compare?jobs={}", ids.join(","))
}

fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A run's label in legends and headings: `#12 lr sweep #3`.
fn label(run: &ComparedRun) -> String {
    format!("#{} {}", run.summary.id, run.summary.name)
}

#[component]
pub fn ComparePage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let url = use_query_map();
    let jobs = Memo::new(move |_| url.with(|q| q.get("jobs").unwrap_or_default()));
    let compared = Resource::new(
        move || (current.id.get(), jobs.get()),
        |(ws, jobs)| compare_runs(ws, jobs),
    );
    let title = Signal::derive(move || t_string!(i18n, compare.title).to_string());
    let load = move || async move { compared.await };
    view! {
        <Page title lead=move || t!(i18n, compare.lead)>
            <Loaded load let:comparison>
                <CompareView comparison workspace_id=current.id.get_untracked() jobs=jobs.get_untracked() />
            </Loaded>
        </Page>
    }
}

#[component]
fn CompareView(comparison: Comparison, workspace_id: WorkspaceId, jobs: String) -> impl IntoView {
    let i18n = use_i18n();
    let comparison = StoredValue::new(comparison);
    let swatches = comparison.with_value(|c| {
        c.runs
            .clone()
            .into_iter()
            .enumerate()
            .map(|(i, run)| {
                let (id, status, text) = (run.summary.id, run.summary.status, label(&run));
                view! {
                    <li data-testid="compared-run" data-job=id.to_string()>
                        <span class="swatch" style=format!("background:{}", colour(i))></span>
                        <A href=job_href(workspace_id, id)>{text}</A>
                        " "<JobStatusBadge status />
                    </li>
                }
            })
            .collect_view()
    });
    let csv = format!("/api/v1/workspaces/{workspace_id}/comparison?jobs={jobs}&format=csv");
    view! {
        <ul class="compared-runs" data-testid="compared-runs">{swatches}</ul>
        <Curves comparison />
        <section class="card" aria-labelledby="compare-table-title">
            <div class="card-heading">
                <h2 id="compare-table-title">{t!(i18n, compare.table_title)}</h2>
                <a class="button button-quiet" href=csv download="paddock-runs.csv" data-testid="compare-csv" rel="external">
                    {t!(i18n, compare.csv)}
                </a>
            </div>
            <RunsTable comparison />
        </section>
        <ParallelCoordinates comparison />
    }
    .into_any()
}

/// The x axis of the curves.
#[derive(Clone, Copy, PartialEq)]
enum Axis {
    Step,
    Time,
}

/// Rows `[x, run 1, run 2…]` of series `name`, one per point of any run (the others' cells empty,
/// which the chart bridges), in x order.
fn overlay(runs: &[ComparedRun], name: &str, axis: Axis) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for &(step, secs, value) in run.series.get(name).into_iter().flatten() {
            let x = match axis {
                Axis::Step => step as f64,
                Axis::Time => secs,
            };
            let mut row = vec![None; runs.len() + 1];
            row[0] = Some(x);
            row[i + 1] = Some(value);
            rows.push(row);
        }
    }
    rows.sort_by(|a, b| {
        a[0].unwrap_or_default()
            .total_cmp(&b[0].unwrap_or_default())
    });
    rows
}

/// A series' name in the reader's words.
fn series_text(locale: Locale, name: &str) -> String {
    match name {
        "train_loss" => td_string!(locale, compare.series_train_loss).to_string(),
        "lr" => td_string!(locale, compare.series_lr).to_string(),
        "samples_per_s" => td_string!(locale, compare.series_samples_per_s).to_string(),
        dev => format!(
            "{} {}",
            td_string!(locale, compare.series_dev),
            dev.trim_start_matches("dev_")
        ),
    }
}

#[component]
fn Curves(comparison: StoredValue<Comparison>) -> impl IntoView {
    let i18n = use_i18n();
    let names = comparison.with_value(|c| c.series.clone());
    let first = names
        .iter()
        .find(|n| n.as_str() == "dev_macro_f1" || n.as_str() == "dev_f1")
        .or(names.first())
        .cloned()
        .unwrap_or_default();
    let series = RwSignal::new(first);
    let axis = RwSignal::new(Axis::Step);
    let in_browser = RwSignal::new(false);
    Effect::new(move |_| in_browser.set(true));
    let options = names
        .iter()
        .map(|name| {
            let (value, key) = (name.clone(), name.clone());
            view! {
                <option value=value selected=series.get_untracked() == *name>
                    {move || series_text(i18n.get_locale(), &key)}
                </option>
            }
        })
        .collect_view();
    let labels: Vec<String> = comparison.with_value(|c| c.runs.iter().map(label).collect());
    // A new chart for each choice: its rows are all new, and the element only appends.
    let chart = move || {
        let (name, axis) = (series.get(), axis.get());
        let rows = comparison.with_value(|c| overlay(&c.runs, &name, axis));
        let labels = labels.clone();
        let title = {
            let name = name.clone();
            Signal::derive(move || series_text(i18n.get_locale(), &name))
        };
        let x_label = move || match axis {
            Axis::Step => t_string!(i18n, job_detail.axis_step).to_string(),
            Axis::Time => t_string!(i18n, compare.axis_seconds).to_string(),
        };
        let digits = if name == "lr" { 6 } else { 4 };
        view! {
            <Chart testid="compare-chart" in_browser title series=move || labels.clone()
                y_label=title x_label=Signal::derive(x_label) digits rows=Signal::stored(rows)
                colours=PALETTE.to_vec() />
        }
    };
    view! {
        <section class="card" aria-labelledby="compare-curves-title" data-testid="compare-curves">
            <div class="card-heading">
                <h2 id="compare-curves-title">{t!(i18n, compare.curves_title)}</h2>
                <div class="inline-controls">
                    <label>
                        <span class="visually-hidden">{t!(i18n, compare.pick_series)}</span>
                        <select data-testid="compare-series" on:change=move |ev| series.set(event_target_value(&ev))>{options}</select>
                    </label>
                    <label class="checkbox">
                        <input type="checkbox" data-testid="compare-by-time"
                            on:change=move |ev| axis.set(if event_target_checked(&ev) { Axis::Time } else { Axis::Step }) />
                        {t!(i18n, compare.by_time)}
                    </label>
                </div>
            </div>
            {chart}
        </section>
    }
    .into_any()
}

/// A column of the runs table.
#[derive(Clone, PartialEq)]
enum Column {
    Run,
    Duration,
    Field(String),
    Best(String),
    Last(String),
}

/// The dev scores some run has, in a fixed order.
fn score_names(comparison: &Comparison) -> Vec<String> {
    ["macro_f1", "accuracy", "f1", "loss"]
        .into_iter()
        .filter(|m| comparison.runs.iter().any(|r| r.best.contains_key(*m)))
        .map(str::to_string)
        .collect()
}

/// A cell's value for sorting: a number where there is one, else its text.
fn sort_key(run: &ComparedRun, column: &Column) -> (Option<f64>, String) {
    match column {
        Column::Run => (Some(run.summary.id.get() as f64), String::new()),
        Column::Duration => (run.summary.duration_secs, String::new()),
        Column::Field(k) => match run.fields.get(k) {
            Some(serde_json::Value::Number(n)) => (n.as_f64(), String::new()),
            Some(serde_json::Value::String(s)) => (None, s.clone()),
            Some(other) => (None, other.to_string()),
            None => (None, String::new()),
        },
        Column::Best(m) => (run.best.get(m).copied(), String::new()),
        Column::Last(m) => (run.last.get(m).copied(), String::new()),
    }
}

/// A field's value as the table shows it.
fn field_text(value: Option<&serde_json::Value>) -> String {
    match value {
        None | Some(serde_json::Value::Null) => "–".into(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

#[component]
fn RunsTable(comparison: StoredValue<Comparison>) -> impl IntoView {
    let i18n = use_i18n();
    let scores = comparison.with_value(score_names);
    let mut columns = vec![Column::Run, Column::Duration];
    columns.extend(
        comparison
            .with_value(|c| c.differing.clone())
            .into_iter()
            .map(Column::Field),
    );
    columns.extend(scores.iter().cloned().map(Column::Best));
    columns.extend(scores.iter().cloned().map(Column::Last));
    // The column sorted by, and whether descending. Scores start best first.
    let sorted = RwSignal::new((Column::Run, false));
    let heading = {
        let columns = columns.clone();
        move || {
            columns
                .iter()
                .map(|column| {
                    let c = column.clone();
                    let text = {
                        let c = c.clone();
                        move || match &c {
                            Column::Run => t_string!(i18n, compare.col_run).to_string(),
                            Column::Duration => t_string!(i18n, compare.col_duration).to_string(),
                            Column::Field(k) => k.clone(),
                            Column::Best(m) => format!("{} {m}", t_string!(i18n, compare.col_best)),
                            Column::Last(m) => format!("{} {m}", t_string!(i18n, compare.col_last)),
                        }
                    };
                    let state = {
                        let c = c.clone();
                        move || match sorted.get() {
                            (s, true) if s == c => "descending",
                            (s, false) if s == c => "ascending",
                            _ => "none",
                        }
                    };
                    let click = {
                        let c = c.clone();
                        move |_| {
                            let best_first = match &c {
                                Column::Best(m) | Column::Last(m) => higher_is_better(m),
                                _ => false,
                            };
                            sorted.update(|(s, desc)| {
                                *desc = if *s == c { !*desc } else { best_first };
                                *s = c.clone();
                            });
                        }
                    };
                    view! {
                        <th scope="col" aria-sort=state>
                            <button type="button" class="sort-button" data-testid="compare-sort" on:click=click>{text}</button>
                        </th>
                    }
                })
                .collect_view()
        }
    };
    let body = move || {
        let (column, desc) = sorted.get();
        comparison.with_value(|c| {
            let mut order: Vec<usize> = (0..c.runs.len()).collect();
            order.sort_by(|&a, &b| {
                let (ka, kb) = (sort_key(&c.runs[a], &column), sort_key(&c.runs[b], &column));
                // Blanks last whichever way.
                let ordering = match (ka.0, kb.0) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => return std::cmp::Ordering::Less,
                    (None, Some(_)) => return std::cmp::Ordering::Greater,
                    (None, None) => ka.1.cmp(&kb.1),
                };
                if desc {
                    ordering.reverse()
                } else {
                    ordering
                }
            });
            order
                .into_iter()
                .map(|i| {
                    let run = &c.runs[i];
                    let cells = columns
                        .iter()
                        .skip(2)
                        .map(|column| {
                            let text = match column {
                                Column::Field(k) => field_text(run.fields.get(k)),
                                Column::Best(m) => metric_text(run.best.get(m).copied()),
                                Column::Last(m) => metric_text(run.last.get(m).copied()),
                                Column::Run | Column::Duration => String::new(),
                            };
                            view! { <td class="num">{text}</td> }
                        })
                        .collect_view();
                    let duration = run.summary.duration_secs;
                    view! {
                        <tr data-testid="compare-row" data-job=run.summary.id.to_string()>
                            <th scope="row">
                                <span class="swatch" style=format!("background:{}", colour(i))></span>
                                {label(run)}
                            </th>
                            <td class="num nowrap">{move || duration.map(|d| duration_text(i18n.get_locale(), d))}</td>
                            {cells}
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="compare-table">
                <thead><tr>{heading}</tr></thead>
                <tbody>{body}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// One axis of the parallel coordinates: its name and each run's position on it, 0 (bottom) to 1.
struct AxisOf {
    name: String,
    /// The axis' ends as text (bottom, top).
    ends: (String, String),
    at: Vec<Option<f64>>,
}

/// The axes: each differing field whose values are numbers (scaled between its extremes, on a log
/// scale when they span a factor of 100 or more, as learning rates do) or a few words (evenly
/// spaced, sorted), then the run's best score on the task's metric.
fn axes(comparison: &Comparison) -> Vec<AxisOf> {
    let runs = &comparison.runs;
    let mut axes = Vec::new();
    for field in &comparison.differing {
        let values: Vec<Option<&serde_json::Value>> =
            runs.iter().map(|r| r.fields.get(field)).collect();
        let numbers: Vec<Option<f64>> = values.iter().map(|v| v.and_then(|v| v.as_f64())).collect();
        if numbers.iter().all(Option::is_some) {
            axes.push(numeric_axis(field.clone(), &numbers));
        } else {
            let mut words: Vec<String> = values.iter().map(|v| field_text(*v)).collect();
            let at_of = words.clone();
            words.sort();
            words.dedup();
            let place = |w: &String| {
                let i = words.iter().position(|x| x == w).unwrap_or(0);
                match words.len() {
                    1 => 0.5,
                    n => i as f64 / (n - 1) as f64,
                }
            };
            axes.push(AxisOf {
                name: field.clone(),
                ends: (
                    words.first().cloned().unwrap_or_default(),
                    words.last().cloned().unwrap_or_default(),
                ),
                at: at_of.iter().map(|w| Some(place(w))).collect(),
            });
        }
    }
    let best: Vec<Option<f64>> = runs
        .iter()
        .map(|r| r.summary.best.as_ref().map(|b| b.value))
        .collect();
    let metric = runs
        .iter()
        .find_map(|r| r.summary.best.as_ref().map(|b| b.metric.clone()))
        .unwrap_or_else(|| "best".into());
    axes.push(numeric_axis(metric, &best));
    axes
}

fn numeric_axis(name: String, values: &[Option<f64>]) -> AxisOf {
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    let (lo, hi) = known
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let log = lo > 0.0 && hi / lo >= 100.0;
    let scale = |v: f64| if log { v.ln() } else { v };
    let at = values
        .iter()
        .map(|v| {
            v.map(|v| match hi > lo {
                true => (scale(v) - scale(lo)) / (scale(hi) - scale(lo)),
                false => 0.5,
            })
        })
        .collect();
    let end = |v: f64| match v {
        v if !v.is_finite() => String::new(),
        // 1e-5 rather than 0.0000: learning rates are this small.
        v if v != 0.0 && v.abs() < 1e-3 => format!("{v:e}"),
        v => format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
    };
    AxisOf {
        name,
        ends: (end(lo), end(hi)),
        at,
    }
}

#[component]
fn ParallelCoordinates(comparison: StoredValue<Comparison>) -> impl IntoView {
    let i18n = use_i18n();
    let axes = comparison.with_value(axes);
    // Room at the sides for an axis' name (centred on it), above for its name and top value.
    let (width, height, pad, side) = (160.0 * axes.len().max(2) as f64, 260.0, 36.0, 64.0);
    let x = |i: usize| side + i as f64 * (width - 2.0 * side) / (axes.len().max(2) - 1) as f64;
    let y = |at: f64| height - pad - at * (height - 2.0 * pad);
    let ticks = axes
        .iter()
        .enumerate()
        .map(|(i, axis)| {
            view! {
                <g class="pc-axis">
                    <line x1=x(i) x2=x(i) y1=y(0.0) y2=y(1.0) />
                    <text x=x(i) y=pad - 18.0 text-anchor="middle" class="pc-name">{axis.name.clone()}</text>
                    <text x=x(i) y=pad - 4.0 text-anchor="middle">{axis.ends.1.clone()}</text>
                    <text x=x(i) y=height - pad + 14.0 text-anchor="middle">{axis.ends.0.clone()}</text>
                </g>
            }
        })
        .collect_view();
    let lines = comparison.with_value(|c| {
        c.runs
            .iter()
            .enumerate()
            .map(|(r, run)| {
                // A run without a value on an axis (not scored yet) breaks its line there.
                let mut path = String::new();
                let mut pen_down = false;
                for (i, axis) in axes.iter().enumerate() {
                    match axis.at[r] {
                        Some(at) => {
                            path.push_str(&format!("{}{:.1},{:.1} ", if pen_down { "L" } else { "M" }, x(i), y(at)));
                            pen_down = true;
                        }
                        None => pen_down = false,
                    }
                }
                view! {
                    <path d=path stroke=colour(r) data-testid="parcoords-line" data-job=run.summary.id.to_string()>
                        <title>{label(run)}</title>
                    </path>
                }
            })
            .collect_view()
    });
    view! {
        <section class="card" aria-labelledby="compare-pc-title" data-testid="parcoords">
            <h2 id="compare-pc-title">{t!(i18n, compare.pc_title)}</h2>
            <p class="muted small">{t!(i18n, compare.pc_lead)}</p>
            <div class="table-wrap">
                <svg class="parcoords" viewBox=format!("0 0 {width} {height}") width=width height=height role="img"
                    aria-label=move || t_string!(i18n, compare.pc_title)>
                    {ticks}
                    <g class="pc-lines">{lines}</g>
                </svg>
            </div>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(
        id: i64,
        lr: f64,
        preset: &str,
        best: Option<f64>,
        series: &[(i64, f64, f64)],
    ) -> ComparedRun {
        let summary = serde_json::from_value(serde_json::json!({
            "id": id, "workspace_id": 1, "name": format!("r{id}"), "status": "succeeded", "status_reason": null,
            "status_message": null, "exit_code": 0, "executor": "local", "cluster": null, "cluster_job": null,
            "priority": 0, "gpus": 0, "gpu_indices": [], "step": 10, "total_steps": 10, "epoch": null,
            "queue_position": null, "created_by": null, "created_at": "", "started_at": null, "finished_at": null,
            "best": best.map(|v| serde_json::json!({ "metric": "macro_f1", "value": v, "step": 5 })),
        }))
        .unwrap();
        ComparedRun {
            summary,
            fields: BTreeMap::from([
                ("learning_rate".to_string(), serde_json::json!(lr)),
                ("preset".to_string(), serde_json::json!(preset)),
            ]),
            last: BTreeMap::new(),
            last_step: None,
            best: BTreeMap::new(),
            series: BTreeMap::from([("train_loss".to_string(), series.to_vec())]),
        }
    }

    #[test]
    fn curves_overlay_on_one_x_axis_in_order() {
        let runs = [
            run(1, 1e-5, "tiny", None, &[(1, 0.5, 0.9), (3, 1.5, 0.7)]),
            run(2, 1e-3, "nano", None, &[(2, 4.0, 0.8)]),
        ];
        assert_eq!(
            overlay(&runs, "train_loss", Axis::Step),
            vec![
                vec![Some(1.0), Some(0.9), None],
                vec![Some(2.0), None, Some(0.8)],
                vec![Some(3.0), Some(0.7), None],
            ]
        );
        let by_time = overlay(&runs, "train_loss", Axis::Time);
        assert_eq!(
            by_time.iter().map(|r| r[0]).collect::<Vec<_>>(),
            [Some(0.5), Some(1.5), Some(4.0)]
        );
        assert!(overlay(&runs, "lr", Axis::Step).is_empty());
    }

    #[test]
    fn parallel_axes_scale_numbers_words_and_the_best_score() {
        let comparison = Comparison {
            runs: vec![
                run(1, 1e-5, "tiny", Some(0.5), &[]),
                run(2, 1e-3, "nano", Some(0.9), &[]),
                run(3, 1e-4, "tiny", None, &[]),
            ],
            differing: vec!["learning_rate".into(), "preset".into()],
            series: vec![],
        };
        let axes = axes(&comparison);
        assert_eq!(axes.len(), 3);
        let lr = &axes[0];
        assert_eq!(lr.at[0], Some(0.0));
        assert_eq!(lr.at[1], Some(1.0));
        assert!(
            (lr.at[2].unwrap() - 0.5).abs() < 1e-9,
            "a log scale over a factor of 100"
        );
        assert_eq!(
            axes[1].at,
            [Some(1.0), Some(0.0), Some(1.0)],
            "words sorted: nano, tiny"
        );
        assert_eq!(axes[2].name, "macro_f1");
        assert_eq!(
            axes[2].at,
            [Some(0.0), Some(1.0), None],
            "not scored: no point"
        );
    }
}

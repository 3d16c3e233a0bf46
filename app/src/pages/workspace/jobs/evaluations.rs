//! Evaluations of checkpoints on datasets: for editors and owners a small form (checkpoint, dataset,
//! Evaluate), for everyone the results — status, accuracy, macro-F1 and, unfolded, the per-class scores
//! and the confusion matrix. Used on a job's page (its checkpoints) and on the Models page (all of them).
//! While an evaluation is queued or running the list is read again every few seconds.

use contracts::ids::{DatasetId, JobId, WorkspaceId};
use std::collections::BTreeMap;
use std::time::Duration;

use leptos::prelude::*;

use super::parts::metric_text;
use crate::api::{
    datasets::list_datasets,
    evaluations::{list_evaluations, EvaluateCheckpoint},
    jobs::list_clusters,
};
use crate::components::clusters::ClusterOptions;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::components::page::Loaded;
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::{
    CheckpointInfo, CheckpointState, DatasetSummary, EvaluationInfo, EvaluationStatus,
};

/// How often the list is read again while an evaluation is not over.
const POLL: Duration = Duration::from_secs(2);

pub fn status_text(locale: Locale, status: EvaluationStatus) -> &'static str {
    match status {
        EvaluationStatus::Queued => td_string!(locale, evaluations.status_queued),
        EvaluationStatus::Running => td_string!(locale, evaluations.status_running),
        EvaluationStatus::Succeeded => td_string!(locale, evaluations.status_succeeded),
        EvaluationStatus::Failed => td_string!(locale, evaluations.status_failed),
    }
}

/// A training step in `locale`'s words (`第 188 步`, `step 188`).
pub fn step_words(locale: Locale, step: i64) -> String {
    match locale {
        Locale::zh => format!("第 {step} 步"),
        Locale::en => format!("step {step}"),
    }
}

/// A checkpoint as the pickers and the results name it: `step 20`, or `tiny-run · step 20` where
/// checkpoints of several jobs are listed.
pub fn checkpoint_name(
    locale: Locale,
    jobs: Option<&BTreeMap<JobId, String>>,
    job_id: JobId,
    step: i64,
) -> String {
    let step = step_words(locale, step);
    match jobs {
        Some(names) => {
            let job = names
                .get(&job_id)
                .cloned()
                .unwrap_or_else(|| format!("#{job_id}"));
            format!("{job} · {step}")
        }
        None => step,
    }
}

/// Each cell's share of its gold row, for the heat of the confusion matrix (0 for an empty row).
pub fn row_shares(confusion: &[Vec<u64>]) -> Vec<Vec<f64>> {
    confusion
        .iter()
        .map(|row| {
            let total: u64 = row.iter().sum();
            row.iter()
                .map(|&n| {
                    if total == 0 {
                        0.0
                    } else {
                        n as f64 / total as f64
                    }
                })
                .collect()
        })
        .collect()
}

#[component]
pub fn EvaluationsCard(
    workspace_id: WorkspaceId,
    /// The checkpoints that can be picked (those whose files still exist are offered).
    #[prop(into)]
    checkpoints: Signal<Vec<CheckpointInfo>>,
    /// Only this job's checkpoints' evaluations (a job's page); every one on the Models page.
    #[prop(optional)]
    job_id: Option<JobId>,
    /// Job names by id, to name checkpoints where several jobs' are listed.
    #[prop(optional)]
    jobs: Option<BTreeMap<JobId, String>>,
    /// A job's training and dev datasets (a job's page): the form starts on the dev set, or on any
    /// dataset but the training one — what the model has learned from tells nothing new.
    #[prop(optional)]
    job_datasets: Option<(DatasetId, Option<DatasetId>)>,
    can_edit: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let jobs = StoredValue::new(jobs);
    let list = Resource::new(|| (), move |_| list_evaluations(workspace_id, job_id));
    // While one is queued or running, the list follows it.
    refetch_while(list, POLL, |e| !e.status.is_final());
    view! {
        <section class="card" aria-labelledby="evaluations-title" data-testid="evaluations">
            <h2 id="evaluations-title">{t!(i18n, evaluations.title)}</h2>
            <p class="hint">{t!(i18n, evaluations.hint)}</p>
            {can_edit.then(|| view! { <EvaluateForm workspace_id checkpoints jobs list job_datasets /> })}
            <Loaded load=move || async move { list.await } let:list>
                {if list.is_empty() {
                    view! { <p class="muted" data-testid="evaluations-empty">{t!(i18n, evaluations.empty)}</p> }.into_any()
                } else {
                    view! {
                        <DataTable testid="evaluations-table"
                            columns=columns!(evaluations: col_checkpoint, col_dataset, col_status, col_accuracy, col_macro_f1, col_rows, col_by)>
                            {list.into_iter().map(|e| view! { <EvaluationRows e jobs /> }).collect_view()}
                        </DataTable>
                    }
                    .into_any()
                }}
            </Loaded>
        </section>
    }
    .into_any()
}

/// Where the evaluate form starts among `list`: the job's dev set, else the first dataset that is not
/// its training set, else the first.
pub fn default_dataset(
    list: &[DatasetSummary],
    job_datasets: Option<(DatasetId, Option<DatasetId>)>,
) -> Option<DatasetId> {
    let (train, dev) = job_datasets.unzip();
    let dev = dev.flatten();
    list.iter()
        .find(|d| Some(d.id) == dev)
        .or_else(|| list.iter().find(|d| Some(d.id) != train))
        .or(list.first())
        .map(|d| d.id)
}

#[component]
fn EvaluateForm(
    workspace_id: WorkspaceId,
    checkpoints: Signal<Vec<CheckpointInfo>>,
    jobs: StoredValue<Option<BTreeMap<JobId, String>>>,
    /// Read again once an evaluation starts.
    list: Resource<Result<Vec<EvaluationInfo>, AppError>>,
    job_datasets: Option<(DatasetId, Option<DatasetId>)>,
) -> impl IntoView {
    let i18n = use_i18n();
    let datasets = Resource::new(|| (), move |_| list_datasets(workspace_id));
    // Clusters this server hands work to: none on most servers, and then the form does not ask.
    let clusters = Resource::new(|| (), |_| list_clusters());
    let cluster = RwSignal::new(String::new());
    let action = ServerAction::<EvaluateCheckpoint>::new();
    let checkpoint = RwSignal::new(String::new());
    let dataset = RwSignal::new(String::new());
    let error = RwSignal::new(None);
    on_answer(action, error, move |_| list.refetch());
    let usable = Memo::new(move |_| {
        checkpoints.with(|l| {
            l.iter()
                .filter(|c| c.deleted_at.is_none())
                .map(|c| (c.id, c.job_id, c.step, c.state() == CheckpointState::Best))
                .collect::<Vec<_>>()
        })
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        // An untouched select means its first option.
        let first_checkpoint = usable.with_untracked(|u| u.first().map(|c| c.0));
        let checkpoint_id = checkpoint.get_untracked().parse().ok().or(first_checkpoint);
        let first_dataset = datasets
            .get_untracked()
            .and_then(|r| r.ok())
            .and_then(|d| default_dataset(&d, job_datasets));
        let dataset_id = dataset.get_untracked().parse().ok().or(first_dataset);
        if let (Some(checkpoint_id), Some(dataset_id)) = (checkpoint_id, dataset_id) {
            action.dispatch(EvaluateCheckpoint {
                workspace_id,
                checkpoint_id,
                dataset_id,
                cluster: Some(cluster.get_untracked()).filter(|c| !c.is_empty()),
            });
        }
    };
    view! {
        <form class="form evaluate-form" data-testid="evaluate-form" on:submit=on_submit novalidate>
            <div class="form-grid">
                <div class="field">
                    <label for="evaluate-checkpoint">{t!(i18n, evaluations.checkpoint)}</label>
                    <select id="evaluate-checkpoint" data-testid="evaluate-checkpoint" on:change=move |ev| checkpoint.set(event_target_value(&ev))>
                        {move || usable.get().into_iter().map(|(id, job_id, step, best)| {
                            // Worded in the page's language as it is now: a language switch rewords it.
                            let name = move || jobs.with_value(|j| checkpoint_name(i18n.get_locale(), j.as_ref(), job_id, step));
                            view! {
                                <option value=id.to_string() selected=move || checkpoint.get() == id.to_string()>
                                    {move || if best { format!("{} ({})", name(), t_string!(i18n, checkpoints.best)) } else { name() }}
                                </option>
                            }
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="evaluate-dataset">{t!(i18n, evaluations.dataset)}</label>
                    <Transition fallback=|| view! { <select id="evaluate-dataset" disabled=true></select> }>
                        {move || Suspend::new(async move {
                            let list = datasets.await.unwrap_or_default();
                            let start = default_dataset(&list, job_datasets);
                            view! {
                                <select id="evaluate-dataset" data-testid="evaluate-dataset" on:change=move |ev| dataset.set(event_target_value(&ev))>
                                    {list.into_iter().map(|d| {
                                        let id = d.id.to_string();
                                        let is_start = Some(d.id) == start;
                                        let labels = d.label_distribution.keys().cloned().collect::<Vec<_>>().join(", ");
                                        view! {
                                            <option value=id.clone() selected=move || dataset.with(|chosen| if chosen.is_empty() { is_start } else { *chosen == id })>
                                                {format!("{} ({labels})", d.name)}
                                            </option>
                                        }
                                    }).collect_view()}
                                </select>
                            }
                        })}
                    </Transition>
                </div>
                <Transition>
                    {move || Suspend::new(async move {
                        let clusters = clusters.await.unwrap_or_default();
                        (!clusters.is_empty()).then(|| view! {
                            <div class="field">
                                <label for="evaluate-cluster">{t!(i18n, job_form.runs_on)}</label>
                                <select id="evaluate-cluster" data-testid="evaluate-cluster" on:change=move |ev| cluster.set(event_target_value(&ev))>
                                    <ClusterOptions clusters selected=String::new() />
                                </select>
                            </div>
                        })
                    })}
                </Transition>
            </div>
            <p class="hint">{t!(i18n, evaluations.labels_hint)}</p>
            <div class="actions">
                <button type="submit" class="button button-primary" data-testid="evaluate-submit"
                    disabled=move || action.pending().get() || usable.with(Vec::is_empty)>
                    {t!(i18n, evaluations.evaluate)}
                </button>
            </div>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
        </form>
    }
    .into_any()
}

/// One evaluation: its summary row and, once it succeeded, a row that unfolds the details.
#[component]
fn EvaluationRows(
    e: EvaluationInfo,
    jobs: StoredValue<Option<BTreeMap<JobId, String>>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let status = e.status;
    let name = jobs.with_value(|j| {
        checkpoint_name(
            i18n.get_locale_untracked(),
            j.as_ref(),
            e.job_id,
            e.checkpoint_step,
        )
    });
    let details = (status == EvaluationStatus::Succeeded).then(|| {
        let e = e.clone();
        view! {
            <tr class="evaluation-details">
                <td colspan="7">
                    <details data-testid="evaluation-details">
                        <summary>{t!(i18n, evaluations.details)}</summary>
                        <div class="report-grid">
                            <div>
                                <h3>{t!(i18n, evaluations.per_class)}</h3>
                                <PerClass e=e.clone() />
                            </div>
                            <div>
                                <h3>{t!(i18n, evaluations.confusion)}</h3>
                                <Confusion e />
                            </div>
                        </div>
                    </details>
                </td>
            </tr>
        }
    });
    let message = (status == EvaluationStatus::Failed)
        .then(|| e.status_message.clone())
        .flatten();
    view! {
        <tr data-testid="evaluation-row" data-id=e.id.get() data-status=status.as_str()>
            <th scope="row">{name}</th>
            <td>
                {e.dataset_name.clone()}
                {e.dataset_id.is_none().then(|| view! { <span class="muted">{" "}{t!(i18n, evaluations.dataset_deleted)}</span> })}
            </td>
            <td>
                <span class=format!("badge badge-eval badge-eval-{}", status.as_str()) data-testid="evaluation-status">
                    {move || status_text(i18n.get_locale(), status)}
                </span>
                {message.map(|m| view! { <p class="evaluation-message" data-testid="evaluation-message">{m}</p> })}
            </td>
            <td class="num" data-testid="evaluation-accuracy">{metric_text(e.accuracy)}</td>
            <td class="num" data-testid="evaluation-macro-f1">
                {metric_text(e.macro_f1)}
                {e.entities.map(|scores| view! {
                    <span class="muted small nowrap" data-testid="evaluation-entity-f1">
                        {" · "}{move || t_string!(i18n, checkpoints.entity_metrics, f1 = metric_text(Some(scores.f1))).to_string()}
                    </span>
                })}
            </td>
            <td class="num">{e.rows.map_or_else(|| "–".to_string(), |r| r.to_string())}</td>
            <td class="nowrap">{e.created_by.clone().map(|by| format!("{by} · "))}<Timestamp at=e.created_at.clone() /></td>
        </tr>
        {details}
    }
}

/// The scores of each label; a label the model never got right is marked, and named above the table.
#[component]
fn PerClass(e: EvaluationInfo) -> impl IntoView {
    let i18n = use_i18n();
    let missed: Vec<String> = (e.per_class.iter())
        .filter(|c| c.never_right())
        .map(|c| c.label.clone())
        .collect();
    let missed = (!missed.is_empty()).then(|| {
        let labels = move || match i18n.get_locale() {
            Locale::zh => missed.join("、"),
            Locale::en => missed.join(", "),
        };
        view! {
            <p class="notice notice-warning" data-testid="evaluation-zero-recall">
                {move || t_string!(i18n, evaluations.zero_recall, labels = labels()).to_string()}
            </p>
        }
    });
    view! {
        {missed}
        <table class="table table-compact" data-testid="evaluation-per-class">
            <thead>
                <tr>
                    <th scope="col">{t!(i18n, evaluations.label)}</th>
                    <th scope="col">{t!(i18n, evaluations.precision)}</th>
                    <th scope="col">{t!(i18n, evaluations.recall)}</th>
                    <th scope="col">"F1"</th>
                    <th scope="col">{t!(i18n, evaluations.support)}</th>
                </tr>
            </thead>
            <tbody>
                {e.per_class.into_iter().map(|c| {
                    let missed = c.never_right();
                    view! {
                        <tr class:zero-recall=missed data-zero-recall=missed.then_some("true")>
                            <th scope="row">{c.label}</th>
                            <td class="num">{metric_text(Some(c.precision))}</td>
                            <td class="num">{metric_text(Some(c.recall))}</td>
                            <td class="num">{metric_text(Some(c.f1))}</td>
                            <td class="num">{c.support}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// Rows are the gold labels, columns the predicted ones; each cell is shaded by its share of the row,
/// so the diagonal stands out when the model is right and a dark off-diagonal cell shows a confusion.
#[component]
fn Confusion(e: EvaluationInfo) -> impl IntoView {
    let i18n = use_i18n();
    let shares = row_shares(&e.confusion);
    let labels = e.labels.clone();
    view! {
        <table class="table table-compact confusion" data-testid="confusion-matrix">
            <caption class="hint">{t!(i18n, evaluations.confusion_axes)}</caption>
            <thead>
                <tr>
                    <td></td>
                    {labels.iter().map(|l| view! { <th scope="col">{l.clone()}</th> }).collect_view()}
                </tr>
            </thead>
            <tbody>
                {e.confusion.into_iter().zip(shares).zip(labels.clone()).map(|((row, share), label)| view! {
                    <tr>
                        <th scope="row">{label}</th>
                        {row.into_iter().zip(share).map(|(n, s)| view! {
                            <td class="num confusion-cell" data-testid="confusion-cell"
                                style=format!("--share: {:.3}", s)>{n}</td>
                        }).collect_view()}
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evaluate form starts on the job's dev set, else any set the job did not train on, else the
    /// first (issue 33: it started on the training set, whose score flatters the model).
    #[test]
    fn the_evaluation_starts_on_data_the_model_did_not_learn_from() {
        let set = |id: i64| {
            serde_json::from_value::<DatasetSummary>(serde_json::json!({
            "id": id, "workspace_id": 1, "name": format!("d{id}"), "file_name": "d.tsv", "format": "tsv",
            "container_path": "/workspace/d.tsv", "bytes": 1, "sha256": "", "rows": 1, "text_column": "text",
            "label_column": "label", "label_distribution": {}, "created_by": null, "created_at": "t"
        }))
        .unwrap()
        };
        let list = [set(1), set(2), set(3)];
        let (d1, d2, d3) = (DatasetId::new(1), DatasetId::new(2), DatasetId::new(3));
        assert_eq!(
            default_dataset(&list, Some((d1, Some(d3)))),
            Some(d3),
            "the dev set"
        );
        assert_eq!(
            default_dataset(&list, Some((d1, None))),
            Some(d2),
            "not the training set"
        );
        assert_eq!(
            default_dataset(&list, Some((d1, Some(DatasetId::new(9))))),
            Some(d2),
            "a dev set since deleted"
        );
        assert_eq!(
            default_dataset(&list[..1], Some((d1, None))),
            Some(d1),
            "the only one"
        );
        assert_eq!(default_dataset(&list, None), Some(d1));
        assert_eq!(default_dataset(&[], Some((d1, None))), None);
    }

    #[test]
    fn checkpoints_are_named_with_their_job_where_several_are_listed() {
        let jobs: BTreeMap<JobId, String> = [(JobId::new(3), "tiny-run".to_string())].into();
        assert_eq!(
            checkpoint_name(Locale::en, None, JobId::new(3), 20),
            "step 20"
        );
        assert_eq!(
            checkpoint_name(Locale::en, Some(&jobs), JobId::new(3), 20),
            "tiny-run · step 20"
        );
        assert_eq!(
            checkpoint_name(Locale::zh, Some(&jobs), JobId::new(4), 5),
            "#4 · 第 5 步"
        );
    }

    #[test]
    fn cells_are_shaded_by_their_share_of_the_gold_row() {
        assert_eq!(
            row_shares(&[vec![3, 1], vec![0, 0]]),
            vec![vec![0.75, 0.25], vec![0.0, 0.0]]
        );
        assert_eq!(
            status_text(Locale::en, EvaluationStatus::Running),
            "Running"
        );
    }
}

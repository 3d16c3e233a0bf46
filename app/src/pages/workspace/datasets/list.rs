//! `/w/{id}/datasets`: the workspace's datasets (rows, label distribution, size, sha256, when) and, for
//! editors and owners, the upload form, the one-click sample dataset and delete. A dataset that jobs use
//! cannot be deleted: the server's conflict is shown in the row's place.

use contracts::ids::{DatasetId, WorkspaceId};
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::upload::UploadForm;
use super::{dataset_href, percent, short_sha};
use crate::api::datasets::{list_datasets, AddSampleDataset, DeleteDataset};
use crate::components::empty_state::EmptyState;
use crate::components::form::action_error;
use crate::components::notice::ErrorNotice;
use crate::components::page::{list_or, InfoNote, Loaded};
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::environments::parts::bytes_text;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::error::AppError;
use contracts::task::{Task, TASKS};
use contracts::types::DatasetSummary;

#[component]
pub fn DatasetsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let datasets = Resource::new(move || current.id.get(), list_datasets);
    let load = move || async move { Ok((current.ws.await?, datasets.await)) };
    view! {
        <SectionPage section="datasets">
            <Loaded load let((ws, list))>
                {
                    let (workspace_id, can_edit) = (ws.id, ws.role.can_edit());
                    let empty = move || view! {
                        <EmptyState kind="datasets" title=move || t!(i18n, pages.datasets.empty_title) body=move || t!(i18n, datasets.empty_body) />
                    }
                    .into_any();
                    view! {
                        {if can_edit {
                            view! { <AddDatasets workspace_id /> }.into_any()
                        } else {
                            view! { <InfoNote testid="datasets-editor-only">{t!(i18n, datasets.editor_only)}</InfoNote> }.into_any()
                        }}
                        {list_or(list, empty, |list| view! { <DatasetsTable list workspace_id can_edit datasets /> }.into_any())}
                    }
                }
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

/// The upload form and the sample button; either opens the new dataset's page.
#[component]
fn AddDatasets(workspace_id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let sample = ServerAction::<AddSampleDataset>::new();
    let go = navigate.clone();
    Effect::new(move |_| {
        if let Some(Ok(detail)) = sample.value().get() {
            go(
                &dataset_href(workspace_id, detail.summary.id),
                Default::default(),
            );
        }
    });
    let sample_error = action_error(sample);
    view! {
        <section class="card" aria-labelledby="dataset-upload-title" data-testid="dataset-add">
            <div class="card-heading">
                <h2 id="dataset-upload-title">{t!(i18n, datasets.upload_title)}</h2>
                <div class="actions">
                    {TASKS.into_iter().map(|task| view! {
                        <button
                            type="button"
                            class="button button-small"
                            data-testid=sample_testid(task)
                            disabled=move || sample.pending().get()
                            on:click=move |_| { sample.dispatch(AddSampleDataset { workspace_id, task }); }
                        >
                            {move || match task {
                                Task::Classification => t_string!(i18n, datasets.add_sample).to_string(),
                                Task::Matching => t_string!(i18n, datasets.add_matching_sample).to_string(),
                                Task::Ner => t_string!(i18n, datasets.add_entities_sample).to_string(),
                            }}
                        </button>
                    }).collect_view()}
                </div>
            </div>
            <p class="hint">{t!(i18n, datasets.upload_hint)}</p>
            {move || sample_error.get().map(|err| view! { <ErrorNotice err /> })}
            <UploadForm workspace_id on_done=move |id| navigate(&dataset_href(workspace_id, id), Default::default()) />
        </section>
    }
    .into_any()
}

/// The sample button of `task`: `dataset-sample` for the first sample there was, else
/// `dataset-sample-<task>`.
fn sample_testid(task: Task) -> String {
    match task {
        Task::Classification => "dataset-sample".into(),
        other => format!("dataset-sample-{other}"),
    }
}

/// `negative 176 · positive 124`, most frequent first.
pub fn labels_text(distribution: &std::collections::BTreeMap<String, u64>) -> String {
    let mut labels: Vec<_> = distribution.iter().collect();
    labels.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    labels
        .into_iter()
        .map(|(label, n)| format!("{label} {n}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The distribution as one stacked bar (each label's share), with the numbers as text beside it.
#[component]
pub fn LabelStack(distribution: std::collections::BTreeMap<String, u64>) -> impl IntoView {
    let total: u64 = distribution.values().sum();
    let text = labels_text(&distribution);
    view! {
        <div class="label-stack-wrap">
            <div class="label-stack" aria-hidden="true">
                {distribution
                    .iter()
                    .enumerate()
                    .map(|(i, (label, n))| view! {
                        <span class=format!("label-seg label-color-{}", i % 6) style:width=percent(*n as usize, total as usize) title=format!("{label}: {n}")></span>
                    })
                    .collect_view()}
            </div>
            <span class="label-stack-text" data-testid="dataset-labels">{text}</span>
        </div>
    }
    .into_any()
}

#[component]
fn DatasetsTable(
    list: Vec<DatasetSummary>,
    workspace_id: WorkspaceId,
    can_edit: bool,
    /// Read again after a delete.
    datasets: Resource<Result<Vec<DatasetSummary>, AppError>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let delete = ServerAction::<DeleteDataset>::new();
    // Which row asked for deletion, and the error of the last attempt (shown in that row).
    let confirming = RwSignal::new(None::<DatasetId>);
    let failed = RwSignal::new(None::<(DatasetId, AppError)>);
    Effect::new(move |_| match delete.value().get() {
        Some(Ok(())) => {
            confirming.set(None);
            datasets.refetch();
        }
        Some(Err(err)) => {
            if let Some(id) = confirming.get_untracked() {
                failed.set(Some((id, err)));
            }
            confirming.set(None);
        }
        None => {}
    });
    let rows = list
        .into_iter()
        .map(|ds| {
            let (id, name) = (ds.id, ds.name.clone());
            let testid = format!("dataset-row-{}", ds.name);
            view! {
                <tr data-testid=testid data-id=id.get()>
                    <th scope="row">
                        <A href=dataset_href(workspace_id, id) attr:data-testid="dataset-link">{ds.name.clone()}</A>
                        <span class="muted small block">{ds.file_name.clone()}</span>
                    </th>
                    <td class="num" data-testid="dataset-rows">{ds.rows}</td>
                    <td class="labels-cell"><LabelStack distribution=ds.label_distribution.clone() /></td>
                    <td class="nowrap">{bytes_text(ds.bytes)}</td>
                    <td><code title=ds.sha256.clone()>{short_sha(&ds.sha256)}</code></td>
                    <td class="nowrap"><Timestamp at=ds.created_at.clone() /></td>
                    {can_edit.then(|| view! { <DeleteCell workspace_id id name delete confirming failed /> })}
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="datasets-table" columns=columns!(datasets: col_name, col_rows, col_labels, col_size, col_sha256, col_created)
            more=move || can_edit.then(|| view! { <th scope="col">{t!(i18n, datasets.col_actions)}</th> })>
            {rows}
        </DataTable>
    }
    .into_any()
}

/// Delete, asked in the row itself; a refusal (jobs use the dataset) shows in the row.
#[component]
fn DeleteCell(
    workspace_id: WorkspaceId,
    id: DatasetId,
    name: String,
    delete: ServerAction<DeleteDataset>,
    confirming: RwSignal<Option<DatasetId>>,
    failed: RwSignal<Option<(DatasetId, AppError)>>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <td class="nowrap">
            {move || if confirming.get() == Some(id) {
                view! {
                    <span class="confirm-inline" role="alertdialog" aria-label=t_string!(i18n, datasets.delete_confirm)>
                        <button type="button" class="button button-small button-danger" data-testid="dataset-delete-yes"
                            disabled=move || delete.pending().get()
                            on:click=move |_| { delete.dispatch(DeleteDataset { workspace_id, dataset_id: id }); }>
                            {t!(i18n, datasets.delete_yes)}
                        </button>
                        <button type="button" class="button button-small button-ghost" on:click=move |_| confirming.set(None)>
                            {t!(i18n, common.cancel)}
                        </button>
                    </span>
                }
                .into_any()
            } else {
                let name = name.clone();
                view! {
                    <button type="button" class="button button-small button-danger-ghost" data-testid="dataset-delete"
                        aria-label=move || t_string!(i18n, datasets.delete_aria, name = name.clone()).to_string()
                        on:click=move |_| { failed.set(None); confirming.set(Some(id)); }>
                        {t!(i18n, datasets.delete)}
                    </button>
                }
                .into_any()
            }}
            {move || failed.get().filter(|(row, _)| *row == id).map(|(_, err)| view! {
                <div class="row-error"><ErrorNotice err /></div>
            })}
        </td>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_most_frequent_first() {
        let d = [
            ("positive".to_string(), 124u64),
            ("negative".to_string(), 176),
        ]
        .into();
        assert_eq!(labels_text(&d), "negative 176 · positive 124");
    }
}

//! `/w/{id}/datasets/{ds}`: one dataset — what it is (file, format, columns, size, sha256, where jobs
//! find it), a download link, the validation report, and a preview of its first rows. Editors also get
//! "train on it" (the job form with this dataset chosen) and delete.

use contracts::ids::{DatasetId, WorkspaceId};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::file_url;
use super::report::ReportView;
use crate::api::datasets::{get_dataset, DeleteDataset};
use crate::components::confirm::{AskButton, Confirm};
use crate::components::form::action_error;
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, PageHeader};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::environments::parts::bytes_text;
use crate::pages::workspace::{section_heading, use_detail};
use contracts::types::{DatasetDetail, DatasetPreview};

#[component]
pub fn DatasetPage() -> impl IntoView {
    let detail = use_detail("ds", get_dataset);
    view! {
        <div class="page">
            <Loaded load=move || async move { detail.await } failed=section_heading("datasets") let:detail>
                <DatasetView detail />
            </Loaded>
        </div>
    }
}

#[component]
fn DatasetView(detail: DatasetDetail) -> impl IntoView {
    let i18n = use_i18n();
    let DatasetDetail {
        summary,
        report,
        preview,
        can_edit,
    } = detail;
    let (ws, id, task) = (summary.workspace_id, summary.id, summary.task);
    let name = summary.name.clone();
    let title = name.clone();
    let lead = {
        let (rows, format) = (summary.rows, summary.format.clone());
        move || {
            t_string!(
                i18n,
                dataset_detail.lead,
                rows = rows,
                format = format.clone()
            )
            .to_string()
        }
    };
    view! {
        <Title text=name.clone() />
        <p class="breadcrumb">
            <A href=format!("/w/{ws}/datasets") attr:data-testid="dataset-back">"← "{t!(i18n, dataset_detail.back)}</A>
        </p>
        <PageHeader title=move || title.clone() lead=lead />
        <section class="card" aria-labelledby="dataset-file-title" data-testid="dataset-facts">
            <div class="card-heading">
                <h2 id="dataset-file-title">{t!(i18n, dataset_detail.file_title)}</h2>
                <a class="button button-small" href=file_url(ws, id) download=summary.file_name.clone() data-testid="dataset-download" rel="external">
                    {t!(i18n, dataset_detail.download)}
                </a>
            </div>
            <dl class="facts">
                <div><dt>{t!(i18n, dataset_detail.file)}</dt><dd><code>{summary.file_name.clone()}</code></dd></div>
                <div><dt>{t!(i18n, dataset_detail.size)}</dt><dd>{bytes_text(summary.bytes)}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.task)}</dt><dd data-testid="dataset-task" data-task=summary.task.as_str()>{move || crate::i18n::task_name(i18n.get_locale(), task)}</dd></div>
                <div><dt>{t!(i18n, dataset_detail.columns)}</dt><dd>
                    <code>{summary.text_column.clone()}</code>
                    {summary.pair_column.clone().map(|pair| view! { " · "<code>{pair}</code> })}
                    " · "<code>{summary.label_column.clone()}</code>
                </dd></div>
                {(!summary.label_names.is_empty()).then(|| {
                    let names = summary
                        .label_names
                        .iter()
                        .map(|(value, name)| format!("{value} → {name}"))
                        .collect::<Vec<_>>()
                        .join(" · ");
                    view! { <div><dt>{t!(i18n, dataset_detail.label_names)}</dt><dd data-testid="dataset-label-names">{names}</dd></div> }
                })}
                <div><dt>{t!(i18n, dataset_detail.created)}</dt><dd><Timestamp at=summary.created_at.clone() />{summary.created_by.clone().map(|by| format!(" · {by}"))}</dd></div>
                <div class="facts-wide"><dt>"sha256"</dt><dd><code data-testid="dataset-sha256">{summary.sha256.clone()}</code></dd></div>
                <div class="facts-wide"><dt>{t!(i18n, dataset_detail.container_path)}</dt><dd><code>{summary.container_path.clone()}</code></dd></div>
            </dl>
            {can_edit.then(|| view! { <DatasetActions workspace_id=ws dataset_id=id /> })}
        </section>
        <ReportView report />
        <PreviewTable preview />
    }
    .into_any()
}

#[component]
fn DatasetActions(workspace_id: WorkspaceId, dataset_id: DatasetId) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let delete = ServerAction::<DeleteDataset>::new();
    let confirming = RwSignal::new(false);
    let list = format!("/w/{workspace_id}/datasets");
    Effect::new(move |_| {
        if let Some(Ok(())) = delete.value().get() {
            navigate(&list, Default::default());
        }
    });
    let error = action_error(delete);
    view! {
        <div class="actions">
            <A href=format!("/w/{workspace_id}/jobs/new?dataset={dataset_id}") attr:class="button button-primary" attr:data-testid="dataset-train">
                {t!(i18n, dataset_detail.train)}
            </A>
            <AskButton name="dataset-delete" open=confirming>{t!(i18n, datasets.delete)}</AskButton>
        </div>
        <Confirm name="dataset-delete" open=confirming busy=delete.pending() question=move || t!(i18n, datasets.delete_confirm)
            yes=move || t!(i18n, datasets.delete_yes)
            on_yes=move || { delete.dispatch(DeleteDataset { workspace_id, dataset_id }); confirming.set(false); } />
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

#[component]
fn PreviewTable(preview: DatasetPreview) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section aria-labelledby="preview-title">
            <h2 id="preview-title">{t!(i18n, dataset_detail.preview_title)}</h2>
            <div class="table-wrap">
                <table class="table preview" data-testid="dataset-preview" translate="no">
                    <thead>
                        <tr>
                            <th scope="col">"#"</th>
                            {preview.columns.into_iter().map(|c| view! { <th scope="col">{c}</th> }).collect_view()}
                        </tr>
                    </thead>
                    <tbody>
                        {preview
                            .rows
                            .into_iter()
                            .enumerate()
                            .map(|(i, row)| view! {
                                <tr data-testid="preview-row">
                                    <td class="num muted">{i + 1}</td>
                                    {row.into_iter().map(|cell| view! { <td>{cell}</td> }).collect_view()}
                                </tr>
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

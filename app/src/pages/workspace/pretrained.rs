//! Pretrained models on the Models page: the model directories the workspace uploaded to fine-tune from
//! (name, shape from their config.json, size, sha256), an upload form for editors — a `.tar` sent with
//! upload progress, checked by the trainer on the server, its refusal shown with the reason — and
//! delete. A PaddleNLP directory is converted on the server; its row says so and opens onto the
//! conversion report (what was mapped, and how closely the result answers as PaddleNLP computes), so a
//! team can see why to trust it. Jobs pick them in the job form's base-model choice.

use contracts::ids::WorkspaceId;
use leptos::prelude::*;

use crate::api::pretrained::{list_pretrained_models, DeletePretrainedModel};
use crate::components::confirm::Confirm;
use crate::components::form::on_answer;
use crate::components::http;
use crate::components::notice::ErrorNotice;
use crate::components::page::{list_or, Loaded};
use crate::components::table::{columns, DataTable, HiddenHeading, RowAction};
use crate::components::time::Timestamp;
use crate::components::upload::{Upload, UploadProgress};
use crate::i18n::*;
use crate::pages::workspace::datasets::short_sha;
use crate::pages::workspace::environments::parts::bytes_text;
use crate::pages::workspace::use_current_workspace;
use contracts::error::AppError;
use contracts::types::{PaddleImport, ParityOutput, PretrainedModel};

/// `bert · 12 layers · hidden 768 · vocabulary 21128`, from what its config.json says.
pub fn shape_text(locale: Locale, model: &PretrainedModel) -> String {
    let c = &model.config;
    let mut parts = vec![c["model_type"].as_str().unwrap_or("?").to_string()];
    let zh = locale == Locale::zh;
    if let Some(n) = c["num_hidden_layers"].as_u64() {
        parts.push(if zh {
            format!("{n} 层")
        } else {
            format!("{n} layers")
        });
    }
    if let Some(n) = c["hidden_size"].as_u64() {
        parts.push(if zh {
            format!("隐藏层 {n}")
        } else {
            format!("hidden {n}")
        });
    }
    if let Some(n) = c["vocab_size"].as_u64() {
        parts.push(if zh {
            format!("词表 {n}")
        } else {
            format!("vocabulary {n}")
        });
    }
    parts.join(" · ")
}

/// Its resources are made when the page is, not inside a suspended branch: a resource created in a
/// branch that resolves later gets a different place in the server's order than in the browser's, and
/// hydration then reads another resource's data.
#[component]
pub fn PretrainedModels(workspace_id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let list = Resource::new(|| (), move |_| list_pretrained_models(workspace_id));
    let delete = ServerAction::<DeletePretrainedModel>::new();
    let delete_error = RwSignal::new(None::<AppError>);
    on_answer(delete, delete_error, move |()| list.refetch());
    let load = move || async move {
        let can_edit = current.ws.await.is_ok_and(|ws| ws.role.can_edit());
        Ok((can_edit, list.await))
    };
    view! {
        <section class="card" aria-labelledby="pretrained-title" data-testid="pretrained-models">
            <h2 id="pretrained-title">{t!(i18n, pretrained.title)}</h2>
            <p class="hint">{t!(i18n, pretrained.hint)}</p>
            {move || delete_error.get().map(|err| view! { <ErrorNotice err /> })}
            <Loaded load let((can_edit, models))>
                {
                    let empty = || view! { <p class="muted" data-testid="pretrained-empty">{t!(i18n, pretrained.empty)}</p> }.into_any();
                    view! {
                        {can_edit.then(|| view! { <UploadModel workspace_id on_done=move || list.refetch() /> })}
                        {list_or(models, empty, |models| view! { <ModelsTable models workspace_id can_edit delete /> }.into_any())}
                    }
                }
            </Loaded>
        </section>
    }
    .into_any()
}

#[component]
fn ModelsTable(
    models: Vec<PretrainedModel>,
    workspace_id: WorkspaceId,
    can_edit: bool,
    delete: ServerAction<DeletePretrainedModel>,
) -> impl IntoView {
    let i18n = use_i18n();
    let rows = models
        .into_iter()
        .map(|m| {
            let (id, name) = (m.id, m.name.clone());
            let shaped = m.clone();
            let span = if can_edit { 6 } else { 5 };
            let report = m.paddle_import.clone().map(|report| view! {
                <tr class="detail-row" data-testid="paddle-report-row" data-name=name.clone()>
                    <td colspan=span><PaddleReport report /></td>
                </tr>
            });
            let imported = m.paddle_import.is_some();
            view! {
                <tr data-testid="pretrained-row" data-id=id.get() data-name=name.clone()>
                    <th scope="row">
                        {name.clone()}
                        {imported.then(|| view! { <span class="badge" data-testid="paddle-badge">{t!(i18n, pretrained.paddle_badge)}</span> })}
                        <div class="muted"><code>{m.container_path.clone()}</code></div>
                    </th>
                    <td>{move || shape_text(i18n.get_locale(), &shaped)}</td>
                    <td class="nowrap">{bytes_text(m.bytes)}</td>
                    <td><code title=m.sha256.clone()>{short_sha(&m.sha256)}</code></td>
                    <td class="nowrap"><Timestamp at=m.created_at.clone() />{m.created_by.clone().map(|by| format!(" · {by}"))}</td>
                    {can_edit.then(|| {
                        // Asked first: the files cannot be brought back.
                        let confirming = RwSignal::new(false);
                        let name = name.clone();
                        view! {
                            <td>
                                <RowAction testid="pretrained-delete" pending=delete.pending() on_click=move || confirming.set(true)>
                                    {t!(i18n, pretrained.delete)}
                                </RowAction>
                                <Confirm name="pretrained-delete" open=confirming busy=delete.pending()
                                    question=move || t_string!(i18n, pretrained.delete_confirm, name = name.clone()).to_string()
                                    yes=move || t!(i18n, pretrained.delete_yes)
                                    on_yes=move || { delete.dispatch(DeletePretrainedModel { workspace_id, model_id: id }); confirming.set(false); } />
                            </td>
                        }
                    })}
                </tr>
                {report}
            }
        })
        .collect_view();
    view! {
        <DataTable testid="pretrained-table" columns=columns!(pretrained: col_name, col_model, col_size, "sha256", col_uploaded)
            more=move || can_edit.then(|| view! { <HiddenHeading>{t!(i18n, pretrained.delete)}</HiddenHeading> })>
            {rows}
        </DataTable>
    }
}

/// `4.9e-7`: differences this small read best in scientific notation.
fn figure(x: f64) -> String {
    format!("{x:.1e}")
}

/// What a PaddleNLP import did: structure, labels and types, the tensors mapped (the full table behind a
/// disclosure), and the parity figures per sample text.
#[component]
fn PaddleReport(report: PaddleImport) -> impl IntoView {
    let i18n = use_i18n();
    let transposed = report.tensors.iter().filter(|t| t.transposed).count();
    let count = report.tensors.len();
    let (diff, tol) = (
        figure(report.parity.max_abs_diff),
        figure(report.parity.tolerance),
    );
    let PaddleImport {
        architecture,
        task,
        unused,
        labels,
        saved_as,
        hidden_act,
        tensors,
        parity,
        ..
    } = report;
    let unused = unused.join(", ");
    let dtype = saved_as.join(", ");
    let bare = labels.is_empty();
    let labels = labels.join(", ");
    let samples = parity
        .samples
        .into_iter()
        .map(|s| {
            let text = match s.pair {
                Some(pair) => format!("{} ／ {pair}", s.text),
                None => s.text,
            };
            view! {
                <tr data-testid="paddle-sample">
                    <td>{text}</td>
                    <td class="num">{s.tokens}</td>
                    <td class="num"><code>{figure(s.max_abs_diff)}</code></td>
                </tr>
            }
        })
        .collect_view();
    let mapping = tensors
        .into_iter()
        .map(|t| {
            let shape = format!("{:?}", t.shape);
            view! {
                <tr data-testid="paddle-tensor">
                    <td><code>{t.paddle}</code></td>
                    <td><code>{t.hugging_face}</code></td>
                    <td class="nowrap"><code>{shape}</code></td>
                    <td class="nowrap">{t.transposed.then_some(t!(i18n, pretrained.transposed))}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="paddle-report" data-testid="paddle-report">
            <summary>{t!(i18n, pretrained.paddle_report)}</summary>
            <p data-testid="paddle-summary">
                {move || {
                    let (arch, dtype, act) = (architecture.clone(), dtype.clone(), hidden_act.clone());
                    view! { {t!(i18n, pretrained.paddle_summary, arch = view! { <code>{arch}</code> }, dtype = view! { <code>{dtype}</code> }, act = view! { <code>{act}</code> })} }
                }}
            </p>
            <p data-testid="paddle-labels">
                {move || if bare {
                    t_string!(i18n, pretrained.paddle_bare).to_string()
                } else {
                    t_string!(i18n, pretrained.paddle_labels, labels = labels.clone()).to_string()
                }}
                {task.map(|task| view! { " · " <span data-testid="paddle-task" data-task=task.as_str()>{move || task_name(i18n.get_locale(), task)}</span> })}
            </p>
            {(!unused.is_empty()).then(|| view! {
                <p data-testid="paddle-unused">{move || t_string!(i18n, pretrained.paddle_unused, names = unused.clone()).to_string()}</p>
            })}
            <p data-testid="paddle-tensors">{move || t_string!(i18n, pretrained.paddle_tensors, count = count, transposed = transposed).to_string()}</p>
            <p data-testid="paddle-parity">
                {move || match parity.compared {
                    ParityOutput::Logits => t_string!(i18n, pretrained.paddle_parity_logits, diff = diff.clone(), tol = tol.clone()).to_string(),
                    ParityOutput::Pooled => t_string!(i18n, pretrained.paddle_parity_pooled, diff = diff.clone(), tol = tol.clone()).to_string(),
                }}
            </p>
            <table class="table">
                <thead><tr>
                    <th scope="col">{t!(i18n, pretrained.col_sample)}</th>
                    <th scope="col" class="num">{t!(i18n, pretrained.col_tokens)}</th>
                    <th scope="col" class="num">{t!(i18n, pretrained.col_diff)}</th>
                </tr></thead>
                <tbody>{samples}</tbody>
            </table>
            <details data-testid="paddle-mapping">
                <summary>{t!(i18n, pretrained.paddle_mapping)}</summary>
                <table class="table">
                    <thead><tr>
                        <th scope="col">{t!(i18n, pretrained.col_paddle)}</th>
                        <th scope="col">{t!(i18n, pretrained.col_hf)}</th>
                        <th scope="col">{t!(i18n, pretrained.col_shape)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, pretrained.transposed)}</span></th>
                    </tr></thead>
                    <tbody>{mapping}</tbody>
                </table>
            </details>
        </details>
    }
}

/// Name and `.tar` file; sent as the raw body with progress, then checked on the server.
#[component]
fn UploadModel(workspace_id: WorkspaceId, #[prop(into)] on_done: Callback<()>) -> impl IntoView {
    let i18n = use_i18n();
    let name = RwSignal::new(String::new());
    let upload = Upload::new();
    let error = RwSignal::new(None::<AppError>);
    let file_input = NodeRef::<leptos::html::Input>::new();
    let on_file = move |_| {
        if let Some(p) = http::chosen(file_input) {
            if name.get_untracked().trim().is_empty() {
                name.set(p.name.trim_end_matches(".tar").to_string());
            }
        }
        error.set(None);
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let missing = td_string!(i18n.get_locale_untracked(), pretrained.err_no_file);
        let Some(picked) = upload.pick(file_input, missing, error) else {
            return;
        };
        let url = format!(
            "/api/v1/workspaces/{workspace_id}/pretrained-models/upload?{}",
            http::query(&[
                ("name", name.get_untracked().trim()),
                ("filename", &picked.name)
            ])
        );
        upload.send(&url, &picked, error, move |answer| {
            if answer.status == 201 {
                name.set(String::new());
                on_done.run(());
            } else {
                error.set(Some(answer.error()));
            }
        });
    };
    view! {
        <form class="form pretrained-upload" data-testid="pretrained-upload-form" on:submit=on_submit novalidate>
            <div class="form-grid">
                <div class="field">
                    <label for="pretrained-name">{t!(i18n, pretrained.name)}</label>
                    <input id="pretrained-name" data-testid="pretrained-name" autocomplete="off" maxlength="64"
                        prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                </div>
                <div class="field">
                    <label for="pretrained-file">{t!(i18n, pretrained.file)}</label>
                    <input id="pretrained-file" data-testid="pretrained-file" type="file" accept=".tar,application/x-tar"
                        node_ref=file_input on:change=on_file />
                </div>
            </div>
            <div class="actions">
                <button type="submit" class="button button-primary" data-testid="pretrained-upload"
                    disabled=move || upload.busy().get()>
                    {t!(i18n, pretrained.upload)}
                </button>
            </div>
            <UploadProgress upload testid="pretrained-progress" processing=move || t!(i18n, pretrained.checking) />
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_described_by_what_its_config_says() {
        let mut m = PretrainedModel {
            id: contracts::ids::PretrainedId::new(1),
            workspace_id: WorkspaceId::new(1),
            name: "bert".into(),
            file_name: "bert.tar".into(),
            sha256: "ab".into(),
            container_path: "/workspace/models/1".into(),
            bytes: 1,
            config: serde_json::json!({ "model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768, "vocab_size": 21128 }),
            paddle_import: None,
            created_by: None,
            created_at: "2026-12-03T00:00:00Z".into(),
        };
        assert_eq!(
            shape_text(Locale::en, &m),
            "bert · 12 layers · hidden 768 · vocabulary 21128"
        );
        assert_eq!(
            shape_text(Locale::zh, &m),
            "bert · 12 层 · 隐藏层 768 · 词表 21128"
        );
        m.config = serde_json::json!({});
        assert_eq!(shape_text(Locale::en, &m), "?");
    }
}

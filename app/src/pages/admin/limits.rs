//! The admin page's limits: the caps every workspace and user works under (running environments,
//! endpoint replicas, uploads and live streams at once) and each workspace's GPU quota beside the GPUs
//! it holds now. The REST API sets the same (`PATCH /api/v1/admin/settings`,
//! `PUT /api/v1/admin/workspaces/{id}/gpu-quota`); a refused value keeps what was typed, under its
//! error.

use leptos::prelude::*;

use crate::api::admin::{instance_settings, list_gpu_quotas, SetCaps, SetGpuQuota};
use crate::components::notice::ErrorNotice;
use crate::components::page::Loaded;
use crate::components::table::{columns, DataTable};
use crate::i18n::*;
use contracts::types::{WorkspaceGpuQuota, MAX_CAP, MAX_GPU_QUOTA};

#[component]
pub fn Caps() -> impl IntoView {
    let i18n = use_i18n();
    let save = ServerAction::<SetCaps>::new();
    // Read again after a save that took; a refused one leaves the form as it was typed.
    let settings = Resource::new(
        move || save.value().get().and_then(Result::ok),
        |_| instance_settings(),
    );
    view! {
        <section class="card" aria-labelledby="caps-title" data-testid="caps">
            <h2 id="caps-title">{t!(i18n, admin.caps_title)}</h2>
            <p class="hint">{t!(i18n, admin.caps_hint)}</p>
            {move || save.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { settings.await } let:s>
                // The server's checks say what is wrong, in the page's language (not the browser's tooltip).
                <ActionForm action=save attr:class="form" attr:data-testid="caps-form" attr:novalidate=true>
                    <CapField name="max_running_environments" value=s.max_running_environments
                        label=move || t_string!(i18n, admin.cap_max_running_environments).to_string() />
                    <CapField name="max_replicas" value=s.max_replicas
                        label=move || t_string!(i18n, admin.cap_max_replicas).to_string() />
                    <CapField name="max_uploads_per_user" value=s.max_uploads_per_user
                        label=move || t_string!(i18n, admin.cap_max_uploads_per_user).to_string() />
                    <CapField name="max_streams_per_user" value=s.max_streams_per_user
                        label=move || t_string!(i18n, admin.cap_max_streams_per_user).to_string() />
                    <button type="submit" class="button" data-testid="caps-save"
                        disabled=move || save.pending().get()>{t!(i18n, admin.caps_save)}</button>
                </ActionForm>
            </Loaded>
        </section>
    }
}

/// One cap's field: `name` is the setting's (and the server function's argument).
#[component]
fn CapField(name: &'static str, value: u32, #[prop(into)] label: Signal<String>) -> impl IntoView {
    let id = format!("cap-{name}");
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <input id=id name=name type="number" inputmode="numeric" min="1" max=MAX_CAP.to_string()
                value=value.to_string() required=true data-testid=format!("cap-{name}") />
        </div>
    }
}

#[component]
pub fn GpuQuotas() -> impl IntoView {
    let i18n = use_i18n();
    let save = ServerAction::<SetGpuQuota>::new();
    let quotas = Resource::new(
        move || save.value().get().and_then(Result::ok),
        |_| list_gpu_quotas(),
    );
    view! {
        <section class="card" aria-labelledby="quotas-title" data-testid="gpu-quotas">
            <h2 id="quotas-title">{t!(i18n, admin.quotas_title)}</h2>
            <p class="hint">{t!(i18n, admin.quotas_hint)}</p>
            {move || save.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { quotas.await } let:list>
                <DataTable testid="gpu-quotas-table"
                    columns=columns!(admin: quotas_col_workspace, quotas_col_held, quotas_col_quota, quotas_col_change)>
                    {list.into_iter().map(|row| view! { <QuotaRow row save /> }).collect_view()}
                </DataTable>
            </Loaded>
        </section>
    }
}

#[component]
fn QuotaRow(row: WorkspaceGpuQuota, save: ServerAction<SetGpuQuota>) -> impl IntoView {
    let i18n = use_i18n();
    let form_id = format!("gpu-quota-{}", row.workspace_id);
    let workspace = row.workspace.clone();
    // The field named with its workspace for screen readers, in the page's language.
    let label = move || format!("{} · {workspace}", t_string!(i18n, admin.quotas_col_quota));
    view! {
        <tr data-testid="gpu-quota" data-workspace=row.workspace.clone()>
            <th scope="row">{row.workspace.clone()}</th>
            <td class="num" data-testid="gpu-quota-held">{row.gpus_held}</td>
            <td><input class="input-inline" form=form_id.clone() name="max_gpus" type="number" inputmode="numeric"
                min="0" max=MAX_GPU_QUOTA.to_string() value=row.max_gpus.map(|n| n.to_string()).unwrap_or_default()
                aria-label=label placeholder=move || t_string!(i18n, admin.quotas_none).to_string()
                data-testid="gpu-quota-max" /></td>
            <td>
                <ActionForm action=save attr:id=form_id attr:novalidate=true>
                    <input type="hidden" name="workspace_id" value=row.workspace_id.get() />
                    <button type="submit" class="button button-small" data-testid="gpu-quota-save"
                        disabled=move || save.pending().get()>{t!(i18n, admin.quota_save)}</button>
                </ActionForm>
            </td>
        </tr>
    }
}

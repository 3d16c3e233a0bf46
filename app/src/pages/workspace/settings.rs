//! Settings: rename or delete the workspace (owners), and the way to personal API tokens. Deleting
//! asks for the workspace's name to be typed, the usual guard against a slip of the mouse.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api::workspaces::{DeleteWorkspace, RenameWorkspace};
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::notice::ErrorNotice;
use crate::components::page::{InfoNote, Loaded};
use crate::components::workspaces::use_workspace_list;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::error::AppError;
use contracts::types::{Role, WorkspaceSummary};

#[component]
pub fn SettingsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    // Created here, not in the form: a successful rename refetches the workspace, which re-creates
    // the form, and the confirmation must survive that.
    let rename = ServerAction::<RenameWorkspace>::new();
    let workspaces = use_workspace_list();
    Effect::new(move |_| {
        if rename.value().with(|v| matches!(v, Some(Ok(_)))) {
            workspaces.refresh();
        }
    });
    let load = move || async move { current.ws.await };
    view! {
        <SectionPage section="settings">
            <Loaded load let:ws>
                {if ws.role == Role::Owner {
                    view! {
                        <RenameForm ws=ws.clone() rename />
                        <DeleteForm ws />
                    }
                    .into_any()
                } else {
                    view! { <InfoNote testid="settings-owner-only">{t!(i18n, settings.owner_only)}</InfoNote> }.into_any()
                }}
            </Loaded>
            <section class="card" aria-labelledby="tokens-title">
                <h2 id="tokens-title">{t!(i18n, settings.tokens_title)}</h2>
                <p>{t!(i18n, settings.tokens_body)}</p>
                <A href="/settings/tokens" attr:class="button button-ghost" attr:data-testid="settings-tokens-link">
                    {t!(i18n, settings.tokens_link)}" →"
                </A>
            </section>
        </SectionPage>
    }
}

#[component]
fn RenameForm(ws: WorkspaceSummary, rename: ServerAction<RenameWorkspace>) -> impl IntoView {
    let i18n = use_i18n();
    let error = action_error(rename);
    let done = Signal::derive(move || rename.value().with(|v| matches!(v, Some(Ok(_)))));
    view! {
        <section class="card" aria-labelledby="rename-title">
            <h2 id="rename-title">{t!(i18n, settings.rename_title)}</h2>
            <ActionForm action=rename attr:class="form form-inline" attr:data-testid="rename-form" attr:novalidate=true>
                <input type="hidden" name="workspace_id" value=ws.id.get() />
                <FormError error fields=&["name"] />
                <Field name="name" id="rename-name" label=move || t!(i18n, workspace.name_label)
                    value=ws.name required=true maxlength=64 error />
                <SubmitButton pending=rename.pending() testid="rename-submit">
                    {t!(i18n, settings.rename_button)}
                </SubmitButton>
            </ActionForm>
            <p class="notice notice-success" role="status" data-testid="rename-done" hidden=move || !done.get()>
                {t!(i18n, settings.renamed)}
            </p>
        </section>
    }
}

#[component]
fn DeleteForm(ws: WorkspaceSummary) -> impl IntoView {
    let i18n = use_i18n();
    let workspaces = use_workspace_list();
    let delete = ServerAction::<DeleteWorkspace>::new();
    let confirm = RwSignal::new(String::new());
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(())) = delete.value().get() {
            workspaces.refresh();
            navigate("/", Default::default());
        }
    });
    let workspace_id = ws.id;
    let name = ws.name.clone();
    // The button stays off until the workspace's name is typed exactly.
    let typed = Signal::derive(move || confirm.get().trim() == name);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if typed.get_untracked() {
            delete.dispatch(DeleteWorkspace { workspace_id });
        }
    };
    let server_error = action_error(delete);
    view! {
        <section class="card card-danger" aria-labelledby="delete-title">
            <h2 id="delete-title">{t!(i18n, settings.delete_title)}</h2>
            <p>{t!(i18n, settings.delete_body)}</p>
            <form class="form form-inline" data-testid="delete-form" on:submit=on_submit novalidate>
                <div class="field">
                    <label for="delete-confirm">{t!(i18n, settings.delete_confirm)}" "<strong>{ws.name.clone()}</strong></label>
                    <input
                        id="delete-confirm"
                        data-testid="delete-confirm"
                        autocomplete="off"
                        on:input=move |ev| confirm.set(event_target_value(&ev))
                        prop:value=move || confirm.get()
                    />
                </div>
                <SubmitButton pending=delete.pending() testid="delete-submit" danger=true blocked=Signal::derive(move || !typed.get())>
                    {t!(i18n, settings.delete_button)}
                </SubmitButton>
            </form>
            {move || server_error.get().map(|err: AppError| view! { <ErrorNotice err /> })}
        </section>
    }
}

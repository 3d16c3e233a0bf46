//! The signed-in frame (skip link, header, main landmark), `/` which sends the visitor to their first
//! workspace or to workspace creation, and `/workspaces/new`.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::{Outlet, Redirect};
use leptos_router::hooks::use_navigate;

use crate::api::workspaces::CreateWorkspace;
use crate::components::auth::RequireSignedIn;
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::header::Header;
use crate::components::notice::{ErrorNotice, Loading};
use crate::components::workspaces::{use_workspace_list, WorkspaceList};
use crate::i18n::*;

/// Wraps every page that needs an account. Signed-out visitors are redirected to `/signin`.
#[component]
pub fn SignedInLayout() -> impl IntoView {
    let i18n = use_i18n();
    WorkspaceList::provide();
    view! {
        <RequireSignedIn />
        <a class="skip-link" href="#main">{t!(i18n, a11y.skip_to_content)}</a>
        <Header />
        <main id="main" class="main" tabindex="-1">
            <Outlet />
        </main>
    }
}

#[component]
pub fn HomePage() -> impl IntoView {
    let workspaces = use_workspace_list();
    view! {
        <Suspense fallback=Loading>
            {move || Suspend::new(async move {
                match workspaces.list.await {
                    Ok(list) => match list.first() {
                        Some(ws) => view! { <Redirect path=format!("/w/{}/environments", ws.id) /> }.into_any(),
                        None => view! { <Redirect path="/workspaces/new" /> }.into_any(),
                    },
                    // Signed out: `RequireSignedIn` is already redirecting.
                    Err(contracts::error::AppError::Unauthenticated) => ().into_any(),
                    Err(err) => view! { <ErrorNotice err /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
pub fn NewWorkspacePage() -> impl IntoView {
    let i18n = use_i18n();
    let workspaces = use_workspace_list();
    let action = ServerAction::<CreateWorkspace>::new();
    let error = action_error(action);
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(ws)) = action.value().get() {
            workspaces.refresh();
            navigate(&format!("/w/{}/environments", ws.id), Default::default());
        }
    });
    view! {
        <Title text=move || t_string!(i18n, workspace.create_title).to_string() />
        <div class="page page-narrow">
            <h1 data-testid="page-title">{t!(i18n, workspace.create_title)}</h1>
            <p class="lead">{t!(i18n, workspace.create_intro)}</p>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let none = workspaces.list.await.is_ok_and(|l| l.is_empty());
                    none.then(|| view! { <p class="notice notice-info" data-testid="no-workspaces">{t!(i18n, workspace.none_yet)}</p> })
                })}
            </Suspense>
            <ActionForm action=action attr:class="form card" attr:data-testid="new-workspace-form" attr:novalidate=true>
                <FormError error fields=&["name"] />
                <Field name="name" id="new-workspace-name" label=move || t!(i18n, workspace.name_label)
                    hint=ViewFn::from(move || t!(i18n, workspace.name_hint)) required=true maxlength=64 error />
                <SubmitButton pending=action.pending() testid="create-workspace-submit">
                    {t!(i18n, workspace.create_button)}
                </SubmitButton>
            </ActionForm>
        </div>
    }
}

//! `/w/{id}/...`: the workspace frame — side navigation, the workspace's name and the caller's role
//! (with a "read-only" mark for viewers) — and one module per section.
//!
//! The workspace is loaded once here and shared through [`CurrentWorkspace`]; pages read it inside
//! their own `Suspense` to decide which controls the caller's role allows. The server enforces the
//! same rules; hiding controls only keeps the UI honest.

pub mod activity;
pub mod datasets;
pub mod endpoints;
pub mod environments;
pub mod jobs;
pub mod members;
pub mod models;
pub mod pretrained;
pub mod settings;

use leptos::prelude::*;
use leptos_router::components::{Outlet, Redirect, A};
use leptos_router::hooks::use_params_map;

use crate::api::workspaces::get_workspace;
use crate::components::badges::{ReadOnlyBadge, RoleBadge};
use crate::components::notice::ErrorNotice;
use crate::components::workspaces::use_workspace_list;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::{Role, WorkspaceSummary};

#[derive(Clone, Copy)]
pub struct CurrentWorkspace {
    /// From the URL; `-1` for a malformed id (the server then answers "not found").
    pub id: Memo<i64>,
    pub ws: Resource<Result<WorkspaceSummary, AppError>>,
}

pub fn use_current_workspace() -> CurrentWorkspace {
    expect_context::<CurrentWorkspace>()
}

/// The sections of a workspace, in navigation order: URL segment and test id.
const SECTIONS: [&str; 8] = [
    "environments",
    "datasets",
    "jobs",
    "models",
    "endpoints",
    "members",
    "activity",
    "settings",
];

fn section_label(locale: Locale, section: &str) -> &'static str {
    match section {
        "environments" => td_string!(locale, nav.environments),
        "datasets" => td_string!(locale, nav.datasets),
        "jobs" => td_string!(locale, nav.jobs),
        "models" => td_string!(locale, nav.models),
        "endpoints" => td_string!(locale, nav.endpoints),
        "members" => td_string!(locale, nav.members),
        "activity" => td_string!(locale, nav.activity),
        _ => td_string!(locale, nav.settings),
    }
}

#[component]
pub fn WorkspaceLayout() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let id = Memo::new(move |_| {
        params
            .read()
            .get("id")
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(-1)
    });
    let workspaces = use_workspace_list();
    // Refetched when the list changes too: a rename or a role change shows up in the heading.
    let ws = Resource::new_blocking(
        move || (id.get(), workspaces.epoch.get()),
        |(id, _)| get_workspace(id),
    );
    provide_context(CurrentWorkspace { id, ws });

    view! {
        <div class="workspace">
            <nav class="sidenav" aria-label=move || t_string!(i18n, a11y.main_nav)>
                <ul>
                    {SECTIONS
                        .iter()
                        .map(|&section| {
                            view! {
                                <li>
                                    <A
                                        href=move || format!("/w/{}/{section}", id.get())
                                        attr:class=format!("nav-link nav-{section}")
                                        attr:data-testid=format!("nav-{section}")
                                    >
                                        <span class="nav-icon" aria-hidden="true"></span>
                                        <span>{move || section_label(i18n.get_locale(), section)}</span>
                                    </A>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </nav>
            <div class="workspace-body">
                <Transition fallback=|| view! { <div class="ws-heading ws-heading-placeholder"></div> }>
                    {move || Suspend::new(async move {
                        match ws.await {
                            Ok(ws) => view! { <WorkspaceHeading ws /> }.into_any(),
                            Err(err) => view! { <ErrorNotice err /> }.into_any(),
                        }
                    })}
                </Transition>
                <Outlet />
            </div>
        </div>
    }
}

#[component]
fn WorkspaceHeading(ws: WorkspaceSummary) -> impl IntoView {
    let i18n = use_i18n();
    let count = ws.member_count;
    view! {
        <div class="ws-heading" data-testid="workspace-heading">
            <p class="ws-name" data-testid="workspace-name">{ws.name}</p>
            <span class="visually-hidden">{t!(i18n, workspace.your_role)}": "</span>
            <RoleBadge role=ws.role />
            {(ws.role == Role::Viewer).then(|| view! { <ReadOnlyBadge /> })}
            <span class="ws-members">{move || t_string!(i18n, workspace.members_count, count = count)}</span>
        </div>
    }
}

/// `/w/{id}` → its first section.
#[component]
pub fn WorkspaceIndex() -> impl IntoView {
    let current = use_current_workspace();
    view! { <Redirect path=format!("/w/{}/environments", current.id.get_untracked()) /> }
}

/// The title block every workspace page starts with.
#[component]
pub fn PageHeader(#[prop(into)] title: ViewFn, #[prop(into)] lead: ViewFn) -> impl IntoView {
    view! {
        <header class="page-header">
            <h1 data-testid="page-title">{title.run()}</h1>
            <p class="lead">{lead.run()}</p>
        </header>
    }
}

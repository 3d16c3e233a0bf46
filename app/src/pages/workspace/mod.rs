//! `/w/{id}/...`: the workspace frame — side navigation, the workspace's name and the caller's role
//! (with a "read-only" mark for viewers) — and one module per section.
//!
//! The workspace is loaded once here and shared through [`CurrentWorkspace`]; pages read it in what
//! they load (`components::page::Loaded`) to decide which controls the caller's role allows. The
//! server enforces the same rules; hiding controls only keeps the UI honest. A section's own page is a
//! [`SectionPage`]; the page of one thing in it reads that thing with [`use_detail`] and, when it
//! cannot, shows the [`section_heading`] above the error.

pub mod activity;
pub mod compare;
pub mod datasets;
pub mod endpoints;
pub mod environments;
pub mod jobs;
pub mod members;
pub mod models;
pub mod pretrained;
pub mod settings;
pub mod sweeps;

use contracts::ids::{Id, WorkspaceId};
use std::future::Future;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::{Outlet, Redirect, A};
use leptos_router::hooks::{use_params_map, use_query_map};
use serde::{de::DeserializeOwned, Serialize};

use crate::api::workspaces::get_workspace;
use crate::components::badges::{ReadOnlyBadge, RoleBadge};
use crate::components::notice::ErrorNotice;
use crate::components::page::{Page, PageHeader};
use crate::components::workspaces::use_workspace_list;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::{Role, WorkspaceSummary};

#[derive(Clone, Copy)]
pub struct CurrentWorkspace {
    /// From the URL; `-1` for a malformed id (the server then answers "not found").
    pub id: Memo<WorkspaceId>,
    pub ws: Resource<Result<WorkspaceSummary, AppError>>,
    /// Bumped when members come or go: the heading reads its member count again, while the pages
    /// that wait on `ws` (and the forms in them) stay as they are.
    members: RwSignal<u64>,
}

impl CurrentWorkspace {
    pub fn members_changed(&self) {
        self.members.update(|n| *n += 1);
    }
}

pub fn use_current_workspace() -> CurrentWorkspace {
    expect_context::<CurrentWorkspace>()
}

/// The sections of a workspace, in navigation order: URL segment and test id.
const SECTIONS: [&str; 9] = [
    "environments",
    "datasets",
    "jobs",
    "sweeps",
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
        "sweeps" => td_string!(locale, nav.sweeps),
        "models" => td_string!(locale, nav.models),
        "endpoints" => td_string!(locale, nav.endpoints),
        "members" => td_string!(locale, nav.members),
        "activity" => td_string!(locale, nav.activity),
        _ => td_string!(locale, nav.settings),
    }
}

/// What a section is for, under its name.
fn section_lead(locale: Locale, section: &str) -> &'static str {
    match section {
        "environments" => td_string!(locale, pages.environments.lead),
        "datasets" => td_string!(locale, pages.datasets.lead),
        "jobs" => td_string!(locale, pages.jobs.lead),
        "sweeps" => td_string!(locale, pages.sweeps.lead),
        "models" => td_string!(locale, pages.models.lead),
        "endpoints" => td_string!(locale, pages.endpoints.lead),
        "members" => td_string!(locale, members.lead),
        "activity" => td_string!(locale, activity.lead),
        _ => td_string!(locale, settings.lead),
    }
}

#[component]
pub fn WorkspaceLayout() -> impl IntoView {
    let i18n = use_i18n();
    let id = use_id_param("id");
    let workspaces = use_workspace_list();
    // Refetched when the list changes too: a rename or a role change shows up in the heading.
    let ws = Resource::new_blocking(
        move || (id.get(), workspaces.epoch.get()),
        |(id, _)| get_workspace(id),
    );
    let members = RwSignal::new(0u64);
    // Nothing to read until a member was added or removed: the heading shows `ws` until then.
    let recount = Resource::new(
        move || members.get(),
        move |changed| async move {
            match changed {
                0 => None,
                _ => Some(get_workspace(id.get_untracked()).await),
            }
        },
    );
    provide_context(CurrentWorkspace { id, ws, members });

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
                        let (first, fresh) = (ws.await, recount.await);
                        match fresh.unwrap_or(first) {
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
            <span class="ws-members" data-testid="workspace-members">{move || t_string!(i18n, workspace.members_count, count = count)}</span>
        </div>
    }
}

/// The id in the URL's `param` (`:id`, `:job`, ...); `-1` when malformed, which the server answers
/// with "not found".
pub fn use_id_param<I: Id>(param: &'static str) -> Memo<I> {
    let params = use_params_map();
    Memo::new(move |_| {
        params
            .read()
            .get(param)
            .and_then(|s| s.parse().ok())
            .unwrap_or(I::from_raw(-1))
    })
}

/// The id in the query string's `name` (`?before=…`), if it is one.
pub fn use_query_id<I>(name: &'static str) -> Memo<Option<I>>
where
    I: std::str::FromStr + Clone + PartialEq + Send + Sync + 'static,
{
    let query = use_query_map();
    Memo::new(move |_| query.read().get(name).and_then(|s| s.parse().ok()))
}

/// What a detail page shows: `get(workspace, id)` for the id in the URL's `param`, read again when
/// either changes.
pub fn use_detail<I: Id, T, Fut>(
    param: &'static str,
    get: fn(WorkspaceId, I) -> Fut,
) -> Resource<Result<T, AppError>>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: Future<Output = Result<T, AppError>> + Send + 'static,
{
    let current = use_current_workspace();
    let id = use_id_param(param);
    Resource::new(
        move || (current.id.get(), id.get()),
        move |(ws, id)| get(ws, id),
    )
}

/// `/w/{id}` → its first section.
#[component]
pub fn WorkspaceIndex() -> impl IntoView {
    let current = use_current_workspace();
    view! { <Redirect path=format!("/w/{}/environments", current.id.get_untracked()) /> }
}

/// A section's own page (its list, or members, activity, settings): the section's name, in the tab
/// too, and what the section is for.
#[component]
pub fn SectionPage(section: &'static str, children: Children) -> impl IntoView {
    let i18n = use_i18n();
    let title = move || section_label(i18n.get_locale(), section).to_string();
    view! {
        <Page title lead=move || section_lead(i18n.get_locale(), section)>
            {children()}
        </Page>
    }
}

/// What the page of one thing in a section (a dataset, a job, ...) shows when the thing cannot be
/// read: its title is in what failed to load, so the section's heading stands above the error.
pub fn section_heading(section: &'static str) -> ViewFn {
    let i18n = use_i18n();
    let title = move || section_label(i18n.get_locale(), section);
    ViewFn::from(move || {
        view! {
            <Title text=title />
            <PageHeader title lead=move || section_lead(i18n.get_locale(), section) />
        }
    })
}

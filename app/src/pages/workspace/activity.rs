//! Activity: the workspace's audit log, newest first, a page at a time (`?before=<id>` continues
//! after the oldest entry shown, so the pages are stable links that work without JavaScript).

use contracts::ids::WorkspaceId;
use leptos::prelude::*;
use leptos_router::components::A;

use crate::api::activity::list_activity;
use crate::components::page::{InfoNote, Loaded};
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, use_query_id, SectionPage};
use contracts::types::AuditEntry;

/// Entries per page as the server sends them (`domain::audit::PAGE_SIZE`); a full page means there
/// may be more.
const PAGE_SIZE: usize = 50;

#[component]
pub fn ActivityPage() -> impl IntoView {
    let current = use_current_workspace();
    let before = use_query_id("before");
    let entries = Resource::new(
        move || (current.id.get(), before.get()),
        |(id, before)| list_activity(id, before),
    );
    let load = move || async move { entries.await };
    view! {
        <SectionPage section="activity">
            <Loaded load let:list>
                <ActivityTable list id=current.id.get_untracked() paged=before.get_untracked().is_some() />
            </Loaded>
        </SectionPage>
    }
}

#[component]
fn ActivityTable(list: Vec<AuditEntry>, id: WorkspaceId, paged: bool) -> impl IntoView {
    let i18n = use_i18n();
    let older = (list.len() >= PAGE_SIZE)
        .then(|| list.last().map(|e| e.id))
        .flatten();
    if list.is_empty() {
        return view! {
            <InfoNote testid="activity-empty">{t!(i18n, activity.empty)}</InfoNote>
            {paged.then(|| view! { <NewestLink id /> })}
        }
        .into_any();
    }
    let rows = list
        .into_iter()
        .map(|e| {
            let action = e.action.clone();
            view! {
                <tr data-testid="activity-row" data-action=action>
                    <td class="nowrap"><Timestamp at=e.at /></td>
                    <td>
                        {match e.actor {
                            Some(actor) => view! { <span>{actor}</span> }.into_any(),
                            None => view! { <span class="muted">{t!(i18n, activity.deleted_user)}</span> }.into_any(),
                        }}
                    </td>
                    <td><code>{e.action}</code></td>
                    <td>
                        <span class="muted">{e.resource_type}": "</span>
                        {e.resource}
                    </td>
                    <td class="nowrap">{e.ip.unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="activity-table" columns=columns!(activity: col_time, col_actor, col_action, col_resource, col_ip)>
            {rows}
        </DataTable>
        <nav class="pager" aria-label=move || t_string!(i18n, nav.activity)>
            {paged.then(|| view! { <NewestLink id /> })}
            {older.map(|before| view! {
                <A href=format!("/w/{id}/activity?before={before}") attr:class="button button-ghost" attr:data-testid="activity-older">
                    {t!(i18n, activity.older)}" →"
                </A>
            })}
        </nav>
    }
    .into_any()
}

#[component]
fn NewestLink(id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <A href=format!("/w/{id}/activity") attr:class="button button-ghost" attr:data-testid="activity-newest">
            "← "{t!(i18n, activity.newest)}
        </A>
    }
}

//! Activity: the workspace's audit log, newest first, a page at a time (`?before=<id>` continues
//! after the oldest entry shown, so the pages are stable links that work without JavaScript).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::api::activity::list_activity;
use crate::components::notice::{ErrorNotice, Loading};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, PageHeader};
use contracts::types::AuditEntry;

/// Entries per page as the server sends them (`domain::audit::PAGE_SIZE`); a full page means there
/// may be more.
const PAGE_SIZE: usize = 50;

#[component]
pub fn ActivityPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let query = use_query_map();
    let before = Memo::new(move |_| {
        query
            .read()
            .get("before")
            .and_then(|s| s.parse::<i64>().ok())
    });
    let entries = Resource::new(
        move || (current.id.get(), before.get()),
        |(id, before)| list_activity(id, before),
    );

    view! {
        <Title text=move || t_string!(i18n, nav.activity).to_string() />
        <div class="page">
            <PageHeader title=move || t!(i18n, nav.activity) lead=move || t!(i18n, activity.lead) />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match entries.await {
                        Ok(list) => view! { <ActivityTable list id=current.id.get_untracked() paged=before.get_untracked().is_some() /> }.into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
}

#[component]
fn ActivityTable(list: Vec<AuditEntry>, id: i64, paged: bool) -> impl IntoView {
    let i18n = use_i18n();
    let older = (list.len() >= PAGE_SIZE)
        .then(|| list.last().map(|e| e.id))
        .flatten();
    if list.is_empty() {
        return view! {
            <p class="notice notice-info" data-testid="activity-empty">{t!(i18n, activity.empty)}</p>
            {paged.then(|| view! { <NewestLink id /> })}
        }
        .into_any();
    }
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="activity-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, activity.col_time)}</th>
                        <th scope="col">{t!(i18n, activity.col_actor)}</th>
                        <th scope="col">{t!(i18n, activity.col_action)}</th>
                        <th scope="col">{t!(i18n, activity.col_resource)}</th>
                        <th scope="col">{t!(i18n, activity.col_ip)}</th>
                    </tr>
                </thead>
                <tbody>
                    {list
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
                        .collect_view()}
                </tbody>
            </table>
        </div>
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
fn NewestLink(id: i64) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <A href=format!("/w/{id}/activity") attr:class="button button-ghost" attr:data-testid="activity-newest">
            "← "{t!(i18n, activity.newest)}
        </A>
    }
}

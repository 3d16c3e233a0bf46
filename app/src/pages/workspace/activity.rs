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
use crate::pages::workspace::jobs::evaluations::step_words;
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
            let resource = resource_words(i18n.get_locale_untracked(), &e);
            view! {
                <tr data-testid="activity-row" data-action=action>
                    <td class="nowrap"><Timestamp at=e.at /></td>
                    <td>
                        {match e.actor {
                            Some(actor) => view! { <span>{actor}</span> }.into_any(),
                            None => view! { <span class="muted">{t!(i18n, activity.deleted_user)}</span> }.into_any(),
                        }}
                    </td>
                    <td title=e.action.clone()>
                        {match action_words(i18n.get_locale_untracked(), &e.action) {
                            Some(words) => view! { <span>{words}</span> }.into_any(),
                            None => view! { <code>{e.action.clone()}</code> }.into_any(),
                        }}
                    </td>
                    <td>
                        <span class="muted">
                            {kind_words(i18n.get_locale_untracked(), &e.resource_type).map_or(e.resource_type.clone(), str::to_string)}
                            {t!(i18n, activity.kind_sep)}
                        </span>
                        <span translate="no">{resource}</span>
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

/// An audit action in `locale` (`job.cancel` → 取消任务); `None` for one this version does not know,
/// which the page shows as its code (the code is also each cell's title).
fn action_words(locale: Locale, action: &str) -> Option<&'static str> {
    Some(match action {
        "checkpoint.evaluate" => td_string!(locale, activity_actions.checkpoint_evaluate),
        "dataset.upload" => td_string!(locale, activity_actions.dataset_upload),
        "dataset.delete" => td_string!(locale, activity_actions.dataset_delete),
        "endpoint.deploy" => td_string!(locale, activity_actions.endpoint_deploy),
        "endpoint.change" => td_string!(locale, activity_actions.endpoint_change),
        "endpoint.undeploy" => td_string!(locale, activity_actions.endpoint_undeploy),
        "endpoint.delete" => td_string!(locale, activity_actions.endpoint_delete),
        "endpoint.key_create" => td_string!(locale, activity_actions.endpoint_key_create),
        "endpoint.key_revoke" => td_string!(locale, activity_actions.endpoint_key_revoke),
        "environment.create" => td_string!(locale, activity_actions.environment_create),
        "environment.update" => td_string!(locale, activity_actions.environment_update),
        "environment.build" => td_string!(locale, activity_actions.environment_build),
        "environment.up" => td_string!(locale, activity_actions.environment_up),
        "environment.down" => td_string!(locale, activity_actions.environment_down),
        "environment.restart" => td_string!(locale, activity_actions.environment_restart),
        "environment.exec" => td_string!(locale, activity_actions.environment_exec),
        "environment.secrets" => td_string!(locale, activity_actions.environment_secrets),
        "environment.delete" => td_string!(locale, activity_actions.environment_delete),
        "image.load" => td_string!(locale, activity_actions.image_load),
        "job.submit" => td_string!(locale, activity_actions.job_submit),
        "job.cancel" => td_string!(locale, activity_actions.job_cancel),
        "job.retry" => td_string!(locale, activity_actions.job_retry),
        "job.delete" => td_string!(locale, activity_actions.job_delete),
        "member.add" => td_string!(locale, activity_actions.member_add),
        "member.change_role" => td_string!(locale, activity_actions.member_change_role),
        "member.remove" => td_string!(locale, activity_actions.member_remove),
        "member.leave" => td_string!(locale, activity_actions.member_leave),
        "model.upload" => td_string!(locale, activity_actions.model_upload),
        "model.delete" => td_string!(locale, activity_actions.model_delete),
        "settings.signup" => td_string!(locale, activity_actions.settings_signup),
        "settings.pickled_weights" => td_string!(locale, activity_actions.settings_pickled_weights),
        "settings.cap" => td_string!(locale, activity_actions.settings_cap),
        "settings.registry_mirror" => td_string!(locale, activity_actions.settings_registry_mirror),
        "token.create" => td_string!(locale, activity_actions.token_create),
        "token.revoke" => td_string!(locale, activity_actions.token_revoke),
        "user.create" => td_string!(locale, activity_actions.user_create),
        "user.disable" => td_string!(locale, activity_actions.user_disable),
        "user.enable" => td_string!(locale, activity_actions.user_enable),
        "user.reset_password" => td_string!(locale, activity_actions.user_reset_password),
        "workspace.create" => td_string!(locale, activity_actions.workspace_create),
        "workspace.rename" => td_string!(locale, activity_actions.workspace_rename),
        "workspace.gpu_quota" => td_string!(locale, activity_actions.workspace_gpu_quota),
        "workspace.cluster_account" => {
            td_string!(locale, activity_actions.workspace_cluster_account)
        }
        "workspace.delete" => td_string!(locale, activity_actions.workspace_delete),
        "workspace.purge" => td_string!(locale, activity_actions.workspace_purge),
        _ => return None,
    })
}

/// What an audit entry is about, as shown: its resource's name, and for a checkpoint its step in
/// `locale`'s words after the job's name (from the entry's detail; older entries kept their English
/// resource, "job 1 step 188", and are shown as written).
fn resource_words(locale: Locale, entry: &AuditEntry) -> String {
    let step = (entry.resource_type == "checkpoint")
        .then_some(entry.detail.as_deref())
        .flatten()
        .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .and_then(|d| d["step"].as_i64());
    match step {
        Some(step) => format!("{} · {}", entry.resource, step_words(locale, step)),
        None => entry.resource.clone(),
    }
}

/// The kind of thing an audit entry is about, in `locale`.
fn kind_words(locale: Locale, kind: &str) -> Option<&'static str> {
    Some(match kind {
        "checkpoint" => td_string!(locale, activity_kinds.checkpoint),
        "dataset" => td_string!(locale, activity_kinds.dataset),
        "endpoint" => td_string!(locale, activity_kinds.endpoint),
        "environment" => td_string!(locale, activity_kinds.environment),
        "image" => td_string!(locale, activity_kinds.image),
        "job" => td_string!(locale, activity_kinds.job),
        "member" => td_string!(locale, activity_kinds.member),
        "model" => td_string!(locale, activity_kinds.model),
        "pretrained_model" => td_string!(locale, activity_kinds.pretrained_model),
        "settings" => td_string!(locale, activity_kinds.settings),
        "instance" => td_string!(locale, activity_kinds.instance),
        "token" => td_string!(locale, activity_kinds.token),
        "user" => td_string!(locale, activity_kinds.user),
        "workspace" => td_string!(locale, activity_kinds.workspace),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoints_step_is_worded_in_the_readers_language() {
        let entry = |resource_type: &str, resource: &str, detail: Option<&str>| AuditEntry {
            id: 1,
            actor: None,
            action: "checkpoint.evaluate".into(),
            resource_type: resource_type.into(),
            resource: resource.into(),
            detail: detail.map(str::to_string),
            ip: None,
            at: String::new(),
        };
        let evaluated = entry(
            "checkpoint",
            "情感分析",
            Some(r#"{"job_id": 3, "step": 188, "dataset": "dev"}"#),
        );
        assert_eq!(
            resource_words(Locale::zh, &evaluated),
            "情感分析 · 第 188 步"
        );
        assert_eq!(
            resource_words(Locale::en, &evaluated),
            "情感分析 · step 188"
        );
        let older = entry(
            "checkpoint",
            "job 1 step 188",
            Some(r#"{"dataset": "dev"}"#),
        );
        assert_eq!(resource_words(Locale::zh, &older), "job 1 step 188");
        let dataset = entry("dataset", "dev", Some(r#"{"step": 5}"#));
        assert_eq!(resource_words(Locale::zh, &dataset), "dev");
    }
}

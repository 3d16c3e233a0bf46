//! Members: who belongs to the workspace and with which role. Owners add people by username, change
//! roles and remove members; everyone else sees the list read-only, with the controls absent and a
//! note saying why.

use contracts::ids::{UserId, WorkspaceId};
use leptos::prelude::*;

use crate::api::members::{list_members, AddMember, ChangeMemberRole, RemoveMember};
use crate::components::auth::use_auth;
use crate::components::badges::{role_name, RoleBadge};
use crate::components::form::{
    action_error, cleared_on_success, on_answer, Field, FormError, SubmitButton,
};
use crate::components::notice::ErrorNotice;
use crate::components::page::{InfoNote, Loaded};
use crate::components::table::{columns, DataTable, RowAction};
use crate::components::time::Timestamp;
use crate::components::workspaces::use_workspace_list;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::error::AppError;
use contracts::types::{Member, Role};

const ROLES: [Role; 3] = [Role::Viewer, Role::Editor, Role::Owner];

#[component]
pub fn MembersPage() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let current = use_current_workspace();
    let workspaces = use_workspace_list();
    let add = ServerAction::<AddMember>::new();
    let change = ServerAction::<ChangeMemberRole>::new();
    let remove = ServerAction::<RemoveMember>::new();
    // Read again only when something changed: a refused action leaves the list (and what the owner
    // typed into the form) alone.
    let members = Resource::new(move || current.id.get(), list_members);
    Effect::new(move |_| {
        if let Some(Ok(_)) = add.value().get() {
            members.refetch();
            current.members_changed();
        }
    });
    // The table's actions share one error line: whichever ran last speaks. A change may concern the
    // caller (an owner stepping down), so their role is read again too.
    let row_error = RwSignal::new(None::<AppError>);
    let changed = move || {
        members.refetch();
        workspaces.refresh();
    };
    on_answer(change, row_error, move |_| changed());
    on_answer(remove, row_error, move |_| changed());
    let load = move || async move {
        let ws = current.ws.await?;
        let me = auth.user.await.ok().flatten().map(|me| me.id);
        Ok((ws, me, members.await?))
    };

    view! {
        <SectionPage section="members">
            // The form depends on the role only, so adding someone does not re-create it.
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match current.ws.await {
                        Ok(ws) if ws.role == Role::Owner => view! { <AddMemberForm workspace_id=ws.id add /> }.into_any(),
                        Ok(_) => view! { <InfoNote testid="members-owner-only">{t!(i18n, members.owner_only)}</InfoNote> }.into_any(),
                        Err(_) => ().into_any(),
                    }
                })}
            </Transition>
            {move || row_error.get().map(|err| view! { <ErrorNotice err /> })}
            <Loaded load let((ws, me, list))>
                <MembersTable list me workspace_id=ws.id is_owner={ws.role == Role::Owner} change remove />
            </Loaded>
            <p class="hint">{t!(i18n, members.roles_help)}</p>
        </SectionPage>
    }
}

#[component]
fn AddMemberForm(workspace_id: WorkspaceId, add: ServerAction<AddMember>) -> impl IntoView {
    let i18n = use_i18n();
    let error = action_error(add);
    let form = cleared_on_success(add);
    view! {
        <section class="card" aria-labelledby="add-member-title">
            <h2 id="add-member-title">{t!(i18n, members.add_title)}</h2>
            <ActionForm action=add node_ref=form attr:class="form form-inline" attr:data-testid="add-member-form" attr:novalidate=true>
                <input type="hidden" name="workspace_id" value=workspace_id.get() />
                <FormError error fields=&["username", "role"] />
                <Field name="username" id="add-member-username" label=move || t!(i18n, members.username)
                    autocomplete="off" required=true maxlength=32 error />
                <div class="field">
                    <label for="add-member-role">{t!(i18n, members.role)}</label>
                    <select id="add-member-role" name="role" data-testid="add-member-role">
                        {ROLES
                            .into_iter()
                            .map(|role| {
                                view! {
                                    <option value=role.as_str() selected={role == Role::Viewer}>
                                        {move || role_name(i18n.get_locale(), role)}
                                    </option>
                                }
                            })
                            .collect_view()}
                    </select>
                    <p class="field-error" data-testid="add-member-role-error">
                        {move || {
                            error
                                .get()
                                .filter(|e| e.field() == Some("role"))
                                .map(|e| error_text(i18n.get_locale(), &e))
                        }}
                    </p>
                </div>
                <SubmitButton pending=add.pending() testid="add-member-submit">
                    {t!(i18n, members.add_button)}
                </SubmitButton>
            </ActionForm>
        </section>
    }
}

#[component]
fn MembersTable(
    list: Vec<Member>,
    me: Option<UserId>,
    workspace_id: WorkspaceId,
    is_owner: bool,
    change: ServerAction<ChangeMemberRole>,
    remove: ServerAction<RemoveMember>,
) -> impl IntoView {
    let i18n = use_i18n();
    let rows = list
        .into_iter()
        .map(|m| {
            let is_me = me == Some(m.user_id);
            let (user_id, name) = (m.user_id, m.username.clone());
            let role = if is_owner {
                view! { <RoleSelect member=m.clone() workspace_id change /> }.into_any()
            } else {
                view! { <RoleBadge role=m.role /> }.into_any()
            };
            let remove_button = is_owner.then(|| view! {
                <td>
                    <RowAction testid=format!("remove-{name}") pending=remove.pending()
                        aria_label=move || t_string!(i18n, members.remove_aria, name = name.clone()).to_string()
                        on_click=move || { remove.dispatch(RemoveMember { workspace_id, user_id }); }>
                        {t!(i18n, members.remove)}
                    </RowAction>
                </td>
            });
            view! {
                <tr data-testid=format!("member-row-{}", m.username)>
                    <th scope="row">
                        {m.username.clone()}
                        {is_me.then(|| view! { <span class="muted">" ("{t!(i18n, common.you)}")"</span> })}
                    </th>
                    <td>{role}</td>
                    <td><Timestamp at=m.added_at.clone() /></td>
                    {remove_button}
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="members-table" columns=columns!(members: col_user, col_role, col_added)
            more=move || is_owner.then(|| view! { <th scope="col">{t!(i18n, members.col_actions)}</th> })>
            {rows}
        </DataTable>
    }
}

/// Changes a member's role as soon as another option is picked.
#[component]
fn RoleSelect(
    member: Member,
    workspace_id: WorkspaceId,
    change: ServerAction<ChangeMemberRole>,
) -> impl IntoView {
    let i18n = use_i18n();
    let user_id = member.user_id;
    let name = member.username.clone();
    let current = member.role;
    view! {
        <select
            class="select-inline"
            data-testid=format!("role-select-{}", member.username)
            aria-label=move || t_string!(i18n, members.change_role_for, name = name.clone())
            disabled=move || change.pending().get()
            on:change=move |ev| {
                change.dispatch(ChangeMemberRole { workspace_id, user_id, role: event_target_value(&ev) });
            }
        >
            {ROLES
                .into_iter()
                .map(|role| {
                    view! {
                        <option value=role.as_str() selected={role == current}>
                            {move || role_name(i18n.get_locale(), role)}
                        </option>
                    }
                })
                .collect_view()}
        </select>
    }
}

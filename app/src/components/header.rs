//! The top bar of every signed-in page: brand, workspace switcher, language switch and the account
//! menu (API tokens, administration for admins, sign out). The menus are `<details>` disclosures,
//! so they open with keyboard and without JavaScript.

use contracts::ids::WorkspaceId;
use leptos::html::Details;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys::HtmlElement;
use leptos_router::components::A;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api::accounts::SignOut;
use crate::components::auth::use_auth;
use crate::components::badges::RoleBadge;
use crate::components::lang_switch::LangSwitch;
use crate::components::workspaces::use_workspace_list;
use crate::i18n::*;

/// The Paddock mark and name, linking to the dashboard.
#[component]
pub fn Brand() -> impl IntoView {
    view! {
        <A href="/" attr:class="brand" attr:data-testid="brand">
            <span class="brand-mark" aria-hidden="true"></span>
            <span class="brand-name">"Paddock"</span>
        </A>
    }
}

#[component]
pub fn Header() -> impl IntoView {
    view! {
        <header class="topbar">
            <Brand />
            <WorkspaceSwitcher />
            <div class="topbar-spacer"></div>
            <LangSwitch />
            <AccountMenu />
        </header>
    }
}

/// The workspace id in the current URL (`/w/{id}/...`), if any. The header sits outside the
/// workspace routes, so it reads the path instead of route params.
fn current_workspace_id(path: &str) -> Option<WorkspaceId> {
    path.strip_prefix("/w/")?.split('/').next()?.parse().ok()
}

/// Closes a `<details>` menu after one of its links was followed (client-side navigation keeps it
/// open otherwise).
fn close(menu: NodeRef<Details>) {
    if let Some(el) = menu.get_untracked() {
        el.set_open(false);
    }
}

/// Escape closes an open menu and puts the focus back on its toggle, as a menu button does; Enter
/// and Space on the toggle are the `<summary>`'s own.
fn escape_closes(menu: NodeRef<Details>) -> impl Fn(leptos::ev::KeyboardEvent) + Copy {
    move |ev| {
        let Some(el) = menu.get_untracked() else {
            return;
        };
        if ev.key() == "Escape" && el.open() {
            ev.prevent_default();
            el.set_open(false);
            let summary = el.query_selector("summary").ok().flatten();
            if let Some(summary) = summary.and_then(|s| s.dyn_into::<HtmlElement>().ok()) {
                let _ = summary.focus();
            }
        }
    }
}

#[component]
fn WorkspaceSwitcher() -> impl IntoView {
    let i18n = use_i18n();
    let workspaces = use_workspace_list();
    let location = use_location();
    let current = Memo::new(move |_| current_workspace_id(&location.pathname.get()));
    let menu = NodeRef::<Details>::new();
    view! {
        <details class="menu switcher" node_ref=menu data-testid="workspace-switcher" on:keydown=escape_closes(menu)>
            <summary class="menu-toggle" data-testid="workspace-switcher-toggle">
                <span class="visually-hidden">{t!(i18n, a11y.workspace_menu)}": "</span>
                <Transition fallback=move || view! { <span>{t!(i18n, workspace.switcher)}</span> }>
                    {move || Suspend::new(async move {
                        let current = current.get();
                        let list = workspaces.list.await.unwrap_or_default();
                        let name = current.and_then(|id| list.into_iter().find(|w| w.id == id)).map(|w| w.name);
                        match name {
                            Some(name) => view! { <span class="switcher-current" data-testid="current-workspace">{name}</span> }.into_any(),
                            None => view! { <span>{t!(i18n, workspace.switcher)}</span> }.into_any(),
                        }
                    })}
                </Transition>
            </summary>
            <div class="menu-panel" on:click=move |_| close(menu)>
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        let list = workspaces.list.await.unwrap_or_default();
                        view! {
                            <ul class="menu-list">
                                {list
                                    .into_iter()
                                    .map(|ws| {
                                        let href = format!("/w/{}/environments", ws.id);
                                        view! {
                                            <li>
                                                <A
                                                    href=href
                                                    attr:class="menu-item"
                                                    attr:data-testid=format!("ws-link-{}", ws.id)
                                                >
                                                    <span class="menu-item-name">{ws.name}</span>
                                                    <RoleBadge role=ws.role />
                                                </A>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                        }
                    })}
                </Transition>
                <A href="/workspaces/new" attr:class="menu-item menu-item-new" attr:data-testid="new-workspace-link">
                    <span aria-hidden="true">"+ "</span>
                    {t!(i18n, workspace.new)}
                </A>
            </div>
        </details>
    }
}

#[component]
fn AccountMenu() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let sign_out = ServerAction::<SignOut>::new();
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(())) = sign_out.value().get() {
            auth.refresh();
            navigate("/signin", Default::default());
        }
    });
    let menu = NodeRef::<Details>::new();
    view! {
        <details class="menu account" node_ref=menu data-testid="account-menu" on:keydown=escape_closes(menu)>
            <summary class="menu-toggle" data-testid="account-toggle">
                <span class="avatar" aria-hidden="true"></span>
                <span class="visually-hidden">{t!(i18n, a11y.account_menu)}": "</span>
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        let name = auth.user.await.ok().flatten().map(|me| me.username).unwrap_or_default();
                        view! { <span class="account-name" data-testid="account-name">{name}</span> }
                    })}
                </Transition>
            </summary>
            <div class="menu-panel menu-panel-end">
                <ul class="menu-list" on:click=move |_| close(menu)>
                    <li>
                        <A href="/settings/tokens" attr:class="menu-item" attr:data-testid="tokens-link">
                            {t!(i18n, auth.tokens_link)}
                        </A>
                    </li>
                    <Transition fallback=|| ()>
                        {move || Suspend::new(async move {
                            let is_admin = auth.user.await.ok().flatten().is_some_and(|me| me.is_admin);
                            is_admin
                                .then(|| {
                                    view! {
                                        <li>
                                            <A href="/admin" attr:class="menu-item" attr:data-testid="admin-link">
                                                {t!(i18n, auth.admin_link)}
                                            </A>
                                        </li>
                                    }
                                })
                        })}
                    </Transition>
                </ul>
                <ActionForm action=sign_out attr:class="menu-form">
                    <button type="submit" class="menu-item menu-item-button" data-testid="signout">
                        {t!(i18n, auth.signout)}
                    </button>
                </ActionForm>
            </div>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::{current_workspace_id, WorkspaceId};

    #[test]
    fn finds_the_workspace_in_the_path() {
        assert_eq!(
            current_workspace_id("/w/12/members"),
            Some(WorkspaceId::new(12))
        );
        assert_eq!(current_workspace_id("/w/7"), Some(WorkspaceId::new(7)));
        assert_eq!(current_workspace_id("/w/x/members"), None);
        assert_eq!(current_workspace_id("/settings/tokens"), None);
    }
}

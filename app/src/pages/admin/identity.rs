//! Company sign-in on the admin page: who may still use a password, the identity providers (OpenID
//! Connect, LDAP / Active Directory) with the callback address to register at an OpenID provider,
//! each provider's group → workspace role (or → admin) mappings, "test this provider" with each step
//! said in the admin's language, and a form for a new provider. Secrets go in and are never shown.
//! The REST API does the same under `/api/v1/admin/identity-providers`.

use leptos::prelude::*;

use crate::api::admin::{instance_settings, list_gpu_quotas, SetPasswordSignIn};
use crate::api::identity::{
    list_providers, AddGroupMapping, CheckProvider, CreateProvider, DeleteProvider,
    RemoveGroupMapping,
};
use crate::components::notice::ErrorNotice;
use crate::components::page::Loaded;
use crate::i18n::*;
use contracts::identity::{
    CheckOutcome, CheckStep, Grant, GroupMapping, MappingInput, PasswordSignIn, Provider,
    ProviderInput, ProviderKind,
};
use contracts::types::{Role, WorkspaceGpuQuota};

#[component]
pub fn CompanySignIn() -> impl IntoView {
    let i18n = use_i18n();
    let switch = ServerAction::<SetPasswordSignIn>::new();
    let create = ServerAction::<CreateProvider>::new();
    let delete = ServerAction::<DeleteProvider>::new();
    let add = ServerAction::<AddGroupMapping>::new();
    let remove = ServerAction::<RemoveGroupMapping>::new();
    let settings = Resource::new(move || switch.version().get(), |_| instance_settings());
    let providers = Resource::new(
        move || {
            (
                create.version().get(),
                delete.version().get(),
                add.version().get(),
                remove.version().get(),
            )
        },
        |_| list_providers(),
    );
    let workspaces = Resource::new(|| (), |_| list_gpu_quotas());
    let error = Signal::derive(move || {
        switch
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| delete.value().get().and_then(Result::err))
            .or_else(|| add.value().get().and_then(Result::err))
            .or_else(|| remove.value().get().and_then(Result::err))
    });
    view! {
        <section class="card" aria-labelledby="idp-title" data-testid="company-sign-in">
            <h2 id="idp-title">{t!(i18n, admin.idp_title)}</h2>
            <p class="hint">{t!(i18n, admin.idp_hint)}</p>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { settings.await } let:s>
                {
                    let admins_only = s.password_sign_in == PasswordSignIn::Admins;
                    view! {
                        <p data-testid="password-sign-in-state" data-admins-only=admins_only.to_string()>
                            {move || if admins_only { t_string!(i18n, admin.password_admins_only) } else { t_string!(i18n, admin.password_everyone) }}
                        </p>
                        <button type="button" class="button button-ghost" data-testid="password-sign-in-toggle"
                            on:click=move |_| { switch.dispatch(SetPasswordSignIn { admins_only: !admins_only }); }>
                            {move || if admins_only { t_string!(i18n, admin.password_open) } else { t_string!(i18n, admin.password_restrict) }}
                        </button>
                    }
                }
            </Loaded>
            <Loaded load=move || async move { Ok((providers.await?, workspaces.await.unwrap_or_default())) } let:loaded>
                {
                    let (list, spaces) = loaded;
                    if list.is_empty() {
                        view! { <p class="empty" data-testid="idp-none">{t!(i18n, admin.idp_none)}</p> }.into_any()
                    } else {
                        list.into_iter()
                            .map(|provider| view! { <ProviderCard provider spaces=spaces.clone() delete add remove /> })
                            .collect_view()
                            .into_any()
                    }
                }
            </Loaded>
            <NewProvider create />
        </section>
    }
}

/// One provider: what it is, its mappings (with a form for another), its test, its deletion.
#[component]
fn ProviderCard(
    provider: Provider,
    spaces: Vec<WorkspaceGpuQuota>,
    delete: ServerAction<DeleteProvider>,
    add: ServerAction<AddGroupMapping>,
    remove: ServerAction<RemoveGroupMapping>,
) -> impl IntoView {
    let i18n = use_i18n();
    let id = provider.id;
    let name = provider.name.clone();
    let kind = provider.settings.kind();
    let callback = format!("/api/v1/auth/oidc/{}/callback", provider.name);
    let mappings = provider.mappings.clone();
    view! {
        <article class="idp" data-testid=format!("idp-{name}") data-kind=kind.as_str()>
            <h3>
                {provider.display_name.clone()}" "<code>{provider.name.clone()}</code>" "
                <span class="badge">{move || match kind {
                    ProviderKind::Oidc => t_string!(i18n, admin.idp_kind_oidc),
                    ProviderKind::Ldap => t_string!(i18n, admin.idp_kind_ldap),
                }}</span>
                {(!provider.enabled).then(|| view! { " "<span class="badge badge-disabled">{t!(i18n, admin.disabled)}</span> })}
            </h3>
            {(kind == ProviderKind::Oidc).then(|| view! {
                <p class="hint">{t!(i18n, admin.idp_callback)}" "<code data-testid="idp-callback">{callback}</code></p>
            })}
            <table class="table" data-testid="idp-mappings">
                <thead><tr>
                    <th scope="col">{t!(i18n, admin.idp_col_group)}</th>
                    <th scope="col">{t!(i18n, admin.idp_col_grant)}</th>
                    <th scope="col"><span class="visually-hidden">{t!(i18n, admin.col_actions)}</span></th>
                </tr></thead>
                <tbody>
                    {mappings.into_iter().map(|m| view! { <MappingRow provider=id mapping=m remove /> }).collect_view()}
                </tbody>
            </table>
            <MappingForm provider=id spaces add />
            <CheckForm provider=id kind />
            <button type="button" class="button button-small button-danger-ghost" data-testid=format!("idp-delete-{name}")
                on:click=move |_| { delete.dispatch(DeleteProvider { provider_id: id }); }>
                {t!(i18n, admin.idp_delete)}
            </button>
        </article>
    }
}

#[component]
fn MappingRow(
    provider: contracts::identity::ProviderId,
    mapping: GroupMapping,
    remove: ServerAction<RemoveGroupMapping>,
) -> impl IntoView {
    let i18n = use_i18n();
    let mapping_id = mapping.id;
    let grant = mapping.grant.clone();
    let workspace = mapping.workspace_name.clone().unwrap_or_default();
    view! {
        <tr data-testid="idp-mapping" data-group=mapping.group.clone()>
            <td><code>{mapping.group.clone()}</code></td>
            <td>{move || match &grant {
                Grant::Workspace { role, .. } => format!("{workspace} · {}", role_name(i18n.get_locale(), *role)),
                Grant::InstanceAdmin {} => t_string!(i18n, admin.idp_grant_admin).to_string(),
            }}</td>
            <td><button type="button" class="button button-small button-ghost" data-testid="idp-mapping-remove"
                on:click=move |_| { remove.dispatch(RemoveGroupMapping { provider_id: provider, mapping_id }); }>
                {t!(i18n, admin.idp_remove)}
            </button></td>
        </tr>
    }
}

fn role_name(locale: Locale, role: Role) -> &'static str {
    match role {
        Role::Owner => td_string!(locale, roles.owner),
        Role::Editor => td_string!(locale, roles.editor),
        Role::Viewer => td_string!(locale, roles.viewer),
    }
}

/// A group → grant form: the group's name, then a workspace and a role, or instance admin.
#[component]
fn MappingForm(
    provider: contracts::identity::ProviderId,
    spaces: Vec<WorkspaceGpuQuota>,
    add: ServerAction<AddGroupMapping>,
) -> impl IntoView {
    let i18n = use_i18n();
    let group = NodeRef::<leptos::html::Input>::new();
    let target = NodeRef::<leptos::html::Select>::new();
    let role = NodeRef::<leptos::html::Select>::new();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (Some(group), Some(target), Some(role)) = (group.get(), target.get(), role.get())
        else {
            return;
        };
        let grant = match target.value().parse::<i64>() {
            Ok(ws) => Grant::Workspace {
                workspace_id: contracts::ids::WorkspaceId::new(ws),
                role: Role::parse(&role.value()).unwrap_or(Role::Viewer),
            },
            Err(_) => Grant::InstanceAdmin {},
        };
        add.dispatch(AddGroupMapping {
            provider_id: provider,
            input: MappingInput {
                group: group.value(),
                grant,
            },
        });
    };
    view! {
        <form class="form form-inline" data-testid="idp-mapping-form" on:submit=on_submit novalidate>
            <label>{t!(i18n, admin.idp_col_group)}" "<input type="text" node_ref=group data-testid="idp-mapping-group" required /></label>
            <label>{t!(i18n, admin.idp_col_grant)}" "
                <select node_ref=target data-testid="idp-mapping-target">
                    {spaces.into_iter().map(|w| view! { <option value=w.workspace_id.get().to_string()>{w.workspace}</option> }).collect_view()}
                    <option value="admin">{t!(i18n, admin.idp_grant_admin)}</option>
                </select>
            </label>
            <select node_ref=role data-testid="idp-mapping-role" aria-label=move || t_string!(i18n, admin.idp_role)>
                <option value="viewer">{t!(i18n, roles.viewer)}</option>
                <option value="editor">{t!(i18n, roles.editor)}</option>
                <option value="owner">{t!(i18n, roles.owner)}</option>
            </select>
            <button type="submit" class="button button-small" data-testid="idp-mapping-add">{t!(i18n, admin.idp_add_mapping)}</button>
        </form>
    }
}

/// "Test this provider": for LDAP, a username to look up (optional).
#[component]
fn CheckForm(provider: contracts::identity::ProviderId, kind: ProviderKind) -> impl IntoView {
    let i18n = use_i18n();
    let check = ServerAction::<CheckProvider>::new();
    view! {
        <ActionForm action=check attr:class="form form-inline" attr:data-testid="idp-check-form">
            <input type="hidden" name="provider_id" value=provider.get().to_string() />
            {if kind == ProviderKind::Ldap {
                view! { <label>{t!(i18n, admin.idp_test_username)}" "<input type="text" name="username" data-testid="idp-check-username" /></label> }.into_any()
            } else {
                view! { <input type="hidden" name="username" value="" /> }.into_any()
            }}
            <button type="submit" class="button button-small button-ghost" data-testid="idp-check"
                disabled=move || check.pending().get()>{t!(i18n, admin.idp_test)}</button>
        </ActionForm>
        {move || check.value().get().map(|result| match result {
            Ok(steps) => view! {
                <ol class="idp-steps" data-testid="idp-check-steps">
                    {steps.into_iter().map(|s| view! { <StepLine outcome=s /> }).collect_view()}
                </ol>
            }.into_any(),
            Err(err) => view! { <ErrorNotice err /> }.into_any(),
        })}
    }
}

#[component]
fn StepLine(outcome: CheckOutcome) -> impl IntoView {
    let i18n = use_i18n();
    let step = outcome.step;
    let ok = outcome.ok;
    let code = outcome.code;
    let groups = outcome.groups.join(", ");
    let has_groups = !outcome.groups.is_empty();
    let step_name = move || match step {
        CheckStep::Discovery => t_string!(i18n, admin.idp_step_discovery),
        CheckStep::Keys => t_string!(i18n, admin.idp_step_keys),
        CheckStep::Connect => t_string!(i18n, admin.idp_step_connect),
        CheckStep::Bind => t_string!(i18n, admin.idp_step_bind),
        CheckStep::Search => t_string!(i18n, admin.idp_step_search),
        CheckStep::Groups => t_string!(i18n, admin.idp_step_groups),
    };
    let step_word = serde_json::to_value(step)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    view! {
        <li data-testid="idp-step" data-step=step_word data-ok=ok.to_string() class:step-failed=!ok>
            <strong>{step_name}</strong>" "
            {move || if ok { t_string!(i18n, admin.idp_step_ok) } else { t_string!(i18n, admin.idp_step_failed) }}
            {(!ok).then(|| code.map(|code| {
                let err = contracts::error::AppError::denied(code, "");
                view! { " — "{move || crate::i18n::error_text(i18n.get_locale(), &err)} }
            }))}
            " "<span class="hint">{outcome.detail.clone()}</span>
            {has_groups.then(|| view! { <p data-testid="idp-groups">{t!(i18n, admin.idp_groups_found)}" "{groups.clone()}</p> })}
        </li>
    }
}

/// A new provider: its kind picks the fields shown.
#[component]
fn NewProvider(create: ServerAction<CreateProvider>) -> impl IntoView {
    let i18n = use_i18n();
    let kind = RwSignal::new(ProviderKind::Oidc);
    let field = |n: &'static str| (n, NodeRef::<leptos::html::Input>::new());
    let name = field("name");
    let display = field("display_name");
    let secret = field("secret");
    let issuer = field("issuer");
    let client_id = field("client_id");
    let scopes = field("scopes");
    let groups_claim = field("groups_claim");
    let url = field("url");
    let bind_dn = field("bind_dn");
    let user_base = field("user_base");
    let user_filter = field("user_filter");
    let group_base = field("group_base");
    let starttls = NodeRef::<leptos::html::Input>::new();
    let nested = NodeRef::<leptos::html::Input>::new();
    let ca_pem = NodeRef::<leptos::html::Textarea>::new();
    let style = NodeRef::<leptos::html::Select>::new();
    let value = |r: NodeRef<leptos::html::Input>| r.get().map(|e| e.value()).unwrap_or_default();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let settings = match kind.get_untracked() {
            ProviderKind::Oidc => serde_json::json!({ "oidc": {
                "issuer": value(issuer.1), "client_id": value(client_id.1),
                "scopes": value(scopes.1).split_whitespace().collect::<Vec<_>>(),
                "groups_claim": Some(value(groups_claim.1)).filter(|c| !c.is_empty()).unwrap_or_else(|| "groups".into()),
            }}),
            ProviderKind::Ldap => {
                let groups = match style.get().map(|s| s.value()).as_deref() {
                    Some("member_of") => serde_json::json!({
                        "style": "member_of", "nested": nested.get().is_some_and(|n| n.checked()),
                    }),
                    _ => {
                        serde_json::json!({ "style": "member_attribute", "base": value(group_base.1) })
                    }
                };
                let filter = Some(value(user_filter.1)).filter(|f| !f.is_empty());
                let ca = ca_pem
                    .get()
                    .map(|t| t.value())
                    .filter(|p| !p.trim().is_empty());
                let mut s = serde_json::json!({
                    "url": value(url.1), "bind_dn": value(bind_dn.1),
                    "user_base": value(user_base.1), "groups": groups, "ca_pem": ca,
                    "starttls": starttls.get().is_none_or(|s| s.checked()),
                });
                if let Some(f) = filter {
                    s["user_filter"] = f.into();
                }
                serde_json::json!({ "ldap": s })
            }
        };
        let input = serde_json::json!({
            "name": value(name.1), "display_name": value(display.1),
            "secret": Some(value(secret.1)).filter(|s| !s.is_empty()),
            "settings": settings,
        });
        if let Ok(input) = serde_json::from_value::<ProviderInput>(input) {
            create.dispatch(CreateProvider { input });
        }
    };
    let text = move |(n, r): (&'static str, NodeRef<leptos::html::Input>),
                     label: Signal<String>,
                     input_type: &'static str| {
        let id = format!("idp-new-{n}");
        view! {
            <div class="field">
                <label for=id.clone()>{label}</label>
                <input id=id.clone() type=input_type node_ref=r data-testid=id autocomplete="off" spellcheck="false" />
                {move || create.value().get().and_then(Result::err).and_then(|e| {
                    let at = match n {
                        "name" | "display_name" | "secret" => n.to_string(),
                        _ => format!("settings.{}.{n}", kind.get().as_str()),
                    };
                    crate::i18n::field_text(i18n.get_locale(), &e, &at)
                }).map(|t| view! { <p class="field-error" role="alert">{t}</p> })}
            </div>
        }
    };
    let label = move |s: fn(Locale) -> &'static str| {
        Signal::derive(move || s(i18n.get_locale()).to_string())
    };
    let is = move |k: ProviderKind| move || kind.get() == k;
    view! {
        <form class="form" data-testid="idp-new-form" on:submit=on_submit novalidate>
            <h3>{t!(i18n, admin.idp_new_title)}</h3>
            {move || create.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            {move || create.value().get().and_then(Result::ok).map(|p| view! {
                <p class="notice notice-success" role="status" data-testid="idp-created">{p.display_name}</p>
            })}
            <div class="field">
                <label for="idp-new-kind">{t!(i18n, admin.idp_field_kind)}</label>
                <select id="idp-new-kind" data-testid="idp-new-kind" on:change=move |ev| {
                    kind.set(if event_target_value(&ev) == "ldap" { ProviderKind::Ldap } else { ProviderKind::Oidc });
                }>
                    <option value="oidc">{t!(i18n, admin.idp_kind_oidc)}</option>
                    <option value="ldap">{t!(i18n, admin.idp_kind_ldap)}</option>
                </select>
            </div>
            {text(name, label(|l| td_string!(l, admin.idp_field_name)), "text")}
            {text(display, label(|l| td_string!(l, admin.idp_field_display_name)), "text")}
            {text(secret, label(|l| td_string!(l, admin.idp_field_secret)), "password")}
            <Show when=is(ProviderKind::Oidc)>
                {text(issuer, label(|l| td_string!(l, admin.idp_field_issuer)), "url")}
                {text(client_id, label(|l| td_string!(l, admin.idp_field_client_id)), "text")}
                {text(scopes, label(|l| td_string!(l, admin.idp_field_scopes)), "text")}
                {text(groups_claim, label(|l| td_string!(l, admin.idp_field_groups_claim)), "text")}
            </Show>
            <Show when=is(ProviderKind::Ldap)>
                {text(url, label(|l| td_string!(l, admin.idp_field_url)), "text")}
                <label class="check"><input type="checkbox" node_ref=starttls checked=true data-testid="idp-new-starttls" />" "{t!(i18n, admin.idp_field_starttls)}</label>
                <div class="field">
                    <label for="idp-new-ca_pem">{t!(i18n, admin.idp_field_ca_pem)}</label>
                    <textarea id="idp-new-ca_pem" node_ref=ca_pem data-testid="idp-new-ca_pem" rows="4" spellcheck="false"></textarea>
                </div>
                {text(bind_dn, label(|l| td_string!(l, admin.idp_field_bind_dn)), "text")}
                {text(user_base, label(|l| td_string!(l, admin.idp_field_user_base)), "text")}
                {text(user_filter, label(|l| td_string!(l, admin.idp_field_user_filter)), "text")}
                <div class="field">
                    <label for="idp-new-style">{t!(i18n, admin.idp_field_group_style)}</label>
                    <select id="idp-new-style" node_ref=style data-testid="idp-new-style">
                        <option value="member_attribute">{t!(i18n, admin.idp_style_member_attribute)}</option>
                        <option value="member_of">{t!(i18n, admin.idp_style_member_of)}</option>
                    </select>
                </div>
                {text(group_base, label(|l| td_string!(l, admin.idp_field_group_base)), "text")}
                <label class="check"><input type="checkbox" node_ref=nested data-testid="idp-new-nested" />" "{t!(i18n, admin.idp_field_nested)}</label>
            </Show>
            <button type="submit" class="button button-primary" data-testid="idp-new-create"
                disabled=move || create.pending().get()>{t!(i18n, admin.idp_create)}</button>
        </form>
    }
}

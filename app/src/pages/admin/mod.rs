//! `/admin`: instance administration for admins — open or close sign-up, allow or refuse pickled
//! model weights, set the Docker Hub mirror base images come from, the caps and GPU quotas
//! ([`limits`]), disable or re-enable accounts, bring base images in from archives ([`images`]), and
//! see the clusters jobs go to ([`clusters`]), and company sign-in's providers ([`identity`]). Everyone else gets a 403 page from the server's page
//! guard (`app::pages::forbidden`) before anything here renders.

mod clusters;
mod identity;
mod images;
mod limits;

use leptos::prelude::*;

use crate::api::admin::{
    instance_settings, list_users, SetAllowPickledWeights, SetRegistryMirror, SetSignupEnabled,
    SetUserDisabled,
};
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, Page};
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use contracts::types::UserAccount;

#[component]
pub fn AdminPage() -> impl IntoView {
    let i18n = use_i18n();
    let toggle_signup = ServerAction::<SetSignupEnabled>::new();
    let toggle_pickled = ServerAction::<SetAllowPickledWeights>::new();
    let toggle_user = ServerAction::<SetUserDisabled>::new();
    let set_mirror = ServerAction::<SetRegistryMirror>::new();
    let settings = Resource::new(
        move || {
            (
                toggle_signup.version().get(),
                toggle_pickled.version().get(),
                set_mirror.version().get(),
            )
        },
        |_| instance_settings(),
    );
    let users = Resource::new(move || toggle_user.version().get(), |_| list_users());
    let action_error = Signal::derive(move || {
        toggle_signup
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| toggle_pickled.value().get().and_then(Result::err))
            .or_else(|| toggle_user.value().get().and_then(Result::err))
            .or_else(|| set_mirror.value().get().and_then(Result::err))
    });

    view! {
        <Page title=move || t_string!(i18n, admin.title).to_string() lead=move || t!(i18n, admin.lead) class="page page-narrow">
            {move || action_error.get().map(|err| view! { <ErrorNotice err /> })}
            <section class="card" aria-labelledby="signup-title">
                <h2 id="signup-title">{t!(i18n, admin.signup_title)}</h2>
                <Loaded load=move || async move { settings.await } let:s>
                    {
                        let enabled = s.signup_enabled;
                        view! {
                            <p data-testid="signup-state" data-enabled=enabled.to_string()>
                                {move || if enabled { t_string!(i18n, admin.signup_on) } else { t_string!(i18n, admin.signup_off) }}
                            </p>
                            <ActionForm action=toggle_signup>
                                <Flip field="enabled" on=enabled testid="signup-toggle"
                                    text=move || if enabled { t_string!(i18n, admin.disable_signup) } else { t_string!(i18n, admin.enable_signup) } />
                            </ActionForm>
                        }
                    }
                </Loaded>
            </section>
            <section class="card" aria-labelledby="weights-title">
                <h2 id="weights-title">{t!(i18n, admin.weights_title)}</h2>
                // A failure is already said above, under sign-up.
                <Loaded load=move || async move { Ok(settings.await.ok()) } let:s>
                    {s.map(|s| {
                        let allowed = s.allow_pickled_weights;
                        view! {
                            <p data-testid="pickled-state" data-allowed=allowed.to_string()>
                                {move || if allowed { t_string!(i18n, admin.pickled_on) } else { t_string!(i18n, admin.pickled_off) }}
                            </p>
                            <ActionForm action=toggle_pickled>
                                <Flip field="allowed" on=allowed testid="pickled-toggle"
                                    text=move || if allowed { t_string!(i18n, admin.refuse_pickled) } else { t_string!(i18n, admin.allow_pickled) } />
                            </ActionForm>
                        }
                    })}
                </Loaded>
            </section>
            <section class="card" aria-labelledby="mirror-title">
                <h2 id="mirror-title">{t!(i18n, admin.mirror_title)}</h2>
                <p class="hint">{t!(i18n, admin.mirror_hint)}</p>
                <Loaded load=move || async move { Ok(settings.await.ok()) } let:s>
                    {s.map(|s| {
                        let current = s.registry_mirror.clone().unwrap_or_default();
                        let set = !current.is_empty();
                        view! {
                            <p data-testid="registry-mirror-state" data-mirror=current.clone()>
                                {move || if set { t_string!(i18n, admin.mirror_on) } else { t_string!(i18n, admin.mirror_off) }}
                                {set.then(|| view! { " " <code>{current.clone()}</code> })}
                            </p>
                            <ActionForm action=set_mirror attr:class="form">
                                <div class="field">
                                    <label for="registry-mirror">{t!(i18n, admin.mirror_label)}</label>
                                    <input id="registry-mirror" name="mirror" type="text" value=current.clone()
                                        placeholder="registry.example.cn" autocomplete="off" spellcheck="false"
                                        data-testid="registry-mirror" />
                                </div>
                                <button type="submit" class="button" data-testid="registry-mirror-save">{t!(i18n, admin.mirror_save)}</button>
                            </ActionForm>
                        }
                    })}
                </Loaded>
            </section>
            <limits::Caps />
            <limits::GpuQuotas />
            <section class="card" aria-labelledby="users-title">
                <h2 id="users-title">{t!(i18n, admin.users_title)}</h2>
                <Loaded load=move || async move { users.await } let:list>
                    <UsersTable list toggle_user />
                </Loaded>
            </section>
            <identity::CompanySignIn />
            <images::BaseImages />
            <clusters::Clusters />
        </Page>
    }
}

/// The inside of a setting's form: the value it sends (the other one) and the button that sends it.
#[component]
fn Flip(
    field: &'static str,
    on: bool,
    testid: &'static str,
    #[prop(into)] text: Signal<&'static str>,
) -> impl IntoView {
    view! {
        <input type="hidden" name=field value=(!on).to_string() />
        <button type="submit" class="button button-ghost" data-testid=testid>{move || text.get()}</button>
    }
}

#[component]
fn UsersTable(list: Vec<UserAccount>, toggle_user: ServerAction<SetUserDisabled>) -> impl IntoView {
    let i18n = use_i18n();
    let rows = list
        .into_iter()
        .map(|u| {
            let user_id = u.id;
            let disabled = u.disabled;
            let name = u.username.clone();
            view! {
                <tr data-testid=format!("user-row-{}", u.username) data-disabled=disabled.to_string()>
                    <th scope="row">
                        {u.username.clone()}
                        {u.is_admin.then(|| view! { <span class="badge badge-admin">{t!(i18n, admin.admin_badge)}</span> })}
                    </th>
                    <td>
                        {if disabled {
                            view! { <span class="badge badge-disabled">{t!(i18n, admin.disabled)}</span> }.into_any()
                        } else {
                            view! { <span class="badge badge-active">{t!(i18n, admin.active)}</span> }.into_any()
                        }}
                    </td>
                    <td class="nowrap"><Timestamp at=u.created_at /></td>
                    <td>
                        <button
                            type="button"
                            class="button button-small"
                            class:button-danger-ghost=!disabled
                            class:button-ghost=disabled
                            data-testid=format!("toggle-user-{}", u.username)
                            aria-label=move || {
                                if disabled {
                                    t_string!(i18n, admin.enable_aria, name = name.clone())
                                } else {
                                    t_string!(i18n, admin.disable_aria, name = name.clone())
                                }
                            }
                            disabled=move || toggle_user.pending().get()
                            on:click=move |_| {
                                toggle_user.dispatch(SetUserDisabled { user_id, disabled: !disabled });
                            }
                        >
                            {move || if disabled { t_string!(i18n, admin.enable) } else { t_string!(i18n, admin.disable) }}
                        </button>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="users-table" columns=columns!(admin: col_user, col_status, col_created, col_actions)>
            {rows}
        </DataTable>
    }
}

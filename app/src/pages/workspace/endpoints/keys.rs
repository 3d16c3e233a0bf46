//! An endpoint's API keys: the list (name, first characters, rate limit, last use, revoked or not) for
//! every member, and for editors and owners a form to create one — whose secret is shown once, with a
//! copy button, and handed to the call examples below — and a Revoke button per active key.

use contracts::ids::{EndpointId, WorkspaceId};
use leptos::prelude::*;

use crate::api::endpoints::{CreateEndpointKey, RevokeEndpointKey};
use crate::components::copy::CopyButton;
use crate::components::form::{described_by, on_answer, FieldRow, FormError, SubmitButton};
use crate::components::notice::ErrorNotice;
use crate::components::table::{columns, DataTable, HiddenHeading, RowAction, TimeOrNever};
use crate::components::time::Timestamp;
use crate::i18n::*;
use contracts::error::{AppError, ErrorCode};
use contracts::types::EndpointKey;

/// What the rate-limit field starts at: the server's default for a key.
const DEFAULT_RATE_PER_MINUTE: u32 = 600;

#[component]
pub fn KeysCard(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    #[prop(into)] keys: Signal<Vec<EndpointKey>>,
    can_edit: bool,
    /// The secret of the key created on this page, once.
    secret: RwSignal<Option<String>>,
    /// Reads the endpoint again (after a key was created or revoked).
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let revoke = ServerAction::<RevokeEndpointKey>::new();
    let revoke_error = RwSignal::new(None::<AppError>);
    on_answer(revoke, revoke_error, move |()| refresh());
    view! {
        <section class="card" aria-labelledby="endpoint-keys-title" data-testid="endpoint-keys">
            <h2 id="endpoint-keys-title">{t!(i18n, endpoint_detail.keys_title)}</h2>
            <p class="hint">{t!(i18n, endpoint_detail.keys_hint)}</p>
            {can_edit.then(|| view! { <NewKeyForm workspace_id endpoint_id secret refresh /> })}
            {move || revoke_error.get().map(|err| view! { <ErrorNotice err /> })}
            {move || if keys.with(Vec::is_empty) {
                view! { <p class="muted" data-testid="keys-empty">{t!(i18n, endpoint_detail.keys_empty)}</p> }.into_any()
            } else {
                view! { <KeysTable workspace_id endpoint_id keys can_edit revoke /> }.into_any()
            }}
        </section>
    }
    .into_any()
}

#[component]
fn NewKeyForm(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    secret: RwSignal<Option<String>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let create = ServerAction::<CreateEndpointKey>::new();
    let name = RwSignal::new(String::new());
    let rate = RwSignal::new(DEFAULT_RATE_PER_MINUTE.to_string());
    let error = RwSignal::new(None::<AppError>);
    on_answer(create, error, move |new| {
        secret.set(Some(new.secret));
        name.set(String::new());
        refresh();
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match rate.get_untracked().trim().parse::<u32>() {
            Ok(per_minute) => {
                error.set(None);
                create.dispatch(CreateEndpointKey {
                    workspace_id,
                    endpoint_id,
                    name: name.get_untracked(),
                    rate_limit_per_minute: Some(per_minute),
                });
            }
            Err(_) => {
                let locale = i18n.get_locale_untracked();
                error.set(Some(AppError::invalid(
                    "rate_limit_per_minute",
                    ErrorCode::KeyRateInvalid,
                    td_string!(locale, endpoints.err_number),
                )));
            }
        }
    };
    let message = move |field: &'static str| {
        Signal::derive(move || {
            error.with(|e| {
                e.as_ref()
                    .filter(|e| e.field() == Some(field))
                    .map(|e| error_text(i18n.get_locale(), e))
            })
        })
    };
    let (m_name, m_rate) = (message("name"), message("rate_limit_per_minute"));
    view! {
        <form class="form form-inline key-form" data-testid="key-form" on:submit=on_submit novalidate>
            <FormError error=error.into() fields=&["name", "rate_limit_per_minute"] />
            <FieldRow id="key-name" label=move || t!(i18n, endpoint_detail.key_name) hint=Some(ViewFn::from(move || t!(i18n, endpoint_detail.key_name_hint))) message=m_name>
                <input id="key-name" data-testid="key-name" autocomplete="off" maxlength="64" required=true
                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))
                    aria-invalid=move || m_name.with(Option::is_some).then_some("true")
                    aria-describedby=described_by("key-name", true) />
            </FieldRow>
            <FieldRow id="key-rate" label=move || t!(i18n, endpoint_detail.key_rate) hint=Some(ViewFn::from(move || t!(i18n, endpoint_detail.key_rate_hint))) message=m_rate>
                <input id="key-rate" data-testid="key-rate" autocomplete="off" inputmode="numeric"
                    prop:value=move || rate.get() on:input=move |ev| rate.set(event_target_value(&ev))
                    aria-invalid=move || m_rate.with(Option::is_some).then_some("true")
                    aria-describedby=described_by("key-rate", true) />
            </FieldRow>
            <SubmitButton pending=create.pending() testid="key-submit">{t!(i18n, endpoint_detail.key_create)}</SubmitButton>
        </form>
        {move || secret.get().map(|value| {
            let copy = value.clone();
            view! {
                <div class="notice notice-success secret" role="status" data-testid="new-key">
                    <p><strong>{t!(i18n, endpoint_detail.key_created_title)}</strong></p>
                    <p>{t!(i18n, endpoint_detail.key_created_body)}</p>
                    <p class="secret-row">
                        <code class="secret-value" data-testid="new-key-secret">{value}</code>
                        <CopyButton text=Signal::stored(copy) testid="new-key-copy" />
                    </p>
                </div>
            }
        })}
    }
    .into_any()
}

#[component]
fn KeysTable(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    #[prop(into)] keys: Signal<Vec<EndpointKey>>,
    can_edit: bool,
    revoke: ServerAction<RevokeEndpointKey>,
) -> impl IntoView {
    let i18n = use_i18n();
    let row = move |key: EndpointKey| {
        let (key_id, name) = (key.id, key.name.clone());
        let revoked = key.revoked_at.is_some();
        let revoke_button = (can_edit && !revoked).then(|| view! {
            <RowAction testid=format!("revoke-key-{}", key.name) pending=revoke.pending()
                aria_label=move || t_string!(i18n, endpoint_detail.revoke_aria, name = name.clone()).to_string()
                on_click=move || { revoke.dispatch(RevokeEndpointKey { workspace_id, endpoint_id, key_id }); }>
                {t!(i18n, endpoint_detail.revoke)}
            </RowAction>
        });
        view! {
            <tr data-testid=format!("key-row-{}", key.name) data-state=if revoked { "revoked" } else { "active" }>
                <th scope="row">{key.name.clone()}</th>
                <td><code>{key.prefix.clone()}"…"</code></td>
                <td class="num">{key.rate_limit_per_minute}</td>
                <td class="nowrap"><Timestamp at=key.created_at.clone() /></td>
                <td class="nowrap"><TimeOrNever at=key.last_used_at.clone() /></td>
                <td>
                    {if revoked {
                        view! { <span class="badge badge-key-revoked">{t!(i18n, endpoint_detail.key_revoked)}</span> }.into_any()
                    } else {
                        view! { <span class="badge badge-key-active">{t!(i18n, endpoint_detail.key_active)}</span> }.into_any()
                    }}
                </td>
                {can_edit.then(|| view! { <td>{revoke_button}</td> })}
            </tr>
        }
    };
    view! {
        <DataTable testid="keys-table"
            columns=columns!(endpoint_detail: col_key, col_prefix, col_rate, col_created, col_last_used, col_state)
            more=move || can_edit.then(|| view! { <HiddenHeading>{t!(i18n, endpoint_detail.revoke)}</HiddenHeading> })>
            {move || keys.get().into_iter().map(row).collect_view()}
        </DataTable>
    }
    .into_any()
}

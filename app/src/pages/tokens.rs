//! `/settings/tokens`: personal API tokens. A new token's secret is shown once, right after it is
//! created; afterwards only its name, first characters, scope and expiry are listed.

use leptos::html::Form;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::tokens::{list_tokens, CreateToken, RevokeToken};
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::notice::{ErrorNotice, Loading};
use crate::components::time::Timestamp;
use crate::i18n::*;
use contracts::types::{ApiToken, TokenScope, DEFAULT_TOKEN_DAYS};

#[component]
pub fn TokensPage() -> impl IntoView {
    let i18n = use_i18n();
    let create = ServerAction::<CreateToken>::new();
    let revoke = ServerAction::<RevokeToken>::new();
    let tokens = Resource::new(
        move || (create.version().get(), revoke.version().get()),
        |_| list_tokens(),
    );
    let error = action_error(create);
    let revoke_error = action_error(revoke);
    let form = NodeRef::<Form>::new();
    Effect::new(move |_| {
        if let Some(Ok(_)) = create.value().get() {
            if let Some(form) = form.get_untracked() {
                form.reset();
            }
        }
    });

    view! {
        <Title text=move || t_string!(i18n, tokens.title).to_string() />
        <div class="page page-narrow">
            <header class="page-header">
                <h1 data-testid="page-title">{t!(i18n, tokens.title)}</h1>
                <p class="lead">{t!(i18n, tokens.lead)}</p>
            </header>
            <section class="card" aria-labelledby="token-create-title">
                <h2 id="token-create-title">{t!(i18n, tokens.create_title)}</h2>
                <ActionForm action=create node_ref=form attr:class="form form-inline" attr:data-testid="token-form" attr:novalidate=true>
                    <FormError error fields=&["name", "expires_in_days"] />
                    <Field
                        name="name"
                        id="token-name"
                        label=move || t!(i18n, tokens.name_label)
                        hint=ViewFn::from(move || t!(i18n, tokens.name_hint))
                        required=true
                        maxlength=64
                        error
                    />
                    <div class="field">
                        <label for="token-scope">{t!(i18n, tokens.scope_label)}</label>
                        <select id="token-scope" name="scope" data-testid="token-scope">
                            <option value="write" selected=true>{t!(i18n, tokens.scope_write)}</option>
                            <option value="read">{t!(i18n, tokens.scope_read)}</option>
                        </select>
                    </div>
                    <div class="field">
                        <label for="token-expiry">{t!(i18n, tokens.expiry_label)}</label>
                        <select id="token-expiry" name="expires_in_days" data-testid="token-expiry">
                            {[30u32, DEFAULT_TOKEN_DAYS, 365, 0]
                                .into_iter()
                                .map(|days| {
                                    view! {
                                        <option value=days.to_string() selected=days == DEFAULT_TOKEN_DAYS>
                                            {move || if days == 0 {
                                                t_string!(i18n, tokens.expiry_never).to_string()
                                            } else {
                                                t_string!(i18n, tokens.expiry_days, days = days).to_string()
                                            }}
                                        </option>
                                    }
                                })
                                .collect_view()}
                        </select>
                    </div>
                    <SubmitButton pending=create.pending() testid="token-submit">
                        {t!(i18n, tokens.create_button)}
                    </SubmitButton>
                </ActionForm>
                {move || {
                    create
                        .value()
                        .get()
                        .and_then(Result::ok)
                        .map(|new| {
                            view! {
                                <div class="notice notice-success secret" role="status" data-testid="new-token">
                                    <p><strong>{t!(i18n, tokens.created_title)}</strong></p>
                                    <p>{t!(i18n, tokens.created_body)}</p>
                                    <code class="secret-value" data-testid="new-token-secret">{new.secret}</code>
                                </div>
                            }
                        })
                }}
            </section>
            {move || revoke_error.get().map(|err| view! { <ErrorNotice err /> })}
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match tokens.await {
                        Ok(list) if list.is_empty() => view! {
                            <p class="notice notice-info" data-testid="tokens-empty">{t!(i18n, tokens.empty)}</p>
                        }
                        .into_any(),
                        Ok(list) => view! { <TokensTable list revoke /> }.into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
}

#[component]
fn TokensTable(list: Vec<ApiToken>, revoke: ServerAction<RevokeToken>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="tokens-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, tokens.col_name)}</th>
                        <th scope="col">{t!(i18n, tokens.col_prefix)}</th>
                        <th scope="col">{t!(i18n, tokens.col_created)}</th>
                        <th scope="col">{t!(i18n, tokens.col_scope)}</th>
                        <th scope="col">{t!(i18n, tokens.col_expires)}</th>
                        <th scope="col">{t!(i18n, tokens.col_last_used)}</th>
                        <th scope="col"><span class="visually-hidden">{t!(i18n, tokens.revoke)}</span></th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|token| {
                            let token_id = token.id;
                            let name = token.name.clone();
                            view! {
                                <tr data-testid=format!("token-row-{}", token.name)>
                                    <th scope="row">{token.name.clone()}</th>
                                    <td><code>{token.prefix}"…"</code></td>
                                    <td class="nowrap"><Timestamp at=token.created_at /></td>
                                    <td data-testid=format!("token-scope-{}", token.name)>
                                        {match token.scope {
                                            TokenScope::Read => t!(i18n, tokens.scope_read).into_any(),
                                            TokenScope::Write => t!(i18n, tokens.scope_write).into_any(),
                                        }}
                                    </td>
                                    <td class="nowrap">
                                        {match token.expires_at {
                                            Some(at) => view! { <Timestamp at /> }.into_any(),
                                            None => view! { <span class="muted">{t!(i18n, common.never)}</span> }.into_any(),
                                        }}
                                    </td>
                                    <td class="nowrap">
                                        {match token.last_used_at {
                                            Some(at) => view! { <Timestamp at /> }.into_any(),
                                            None => view! { <span class="muted">{t!(i18n, common.never)}</span> }.into_any(),
                                        }}
                                    </td>
                                    <td>
                                        <button
                                            type="button"
                                            class="button button-small button-danger-ghost"
                                            data-testid=format!("revoke-{}", token.name)
                                            aria-label=move || t_string!(i18n, tokens.revoke_aria, name = name.clone())
                                            disabled=move || revoke.pending().get()
                                            on:click=move |_| {
                                                revoke.dispatch(RevokeToken { token_id });
                                            }
                                        >
                                            {t!(i18n, tokens.revoke)}
                                        </button>
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

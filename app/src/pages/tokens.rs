//! `/settings/tokens`: personal API tokens. A new token's secret is shown once, right after it is
//! created; afterwards only its name, first characters, scope and expiry are listed.

use leptos::prelude::*;

use crate::api::tokens::{list_tokens, CreateToken, RevokeToken};
use crate::components::form::{action_error, cleared_on_success, Field, FormError, SubmitButton};
use crate::components::notice::ErrorNotice;
use crate::components::page::{InfoNote, Loaded, Page};
use crate::components::table::{columns, DataTable, HiddenHeading, RowAction, TimeOrNever};
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
    let form = cleared_on_success(create);

    view! {
        <Page title=move || t_string!(i18n, tokens.title).to_string() lead=move || t!(i18n, tokens.lead) class="page page-narrow">
            <section class="card" aria-labelledby="token-create-title">
                <h2 id="token-create-title">{t!(i18n, tokens.create_title)}</h2>
                <ActionForm action=create node_ref=form attr:class="form form-inline" attr:data-testid="token-form" attr:novalidate=true>
                    <FormError error fields=&["name", "expires_in_days"] />
                    <Field name="name" id="token-name" label=move || t!(i18n, tokens.name_label)
                        hint=ViewFn::from(move || t!(i18n, tokens.name_hint)) required=true maxlength=64 error />
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
            <Loaded load=move || async move { tokens.await } let:list>
                {if list.is_empty() {
                    view! { <InfoNote testid="tokens-empty">{t!(i18n, tokens.empty)}</InfoNote> }.into_any()
                } else {
                    view! { <TokensTable list revoke /> }.into_any()
                }}
            </Loaded>
        </Page>
    }
}

#[component]
fn TokensTable(list: Vec<ApiToken>, revoke: ServerAction<RevokeToken>) -> impl IntoView {
    let i18n = use_i18n();
    let rows = list
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
                    <td class="nowrap"><TimeOrNever at=token.expires_at /></td>
                    <td class="nowrap"><TimeOrNever at=token.last_used_at /></td>
                    <td>
                        <RowAction testid=format!("revoke-{}", token.name) pending=revoke.pending()
                            aria_label=move || t_string!(i18n, tokens.revoke_aria, name = name.clone()).to_string()
                            on_click=move || { revoke.dispatch(RevokeToken { token_id }); }>
                            {t!(i18n, tokens.revoke)}
                        </RowAction>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="tokens-table" columns=columns!(tokens: col_name, col_prefix, col_created, col_scope, col_expires, col_last_used)
            more=move || view! { <HiddenHeading>{t!(i18n, tokens.revoke)}</HiddenHeading> }>
            {rows}
        </DataTable>
    }
}

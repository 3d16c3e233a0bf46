//! The sign-in and sign-up pages. Both are plain forms posting to server functions (they work
//! before the wasm has loaded); once hydrated, success refreshes the session and moves on to the
//! dashboard without a reload, and errors appear next to the field they concern. The sign-in page
//! also offers each enabled company provider: an LDAP / Active Directory one opens its own form.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api::accounts::{sign_in_providers, DirectorySignIn, SignIn, SignUp};
use crate::components::auth::{use_auth, use_next, RedirectIfSignedIn};
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::header::Brand;
use crate::components::http::query;
use crate::components::lang_switch::LangSwitch;
use crate::i18n::error_text;
use crate::i18n::*;
use contracts::error::{AppError, ErrorCode};
use contracts::identity::ProviderKind;
use leptos_router::hooks::use_query_map;

/// `/signin`: a Paddock password, or a company provider.
#[component]
pub fn SignInPage() -> impl IntoView {
    let action = ServerAction::<SignIn>::new();
    let providers = Resource::new(|| (), |_| sign_in_providers());
    // The LDAP provider whose form is open (its name, what its button says); none: the password form.
    let directory = RwSignal::new(None::<(String, String)>);
    view! {
        {move || match directory.get() {
            None => view! {
                <AccountPage new=false action form=move |fields| view! {
                    <ActionForm action attr:class="form" attr:data-testid="signin-form" attr:novalidate=true>{fields}</ActionForm>
                    <CompanyButtons providers directory />
                }.into_any() />
            }.into_any(),
            Some((name, display)) => view! { <DirectoryPage name display directory /> }.into_any(),
        }}
    }
}

/// The enabled company providers' buttons, under the password form.
#[component]
fn CompanyButtons(
    providers: Resource<Result<Vec<contracts::identity::ProviderButton>, AppError>>,
    directory: RwSignal<Option<(String, String)>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let next = use_next();
    view! {
        <ReturnedError />
        <Suspense fallback=|| ()>
            {move || providers.get().and_then(Result::ok).filter(|p| !p.is_empty()).map(|list| view! {
                <section class="company-signin" data-testid="company-signin">
                    <h2>{t!(i18n, auth.company_heading)}</h2>
                    {list.into_iter().map(|p| {
                        let label = {
                            let name = p.display_name.clone();
                            move || t_string!(i18n, auth.sign_in_with, name = name.clone())
                        };
                        let testid = format!("provider-{}", p.name);
                        match p.kind {
                            ProviderKind::Oidc => {
                                // A navigation, not a request: the provider's pages come next.
                                let href = move || format!(
                                    "/api/v1/auth/oidc/{}/start?{}",
                                    p.name, query(&[("next", &next())])
                                );
                                view! { <a class="button button-ghost wide" href=href data-testid=testid rel="external">{label}</a> }.into_any()
                            }
                            ProviderKind::Ldap => {
                                let open = (p.name.clone(), p.display_name.clone());
                                view! {
                                    <button type="button" class="button button-ghost wide" data-testid=testid
                                        on:click=move |_| directory.set(Some(open.clone()))>{label}</button>
                                }.into_any()
                            }
                        }
                    }).collect_view()}
                </section>
            })}
        </Suspense>
    }
}

/// Why a company sign-in came back refused (`/signin?error=<code>`, from the OpenID callback), in
/// the reader's language.
#[component]
fn ReturnedError() -> impl IntoView {
    let i18n = use_i18n();
    let query = use_query_map();
    let error = move || {
        let code = query.with(|q| q.get("error"))?;
        let code: ErrorCode = serde_json::from_value(serde_json::Value::String(code)).ok()?;
        Some(AppError::denied(code, ""))
    };
    move || {
        error().map(|e| {
            let code = e.code().to_string();
            view! {
                <p class="notice notice-error" role="alert" data-testid="signin-error" data-code=code>
                    {move || error_text(i18n.get_locale(), &e)}
                </p>
            }
        })
    }
}

/// Once `action` has signed someone in (or up), the session is read again and the page they were
/// going to opens.
fn on_entry<S>(action: ServerAction<S>)
where
    S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
    S::Output: Send + Sync + Clone + 'static,
{
    let auth = use_auth();
    let navigate = use_navigate();
    let next = use_next();
    Effect::new(move |_| {
        if let Some(Ok(_)) = action.value().get() {
            auth.refresh();
            navigate(&next(), Default::default());
        }
    });
}

/// Sign-in through the LDAP provider `name`: the directory's username and password.
#[component]
fn DirectoryPage(
    name: String,
    display: String,
    directory: RwSignal<Option<(String, String)>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let action = ServerAction::<DirectorySignIn>::new();
    on_entry(action);
    let (error, pending) = (action_error(action), action.pending());
    let title = move || t_string!(i18n, auth.sign_in_with, name = display.clone());
    view! {
        <Title text=title.clone() />
        <RedirectIfSignedIn />
        <a class="skip-link" href="#main">{t!(i18n, a11y.skip_to_content)}</a>
        <div class="auth-page">
            <header class="auth-top">
                <Brand />
                <LangSwitch />
            </header>
            <main id="main" class="auth-card" tabindex="-1">
                <h1 data-testid="page-title">{title}</h1>
                <ActionForm action attr:class="form" attr:data-testid="directory-form" attr:novalidate=true>
                    <input type="hidden" name="provider" value=name />
                    <FormError error fields=&["username", "password"] />
                    <Field name="username" id="directory-username" label=move || t!(i18n, auth.directory_username)
                        autocomplete="username" required=true error />
                    <Field name="password" id="directory-password" input_type="password" label=move || t!(i18n, auth.directory_password)
                        autocomplete="current-password" required=true error />
                    <SubmitButton pending testid="directory-submit">{move || t_string!(i18n, auth.signin_button)}</SubmitButton>
                </ActionForm>
                <p class="auth-switch">
                    <button type="button" class="link" data-testid="back-to-password"
                        on:click=move |_| directory.set(None)>{t!(i18n, auth.back_to_password)}</button>
                </p>
            </main>
        </div>
    }
}

/// `/signup`.
#[component]
pub fn SignUpPage() -> impl IntoView {
    let action = ServerAction::<SignUp>::new();
    view! {
        <AccountPage new=true action form=move |fields| view! { <ActionForm action attr:class="form" attr:data-testid="signup-form" attr:novalidate=true>{fields}</ActionForm> }.into_any() />
    }
}

/// Sign-in, or sign-up (`new`): the heading, the username and password fields in the form of the
/// page's `action` (`form` wraps them), and the way to the other page. A new account's fields say what
/// each must be. Once the action has signed someone in (or up), the session is read again and the
/// dashboard opens.
#[component]
fn AccountPage<S>(
    new: bool,
    action: ServerAction<S>,
    form: impl FnOnce(AnyView) -> AnyView,
) -> impl IntoView
where
    S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
    S::Output: Send + Sync + Clone + 'static,
{
    on_entry(action);
    let (error, pending) = (action_error(action), action.pending());
    let i18n = use_i18n();
    let pick = move |signup: &'static str, signin: &'static str| if new { signup } else { signin };
    let hint = move |text: ViewFn| new.then_some(text);
    let button = move || {
        if new {
            t_string!(i18n, auth.signup_button)
        } else {
            t_string!(i18n, auth.signin_button)
        }
    };
    let fields = view! {
        <FormError error fields=&["username", "password"] />
        <Field name="username" id=pick("signup-username", "signin-username") label=move || t!(i18n, auth.username)
            hint=hint(ViewFn::from(move || t!(i18n, auth.username_hint)))
            autocomplete="username" required=true maxlength=new.then_some(32) error />
        <Field name="password" id=pick("signup-password", "signin-password") input_type="password" label=move || t!(i18n, auth.password)
            hint=hint(ViewFn::from(move || t!(i18n, auth.password_hint)))
            autocomplete=pick("new-password", "current-password") required=true error />
        <SubmitButton pending testid=pick("signup-submit", "signin-submit")>{button}</SubmitButton>
    };
    let other = if new {
        view! { {t!(i18n, auth.have_account)}" "<A href="/signin" attr:data-testid="go-signin">{t!(i18n, auth.go_signin)}</A> }.into_any()
    } else {
        view! { {t!(i18n, auth.no_account)}" "<A href="/signup" attr:data-testid="go-signup">{t!(i18n, auth.go_signup)}</A> }.into_any()
    };
    view! {
        <Title text=button />
        <RedirectIfSignedIn />
        <a class="skip-link" href="#main">{t!(i18n, a11y.skip_to_content)}</a>
        <div class="auth-page">
            <header class="auth-top">
                <Brand />
                <LangSwitch />
            </header>
            <main id="main" class="auth-card" tabindex="-1">
                <h1 data-testid="page-title">
                    {move || if new { t_string!(i18n, auth.signup_title) } else { t_string!(i18n, auth.signin_title) }}
                </h1>
                {new.then(|| view! { <p class="lead">{t!(i18n, auth.signup_intro)}</p> })}
                {form(fields.into_any())}
                <p class="auth-switch">{other}</p>
            </main>
            <p class="auth-tagline">{t!(i18n, app.tagline)}</p>
        </div>
    }
}

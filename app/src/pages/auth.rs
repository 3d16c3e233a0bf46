//! The sign-in and sign-up pages. Both are plain forms posting to server functions (they work
//! before the wasm has loaded); once hydrated, success refreshes the session and moves on to the
//! dashboard without a reload, and errors appear next to the field they concern.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api::accounts::{SignIn, SignUp};
use crate::components::auth::{use_auth, RedirectIfSignedIn};
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::header::Brand;
use crate::components::lang_switch::LangSwitch;
use crate::i18n::*;

/// The frame of the signed-out pages: brand and language switch above a centred card.
#[component]
fn AuthFrame(children: Children) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <RedirectIfSignedIn />
        <a class="skip-link" href="#main">{t!(i18n, a11y.skip_to_content)}</a>
        <div class="auth-page">
            <header class="auth-top">
                <Brand />
                <LangSwitch />
            </header>
            <main id="main" class="auth-card" tabindex="-1">
                {children()}
            </main>
            <p class="auth-tagline">{t!(i18n, app.tagline)}</p>
        </div>
    }
}

#[component]
pub fn SignInPage() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let action = ServerAction::<SignIn>::new();
    let error = action_error(action);
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(_)) = action.value().get() {
            auth.refresh();
            navigate("/", Default::default());
        }
    });
    view! {
        <Title text=move || t_string!(i18n, auth.signin_button).to_string() />
        <AuthFrame>
            <h1 data-testid="page-title">{t!(i18n, auth.signin_title)}</h1>
            <ActionForm action=action attr:class="form" attr:data-testid="signin-form" attr:novalidate=true>
                <FormError error fields=&["username", "password"] />
                <Field
                    name="username"
                    id="signin-username"
                    label=move || t!(i18n, auth.username)
                    autocomplete="username"
                    required=true
                    error
                />
                <Field
                    name="password"
                    id="signin-password"
                    input_type="password"
                    label=move || t!(i18n, auth.password)
                    autocomplete="current-password"
                    required=true
                    error
                />
                <SubmitButton pending=action.pending() testid="signin-submit">
                    {t!(i18n, auth.signin_button)}
                </SubmitButton>
            </ActionForm>
            <p class="auth-switch">
                {t!(i18n, auth.no_account)}" "
                <A href="/signup" attr:data-testid="go-signup">{t!(i18n, auth.go_signup)}</A>
            </p>
        </AuthFrame>
    }
}

#[component]
pub fn SignUpPage() -> impl IntoView {
    let i18n = use_i18n();
    let auth = use_auth();
    let action = ServerAction::<SignUp>::new();
    let error = action_error(action);
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(_)) = action.value().get() {
            auth.refresh();
            navigate("/", Default::default());
        }
    });
    view! {
        <Title text=move || t_string!(i18n, auth.signup_button).to_string() />
        <AuthFrame>
            <h1 data-testid="page-title">{t!(i18n, auth.signup_title)}</h1>
            <p class="lead">{t!(i18n, auth.signup_intro)}</p>
            <ActionForm action=action attr:class="form" attr:data-testid="signup-form" attr:novalidate=true>
                <FormError error fields=&["username", "password"] />
                <Field
                    name="username"
                    id="signup-username"
                    label=move || t!(i18n, auth.username)
                    hint=ViewFn::from(move || t!(i18n, auth.username_hint))
                    autocomplete="username"
                    required=true
                    maxlength=32
                    error
                />
                <Field
                    name="password"
                    id="signup-password"
                    input_type="password"
                    label=move || t!(i18n, auth.password)
                    hint=ViewFn::from(move || t!(i18n, auth.password_hint))
                    autocomplete="new-password"
                    required=true
                    error
                />
                <SubmitButton pending=action.pending() testid="signup-submit">
                    {t!(i18n, auth.signup_button)}
                </SubmitButton>
            </ActionForm>
            <p class="auth-switch">
                {t!(i18n, auth.have_account)}" "
                <A href="/signin" attr:data-testid="go-signin">{t!(i18n, auth.go_signin)}</A>
            </p>
        </AuthFrame>
    }
}

//! The sign-in and sign-up pages. Both are plain forms posting to server functions (they work
//! before the wasm has loaded); once hydrated, success refreshes the session and moves on to the
//! dashboard without a reload, and errors appear next to the field they concern.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api::accounts::{SignIn, SignUp};
use crate::components::auth::{use_auth, use_next, RedirectIfSignedIn};
use crate::components::form::{action_error, Field, FormError, SubmitButton};
use crate::components::header::Brand;
use crate::components::lang_switch::LangSwitch;
use crate::i18n::*;
use contracts::error::AppError;

/// `/signin`.
#[component]
pub fn SignInPage() -> impl IntoView {
    let action = ServerAction::<SignIn>::new();
    view! {
        <AccountPage new=false action form=move |fields| view! { <ActionForm action attr:class="form" attr:data-testid="signin-form" attr:novalidate=true>{fields}</ActionForm> }.into_any() />
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
    let auth = use_auth();
    let navigate = use_navigate();
    let next = use_next();
    Effect::new(move |_| {
        if let Some(Ok(_)) = action.value().get() {
            auth.refresh();
            navigate(&next(), Default::default());
        }
    });
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

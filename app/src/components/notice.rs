//! Error and information notices. Errors are always shown in the user's language: the text comes
//! from the error's stable code, never from the server's English message (except as a fallback).

use leptos::prelude::*;

use crate::i18n::*;
use contracts::error::AppError;

/// A block-level error message, announced by screen readers.
#[component]
pub fn ErrorNotice(err: AppError) -> impl IntoView {
    let i18n = use_i18n();
    let code = err.code().to_string();
    view! {
        <p class="notice notice-error" role="alert" data-testid="error" data-code=code>
            {move || error_text(i18n.get_locale(), &err)}
        </p>
    }
}

/// The "loading" line shown while a resource loads for the first time.
#[component]
pub fn Loading() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p class="loading" role="status" aria-live="polite">
            {t!(i18n, common.loading)}
        </p>
    }
}

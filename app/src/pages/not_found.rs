//! The page for URLs the router does not know; answers 404 when rendered on the server.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::i18n::*;

#[component]
pub fn NotFoundPage() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    let i18n = use_i18n();
    view! {
        <Title text=move || t_string!(i18n, errors.page_not_found).to_string() />
        <main id="main" class="auth-page">
            <div class="auth-card" data-testid="not-found">
                <h1>"404"</h1>
                <p>{t!(i18n, errors.page_not_found)}</p>
                <p><A href="/">{t!(i18n, common.back_home)}</A></p>
            </div>
        </main>
    }
}

//! The language switch: flips between Simplified Chinese and English in place (every translated
//! text is reactive, so nothing reloads); leptos_i18n stores the choice in the `i18n_pref_locale`
//! cookie, which the server reads on the next request.

use leptos::prelude::*;

use crate::i18n::*;
use leptos_i18n::Locale as _;

#[component]
pub fn LangSwitch() -> impl IntoView {
    let i18n = use_i18n();
    let other = move || match i18n.get_locale() {
        Locale::zh => Locale::en,
        Locale::en => Locale::zh,
    };
    view! {
        <button
            type="button"
            class="button button-ghost lang-switch"
            data-testid="lang-switch"
            lang=move || other().as_str()
            aria-label=move || t_string!(i18n, lang.switch_aria)
            on:click=move |_| i18n.set_locale(other())
        >
            <span class="lang-glyph" aria-hidden="true">"文A"</span>
            {move || t_string!(i18n, lang.switch_to_other)}
        </button>
    }
}

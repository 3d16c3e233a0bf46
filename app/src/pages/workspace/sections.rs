//! Endpoints. The foundation shipped every section as an empty state that says what the page is for;
//! the issues that build each feature replace it with a module of their own (as environments, datasets,
//! jobs and models did).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::empty_state::EmptyState;
use crate::i18n::*;
use crate::pages::workspace::PageHeader;

/// Declares one section page from its translation keys (`nav.$key`, `pages.$key.*`).
macro_rules! section_page {
    ($name:ident, $key:ident) => {
        #[component]
        pub fn $name() -> impl IntoView {
            let i18n = use_i18n();
            view! {
                <Title text=move || t_string!(i18n, nav.$key).to_string() />
                <div class="page">
                    <PageHeader
                        title=move || t!(i18n, nav.$key)
                        lead=move || t!(i18n, pages.$key.lead)
                    />
                    <EmptyState
                        kind=stringify!($key)
                        title=move || t!(i18n, pages.$key.empty_title)
                        body=move || t!(i18n, pages.$key.empty_body)
                        coming_soon=true
                    />
                </div>
            }
        }
    };
}

section_page!(EndpointsPage, endpoints);

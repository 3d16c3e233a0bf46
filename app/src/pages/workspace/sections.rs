//! Datasets, Jobs, Models and Endpoints. The foundation ships them as empty states that say what each
//! page is for; the issues that build each feature replace them with a module of their own (as
//! environments did).

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

section_page!(DatasetsPage, datasets);
section_page!(JobsPage, jobs);
section_page!(ModelsPage, models);
section_page!(EndpointsPage, endpoints);

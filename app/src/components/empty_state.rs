//! What a page shows before it has anything to list: what the page is for and what will appear.

use leptos::prelude::*;

use crate::i18n::*;

#[component]
pub fn EmptyState(
    /// What is missing ("No datasets yet").
    #[prop(into)]
    title: ViewFn,
    /// What the page is for and what will appear here.
    #[prop(into)]
    body: ViewFn,
    /// A CSS hook for the illustration, e.g. `datasets`.
    kind: &'static str,
    /// Whether to say the feature is not available yet (the section pages of the foundation).
    #[prop(optional)]
    coming_soon: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="empty-state" data-testid=format!("empty-{kind}") aria-labelledby=format!("empty-{kind}-title")>
            <div class=format!("empty-illustration empty-{kind}") aria-hidden="true"></div>
            <h2 id=format!("empty-{kind}-title")>{title.run()}</h2>
            <p>{body.run()}</p>
            {coming_soon.then(|| view! { <p class="badge badge-soon">{t!(i18n, common.coming_soon)}</p> })}
        </section>
    }
}

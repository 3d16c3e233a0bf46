//! A modal dialog: a card over a backdrop, titled, closed by its button, by Escape or by a click
//! outside it.

use leptos::prelude::*;

use crate::i18n::*;

#[component]
pub fn Dialog(
    /// The dialog's `data-testid`; its title's id is derived from it (`{testid}-title`).
    testid: &'static str,
    #[prop(into)] title: ViewFn,
    on_close: impl Fn() + Copy + Send + Sync + 'static,
    children: Children,
) -> impl IntoView {
    let i18n = use_i18n();
    let (title_id, labelled_by) = (format!("{testid}-title"), format!("{testid}-title"));
    view! {
        <div class="dialog-backdrop" on:click=move |_| on_close()>
            <div class="dialog card" role="dialog" aria-modal="true" aria-labelledby=labelled_by data-testid=testid
                on:click=|ev| ev.stop_propagation()
                on:keydown=move |ev| if ev.key() == "Escape" { on_close() }>
                <div class="card-heading">
                    <h2 id=title_id>{title.run()}</h2>
                    <button type="button" class="button button-small button-ghost" data-testid=format!("{testid}-close")
                        on:click=move |_| on_close()>
                        {t!(i18n, common.close)}
                    </button>
                </div>
                {children()}
            </div>
        </div>
    }
}

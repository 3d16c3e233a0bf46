//! Asking before what cannot be undone (deleting a dataset, a job, an endpoint, an environment;
//! cancelling a running job; stopping a live endpoint): the button that asks, the question, which
//! states the consequence, with the button that does it and Cancel, and the "working…" line beside
//! a page's action buttons.

use leptos::prelude::*;

use crate::i18n::*;
use contracts::error::AppError;

/// Opens the question; disabled while it is open and while `busy`. `name` is its `data-testid`, and
/// the question's ids derive from it ([`Confirm`]). It looks like a delete unless `class` says
/// otherwise (cancelling a job, stopping an endpoint).
#[component]
pub fn AskButton(
    name: &'static str,
    open: RwSignal<bool>,
    #[prop(optional, into)] busy: Signal<bool>,
    #[prop(optional)] class: Option<&'static str>,
    children: Children,
) -> impl IntoView {
    let class = class.unwrap_or("button button-danger-ghost");
    view! {
        <button type="button" class=class data-testid=name
            disabled=move || busy.get() || open.get() on:click=move |_| open.set(true)>
            {children()}
        </button>
    }
}

/// The question, while `open`: `{name}-confirm` around it, `{name}-question` its text, `{name}-yes`
/// the button that does it (`on_yes`), `{name}-cancel` the way back.
#[component]
pub fn Confirm(
    name: &'static str,
    open: RwSignal<bool>,
    #[prop(into)] busy: Signal<bool>,
    #[prop(into)] question: ViewFn,
    #[prop(into)] yes: ViewFn,
    on_yes: impl Fn() + Copy + Send + Sync + 'static,
    /// The action's error: a refusal closes the question (the error shows below it instead).
    #[prop(optional, into)]
    refused: Option<Signal<Option<AppError>>>,
    /// The way back's words where "cancel" would read as the action itself (cancelling a job).
    #[prop(optional, into)]
    no: Option<ViewFn>,
) -> impl IntoView {
    let i18n = use_i18n();
    if let Some(refused) = refused {
        Effect::new(move |_| {
            if refused.with(Option::is_some) {
                open.set(false);
            }
        });
    }
    move || {
        let (question, yes, no) = (question.clone(), yes.clone(), no.clone());
        open.get().then(|| view! {
            <div class="notice notice-error confirm" role="alertdialog" aria-labelledby=format!("{name}-question") data-testid=format!("{name}-confirm")>
                <p id=format!("{name}-question")>{question.run()}</p>
                <div class="actions">
                    <button type="button" class="button button-danger" data-testid=format!("{name}-yes") disabled=move || busy.get()
                        on:click=move |_| on_yes()>
                        {yes.run()}
                    </button>
                    <button type="button" class="button button-ghost" data-testid=format!("{name}-cancel") on:click=move |_| open.set(false)>
                        {match no {
                            Some(no) => no.run(),
                            None => t!(i18n, common.cancel).into_any(),
                        }}
                    </button>
                </div>
            </div>
        })
    }
}

/// Says "working…" (to screen readers too) while `busy`; `text` says it in other words.
#[component]
pub fn Busy(
    #[prop(into)] busy: Signal<bool>,
    #[prop(optional, into)] text: Option<ViewFn>,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = text.unwrap_or_else(|| ViewFn::from(move || t!(i18n, common.working)));
    view! {
        <span class="busy" role="status" aria-live="polite">
            {move || busy.get().then(|| text.run())}
        </span>
    }
}

//! Tables of rows: the frame every list of the dashboard shares (it scrolls sideways on a narrow screen
//! instead of squeezing its columns), and the cells several tables have.

use leptos::prelude::*;

use crate::components::time::Timestamp;
use crate::i18n::*;

/// A [`DataTable`]'s `columns` from translation keys of one namespace, or text that needs none:
/// `columns!(checkpoints: col_step, "sha256")`.
macro_rules! columns {
    ($namespace:ident: $($key:tt),+ $(,)?) => {
        |locale: $crate::i18n::Locale| {
            vec![$($crate::components::table::column!(locale, $namespace, $key)),+]
        }
    };
}

/// One heading of [`columns!`].
macro_rules! column {
    ($locale:ident, $namespace:ident, $key:ident) => {
        $crate::i18n::td_string!($locale, $namespace.$key)
    };
    ($locale:ident, $namespace:ident, $text:literal) => {
        $text
    };
}
pub(crate) use column;
pub(crate) use columns;

/// Column headings in the reader's language, then the rows (`children`).
#[component]
pub fn DataTable<C>(
    /// The `<table>`'s `data-testid`.
    testid: &'static str,
    /// The headings, read again when the language changes.
    columns: C,
    /// Headings after those that are not plain text: one only some readers get, or one that only
    /// screen readers hear.
    #[prop(optional, into)]
    more: Option<ViewFn>,
    /// The last column (a row's action) stays in view while the rest scrolls sideways.
    #[prop(optional)]
    sticky_end: bool,
    children: Children,
) -> impl IntoView
where
    C: Fn(Locale) -> Vec<&'static str> + Send + Sync + 'static,
{
    let i18n = use_i18n();
    let headings = move || {
        columns(i18n.get_locale())
            .into_iter()
            .map(|text| view! { <th scope="col">{text}</th> })
            .collect_view()
    };
    view! {
        <div class="table-wrap">
            <table class="table" class:table-sticky-end=sticky_end data-testid=testid>
                <thead>
                    <tr>{headings}{more.map(|more| more.run())}</tr>
                </thead>
                <tbody>{children()}</tbody>
            </table>
        </div>
    }
}

/// A heading that only screen readers hear (over a column of buttons that name themselves).
#[component]
pub fn HiddenHeading(children: Children) -> impl IntoView {
    view! {
        <th scope="col"><span class="visually-hidden">{children()}</span></th>
    }
}

/// When something last happened, or "never".
#[component]
pub fn TimeOrNever(at: Option<String>) -> impl IntoView {
    let i18n = use_i18n();
    match at {
        Some(at) => view! { <Timestamp at /> }.into_any(),
        None => view! { <span class="muted">{t!(i18n, common.never)}</span> }.into_any(),
    }
}

/// A row's button that changes or takes away what the row shows (revoke, remove, delete): small and
/// red, disabled while its action runs, and named for screen readers after the row (`aria_label`).
#[component]
pub fn RowAction(
    #[prop(into)] testid: String,
    #[prop(optional, into)] aria_label: Option<Signal<String>>,
    #[prop(into)] pending: Signal<bool>,
    on_click: impl Fn() + Send + Sync + 'static,
    children: Children,
) -> impl IntoView {
    view! {
        <button type="button" class="button button-small button-danger-ghost" data-testid=testid
            aria-label=move || aria_label.map(|label| label.get()) disabled=move || pending.get() on:click=move |_| on_click()>
            {children()}
        </button>
    }
}

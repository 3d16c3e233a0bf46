//! The frame every page shares: its title (in the browser tab and as the heading) with a lead, and the
//! one way a page or card waits for what it reads — "loading" the first time, the previous content while
//! it is read again, the error in the reader's language when it fails.

use std::future::Future;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::components::notice::{ErrorNotice, Loading};
use contracts::error::AppError;

/// The title block every page starts with. Both parts are drawn again when what they read changes (the
/// language, a renamed thing), also when they are plain text.
#[component]
pub fn PageHeader(#[prop(into)] title: ViewFn, #[prop(into)] lead: ViewFn) -> impl IntoView {
    view! {
        <header class="page-header">
            <h1 data-testid="page-title">{move || title.run()}</h1>
            <p class="lead">{move || lead.run()}</p>
        </header>
    }
}

/// A page whose title is known before anything is read: the tab says it too (`… · Paddock`).
#[component]
pub fn Page(
    /// In the reader's language.
    #[prop(into)]
    title: Signal<String>,
    #[prop(into)] lead: ViewFn,
    /// The page's width: `page`, or `page page-narrow` for a page of a few fields, `page page-form` for
    /// the spec forms.
    #[prop(default = "page")]
    class: &'static str,
    children: Children,
) -> impl IntoView {
    view! {
        <Title text=move || title.get() />
        <div class=class>
            <PageHeader title=move || title.get() lead />
            {children()}
        </div>
    }
}

/// What `load` reads, once it has arrived, drawn by `children`. `load` awaits resources, so the server
/// waits for them before it sends the page and the browser keeps the previous content while they are
/// read again; a failure shows the error instead (after `failed`, when given: a detail page repeats its
/// section's heading there, since its own title is in what failed to load).
#[component]
pub fn Loaded<T, L, Fut, F, V>(
    load: L,
    #[prop(optional, into)] failed: Option<ViewFn>,
    children: F,
) -> impl IntoView
where
    T: 'static,
    L: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, AppError>> + Send + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Transition fallback=Loading>
            {move || {
                let (answer, children, failed) = (load(), children.clone(), failed.clone());
                Suspend::new(async move {
                    match answer.await {
                        Ok(value) => children(value).into_any(),
                        Err(err) => view! { {failed.map(|f| f.run())} <ErrorNotice err /> }.into_any(),
                    }
                })
            }}
        </Transition>
    }
}

/// A list's place on its page: `empty` while there is nothing, the error when it could not be read,
/// else what `full` makes of it.
pub fn list_or<T>(
    list: Result<Vec<T>, AppError>,
    empty: impl FnOnce() -> AnyView,
    full: impl FnOnce(Vec<T>) -> AnyView,
) -> AnyView {
    match list {
        Ok(list) if list.is_empty() => empty(),
        Ok(list) => full(list),
        Err(err) => view! { <ErrorNotice err /> }.into_any(),
    }
}

/// The button that opens a section's "new" form (for editors and owners), above its list; disabled but
/// still there while the server cannot do it (`enabled`: false).
#[component]
pub fn NewButton(
    href: String,
    testid: &'static str,
    #[prop(default = true)] enabled: bool,
    children: Children,
) -> impl IntoView {
    let content = view! { <span aria-hidden="true">"+ "</span>{children()} };
    let button = if enabled {
        view! { <A href attr:class="button button-primary" attr:data-testid=testid>{content}</A> }
            .into_any()
    } else {
        view! { <button type="button" class="button button-primary" disabled=true data-testid=testid>{content}</button> }
            .into_any()
    };
    view! { <div class="page-actions">{button}</div> }
}

/// An information line, such as the note that tells a viewer why the controls are missing.
#[component]
pub fn InfoNote(testid: &'static str, children: Children) -> impl IntoView {
    view! { <p class="notice notice-info" data-testid=testid>{children()}</p> }
}

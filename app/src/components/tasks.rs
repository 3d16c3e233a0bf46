//! The select that picks a task, its options named in the user's language (the upload form says what a
//! file's rows are for, the job form what the model learns).

use contracts::error::AppError;
use contracts::task::{Task, TASKS};
use leptos::prelude::*;

use crate::components::form::{message_at, FieldRow};
use crate::i18n::*;

/// A select of every task, bound to `task`; the server's problems at `field` are shown under it.
#[component]
pub fn TaskSelect(
    id: &'static str,
    field: &'static str,
    task: RwSignal<Task>,
    error: RwSignal<Option<AppError>>,
    #[prop(optional, into)] hint: Option<ViewFn>,
) -> impl IntoView {
    let i18n = use_i18n();
    let message = message_at(error, field);
    view! {
        <FieldRow id label=move || t!(i18n, tasks.label) hint message>
            <select id=id data-testid=id
                aria-invalid=move || message.with(Option::is_some).then_some("true")
                on:change=move |ev| {
                    if let Some(t) = Task::parse(&event_target_value(&ev)) {
                        task.set(t);
                    }
                }>
                {TASKS.into_iter().map(|t| view! {
                    <option value=t.as_str() selected=move || task.get() == t>{move || task_name(i18n.get_locale(), t)}</option>
                }).collect_view()}
            </select>
        </FieldRow>
    }
}

//! Small labels: the state of a thing (a container, a build, a job, an endpoint, an evaluation), a
//! member's role, and the "read-only" mark a viewer sees.

use leptos::prelude::*;

use crate::i18n::*;
use contracts::types::Role;

/// A state in the reader's words, classed `badge badge-{kind} badge-{kind}-{state}` for its colour,
/// with the raw state in `data-status` for tests and styling; a dot before the words marks the states
/// of things that run.
#[component]
pub fn StateBadge(
    kind: &'static str,
    testid: &'static str,
    #[prop(into)] state: Signal<&'static str>,
    #[prop(into)] text: ViewFn,
    #[prop(default = true)] dot: bool,
) -> impl IntoView {
    view! {
        <span class=move || format!("badge badge-{kind} badge-{kind}-{}", state.get()) data-testid=testid data-status=move || state.get()>
            {dot.then(|| view! { <span class="status-dot" aria-hidden="true"></span> })}
            {move || text.run()}
        </span>
    }
}

/// The translated name of a role, for text and for `<option>`s.
pub fn role_name(locale: Locale, role: Role) -> &'static str {
    match role {
        Role::Owner => td_string!(locale, roles.owner),
        Role::Editor => td_string!(locale, roles.editor),
        Role::Viewer => td_string!(locale, roles.viewer),
    }
}

#[component]
pub fn RoleBadge(role: Role) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <span class=format!("badge badge-role badge-{}", role.as_str()) data-testid="role-badge" data-role=role.as_str()>
            {move || role_name(i18n.get_locale(), role)}
        </span>
    }
}

/// Shown to viewers on every workspace page; the note explains what it means on hover and to
/// screen readers.
#[component]
pub fn ReadOnlyBadge() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <span
            class="badge badge-readonly"
            data-testid="readonly-badge"
            title=move || t_string!(i18n, workspace.readonly_note)
        >
            <span aria-hidden="true" class="lock"></span>
            {t!(i18n, workspace.readonly)}
            <span class="visually-hidden">{move || format!(": {}", t_string!(i18n, workspace.readonly_note))}</span>
        </span>
    }
}

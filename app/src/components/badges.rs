//! Small labels: a member's role, and the "read-only" mark a viewer sees.

use leptos::prelude::*;

use crate::i18n::*;
use contracts::types::Role;

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

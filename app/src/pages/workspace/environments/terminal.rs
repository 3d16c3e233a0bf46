//! The browser terminal: a button that mounts `<paddock-terminal>`, a custom element defined by
//! `public/terminal.js`, which loads xterm.js from the site's own assets (`/vendor/xterm/`, copied from
//! npm by `scripts/setup.sh`; no CDN) and bridges it to the terminal WebSocket. The element is only
//! created after a click, in the browser, so server rendering and hydration never see it; removing it
//! (closing, leaving the page, the environment stopping) closes the socket and so ends the shell.
//!
//! Every text the element shows comes from here, translated, in `data-text-*` attributes.

use contracts::ids::{EnvironmentId, WorkspaceId};
use leptos::prelude::*;

use crate::i18n::*;

/// The WebSocket path (`ws:`/`wss:` and the host are added in the browser).
pub fn terminal_path(workspace_id: WorkspaceId, environment_id: EnvironmentId) -> String {
    format!("/api/v1/workspaces/{workspace_id}/environments/{environment_id}/terminal")
}

#[component]
pub fn TerminalPanel(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    name: String,
) -> impl IntoView {
    let i18n = use_i18n();
    let open = RwSignal::new(false);
    let label = move || t_string!(i18n, env_detail.terminal_label, name = name.clone()).to_string();
    view! {
        <section class="card terminal-card" aria-labelledby="env-terminal-title" data-testid="env-terminal">
            <div class="card-heading">
                <h2 id="env-terminal-title">{t!(i18n, env_detail.terminal_title)}</h2>
                {move || if open.get() {
                    view! {
                        <button type="button" class="button button-small button-ghost" data-testid="terminal-close" on:click=move |_| open.set(false)>
                            {t!(i18n, env_detail.terminal_close)}
                        </button>
                    }
                    .into_any()
                } else {
                    view! {
                        <button type="button" class="button button-small button-primary" data-testid="terminal-open" on:click=move |_| open.set(true)>
                            {t!(i18n, env_detail.terminal_open)}
                        </button>
                    }
                    .into_any()
                }}
            </div>
            <p class="hint">{t!(i18n, env_detail.terminal_hint)}</p>
            {move || open.get().then(|| {
                let label = label.clone();
                view! {
                    <paddock-terminal
                        class="terminal"
                        data-testid="terminal"
                        role="region"
                        aria-label=label
                        data-path=terminal_path(workspace_id, environment_id)
                        data-text-connecting=move || t_string!(i18n, env_detail.terminal_connecting)
                        data-text-exited=move || t_string!(i18n, env_detail.terminal_exited)
                        data-text-closed=move || t_string!(i18n, env_detail.terminal_closed)
                        data-text-failed=move || t_string!(i18n, env_detail.terminal_failed)
                    ></paddock-terminal>
                }
            })}
        </section>
    }
    .into_any()
}

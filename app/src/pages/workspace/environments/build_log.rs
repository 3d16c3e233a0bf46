//! The build log of one environment version, read from the server's SSE stream
//! (`/api/v1/workspaces/{id}/environments/{env_id}/versions/{version}/log`). The stream sends the whole
//! log so far, then new text as the build writes it (`log` events), and a last `end` event with the
//! build's status; a finished build's log therefore arrives complete and ends at once. The stream
//! closes on `end` ([`crate::components::sse`]) and when the component goes away.

use contracts::ids::{EnvironmentId, WorkspaceId};
use leptos::prelude::*;

use crate::components::http::{slot, Slot};
use crate::components::sse::{EventStream, Message};
use crate::i18n::*;

/// Where the stream of a version's build log is.
pub fn log_url(workspace_id: WorkspaceId, environment_id: EnvironmentId, version: i64) -> String {
    format!(
        "/api/v1/workspaces/{workspace_id}/environments/{environment_id}/versions/{version}/log"
    )
}

/// The log as a `<pre>` that follows the stream. `on_end` runs once when the server says the build is
/// over (the page then reloads the environment to show the lock).
#[component]
pub fn BuildLog(
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    version: i64,
    /// The build has not started: there is nothing to stream yet.
    waiting: bool,
    #[prop(into)] on_end: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = RwSignal::new(String::new());
    // Streaming until `end` (or an error); only in the browser, so the server renders "not streaming".
    let streaming = RwSignal::new(false);
    // Local to the browser thread there; on the server (where nothing streams) a plain slot, because a
    // thread-local value dropped on another thread panics and leaves the page stream unfinished.
    let stream: Slot<EventStream> = slot();
    let pre = NodeRef::<leptos::html::Pre>::new();
    if !waiting {
        Effect::new(move |_| {
            streaming.set(true);
            let on_message = move |message: Message| match message {
                Message::Data(_, chunk) => {
                    text.update(|t| {
                        t.push_str(&chunk);
                        t.push('\n');
                    });
                    // Keep the newest line in view, as a terminal would.
                    if let Some(pre) = pre.get_untracked() {
                        pre.set_scroll_top(pre.scroll_height());
                    }
                }
                // A refused stream ends without `end`; a dropped one is not retried: what arrived is
                // enough for a build log.
                Message::End | Message::Dropped => {
                    streaming.set(false);
                    on_end.run(());
                }
            };
            stream.set_value(EventStream::open(
                &log_url(workspace_id, environment_id, version),
                &["log"],
                on_message,
            ));
        });
    }
    view! {
        <div class="build-log" data-testid="build-log-panel">
            <p class="hint build-log-state" role="status" data-testid="build-log-state" data-streaming=move || streaming.get().to_string()>
                {move || {
                    if waiting {
                        t_string!(i18n, env_detail.log_waiting).to_string()
                    } else if streaming.get() {
                        t_string!(i18n, env_detail.log_live).to_string()
                    } else if text.with(String::is_empty) {
                        t_string!(i18n, env_detail.log_empty).to_string()
                    } else {
                        String::new()
                    }
                }}
            </p>
            <pre class="log" node_ref=pre data-testid="build-log" tabindex="0" aria-label=move || t_string!(i18n, env_detail.log_title)>
                {move || text.get()}
            </pre>
        </div>
    }
    .into_any()
}

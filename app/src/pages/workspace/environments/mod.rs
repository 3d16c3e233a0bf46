//! `/w/{id}/environments/...`: a workspace's container environments — the list, the create and edit
//! form, and one page per environment with its spec, lock, build log, status, usage, terminal, events and
//! versions. Viewers see everything and change nothing: the controls are absent for them, and the server
//! refuses the same actions anyway. When the server cannot reach Docker every page says so and the
//! actions are disabled, while reading keeps working.
//!
//! # Layout
//! - [`list`]: the list page. [`form`]: new and edit (the spec form and its parsing).
//! - [`detail`]: one environment; [`build_log`] streams its build log over SSE, [`stats`] polls its
//!   usage, [`terminal`] embeds the shell (`public/terminal.js` with xterm.js).
//! - [`parts`]: badges, the Docker banner and the formatting the pages share.
//!
//! The components here end in `.into_any()`: nested, the detail page's view types grow past the
//! compiler's query depth limit when the server crate lays them out.

use contracts::ids::{EnvironmentId, WorkspaceId};

pub mod build_log;
pub mod detail;
pub mod form;
pub mod list;
pub mod parts;
pub mod stats;
pub mod terminal;

/// `/w/{id}/environments/{env_id}`.
pub fn environment_href(workspace_id: WorkspaceId, environment_id: EnvironmentId) -> String {
    format!("/w/{workspace_id}/environments/{environment_id}")
}

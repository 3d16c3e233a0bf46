//! `/w/{id}/endpoints/...`: checkpoints served over HTTP — the list (status, replicas, lineage), the
//! Deploy form opened from a checkpoint, and one page per endpoint with its status and parity report,
//! replicas, live traffic charts, a playground, API keys and ready-to-copy calls.
//!
//! # Layout
//! - [`list`]: the list. [`deploy`]: the Deploy button and form in the checkpoints tables.
//! - [`detail`]: one endpoint (status, lifecycle buttons, replicas) and the polling that keeps it live;
//!   [`manage`] scales it and rolls out another checkpoint, [`scaling`] sets its autoscaling and shows
//!   its history, [`canary`] runs canary rollouts, [`metrics`] draws its traffic,
//!   [`playground`] tries it, [`keys`] manages its API keys, [`usage`] shows curl and Python calls.
//! - this file: the status badge and the URLs the pages share.

pub mod canary;
pub mod deploy;
pub mod detail;
pub mod keys;
pub mod list;
pub mod manage;
pub mod metrics;
pub mod playground;
pub mod scaling;
pub mod usage;

use contracts::ids::{EndpointId, WorkspaceId};
use leptos::prelude::*;

use crate::components::badges::StateBadge;
use crate::i18n::*;
use contracts::types::EndpointStatus;

/// `/w/{id}/endpoints/{endpoint}`.
pub fn endpoint_href(workspace_id: WorkspaceId, endpoint_id: EndpointId) -> String {
    format!("/w/{workspace_id}/endpoints/{endpoint_id}")
}

pub fn status_text(locale: Locale, status: EndpointStatus) -> &'static str {
    match status {
        EndpointStatus::Starting => td_string!(locale, endpoints.status_starting),
        EndpointStatus::Ready => td_string!(locale, endpoints.status_ready),
        EndpointStatus::Failed => td_string!(locale, endpoints.status_failed),
        EndpointStatus::Stopped => td_string!(locale, endpoints.status_stopped),
    }
}

/// `data-status` carries the raw value for tests and styling.
#[component]
pub fn EndpointStatusBadge(
    #[prop(into)] status: Signal<EndpointStatus>,
    #[prop(default = "endpoint-status")] testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || status_text(i18n.get_locale(), status.get());
    view! { <StateBadge kind="endpoint" testid state=move || status.get().as_str() text /> }
}

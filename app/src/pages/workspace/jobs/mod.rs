//! `/w/{id}/jobs/...`: fine-tuning jobs — the list (status, progress, queue position), the job form (also
//! "clone job": the form filled from an earlier job's spec), and one page per job with its progress and
//! ETA, live charts and log over SSE, the spec as TOML, the control buttons and its checkpoints.
//!
//! # Layout
//! - [`list`]: the list. [`form`]: new and clone (the spec form and its parsing).
//! - [`detail`]: one job; [`stream`] follows its SSE stream, [`charts`] draws the metrics (uPlot through
//!   `public/charts.js`), [`logs`] shows and searches the log, [`checkpoints`] lists what it wrote (also
//!   used by the Models page), [`evaluations`] measures them on datasets (also on the Models page).
//! - [`parts`]: the status badge, progress and ETA arithmetic the pages share.

use contracts::ids::{JobId, WorkspaceId};

pub mod charts;
pub mod checkpoints;
pub mod detail;
pub mod evaluations;
pub mod form;
pub mod list;
pub mod logs;
pub mod parts;
pub mod stream;

/// `/w/{id}/jobs/{job}`.
pub fn job_href(workspace_id: WorkspaceId, job_id: JobId) -> String {
    format!("/w/{workspace_id}/jobs/{job_id}")
}

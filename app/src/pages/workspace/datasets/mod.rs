//! `/w/{id}/datasets/...`: a workspace's labelled text — the list with the upload form and the one-click
//! sample, and one page per dataset with the validator's report, a preview of its first rows, its sha256
//! and a download link. Viewers read everything; the upload, the sample and delete are for editors and
//! owners (the server refuses the same anyway).
//!
//! # Layout
//! - [`list`]: the list page and delete. [`upload`]: the upload form (XHR with a progress bar).
//! - [`detail`]: one dataset; [`report`] draws the validation report (label bars, length histogram,
//!   problems with line numbers).

use contracts::ids::{DatasetId, WorkspaceId};

pub mod detail;
pub mod list;
pub mod report;
pub mod upload;

/// `/w/{id}/datasets/{ds}`.
pub fn dataset_href(workspace_id: WorkspaceId, dataset_id: DatasetId) -> String {
    format!("/w/{workspace_id}/datasets/{dataset_id}")
}

/// Where the dataset's file is downloaded (REST, same-origin cookie).
pub fn file_url(workspace_id: WorkspaceId, dataset_id: DatasetId) -> String {
    format!("/api/v1/workspaces/{workspace_id}/datasets/{dataset_id}/file")
}

/// The first 12 hex digits of a sha256, as listed; the full value goes in `title`.
pub fn short_sha(sha256: &str) -> String {
    sha256.chars().take(12).collect()
}

/// Share of `count` in `total` as a CSS width (`42.5%`); 0 for an empty total.
pub fn percent(count: usize, total: usize) -> String {
    if total == 0 {
        return "0%".into();
    }
    format!("{:.1}%", count as f64 * 100.0 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_short_hashes() {
        assert_eq!(percent(1, 4), "25.0%");
        assert_eq!(percent(3, 0), "0%");
        assert_eq!(short_sha("0123456789abcdef0123"), "0123456789ab");
    }
}

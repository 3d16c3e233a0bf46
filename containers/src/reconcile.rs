//! Listing Paddock's containers as Docker sees them, for reconciliation: on start-up and periodically the
//! app compares this list with its database — a container that vanished is marked, one nobody knows is
//! adopted or removed by policy. Filtering is by label (`paddock.managed=true`, optionally instance), never by
//! name alone, so foreign containers are never touched.

use std::collections::{BTreeMap, HashMap};

use bollard::query_parameters::ListContainersOptionsBuilder;

use crate::error::{Error, Result};
use crate::labels;
use crate::lifecycle::ContainerStatus;
use crate::Docker;

/// Which managed containers to list.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this installation's (label `paddock.instance`).
    pub instance: Option<String>,
    /// Only names starting with this (e.g. `paddock-main-env-`).
    pub name_prefix: Option<String>,
    /// Only this workspace's.
    pub workspace: Option<String>,
}

/// One managed container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedContainer {
    pub id: String,
    pub name: String,
    pub image: String,
    pub labels: BTreeMap<String, String>,
    pub status: ContainerStatus,
}

impl Docker {
    /// Paddock-managed containers matching `filter`, running or not, sorted by name. Exited containers are
    /// inspected to tell an OOM kill from an ordinary exit.
    pub async fn list_managed(&self, filter: &ListFilter) -> Result<Vec<ManagedContainer>> {
        let mut label_filters = vec![format!("{}=true", labels::MANAGED)];
        if let Some(instance) = &filter.instance {
            label_filters.push(format!("{}={instance}", labels::INSTANCE));
        }
        if let Some(workspace) = &filter.workspace {
            label_filters.push(format!("{}={workspace}", labels::WORKSPACE));
        }
        let filters = HashMap::from([("label", label_filters)]);
        let summaries = self
            .api()
            .list_containers(Some(
                ListContainersOptionsBuilder::default()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| Error::docker("listing containers", "containers", "", e))?;
        let mut out = Vec::new();
        for summary in summaries {
            let name = summary
                .names
                .as_ref()
                .and_then(|n| n.first())
                .map(|n| n.trim_start_matches('/').to_string())
                .unwrap_or_default();
            if filter
                .name_prefix
                .as_ref()
                .is_some_and(|p| !name.starts_with(p.as_str()))
            {
                continue;
            }
            let id = summary.id.unwrap_or_default();
            let state = summary.state.map(|s| s.to_string()).unwrap_or_default();
            let mut status =
                ContainerStatus::from_summary(&state, summary.status.as_deref().unwrap_or(""));
            if matches!(status, ContainerStatus::Exited { .. }) {
                // Vanishing between list and inspect is just another state.
                status = self.status(&id).await?;
            }
            out.push(ManagedContainer {
                id,
                name,
                image: summary.image.unwrap_or_default(),
                labels: summary.labels.unwrap_or_default().into_iter().collect(),
                status,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

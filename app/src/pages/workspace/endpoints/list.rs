//! `/w/{id}/endpoints`: the workspace's endpoints, newest first — status, replicas ready out of wanted,
//! the URL name (slug), and the lineage: the checkpoint (with its step) and the job that wrote it. While
//! any endpoint is starting the list is read again every few seconds, in place. Endpoints are created
//! from a checkpoint (Deploy on a job's page or on Models), so the empty state points there.

use contracts::ids::{CheckpointId, JobId, WorkspaceId};
use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::components::A;

use super::{endpoint_href, EndpointStatusBadge};
use crate::api::{checkpoints::list_checkpoints, endpoints::list_endpoints, jobs::list_jobs};
use crate::components::empty_state::EmptyState;
use crate::components::page::{list_or, Loaded};
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::jobs::job_href;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::error::AppError;
use contracts::types::{EndpointStatus, EndpointSummary};

/// How often the list is read again while an endpoint is starting.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

/// What the list shows besides the endpoints: job names and checkpoint steps, by id.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Lineage {
    jobs: BTreeMap<JobId, String>,
    steps: BTreeMap<CheckpointId, i64>,
}

#[component]
pub fn EndpointsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let endpoints = Resource::new(move || current.id.get(), list_endpoints);
    let lineage = Resource::new(
        move || current.id.get(),
        |ws| async move {
            let jobs = list_jobs(ws, Default::default()).await?;
            let checkpoints = list_checkpoints(ws).await?;
            Ok::<_, AppError>(Lineage {
                jobs: jobs.into_iter().map(|j| (j.id, j.name)).collect(),
                steps: checkpoints.into_iter().map(|c| (c.id, c.step)).collect(),
            })
        },
    );
    refetch_while(endpoints, POLL, |e| e.status == EndpointStatus::Starting);
    let load = move || async move { Ok((current.ws.await?, endpoints.await, lineage.await)) };
    view! {
        <SectionPage section="endpoints">
            <Loaded load let((ws, list, lineage))>
                {
                    let (workspace_id, can_edit) = (ws.id, ws.role.can_edit());
                    let empty = move || view! {
                        <EmptyState kind="endpoints" title=move || t!(i18n, pages.endpoints.empty_title) body=move || t!(i18n, pages.endpoints.empty_body) />
                        {can_edit.then(|| view! {
                            <p class="empty-action">
                                <A href=format!("/w/{workspace_id}/models") attr:class="button button-primary" attr:data-testid="endpoints-go-models">
                                    {t!(i18n, endpoints.go_models)}
                                </A>
                            </p>
                        })}
                    }
                    .into_any();
                    let lineage = lineage.unwrap_or_default();
                    list_or(list, empty, |list| view! { <EndpointsTable list workspace_id lineage /> }.into_any())
                }
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

#[component]
fn EndpointsTable(
    list: Vec<EndpointSummary>,
    workspace_id: WorkspaceId,
    lineage: Lineage,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <DataTable testid="endpoints-table" columns=columns!(endpoints: col_name, col_status, col_replicas, col_model, col_created)>
            {list
                .into_iter()
                .map(|e| {
                    let (ready, total) = (e.ready_replicas, e.replicas);
                    let job = lineage.jobs.get(&e.job_id).cloned().unwrap_or_else(|| format!("#{}", e.job_id));
                    let step = lineage.steps.get(&e.checkpoint_id).copied();
                    let checkpoint_id = e.checkpoint_id;
                    view! {
                        <tr data-testid=format!("endpoint-row-{}", e.slug) data-slug=e.slug.clone()>
                            <th scope="row">
                                <A href=endpoint_href(workspace_id, e.id) attr:data-testid="endpoint-link">{e.name.clone()}</A>
                                <code class="muted small block" data-testid="endpoint-slug">{e.slug.clone()}</code>
                            </th>
                            <td>
                                <EndpointStatusBadge status=e.status />
                                {e.status_message.clone().map(|m| view! { <span class="muted small block">{m}</span> })}
                            </td>
                            <td class="num nowrap" data-testid="endpoint-replicas">
                                {move || t_string!(i18n, endpoints.replicas_ready, ready = ready, total = total).to_string()}
                            </td>
                            <td>
                                <A href=job_href(workspace_id, e.job_id) attr:data-testid="endpoint-job">{job}</A>
                                <span class="muted small block">
                                    {move || t_string!(i18n, endpoints.checkpoint_of, id = checkpoint_id).to_string()}
                                    {move || step.map(|s| format!(" · {}", t_string!(i18n, endpoints.checkpoint_step, step = s)))}
                                </span>
                            </td>
                            <td class="nowrap"><Timestamp at=e.created_at.clone() /></td>
                        </tr>
                    }
                })
                .collect_view()}
        </DataTable>
    }
    .into_any()
}

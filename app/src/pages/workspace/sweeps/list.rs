//! `/w/{id}/sweeps`: the workspace's sweeps, newest first: status, trials started of those allowed
//! (and how many were stopped early), the objective and the best value so far with its trial. Read
//! again every few seconds while any sweep runs. A sweep is started from a job's page ("Sweep from
//! this job"): the empty list says so.

use leptos::prelude::*;
use leptos_router::components::A;

use super::{objective_text, status_text, sweep_href};
use crate::api::sweeps::list_sweeps;
use crate::components::badges::StateBadge;
use crate::components::empty_state::EmptyState;
use crate::components::page::{list_or, Loaded};
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::jobs::job_href;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::ids::WorkspaceId;
use contracts::sweeps::{SweepStatus, SweepSummary};

/// How often the list is read again while a sweep runs.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

#[component]
pub fn SweepsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let sweeps = Resource::new(move || current.id.get(), list_sweeps);
    refetch_while(sweeps, POLL, |s| s.status == SweepStatus::Running);
    let load = move || async move { Ok((current.ws.await?, sweeps.await)) };
    view! {
        <SectionPage section="sweeps">
            <Loaded load let((ws, list))>
                {list_or(
                    list,
                    || view! {
                        <EmptyState kind="sweeps" title=move || t!(i18n, pages.sweeps.empty_title) body=move || t!(i18n, pages.sweeps.empty_body) />
                    }.into_any(),
                    |list| view! { <SweepsTable list workspace_id=ws.id /> }.into_any(),
                )}
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

/// A sweep's status badge; `data-status` carries the raw value.
#[component]
pub fn SweepStatusBadge(status: SweepStatus) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || status_text(i18n.get_locale(), status);
    view! { <StateBadge kind="sweep" testid="sweep-status" state=status.as_str() text /> }
}

#[component]
fn SweepsTable(list: Vec<SweepSummary>, workspace_id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    let rows = list
        .into_iter()
        .map(|s| {
            let testid = format!("sweep-row-{}", s.id);
            let by = s.created_by.clone().map(|by| format!(" · {by}"));
            let pruned = s.counts.pruned;
            let (name, label) = (s.name.clone(), s.name.clone());
            let best = s.best.clone().map(|b| {
                view! {
                    <span class="num" data-testid="sweep-best">{format!("{:.4}", b.objective.value)}</span>
                    <A href=job_href(workspace_id, b.job_id) attr:class="muted small block">
                        {move || t!(i18n, sweeps.trial_n, n = b.trial)}
                    </A>
                }
            });
            view! {
                <tr data-testid=testid data-name=name>
                    <th scope="row">
                        <A href=sweep_href(workspace_id, s.id) attr:data-testid="sweep-link">{label}</A>
                        <span class="muted small block">"#"{s.id.get()}{by}</span>
                    </th>
                    <td><SweepStatusBadge status=s.status /></td>
                    <td class="num" data-testid="sweep-trials">
                        {format!("{} / {}", s.trials, s.max_trials)}
                        {(pruned > 0).then(|| view! {
                            <span class="muted small block">{move || t!(i18n, sweeps.pruned_n, n = pruned)}</span>
                        })}
                    </td>
                    <td class="nowrap">{objective_text(&s.objective)}</td>
                    <td>{best}</td>
                    <td class="nowrap"><Timestamp at=s.created_at.clone() /></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="sweeps-table" columns=columns!(sweeps: col_name, col_status, col_trials, col_objective, col_best, col_created)>
            {rows}
        </DataTable>
    }
    .into_any()
}

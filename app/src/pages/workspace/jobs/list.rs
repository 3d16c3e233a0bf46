//! `/w/{id}/jobs`: the workspace's jobs, newest first, with status, progress, queue position, where they
//! run and when they were created; "New job" for editors and owners. While any job is queued or running
//! the list is read again every few seconds, in place.

use contracts::ids::WorkspaceId;
use leptos::prelude::*;
use leptos_router::components::A;

use super::job_href;
use super::parts::{JobProgress, JobStatusBadge};
use crate::api::jobs::list_jobs;
use crate::components::empty_state::EmptyState;
use crate::components::page::{list_or, Loaded, NewButton};
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::types::{ExecutorKind, JobStatus, JobSummary};

/// How often the list is read again while a job is active.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

#[component]
pub fn JobsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let jobs = Resource::new(move || current.id.get(), list_jobs);
    refetch_while(jobs, POLL, |j| !j.status.is_final());
    let load = move || async move { Ok((current.ws.await?, jobs.await)) };
    view! {
        <SectionPage section="jobs">
            <Loaded load let((ws, list))>
                {ws.role.can_edit().then(|| view! {
                    <NewButton href=format!("/w/{}/jobs/new", ws.id) testid="new-job">{t!(i18n, jobs.new_job)}</NewButton>
                })}
                {list_or(
                    list,
                    || view! {
                        <EmptyState kind="jobs" title=move || t!(i18n, pages.jobs.empty_title) body=move || t!(i18n, jobs.empty_body) />
                    }.into_any(),
                    |list| view! { <JobsTable list workspace_id=ws.id /> }.into_any(),
                )}
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

#[component]
fn JobsTable(list: Vec<JobSummary>, workspace_id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    let rows = list
        .into_iter()
        .map(|job| {
            let executor = job.executor;
            let gpus = job.gpu_indices.clone();
            let cluster = job.cluster.clone();
            let (testid, name) = (format!("job-row-{}", job.id), job.name.clone());
            let (label, by) = (job.name.clone(), job.created_by.clone().map(|by| format!(" · {by}")));
            let (status, queue, created) = (job.status, job.queue_position, job.created_at.clone());
            view! {
                <tr data-testid=testid data-name=name>
                    <th scope="row">
                        <A href=job_href(workspace_id, job.id) attr:data-testid="job-link">{label}</A>
                        <span class="muted small block">"#"{job.id.get()}{by}</span>
                        {job.sweep_id.zip(job.trial).map(|(sweep, n)| view! {
                            <A href=crate::pages::workspace::sweeps::sweep_href(workspace_id, sweep) attr:class="muted small block" attr:data-testid="job-trial-of">
                                {move || t!(i18n, jobs.trial_of, n = n, sweep = sweep.get())}
                            </A>
                        })}
                    </th>
                    <td>
                        <JobStatusBadge status=status />
                        {waits_on_its_cluster(&job).then(|| view! {
                            <span class="muted small block" data-testid="job-cluster-waiting">{t!(i18n, jobs.cluster_waiting)}</span>
                        })}
                    </td>
                    <td><JobProgress summary=Signal::stored(job.clone()) /></td>
                    <td class="num" data-testid="job-queue">{queue.map(|p| format!("#{p}"))}</td>
                    <td class="nowrap" data-testid="job-runs-on">
                        {move || runs_on_text(i18n.get_locale(), cluster.as_deref(), executor, &gpus)}
                    </td>
                    <td class="nowrap"><Timestamp at=created /></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="jobs-table" columns=columns!(jobs: col_name, col_status, col_progress, col_queue, col_executor, col_created)>
            {rows}
        </DataTable>
    }
    .into_any()
}

/// Whether a job handed to a cluster has not begun training: Paddock counts it running from its
/// submission, while it may wait in the cluster's queue (issue 33: the list said "running" of a job
/// Slurm had not started). The job's page asks the cluster where it is.
pub fn waits_on_its_cluster(job: &JobSummary) -> bool {
    job.status == JobStatus::Running && job.cluster.is_some() && job.total_steps.is_none()
}

/// Where a job runs, in one phrase: `This server`, `Cluster slurm`; then ` · container` when it runs
/// in its environment's image, and the GPUs it holds here (` · GPU 0, 1`).
pub fn runs_on_text(
    locale: Locale,
    cluster: Option<&str>,
    executor: ExecutorKind,
    gpus: &[u32],
) -> String {
    let mut text = match cluster {
        None => td_string!(locale, jobs.place_server).to_string(),
        Some(name) => format!("{} {name}", td_string!(locale, jobs.place_cluster)),
    };
    text.push_str(&how_text(locale, executor, gpus));
    text
}

/// ` · container` for a job in its environment's image (nothing for a process), then ` · GPU 0, 1`.
pub fn how_text(locale: Locale, executor: ExecutorKind, gpus: &[u32]) -> String {
    let mut text = String::new();
    if executor == ExecutorKind::Docker {
        text.push_str(&format!(" · {}", td_string!(locale, jobs.executor_docker)));
    }
    if !gpus.is_empty() {
        let list = gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        text.push_str(&format!(" · GPU {list}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_job_waits_until_its_run_has_said_it_started() {
        let job = |status: JobStatus, cluster: Option<&str>, total: Option<i64>| -> JobSummary {
            serde_json::from_value(serde_json::json!({
                "id": 1, "workspace_id": 1, "name": "j", "status": status, "status_reason": null,
                "status_message": null, "exit_code": null, "executor": "local",
                "cluster": cluster, "cluster_job": "17", "priority": 0, "gpus": 0, "gpu_indices": [],
                "step": 0, "total_steps": total, "epoch": null, "queue_position": null,
                "created_by": null, "created_at": "", "started_at": null, "finished_at": null,
            }))
            .unwrap()
        };
        assert!(waits_on_its_cluster(&job(
            JobStatus::Running,
            Some("slurm"),
            None
        )));
        assert!(
            !waits_on_its_cluster(&job(JobStatus::Running, Some("slurm"), Some(40))),
            "training"
        );
        assert!(
            !waits_on_its_cluster(&job(JobStatus::Running, None, None)),
            "this server"
        );
        assert!(
            !waits_on_its_cluster(&job(JobStatus::Queued, Some("slurm"), None)),
            "Paddock's queue"
        );
    }
}

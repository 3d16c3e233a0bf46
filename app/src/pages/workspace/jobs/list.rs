//! `/w/{id}/jobs`: the workspace's jobs, newest first, with status, progress, queue position, where they
//! run and when they were created; "New job" for editors and owners. While any job is queued or running
//! the list is read again every few seconds, in place.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::job_href;
use super::parts::{JobProgress, JobStatusBadge};
use crate::api::jobs::list_jobs;
use crate::components::empty_state::EmptyState;
use crate::components::notice::{ErrorNotice, Loading};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, PageHeader};
use contracts::types::{ExecutorKind, JobSummary};

/// How often the list is read again while a job is active.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

#[component]
pub fn JobsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let tick = RwSignal::new(0u64);
    let jobs = Resource::new(
        move || (current.id.get(), tick.get()),
        |(id, _)| list_jobs(id),
    );
    Effect::new(move |_| {
        let handle = set_interval_with_handle(
            move || {
                let active = jobs.get_untracked().is_some_and(|list| {
                    list.is_ok_and(|list| list.iter().any(|j| !j.status.is_final()))
                });
                if active {
                    tick.update(|n| *n += 1);
                }
            },
            POLL,
        )
        .ok();
        on_cleanup(move || {
            if let Some(handle) = handle {
                handle.clear();
            }
        });
    });
    view! {
        <Title text=move || t_string!(i18n, nav.jobs).to_string() />
        <div class="page">
            <PageHeader title=move || t!(i18n, nav.jobs) lead=move || t!(i18n, pages.jobs.lead) />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let (ws, list) = (current.ws.await, jobs.await);
                    let ws = match ws {
                        Ok(ws) => ws,
                        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
                    };
                    let toolbar = ws.role.can_edit().then(|| view! {
                        <div class="page-actions">
                            <A href=format!("/w/{}/jobs/new", ws.id) attr:class="button button-primary" attr:data-testid="new-job">
                                <span aria-hidden="true">"+ "</span>
                                {t!(i18n, jobs.new_job)}
                            </A>
                        </div>
                    });
                    let body = match list {
                        Ok(list) if list.is_empty() => view! {
                            <EmptyState kind="jobs" title=move || t!(i18n, pages.jobs.empty_title) body=move || t!(i18n, jobs.empty_body) />
                        }
                        .into_any(),
                        Ok(list) => view! { <JobsTable list workspace_id=ws.id /> }.into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    };
                    view! { {toolbar} {body} }.into_any()
                })}
            </Transition>
        </div>
    }
    .into_any()
}

#[component]
fn JobsTable(list: Vec<JobSummary>, workspace_id: i64) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="jobs-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, jobs.col_name)}</th>
                        <th scope="col">{t!(i18n, jobs.col_status)}</th>
                        <th scope="col">{t!(i18n, jobs.col_progress)}</th>
                        <th scope="col">{t!(i18n, jobs.col_queue)}</th>
                        <th scope="col">{t!(i18n, jobs.col_executor)}</th>
                        <th scope="col">{t!(i18n, jobs.col_created)}</th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|job| {
                            let executor = job.executor;
                            let gpus = job.gpu_indices.clone();
                            let (testid, name) = (format!("job-row-{}", job.id), job.name.clone());
                            let (label, by) = (job.name.clone(), job.created_by.clone().map(|by| format!(" · {by}")));
                            let (status, queue, created) = (job.status, job.queue_position, job.created_at.clone());
                            view! {
                                <tr data-testid=testid data-name=name>
                                    <th scope="row">
                                        <A href=job_href(workspace_id, job.id) attr:data-testid="job-link">{label}</A>
                                        <span class="muted small block">"#"{job.id}{by}</span>
                                    </th>
                                    <td><JobStatusBadge status=status /></td>
                                    <td><JobProgress summary=Signal::stored(job.clone()) /></td>
                                    <td class="num" data-testid="job-queue">{queue.map(|p| format!("#{p}"))}</td>
                                    <td class="nowrap">
                                        {move || executor_text(i18n.get_locale(), executor, &gpus)}
                                    </td>
                                    <td class="nowrap"><Timestamp at=created /></td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// `Local process`, `Docker · GPU 0, 1`.
pub fn executor_text(locale: Locale, executor: ExecutorKind, gpus: &[u32]) -> String {
    let what = match executor {
        ExecutorKind::Docker => td_string!(locale, jobs.executor_docker),
        ExecutorKind::Local => td_string!(locale, jobs.executor_local),
    };
    if gpus.is_empty() {
        what.to_string()
    } else {
        let list = gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        format!("{what} · GPU {list}")
    }
}

//! `/w/{id}/jobs`: the workspace's jobs as a table of runs — status, progress, best dev score,
//! running time, starting model, dataset, where it runs, when and by whom — filtered and ordered by
//! the URL's query (`?status=failed&sort=best`: the REST list's own words, so a view can be shared as
//! a link). Ticking runs and "Compare" opens them side by side. While any job is queued or running
//! the list is read again every few seconds, in place.

use std::collections::BTreeSet;

use contracts::ids::{DatasetId, JobId, SweepId, WorkspaceId};
use contracts::runs::{JobQuery, JobSort, ModelFilter, StartingModel, MAX_COMPARED};
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::params::ParamsMap;

use super::job_href;
use super::parts::{duration_text, status_text, JobProgress, JobStatusBadge};
use crate::api::datasets::list_datasets;
use crate::api::jobs::list_jobs;
use crate::api::pretrained::list_pretrained_models;
use crate::api::sweeps::list_sweeps;
use crate::components::empty_state::EmptyState;
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, NewButton};
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::compare::compare_href;
use crate::pages::workspace::sweeps::sweep_href;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::types::{ExecutorKind, JobStatus, JobSummary};

/// How often the list is read again while a job is active.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

/// The list's query from the URL's; a word it cannot read is left out (the REST list would refuse
/// it; a hand-edited link should still show the runs).
pub fn query_of(map: &ParamsMap) -> JobQuery {
    let get = |key: &str| map.get(key).filter(|v| !v.is_empty());
    JobQuery {
        status: get("status").and_then(|s| JobStatus::parse(&s)),
        dataset_id: get("dataset_id").and_then(|s| s.parse().ok()),
        model: get("model").and_then(|s| s.parse().ok()),
        sweep_id: get("sweep_id").and_then(|s| s.parse().ok()),
        since: get("since"),
        until: get("until"),
        sort: get("sort").and_then(|s| s.parse().ok()),
        reverse: get("reverse").map(|s| s == "true"),
    }
}

/// The list's URL for `query`: only the words it sets, in a fixed order.
pub fn list_href(workspace_id: WorkspaceId, query: &JobQuery) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            words.push(format!("{key}={value}"));
        }
    };
    put("status", query.status.map(|s| s.as_str().to_string()));
    put("dataset_id", query.dataset_id.map(|d| d.to_string()));
    put("model", query.model.as_ref().map(ModelFilter::to_string));
    put("sweep_id", query.sweep_id.map(|s| s.to_string()));
    put("since", query.since.clone());
    put("until", query.until.clone());
    put(
        "sort",
        query
            .sort
            .filter(|s| *s != JobSort::Created)
            .map(|s| s.as_str().to_string()),
    );
    put(
        "reverse",
        query.reverse.filter(|r| *r).map(|_| "true".into()),
    );
    match words.is_empty() {
        true => format!("/w/{workspace_id}/jobs"),
        false => format!("/w/{workspace_id}/jobs?{}", words.join("&")),
    }
}

/// What the filters offer: the workspace's datasets, uploaded models and sweeps.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Facets {
    datasets: Vec<(DatasetId, String)>,
    models: Vec<(i64, String)>,
    sweeps: Vec<(SweepId, String)>,
}

async fn facets(ws: WorkspaceId) -> Result<Facets, contracts::error::AppError> {
    let datasets = list_datasets(ws).await?;
    let models = list_pretrained_models(ws).await?;
    let sweeps = list_sweeps(ws).await?;
    Ok(Facets {
        datasets: datasets.into_iter().map(|d| (d.id, d.name)).collect(),
        models: models.into_iter().map(|m| (m.id.get(), m.name)).collect(),
        sweeps: sweeps.into_iter().map(|s| (s.id, s.name)).collect(),
    })
}

#[component]
pub fn JobsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let url = use_query_map();
    let query = Memo::new(move |_| url.with(query_of));
    let jobs = Resource::new(
        move || (current.id.get(), query.get()),
        |(ws, query)| list_jobs(ws, query),
    );
    refetch_while(jobs, POLL, |j| !j.status.is_final());
    let facets = Resource::new(move || current.id.get(), facets);
    // The runs ticked for comparison: kept here, since the table is drawn again at each reading.
    let picked = RwSignal::new(BTreeSet::<JobId>::new());
    let load = move || async move { Ok((current.ws.await?, jobs.await, facets.await?)) };
    view! {
        <SectionPage section="jobs">
            <Loaded load let((ws, list, facets))>
                {ws.role.can_edit().then(|| view! {
                    <NewButton href=format!("/w/{}/jobs/new", ws.id) testid="new-job">{t!(i18n, jobs.new_job)}</NewButton>
                })}
                {match list {
                    Ok(list) if list.is_empty() && query.with_untracked(JobQuery::is_unfiltered) => view! {
                        <EmptyState kind="jobs" title=move || t!(i18n, pages.jobs.empty_title) body=move || t!(i18n, jobs.empty_body) />
                    }.into_any(),
                    Ok(list) => view! {
                        <RunFilters workspace_id=ws.id query facets />
                        <JobsTable list workspace_id=ws.id picked shown=list_href(ws.id, &query.get_untracked()) />
                    }.into_any(),
                    Err(err) => view! {
                        <RunFilters workspace_id=ws.id query facets />
                        <ErrorNotice err />
                    }.into_any(),
                }}
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

/// The filters and order above the table; each change is a new URL (so Back undoes it).
#[component]
fn RunFilters(workspace_id: WorkspaceId, query: Memo<JobQuery>, facets: Facets) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let on = move |change: fn(&mut JobQuery, String)| {
        let navigate = navigate.clone();
        move |ev: leptos::ev::Event| {
            let mut next = query.get_untracked();
            change(&mut next, event_target_value(&ev));
            navigate(&list_href(workspace_id, &next), Default::default());
        }
    };
    let selected = |value: Option<String>| move || value.clone().unwrap_or_default();
    let q = query.get_untracked();
    let presets = contracts::job::PRESETS.into_iter().map(|p| {
        let value = ModelFilter::Scratch(Some(p.into())).to_string();
        view! { <option value=value.clone() selected=q.model.as_ref().map(ModelFilter::to_string) == Some(value)>{move || t!(i18n, runs.model_scratch_preset, preset = p)}</option> }
    }).collect_view();
    let models = facets.models.iter().map(|(id, name)| {
        let value = format!("pretrained:{id}");
        view! { <option value=value.clone() selected=q.model.as_ref().map(ModelFilter::to_string) == Some(value)>{name.clone()}</option> }
    }).collect_view();
    let datasets = facets.datasets.iter().map(|(id, name)| {
        view! { <option value=id.to_string() selected=q.dataset_id == Some(*id)>{name.clone()}</option> }
    }).collect_view();
    let sweeps = facets.sweeps.iter().map(|(id, name)| {
        view! { <option value=id.to_string() selected=q.sweep_id == Some(*id)>{format!("#{id} {name}")}</option> }
    }).collect_view();
    let statuses = JobStatus::ALL.into_iter().map(|s| {
        view! { <option value=s.as_str() selected=q.status == Some(s)>{move || status_text(i18n.get_locale(), s)}</option> }
    }).collect_view();
    let sorts = JobSort::ALL.into_iter().map(|s| {
        let text = move || match s {
            JobSort::Created => t_string!(i18n, runs.sort_created),
            JobSort::Best => t_string!(i18n, runs.sort_best),
            JobSort::Duration => t_string!(i18n, runs.sort_duration),
            JobSort::Name => t_string!(i18n, runs.sort_name),
        };
        view! { <option value=s.as_str() selected=q.sort.unwrap_or_default() == s>{text}</option> }
    }).collect_view();
    let filtered = !q.is_unfiltered();
    view! {
        <form class="run-filters" data-testid="run-filters" on:submit=|ev| ev.prevent_default()>
            <label>{t!(i18n, runs.filter_status)}
                <select data-testid="filter-status" on:change=on(|q, v| q.status = JobStatus::parse(&v))>
                    <option value="">{t!(i18n, runs.any)}</option>{statuses}
                </select>
            </label>
            <label>{t!(i18n, runs.filter_dataset)}
                <select data-testid="filter-dataset" on:change=on(|q, v| q.dataset_id = v.parse().ok())>
                    <option value="">{t!(i18n, runs.any)}</option>{datasets}
                </select>
            </label>
            <label>{t!(i18n, runs.filter_model)}
                <select data-testid="filter-model" on:change=on(|q, v| q.model = v.parse().ok())>
                    <option value="">{t!(i18n, runs.any)}</option>
                    <option value="pretrained" selected=q.model == Some(ModelFilter::Pretrained(None))>{t!(i18n, runs.model_any_pretrained)}</option>
                    {models}
                    <option value="checkpoint" selected=q.model == Some(ModelFilter::Checkpoint(None))>{t!(i18n, runs.model_any_checkpoint)}</option>
                    <option value="scratch" selected=q.model == Some(ModelFilter::Scratch(None))>{t!(i18n, runs.model_any_scratch)}</option>
                    {presets}
                </select>
            </label>
            <label>{t!(i18n, runs.filter_sweep)}
                <select data-testid="filter-sweep" on:change=on(|q, v| q.sweep_id = v.parse().ok())>
                    <option value="">{t!(i18n, runs.any)}</option>{sweeps}
                </select>
            </label>
            <label>{t!(i18n, runs.filter_since)}
                <input type="date" data-testid="filter-since" prop:value=selected(q.since.clone())
                    on:change=on(|q, v| q.since = Some(v).filter(|v| !v.is_empty())) />
            </label>
            <label>{t!(i18n, runs.filter_until)}
                <input type="date" data-testid="filter-until" prop:value=selected(q.until.clone())
                    on:change=on(|q, v| q.until = Some(v).filter(|v| !v.is_empty())) />
            </label>
            <label>{t!(i18n, runs.sort)}
                <select data-testid="sort" on:change=on(|q, v| q.sort = v.parse().ok())>{sorts}</select>
            </label>
            <label class="checkbox">
                <input type="checkbox" data-testid="sort-reverse" prop:checked=q.reverse == Some(true)
                    on:change=on(|q, _| q.reverse = Some(q.reverse != Some(true)).filter(|r| *r)) />
                {t!(i18n, runs.reverse)}
            </label>
            {filtered.then(|| view! {
                <A href=list_href(workspace_id, &JobQuery { sort: q.sort, reverse: q.reverse, ..JobQuery::default() }) attr:class="button button-quiet" attr:data-testid="filters-clear">
                    {t!(i18n, runs.clear)}
                </A>
            })}
        </form>
    }
    .into_any()
}

/// Where a run's weights started, in the reader's words.
fn starting_text(locale: Locale, start: &Option<StartingModel>) -> String {
    match start {
        None => String::new(),
        Some(StartingModel::Scratch { preset }) => {
            td_string!(locale, runs.model_scratch_preset, preset = preset).to_string()
        }
        Some(StartingModel::Pretrained { id, name }) => {
            name.clone().unwrap_or_else(|| format!("#{id}"))
        }
        Some(StartingModel::Checkpoint { id, job_id }) => {
            let job = job_id.map(|j| format!(" · #{j}")).unwrap_or_default();
            format!("{} #{id}{job}", td_string!(locale, runs.model_checkpoint))
        }
    }
}

#[component]
fn JobsTable(
    list: Vec<JobSummary>,
    workspace_id: WorkspaceId,
    picked: RwSignal<BTreeSet<JobId>>,
    /// The address of the view these rows answer (`data-shown`): a changed filter changes the URL at
    /// once, the rows only when the new list arrives, and a test (or a script) tells the two apart by it.
    shown: String,
) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let count = list.len();
    let rows = list
        .into_iter()
        .map(|job| {
            let executor = job.executor;
            let gpus = job.gpu_indices.clone();
            let cluster = job.cluster.clone();
            let id = job.id;
            let (testid, name) = (format!("job-row-{}", job.id), job.name.clone());
            let (label, by) = (job.name.clone(), job.created_by.clone().map(|by| format!(" · {by}")));
            let (status, queue, created) = (job.status, job.queue_position, job.created_at.clone());
            let best = job.best.clone();
            let best_value = best.as_ref().map(|b| b.value.to_string());
            let waiting = waits_on_its_cluster(&job);
            let shown = job.name.clone();
            let duration = job.duration_secs;
            let start = job.start.clone();
            let dataset = job.dataset_name.clone().unwrap_or_default();
            view! {
                <tr data-testid=testid data-name=name>
                    <th scope="row">
                        <label class="run-pick">
                            <input type="checkbox" data-testid="run-pick"
                                prop:checked=move || picked.with(|p| p.contains(&id))
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    picked.update(|p| { if on { p.insert(id); } else { p.remove(&id); } });
                                } />
                            <span class="visually-hidden">{move || t!(i18n, runs.pick, name = label.clone())}</span>
                        </label>
                        <A href=job_href(workspace_id, job.id) attr:data-testid="job-link">{shown}</A>
                        <span class="muted small block">"#"{job.id.get()}{by}</span>
                        {job.sweep_id.zip(job.trial).map(|(sweep, n)| view! {
                            <A href=sweep_href(workspace_id, sweep) attr:class="muted small block" attr:data-testid="job-trial-of">
                                {move || t!(i18n, jobs.trial_of, n = n, sweep = sweep.get())}
                            </A>
                        })}
                    </th>
                    <td>
                        <JobStatusBadge status=status />
                        {queue.map(|p| view! { <span class="muted small block" data-testid="job-queue">{move || t!(i18n, runs.queue_place, n = p)}</span> })}
                        {waiting.then(|| view! {
                            <span class="muted small block" data-testid="job-cluster-waiting">{t!(i18n, jobs.cluster_waiting)}</span>
                        })}
                    </td>
                    <td><JobProgress summary=Signal::stored(job.clone()) /></td>
                    <td class="num nowrap" data-testid="job-best" data-value=best_value>
                        {best.map(|b| view! {
                            {format!("{:.4}", b.value)}
                            <span class="muted small block">{format!("{} @ {}", b.metric, b.step)}</span>
                        })}
                    </td>
                    <td class="num nowrap" data-testid="job-duration">
                        {move || duration.map(|d| duration_text(i18n.get_locale(), d))}
                    </td>
                    <td data-testid="job-model">{move || starting_text(i18n.get_locale(), &start)}</td>
                    <td data-testid="job-dataset">{dataset}</td>
                    <td class="nowrap" data-testid="job-runs-on">
                        {move || runs_on_text(i18n.get_locale(), cluster.as_deref(), executor, &gpus)}
                    </td>
                    <td class="nowrap"><Timestamp at=created /></td>
                </tr>
            }
        })
        .collect_view();
    let compare = move |_| {
        let ids: Vec<JobId> = picked.with_untracked(|p| p.iter().copied().collect());
        navigate(&compare_href(workspace_id, &ids), Default::default());
    };
    let ready = move || picked.with(|p| (2..=MAX_COMPARED).contains(&p.len()));
    view! {
        <div class="run-actions" data-testid="run-actions" data-shown=shown>
            <span class="muted" data-testid="runs-count">{move || t!(i18n, runs.count, n = count)}</span>
            <span class="muted" data-testid="runs-picked">{move || t!(i18n, runs.picked, n = picked.with(BTreeSet::len), max = MAX_COMPARED)}</span>
            <button type="button" class="button" data-testid="compare-runs" disabled=move || !ready() on:click=compare>
                {t!(i18n, runs.compare)}
            </button>
        </div>
        {(count == 0).then(|| view! {
            <p class="muted" data-testid="runs-none">{t!(i18n, runs.none_match)}</p>
        })}
        {(count > 0).then(|| view! {
            <DataTable testid="jobs-table" columns=columns!(jobs: col_name, col_status, col_progress, col_best, col_duration, col_model, col_dataset, col_executor, col_created)>
                {rows}
            </DataTable>
        })}
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

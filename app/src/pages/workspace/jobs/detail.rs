//! `/w/{id}/jobs/{job}`: one job — status, progress with an ETA, where it runs, the control buttons
//! (cancel, retry, resume, clone, delete; editors and owners), its lineage (the checkpoint it started
//! from, the endpoints serving its checkpoints), the live charts and log, its checkpoints with their
//! evaluations on datasets, and the exact `job.toml` it runs.
//!
//! The page renders once from the server's answer, then follows the job's SSE stream in the browser:
//! metric points feed the charts and the ETA, log lines the log, status events the badge and progress.
//! Checkpoints are not on the stream: the job is read again every few seconds while it is not over,
//! and once when it ends.

use contracts::ids::WorkspaceId;
use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::charts::JobCharts;
use super::checkpoints::CheckpointsTable;
use super::evaluations::EvaluationsCard;
use super::job_href;
use super::list::how_text;
use super::logs::{JobLog, KEPT_LINES};
use super::parts::{duration_text, eta_seconds, JobProgress, JobStatusBadge};
use super::stream::{self, stream_url, Event};
use crate::api::{
    endpoints::list_endpoints,
    jobs::{get_job, job_placement, JobAction},
};
use crate::components::confirm::{AskButton, Busy, Confirm};
use crate::components::form::on_answer;
use crate::components::http::{slot, Slot};
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, PageHeader};
use crate::components::poll::every;
use crate::components::precision::run_precision_text;
use crate::components::sse::EventStream;
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{section_heading, use_detail};
use contracts::error::AppError;
use contracts::types::{
    BaseModel, CheckpointInfo, ClusterJobState, ClusterPlacement, EndpointSummary, JobDetail,
    JobReason, JobStatus, JobSummary, JobVerb, LogLine, MetricPoint,
};

/// How often the job is read again (for its checkpoints) while it is not over.
const POLL: Duration = Duration::from_secs(3);
/// How long to wait before reopening a stream that dropped while the job was still going.
const RECONNECT: Duration = Duration::from_secs(2);

#[component]
pub fn JobPage() -> impl IntoView {
    let detail = use_detail("job", get_job);
    view! {
        <div class="page">
            <Loaded load=move || async move { detail.await } failed=section_heading("jobs") let:detail>
                <JobView detail />
            </Loaded>
        </div>
    }
}

/// What the status card says of the job's last move, in `locale`: a sentence worded from its typed
/// reason and exit code, plus the server's words where they are the detail a person acts on (what the
/// trainer reported, why it could not start), shown as they are. `None` when there is nothing to say.
fn status_words(locale: Locale, s: &JobSummary) -> Option<(String, Option<String>)> {
    use JobReason as R;
    let message = s.status_message.clone()?;
    let cancelling = s.status == JobStatus::Cancelling;
    let words = match (s.status_reason, s.exit_code) {
        (Some(R::TrainerFailed), _) => {
            return Some((
                td_string!(locale, job_detail.reason_trainer_failed).to_string(),
                Some(message),
            ))
        }
        (Some(R::StartFailed), _) => {
            return Some((
                td_string!(locale, job_detail.reason_start_failed).to_string(),
                Some(message),
            ))
        }
        (Some(R::CancelRequested), _) if cancelling => {
            td_string!(locale, job_detail.reason_cancelling).to_string()
        }
        (Some(R::CancelRequested), Some(code)) if code != 0 => {
            td_string!(locale, job_detail.reason_cancelled_exit, code = code).to_string()
        }
        (Some(R::CancelRequested), _) => {
            td_string!(locale, job_detail.reason_cancelled).to_string()
        }
        (Some(R::TimeLimit), _) if cancelling => {
            td_string!(locale, job_detail.reason_time_limit_stopping).to_string()
        }
        (Some(R::TimeLimit), _) => td_string!(locale, job_detail.reason_time_limit).to_string(),
        (Some(R::EarlyStopped), _) => {
            td_string!(locale, job_detail.reason_early_stopped).to_string()
        }
        (Some(R::Pruned), _) if cancelling => {
            td_string!(locale, job_detail.reason_pruning).to_string()
        }
        // The sweep's figures (the rung, the value, the field it was judged among) follow.
        (Some(R::Pruned), _) => {
            return Some((
                td_string!(locale, job_detail.reason_pruned).to_string(),
                Some(message),
            ))
        }
        (Some(R::Signal), _) => td_string!(locale, job_detail.reason_signal).to_string(),
        (Some(R::Exited), Some(code)) => {
            td_string!(locale, job_detail.reason_exited, code = code).to_string()
        }
        (Some(R::Exited), None) => td_string!(locale, job_detail.reason_disappeared).to_string(),
        (Some(R::WorkspaceDeleted), _) => {
            td_string!(locale, job_detail.reason_workspace_deleted).to_string()
        }
        (Some(R::Interrupted), _) => td_string!(locale, job_detail.reason_interrupted).to_string(),
        (Some(R::Requeued), _) => td_string!(locale, job_detail.reason_requeued).to_string(),
        // Moves that carry no message of their own: whatever was said, as it was said.
        (Some(R::Scheduled | R::Launched | R::Completed) | None, _) => {
            return Some((message, None))
        }
    };
    Some((words, None))
}

#[component]
fn JobView(detail: JobDetail) -> impl IntoView {
    let i18n = use_i18n();
    let workspace_id = detail.summary.workspace_id;
    let job_id = detail.summary.id;
    let can_edit = detail.can_edit;
    let live = RwSignal::new(detail);
    let metrics = RwSignal::new(Vec::<MetricPoint>::new());
    let logs = RwSignal::new(Vec::<LogLine>::new());

    let name = Memo::new(move |_| live.with(|d| d.summary.name.clone()));
    let summary = Memo::new(move |_| live.with(|d| d.summary.clone()));
    let over = Memo::new(move |_| live.with(|d| d.summary.status.is_final()));
    let checkpoints = Memo::new(move |_| live.with(|d| d.checkpoints.clone()));
    // The endpoints serving its checkpoints: read in the browser once the page is live (it changes
    // rarely, and the page's first render should not wait for it).
    let serving = RwSignal::new(Vec::<EndpointSummary>::new());
    Effect::new(move |_| {
        spawn_local(async move {
            if let Ok(list) = list_endpoints(workspace_id).await {
                serving.try_set(list);
            }
        })
    });

    let refresh = move || {
        spawn_local(async move {
            if let Ok(fresh) = get_job(workspace_id, job_id).await {
                live.try_set(fresh);
            }
        })
    };

    // The live stream: reopened after the last ids seen whenever it closes without its `end` event —
    // also when the job is already over, since lines it wrote last may not have been sent yet.
    let connection: Slot<EventStream> = slot();
    let seen = StoredValue::new((0i64, 0i64));
    let complete = StoredValue::new(false);
    let generation = RwSignal::new(0u32);
    Effect::new(move |_| {
        generation.track();
        let on_event = move |event: Event| match event {
            Event::Metric(point) => {
                if point.id > seen.get_value().0 {
                    seen.update_value(|s| s.0 = point.id);
                    metrics.try_update(|m| m.push(point));
                }
            }
            Event::Log(line) => {
                if line.id > seen.get_value().1 {
                    seen.update_value(|s| s.1 = line.id);
                    logs.try_update(|l| {
                        l.push(line);
                        if l.len() > KEPT_LINES {
                            l.drain(..l.len() - KEPT_LINES);
                        }
                    });
                }
            }
            Event::Status(fresh) => {
                let ended = fresh.status.is_final()
                    && !live.with_untracked(|d| d.summary.status.is_final());
                live.try_update(|d| d.summary = *fresh);
                if ended {
                    refresh();
                }
            }
            Event::End => {
                complete.set_value(true);
                refresh();
            }
            Event::Closed => {
                if !complete.get_value() {
                    set_timeout(
                        move || {
                            generation.try_update(|g| *g += 1);
                        },
                        RECONNECT,
                    );
                }
            }
        };
        connection.set_value(stream::open(
            &stream_url(workspace_id, job_id, seen.get_value()),
            on_event,
        ));
    });
    every(POLL, move || {
        if !over.get_untracked() {
            refresh();
        }
    });

    let lead = move || {
        live.with(|d| {
            t_string!(
                i18n,
                job_detail.lead,
                preset = d.spec.preset.clone(),
                id = d.summary.id
            )
            .to_string()
        })
    };
    let toml = Memo::new(move |_| live.with(|d| d.config_toml.clone()));
    view! {
        <Title text=move || name.get() />
        <p class="breadcrumb">
            <A href=format!("/w/{workspace_id}/jobs") attr:data-testid="job-back">"← "{t!(i18n, job_detail.back)}</A>
        </p>
        <PageHeader title=move || name.get() lead=lead />
        <StatusCard live summary metrics can_edit />
        <JobCharts points=metrics />
        <section class="card" aria-labelledby="job-checkpoints-title" data-testid="job-checkpoints">
            <h2 id="job-checkpoints-title">{t!(i18n, job_detail.checkpoints_title)}</h2>
            <DegenerateAdvice live />
            {move || if checkpoints.with(Vec::is_empty) {
                view! { <p class="muted" data-testid="checkpoints-empty">{t!(i18n, job_detail.checkpoints_empty)}</p> }.into_any()
            } else {
                view! { <CheckpointsTable workspace_id list=checkpoints can_deploy=can_edit job_name=name.get_untracked() serving /> }.into_any()
            }}
        </section>
        <EvaluationsCard workspace_id checkpoints job_id can_edit
            job_datasets=live.with_untracked(|d| (d.spec.dataset_id, d.spec.dev_dataset_id)) />
        <JobLog workspace_id job_id lines=logs over />
        <section class="card" aria-labelledby="job-spec-title">
            <h2 id="job-spec-title">{t!(i18n, job_detail.spec_title)}</h2>
            <p class="hint">{t!(i18n, job_detail.spec_hint)}</p>
            <pre class="log" data-testid="job-toml">{move || toml.get()}</pre>
        </section>
    }
    .into_any()
}

/// When the run is over and every checkpoint it kept learned nothing: what usually helps, given how it
/// started and how its dev set is balanced.
#[component]
fn DegenerateAdvice(live: RwSignal<JobDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let workspace_id = live.with_untracked(|d| d.summary.workspace_id);
    // (from scratch, one label holds most of the dev set), while there is advice to give.
    let advice = Memo::new(move |_| {
        live.with(|d| {
            let kept: Vec<&CheckpointInfo> = d
                .checkpoints
                .iter()
                .filter(|c| c.deleted_at.is_none())
                .collect();
            // Judged once the run is over: an early checkpoint of a run that learns is often no better.
            let useless = !kept.is_empty() && kept.iter().all(|c| c.degenerate.is_some());
            if !d.summary.status.is_final() || !useless {
                return None;
            }
            let from_scratch =
                d.spec.base_checkpoint_id.is_none() && d.spec.pretrained_model_id.is_none();
            let skewed = kept.iter().filter_map(|c| c.metrics.as_ref()).any(|m| {
                let most = m.per_class.iter().map(|c| c.support).max().unwrap_or(0);
                m.count > 0 && most as f64 >= 0.6 * m.count as f64
            });
            Some((from_scratch, skewed))
        })
    });
    move || {
        advice.get().map(|(from_scratch, skewed)| view! {
            <div class="notice notice-warning" role="status" data-testid="job-degenerate-advice">
                <p><strong>{t!(i18n, job_detail.degenerate_title)}</strong></p>
                <ul>
                    {from_scratch.then(|| view! {
                        <li data-advice="pretrained">
                            {t!(i18n, job_detail.advice_pretrained)}" "
                            <A href=format!("/w/{workspace_id}/models")>{t!(i18n, job_detail.advice_models)}</A>
                        </li>
                    })}
                    {skewed.then(|| view! { <li data-advice="balance">{t!(i18n, job_detail.advice_balance)}</li> })}
                    <li data-advice="longer">{t!(i18n, job_detail.advice_longer)}</li>
                </ul>
            </div>
        })
    }
}

/// Where a job on a cluster is, as its scheduler says: read in the browser when the page is live, when
/// the job changes state, and every few seconds until it is over here and there (the cluster's queue is
/// not streamed).
#[component]
fn Placement(summary: Memo<JobSummary>) -> impl IntoView {
    let i18n = use_i18n();
    let placement = RwSignal::new(None::<ClusterPlacement>);
    // Reads that brought nothing (the scheduler not answering for a moment, or a job it has forgotten):
    // a job that is over here is asked about a few more times, not forever.
    let misses = RwSignal::new(0u8);
    let (workspace_id, job_id) = summary.with_untracked(|s| (s.workspace_id, s.id));
    let read = move || {
        if summary.with_untracked(|s| s.cluster_job.is_none()) {
            return;
        }
        spawn_local(async move {
            match job_placement(workspace_id, job_id).await {
                Ok(Some(now)) => {
                    placement.try_set(Some(now));
                }
                Ok(None) | Err(_) => {
                    misses.try_update(|m| *m = m.saturating_add(1));
                }
            }
        });
    };
    // Read when the job changes state or is handed over (its end included: the scheduler still says
    // how it ended for a while), not on every step the stream brings: each read asks the scheduler.
    let stage = Memo::new(move |_| summary.with(|s| (s.status, s.cluster_job.clone())));
    Effect::new(move |_| {
        stage.track();
        read();
    });
    // Until the scheduler, too, says the job is over: a job that has just ended here may still be
    // ending there (Slurm's `COMPLETING`).
    every(POLL, move || {
        let ending = placement.with_untracked(|p| {
            p.as_ref()
                .is_some_and(|p| p.state != ClusterJobState::Ended)
        });
        let unread = placement.with_untracked(Option::is_none) && misses.get_untracked() < 3;
        if !summary.with_untracked(|s| s.status.is_final()) || ending || unread {
            read();
        }
    });
    move || {
        placement.get().map(|p| {
            let state = serde_json::to_value(p.state).ok().and_then(|v| v.as_str().map(String::from));
            // Slurm's word for why it waits or ended, as it is.
            let reason = p.reason.clone().filter(|_| p.state != ClusterJobState::Running);
            view! {
                <p class="muted" data-testid="job-placement" data-state=state>
                    {move || placement_text(i18n.get_locale(), &p)}
                    {reason.map(|r| view! { " " <code translate="no" data-testid="job-placement-reason">{r}</code> })}
                </p>
            }
        })
    }
}

/// What the cluster's scheduler says of the job, in words (its reason, if any, follows as code).
pub fn placement_text(locale: Locale, p: &ClusterPlacement) -> String {
    let nodes = p.nodes.clone().unwrap_or_default();
    match p.state {
        ClusterJobState::Waiting => td_string!(locale, job_detail.placement_waiting).to_string(),
        ClusterJobState::Running => {
            td_string!(locale, job_detail.placement_running, nodes = nodes).to_string()
        }
        ClusterJobState::Ending => td_string!(locale, job_detail.placement_ending).to_string(),
        ClusterJobState::Ended if nodes.is_empty() => {
            td_string!(locale, job_detail.placement_ended).to_string()
        }
        ClusterJobState::Ended => {
            td_string!(locale, job_detail.placement_ended_on, nodes = nodes).to_string()
        }
    }
}

#[component]
fn StatusCard(
    live: RwSignal<JobDetail>,
    summary: Memo<contracts::types::JobSummary>,
    metrics: RwSignal<Vec<MetricPoint>>,
    can_edit: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let status = Memo::new(move |_| summary.with(|s| s.status));
    let eta = Memo::new(move |_| {
        let (step, total, running) =
            summary.with(|s| (s.step, s.total_steps, s.status == JobStatus::Running));
        running
            .then(|| metrics.with(|m| eta_seconds(m, step, total)))
            .flatten()
    });
    let retry_of = live.with_untracked(|d| d.retry_of);
    let (base, preset) = live.with_untracked(|d| (d.base_model.clone(), d.spec.preset.clone()));
    let partition = live.with_untracked(|d| d.spec.partition.clone());
    let (ranks, nodes) = live.with_untracked(|d| (d.spec.ranks(), d.spec.nodes()));
    let pretrained = live.with_untracked(|d| d.pretrained_model.as_ref().map(|m| m.name.clone()));
    let workspace_id = live.with_untracked(|d| d.summary.workspace_id);
    view! {
        <section class="card" aria-labelledby="job-status-title" data-testid="job-status-card">
            <div class="card-heading">
                <h2 id="job-status-title">{t!(i18n, job_detail.status_title)}</h2>
                <JobStatusBadge status />
            </div>
            <div class="job-progress-row">
                <JobProgress summary />
                <span class="muted" data-testid="job-eta">
                    {move || eta.get().map(|s| t_string!(i18n, job_detail.eta, time = duration_text(i18n.get_locale(), s)).to_string())}
                </span>
            </div>
            {move || {
                let s = summary.get();
                view! {
                    <dl class="facts">
                        {status_words(i18n.get_locale(), &s).map(|(words, raw)| view! {
                            <div class="facts-wide">
                                <dt>{t!(i18n, job_detail.message)}</dt>
                                <dd data-testid="job-message" data-reason=s.status_reason.map(|r| r.as_str())>
                                    {words}
                                    {raw.map(|r| view! { " " <code translate="no">{r}</code> })}
                                </dd>
                            </div>
                        })}
                        {s.queue_position.map(|p| view! {
                            <div><dt>{t!(i18n, job_detail.queue_position)}</dt><dd data-testid="job-queue-position">{format!("#{p}")}</dd></div>
                        })}
                        // One row says where it runs: this server, or the cluster with its partition and
                        // Slurm's job id; then whether in a container, and its GPUs here.
                        {
                            let (executor, gpus) = (s.executor, s.gpu_indices.clone());
                            let place = match s.cluster.clone() {
                                None => view! { {move || t_string!(i18n, jobs.place_server).to_string()} }.into_any(),
                                Some(cluster) => {
                                    let job = s.cluster_job.clone();
                                    let partition = partition.clone();
                                    view! {
                                        {move || t_string!(i18n, jobs.place_cluster).to_string()}" "
                                        <span data-testid="job-cluster">
                                            {cluster}
                                            {partition.map(|name| view! { " · "{move || t_string!(i18n, job_detail.cluster_partition, name = name.clone()).to_string()} })}
                                            {job.map(|id| view! { " · "{move || t_string!(i18n, job_detail.cluster_job, id = id.clone()).to_string()} })}
                                        </span>
                                    }
                                    .into_any()
                                }
                            };
                            view! {
                                <div class="facts-wide"><dt>{t!(i18n, job_detail.executor)}</dt><dd data-testid="job-runs-on">
                                    {place}
                                    {move || how_text(i18n.get_locale(), executor, &gpus)}
                                </dd></div>
                            }
                        }
                        // Several processes training it together (data parallelism); its log marks each one's lines.
                        {(ranks > 1).then(|| view! {
                            <div><dt>{t!(i18n, job_form.ranks)}</dt><dd data-testid="job-ranks">{ranks}</dd></div>
                        })}
                        // Across the cluster's nodes: each runs `ranks` of the run; where they are is the placement above.
                        {(nodes > 1).then(|| view! {
                            <div><dt>{t!(i18n, job_form.nodes)}</dt><dd data-testid="job-nodes">{nodes}</dd></div>
                        })}
                        {s.epoch.map(|e| view! { <div><dt>{t!(i18n, job_detail.epoch)}</dt><dd>{format!("{e:.2}")}</dd></div> })}
                        {s.exit_code.map(|c| view! { <div><dt>{t!(i18n, job_detail.exit_code)}</dt><dd>{c}</dd></div> })}
                        <div><dt>{t!(i18n, job_detail.created)}</dt><dd><Timestamp at=s.created_at.clone() />{s.created_by.clone().map(|by| format!(" · {by}"))}</dd></div>
                        {s.started_at.clone().map(|at| view! { <div><dt>{t!(i18n, job_detail.started)}</dt><dd><Timestamp at /></dd></div> })}
                        {s.finished_at.clone().map(|at| view! { <div><dt>{t!(i18n, job_detail.finished)}</dt><dd><Timestamp at /></dd></div> })}
                        <div class="facts-wide">
                            <dt>{t!(i18n, job_detail.base_model)}</dt>
                            <dd data-testid="job-base-model">{base_model_view(workspace_id, base.clone(), pretrained.clone(), preset.clone())}</dd>
                        </div>
                        <div class="facts-wide">
                            <dt>{t!(i18n, precision.label)}</dt>
                            <dd data-testid="job-precision">
                                {move || live.with(|d| run_precision_text(i18n.get_locale(), &d.spec.precision, d.precision_choice.as_ref()))}
                            </dd>
                        </div>
                        {retry_of.map(|id| view! {
                            <div><dt>{t!(i18n, job_detail.retry_of)}</dt><dd><A href=job_href(workspace_id, id)>{format!("#{id}")}</A></dd></div>
                        })}
                        {s.sweep_id.zip(s.trial).map(|(sweep, n)| view! {
                            <div><dt>{t!(i18n, job_detail.trial_of)}</dt><dd data-testid="job-trial-of">
                                <A href=crate::pages::workspace::sweeps::sweep_href(workspace_id, sweep)>
                                    {move || t!(i18n, job_detail.trial_of_sweep, n = n, sweep = sweep.get())}
                                </A>
                            </dd></div>
                        })}
                    </dl>
                }
            }}
            {live.with_untracked(|d| d.summary.cluster.is_some()).then(|| view! { <Placement summary /> })}
            {can_edit.then(|| view! { <Actions live /> })}
        </section>
    }
    .into_any()
}

/// Where the job's weights came from: a link to the checkpoint's job, an uploaded model, or the preset
/// it started from.
fn base_model_view(
    workspace_id: WorkspaceId,
    base: Option<BaseModel>,
    pretrained: Option<String>,
    preset: String,
) -> AnyView {
    let i18n = use_i18n();
    if let Some(name) = pretrained {
        return view! {
            <A href=format!("/w/{workspace_id}/models") attr:data-testid="job-base-pretrained">
                {move || t_string!(i18n, job_detail.base_pretrained, name = name.clone()).to_string()}
            </A>
        }
        .into_any();
    }
    match base {
        None => {
            view! { {move || t_string!(i18n, job_detail.from_scratch, preset = preset.clone()).to_string()} }
                .into_any()
        }
        Some(BaseModel { job_id: Some(job), job_name, step, .. }) => {
            let name = job_name.unwrap_or_else(|| format!("#{job}"));
            let step = step.unwrap_or_default();
            view! {
                <A href=job_href(workspace_id, job) attr:data-testid="job-base-job">
                    {move || t_string!(i18n, job_detail.base_checkpoint, job = name.clone(), step = step).to_string()}
                </A>
            }
            .into_any()
        }
        Some(BaseModel { checkpoint_id, .. }) => {
            view! { {move || t_string!(i18n, job_detail.base_deleted, id = checkpoint_id).to_string()} }.into_any()
        }
    }
}

#[component]
fn Actions(live: RwSignal<JobDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let (workspace_id, job_id) = live.with_untracked(|d| (d.summary.workspace_id, d.summary.id));
    let action = ServerAction::<JobAction>::new();
    let (confirming, cancelling) = (RwSignal::new(false), RwSignal::new(false));
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |answer| match answer {
        Some(detail) if detail.summary.id == job_id => live.set(detail),
        // retry and resume queue a new job: follow it.
        Some(detail) => navigate(
            &job_href(workspace_id, detail.summary.id),
            Default::default(),
        ),
        None => navigate(&format!("/w/{workspace_id}/jobs"), Default::default()),
    });
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let has_checkpoint =
        Memo::new(move |_| live.with(|d| d.checkpoints.iter().any(|c| c.deleted_at.is_none())));
    let busy = action.pending();
    let act = move |verb: JobVerb| {
        move || {
            action.dispatch(JobAction {
                workspace_id,
                job_id,
                verb,
            });
        }
    };
    view! {
        <div class="actions" data-testid="job-actions">
            {move || {
                let s = status.get();
                if s.is_final() {
                    view! {
                        <button type="button" class="button button-primary" data-testid="job-retry" disabled=move || busy.get() on:click=move |_| act(JobVerb::Retry)()>
                            {t!(i18n, job_detail.retry)}
                        </button>
                        <button type="button" class="button" data-testid="job-resume" disabled=move || busy.get() || !has_checkpoint.get()
                            title=move || t_string!(i18n, job_detail.resume_hint) on:click=move |_| act(JobVerb::Resume)()>
                            {t!(i18n, job_detail.resume)}
                        </button>
                    }
                    .into_any()
                } else {
                    let busy = Signal::derive(move || busy.get() || s == JobStatus::Cancelling);
                    view! {
                        <AskButton name="job-cancel" open=cancelling busy class="button">{t!(i18n, job_detail.cancel)}</AskButton>
                    }
                    .into_any()
                }
            }}
            <A href=format!("/w/{workspace_id}/jobs/new?from={job_id}") attr:class="button button-ghost" attr:data-testid="job-clone">
                {t!(i18n, job_detail.clone)}
            </A>
            <A href=format!("/w/{workspace_id}/sweeps/new?from={job_id}") attr:class="button button-ghost" attr:data-testid="job-sweep">
                {t!(i18n, job_detail.sweep)}
            </A>
            {move || status.get().is_final().then(|| view! {
                <AskButton name="job-delete" open=confirming busy>{t!(i18n, job_detail.delete)}</AskButton>
            })}
            <Busy busy />
        </div>
        <Confirm name="job-cancel" open=cancelling busy question=move || t!(i18n, job_detail.cancel_confirm)
            yes=move || t!(i18n, job_detail.cancel_yes) no=move || t!(i18n, job_detail.cancel_no) on_yes=move || { cancelling.set(false); act(JobVerb::Cancel)() } refused=error />
        <Confirm name="job-delete" open=confirming busy question=move || t!(i18n, job_detail.delete_confirm)
            yes=move || t!(i18n, job_detail.delete_yes) on_yes=act(JobVerb::Delete) refused=error />
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_cluster_has_a_job_is_said_in_both_languages() {
        let at = |state, nodes: Option<&str>| ClusterPlacement {
            state,
            reason: Some("Resources".into()),
            nodes: nodes.map(String::from),
        };
        let running = at(ClusterJobState::Running, Some("node2"));
        assert_eq!(
            placement_text(Locale::zh, &running),
            "在集群节点 node2 上运行。"
        );
        assert_eq!(
            placement_text(Locale::en, &running),
            "Running on the cluster's node node2."
        );
        let ended = at(ClusterJobState::Ended, Some("node2"));
        assert_eq!(
            placement_text(Locale::zh, &ended),
            "已在集群节点 node2 上结束。"
        );
        for state in [
            ClusterJobState::Waiting,
            ClusterJobState::Ending,
            ClusterJobState::Ended,
        ] {
            for locale in [Locale::zh, Locale::en] {
                let text = placement_text(locale, &at(state, None));
                assert!(
                    !text.is_empty() && !text.contains("{{"),
                    "{state:?} {locale:?}: {text}"
                );
            }
        }
    }

    fn ended(status: JobStatus, reason: JobReason, exit_code: Option<i64>) -> JobSummary {
        serde_json::from_value(serde_json::json!({
            "id": 1, "workspace_id": 1, "name": "j", "status": status, "status_reason": reason,
            "status_message": "SERVER WORDS", "exit_code": exit_code, "executor": "local",
            "cluster": null, "cluster_job": null, "priority": 0, "gpus": 0, "gpu_indices": [],
            "step": 0, "total_steps": null, "epoch": null, "queue_position": null,
            "created_by": null, "created_at": "", "started_at": null, "finished_at": null,
        }))
        .unwrap()
    }

    /// Each way a job ends is a Chinese sentence of its own (with the exit code where it matters); the
    /// server's English shows only where it is the detail to act on, as what the trainer said.
    #[test]
    fn every_end_is_worded_in_chinese_from_its_reason() {
        use JobReason as R;
        use JobStatus as S;
        let cases = [
            (S::Cancelling, R::CancelRequested, None),
            (S::Cancelled, R::CancelRequested, Some(0)),
            (S::Cancelled, R::CancelRequested, Some(143)),
            (S::Cancelling, R::TimeLimit, None),
            (S::Failed, R::TimeLimit, Some(0)),
            (S::Succeeded, R::EarlyStopped, Some(0)),
            (S::Cancelled, R::Signal, Some(0)),
            (S::Failed, R::Exited, Some(137)),
            (S::Failed, R::Exited, None),
            (S::Cancelled, R::WorkspaceDeleted, None),
            (S::Queued, R::Interrupted, None),
            (S::Queued, R::Requeued, None),
        ];
        let mut seen = std::collections::HashSet::new();
        for (status, reason, code) in cases {
            let (words, raw) = status_words(Locale::zh, &ended(status, reason, code)).unwrap();
            assert_eq!(raw, None, "{reason:?}");
            assert!(!words.contains("SERVER"), "{reason:?}: {words}");
            assert!(
                words
                    .chars()
                    .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{words}"
            );
            assert!(
                seen.insert(words.clone()),
                "{reason:?} says what another says: {words}"
            );
        }
        let exited = status_words(Locale::zh, &ended(S::Failed, R::Exited, Some(137))).unwrap();
        assert!(exited.0.contains("137"), "{exited:?}");
        let failed =
            status_words(Locale::zh, &ended(S::Failed, R::TrainerFailed, Some(1))).unwrap();
        assert_eq!(
            failed,
            ("训练器报告失败：".into(), Some("SERVER WORDS".into()))
        );
        let mut quiet = ended(S::Succeeded, R::Completed, Some(0));
        quiet.status_message = None;
        assert_eq!(status_words(Locale::zh, &quiet), None);
    }
}

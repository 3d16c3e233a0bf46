//! `/w/{id}/endpoints/{endpoint}`: one endpoint — its status (with the server's message and the parity
//! report), where it comes from (checkpoint and job), the lifecycle buttons (undeploy, deploy again,
//! delete), scaling and roll-outs, its replicas, live traffic, the playground, API keys and the calls to
//! copy. Viewers see all of it except the controls that change something (the server refuses those to
//! them anyway).
//!
//! The page renders once from the server's answer and then reads the endpoint again every few seconds
//! for as long as it is open: each answer updates the status and replicas and adds one sample to the
//! traffic charts. Each section reads only the part it shows through a memo.

use contracts::ids::{CheckpointId, JobId};
use std::collections::BTreeMap;
use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::canary::CanaryCard;
use super::keys::KeysCard;
use super::manage::{rollout_choices, ManageCard};
use super::metrics::{MetricsCard, Sample};
use super::playground::Playground;
use super::scaling::ScalingCard;
use super::usage::UsageCard;
use super::EndpointStatusBadge;
use crate::api::{
    checkpoints::list_checkpoints,
    endpoints::{get_endpoint, EndpointAction},
    jobs::list_jobs,
};
use crate::components::confirm::{AskButton, Busy, Confirm};
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, PageHeader};
use crate::components::poll::every;
use crate::components::precision::run_precision_text;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::jobs::job_href;
use crate::pages::workspace::{section_heading, use_current_workspace, use_detail};
use contracts::error::AppError;
use contracts::serving::{ParityReport, ParityTolerance};
use contracts::types::{
    ChangeUnderWay, CheckpointInfo, EndpointDetail, EndpointStatus, EndpointVerb,
};

/// How often the page reads the endpoint again: one traffic sample each time.
const POLL: Duration = Duration::from_secs(3);

#[component]
pub fn EndpointPage() -> impl IntoView {
    let current = use_current_workspace();
    let detail = use_detail("endpoint", get_endpoint);
    // Lineage and the roll-out choices: every checkpoint of the workspace, and job names.
    let lineage = Resource::new(
        move || current.id.get(),
        |ws| async move {
            let checkpoints = list_checkpoints(ws).await?;
            let jobs: BTreeMap<JobId, String> = list_jobs(ws, Default::default())
                .await?
                .into_iter()
                .map(|j| (j.id, j.name))
                .collect();
            Ok::<_, AppError>((checkpoints, jobs))
        },
    );
    let load = move || async move { Ok((detail.await?, lineage.await.unwrap_or_default())) };
    view! {
        <div class="page">
            <Loaded load failed=section_heading("endpoints") let((detail, (checkpoints, jobs)))>
                <EndpointView detail checkpoints jobs />
            </Loaded>
        </div>
    }
}

#[component]
fn EndpointView(
    detail: EndpointDetail,
    checkpoints: Vec<CheckpointInfo>,
    jobs: BTreeMap<JobId, String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let workspace_id = detail.summary.workspace_id;
    let endpoint_id = detail.summary.id;
    let can_edit = detail.can_edit;
    let predict_path = detail.predict_path.clone();
    let live = RwSignal::new(detail);
    let samples = RwSignal::new(Vec::<Sample>::new());
    let secret = RwSignal::new(None::<String>);

    let name = Memo::new(move |_| live.with(|d| d.summary.name.clone()));
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let ready = Memo::new(move |_| status.get() == EndpointStatus::Ready);
    let task = Memo::new(move |_| live.with(|d| d.task));
    let metrics = Memo::new(move |_| live.with(|d| d.metrics.clone()));
    let keys = Memo::new(move |_| live.with(|d| d.keys.clone()));

    // Samples are taken in the browser only, timed from the first one.
    let first_at = StoredValue::new(None::<chrono::DateTime<chrono::Utc>>);
    let sample = move |d: &EndpointDetail| {
        let now = chrono::Utc::now();
        let origin = first_at.get_value().unwrap_or(now);
        first_at.set_value(Some(origin));
        let at_s = (now - origin).num_milliseconds() as f64 / 1000.0;
        samples.try_update(|s| s.push(Sample::of(at_s, &d.metrics)));
    };
    let refresh = move || {
        spawn_local(async move {
            if let Ok(fresh) = get_endpoint(workspace_id, endpoint_id).await {
                sample(&fresh);
                live.try_set(fresh);
            }
        })
    };
    Effect::new(move |_| live.with_untracked(sample));
    every(POLL, refresh);

    // The lead is the URL callers use (the slug never changes); the checkpoint is in the status card,
    // which follows roll-outs.
    let lead = predict_path.clone();
    let steps: BTreeMap<CheckpointId, i64> = checkpoints.iter().map(|c| (c.id, c.step)).collect();
    let choices = rollout_choices(&checkpoints, |job| {
        jobs.get(&job).cloned().unwrap_or_else(|| format!("#{job}"))
    });
    view! {
        <Title text=move || name.get() />
        <p class="breadcrumb">
            <A href=format!("/w/{workspace_id}/endpoints") attr:data-testid="endpoint-back">"← "{t!(i18n, endpoint_detail.back)}</A>
        </p>
        <PageHeader title=move || name.get() lead=move || view! { <code data-testid="endpoint-predict-path">{lead.clone()}</code> } />
        {(!can_edit).then(|| view! { <p class="notice notice-info" data-testid="endpoint-read-only">{t!(i18n, endpoint_detail.editors_only)}</p> })}
        <StatusCard live jobs steps can_edit />
        {can_edit.then(|| view! { <ManageCard live choices=choices.clone() /> })}
        <CanaryCard live choices can_edit />
        <ScalingCard live can_edit />
        <ReplicasCard live />
        <MetricsCard metrics samples />
        <Playground workspace_id endpoint_id ready task />
        <KeysCard workspace_id endpoint_id keys can_edit secret refresh />
        <UsageCard predict_path secret task />
    }
    .into_any()
}

/// `1.2e-6`, or the text the report gave (`inf`).
fn diff_text(d: Option<f64>) -> String {
    match d {
        Some(d) if d.is_finite() => format!("{d:.1e}"),
        Some(_) => "inf".to_string(),
        None => "–".to_string(),
    }
}

/// The gate's allowance: one number (float32), or `abs + rel·|logit|` (reduced precision).
fn tolerance_text(t: Option<ParityTolerance>) -> String {
    match t {
        Some(t) if t.rel > 0.0 => format!("{:.1e} + {:.0}% |logit|", t.abs, t.rel * 100.0),
        Some(t) => format!("{:.1e}", t.abs),
        None => "–".to_string(),
    }
}

#[component]
fn StatusCard(
    live: RwSignal<EndpointDetail>,
    jobs: BTreeMap<JobId, String>,
    steps: BTreeMap<CheckpointId, i64>,
    can_edit: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let summary = Memo::new(move |_| live.with(|d| d.summary.clone()));
    let spec = Memo::new(move |_| live.with(|d| d.spec.clone()));
    let parity = Memo::new(move |_| live.with(|d| d.parity_report.clone()));
    let workspace_id = live.with_untracked(|d| d.summary.workspace_id);
    let (jobs, steps) = (StoredValue::new(jobs), StoredValue::new(steps));
    view! {
        <section class="card" aria-labelledby="endpoint-status-title" data-testid="endpoint-status-card">
            <div class="card-heading">
                <h2 id="endpoint-status-title">{t!(i18n, endpoint_detail.status_title)}</h2>
                <EndpointStatusBadge status />
            </div>
            {move || {
                let s = summary.get();
                let sp = spec.get();
                let job = jobs.with_value(|j| j.get(&s.job_id).cloned()).unwrap_or_else(|| format!("#{}", s.job_id));
                let step = steps.with_value(|st| st.get(&s.checkpoint_id).copied());
                let (ready, total, checkpoint_id) = (s.ready_replicas, s.replicas, s.checkpoint_id);
                let (tokens, ms) = (sp.max_batch_tokens, sp.max_wait_ms);
                view! {
                    <dl class="facts">
                        {s.change.map(|c| {
                            let text = match c {
                                ChangeUnderWay::Rollout { checkpoint_id, replicas } => t_string!(i18n, endpoint_detail.change_rollout, id = checkpoint_id, replicas = replicas).to_string(),
                                ChangeUnderWay::Scale { from, to } => t_string!(i18n, endpoint_detail.change_scale, from = from, to = to).to_string(),
                            };
                            view! { <div class="facts-wide"><dt>{t!(i18n, endpoint_detail.change)}</dt><dd data-testid="endpoint-change">{text}</dd></div> }
                        })}
                        {s.status_message.clone().map(|m| view! {
                            <div class="facts-wide"><dt>{t!(i18n, endpoint_detail.message)}</dt><dd data-testid="endpoint-message">{m}</dd></div>
                        })}
                        <div>
                            <dt>{t!(i18n, endpoint_detail.replicas)}</dt>
                            <dd data-testid="endpoint-replicas">{move || t_string!(i18n, endpoints.replicas_ready, ready = ready, total = total).to_string()}</dd>
                        </div>
                        {s.cluster.clone().map(|name| {
                            let partition = sp.partition.clone();
                            view! {
                                <div>
                                    <dt>{t!(i18n, endpoint_detail.runs_on)}</dt>
                                    <dd data-testid="endpoint-cluster">
                                        {move || t_string!(i18n, endpoint_detail.on_cluster, name = name.clone()).to_string()}
                                        {partition.map(|p| view! { " · "{move || t_string!(i18n, job_detail.cluster_partition, name = p.clone()).to_string()} })}
                                    </dd>
                                </div>
                            }
                        })}
                        <div>
                            <dt>{t!(i18n, endpoint_detail.model)}</dt>
                            <dd data-testid="endpoint-checkpoint">
                                {move || t_string!(i18n, endpoints.checkpoint_of, id = checkpoint_id).to_string()}
                                {move || step.map(|st| format!(" · {}", t_string!(i18n, endpoints.checkpoint_step, step = st)))}
                            </dd>
                        </div>
                        <div>
                            <dt>{t!(i18n, endpoint_detail.job)}</dt>
                            <dd><A href=job_href(workspace_id, s.job_id) attr:data-testid="endpoint-job">{job}</A></dd>
                        </div>
                        <div>
                            <dt>{t!(i18n, endpoint_detail.batching)}</dt>
                            <dd>{move || t_string!(i18n, endpoint_detail.batching_value, tokens = tokens, ms = ms).to_string()}</dd>
                        </div>
                        <div>
                            <dt>{t!(i18n, endpoint_detail.device)}</dt>
                            <dd data-testid="endpoint-device">{sp.device.to_uppercase()}</dd>
                        </div>
                        <div>
                            <dt>{t!(i18n, endpoint_detail.precision)}</dt>
                            <dd data-testid="endpoint-precision">
                                {
                                    let asked = sp.precision.clone();
                                    move || parity.with(|r| run_precision_text(
                                        i18n.get_locale(),
                                        &asked,
                                        r.as_ref().and_then(|r| r.precision_choice.as_ref()),
                                    ))
                                }
                            </dd>
                        </div>
                        <div><dt>{t!(i18n, endpoint_detail.created)}</dt><dd><Timestamp at=s.created_at.clone() /></dd></div>
                    </dl>
                }
            }}
            {move || parity.get().map(|report| view! { <ParityVerdict report /> })}
            {can_edit.then(|| view! { <Actions live /> })}
        </section>
    }
    .into_any()
}

/// The parity gate's verdict: passed with its numbers, or why not and the first text that differed.
#[component]
fn ParityVerdict(report: ParityReport) -> impl IntoView {
    let i18n = use_i18n();
    let (passed, samples) = (report.passed, report.samples);
    let diff = diff_text(report.max_abs_diff);
    let tolerance = tolerance_text(report.tolerance);
    let message = report.message;
    let mismatch = report.mismatch.map(|m| m.text);
    view! {
        <div class="parity" data-testid="parity-report" data-passed=passed.to_string()>
            <h3>{t!(i18n, endpoint_detail.parity_title)}</h3>
            {if passed {
                view! {
                    <p class="notice notice-success">
                        {move || t_string!(i18n, endpoint_detail.parity_passed, samples = samples, diff = diff.clone(), tolerance = tolerance.clone()).to_string()}
                    </p>
                }
                .into_any()
            } else {
                view! {
                    <div class="notice notice-error" role="alert">
                        <p>{move || t_string!(i18n, endpoint_detail.parity_failed, message = message.clone()).to_string()}</p>
                        {mismatch.map(|text| view! {
                            <p><strong>{t!(i18n, endpoint_detail.parity_mismatch)}": "</strong><span data-testid="parity-mismatch">{text}</span></p>
                        })}
                    </div>
                }
                .into_any()
            }}
        </div>
    }
}

#[component]
fn Actions(live: RwSignal<EndpointDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let (workspace_id, endpoint_id) =
        live.with_untracked(|d| (d.summary.workspace_id, d.summary.id));
    let action = ServerAction::<EndpointAction>::new();
    let (confirming, stopping) = (RwSignal::new(false), RwSignal::new(false));
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |answer| match answer {
        Some(detail) => live.set(detail),
        None => navigate(&format!("/w/{workspace_id}/endpoints"), Default::default()),
    });
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let running = Memo::new(move |_| {
        matches!(
            status.get(),
            EndpointStatus::Starting | EndpointStatus::Ready
        )
    });
    let busy = action.pending();
    let act = move |verb: EndpointVerb| {
        move || {
            action.dispatch(EndpointAction {
                workspace_id,
                endpoint_id,
                verb,
            });
        }
    };
    view! {
        <div class="actions" data-testid="endpoint-actions">
            {move || if running.get() {
                view! {
                    <AskButton name="endpoint-undeploy" open=stopping busy class="button">{t!(i18n, endpoint_detail.undeploy)}</AskButton>
                }
                .into_any()
            } else {
                view! {
                    <button type="button" class="button button-primary" data-testid="endpoint-redeploy" disabled=move || busy.get() on:click=move |_| act(EndpointVerb::Deploy)()>
                        {t!(i18n, endpoint_detail.redeploy)}
                    </button>
                    <AskButton name="endpoint-delete" open=confirming busy>{t!(i18n, endpoint_detail.delete)}</AskButton>
                }
                .into_any()
            }}
            <Busy busy />
        </div>
        <Confirm name="endpoint-undeploy" open=stopping busy question=move || t!(i18n, endpoint_detail.undeploy_confirm)
            yes=move || t!(i18n, endpoint_detail.undeploy_yes) on_yes=move || { stopping.set(false); act(EndpointVerb::Undeploy)() } refused=error />
        <Confirm name="endpoint-delete" open=confirming busy question=move || t!(i18n, endpoint_detail.delete_confirm)
            yes=move || t!(i18n, endpoint_detail.delete_yes) on_yes=act(EndpointVerb::Delete) refused=error />
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

#[component]
fn ReplicasCard(live: RwSignal<EndpointDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let replicas = Memo::new(move |_| live.with(|d| d.replicas.clone()));
    view! {
        <section class="card" aria-labelledby="endpoint-replicas-title" data-testid="endpoint-replicas-card">
            <h2 id="endpoint-replicas-title">{t!(i18n, endpoint_detail.replicas_title)}</h2>
            <DataTable testid="replicas-table" columns=columns!(endpoint_detail: col_replica, col_status, col_restarts, col_error, col_started)>
                {move || replicas.get().into_iter().map(|r| view! {
                    <tr data-testid="replica-row" data-ordinal=r.ordinal data-status=r.status.as_str()>
                        <th scope="row" class="num">
                            {format!("#{}", r.ordinal)}
                            {r.cluster_job.clone().map(|id| view! {
                                <span class="muted" data-testid="replica-cluster-job">
                                    " · "{move || t_string!(i18n, job_detail.cluster_job, id = id.clone()).to_string()}
                                </span>
                            })}
                        </th>
                        <td><EndpointStatusBadge status=r.status testid="replica-status" /></td>
                        <td class="num">{r.restarts}</td>
                        <td class="replica-error">{r.last_error.clone().unwrap_or_else(|| "–".to_string())}</td>
                        <td class="nowrap">{r.started_at.clone().map(|at| view! { <Timestamp at /> })}</td>
                    </tr>
                }).collect_view()}
            </DataTable>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parity_differences_read_as_exponents() {
        assert_eq!(diff_text(Some(0.0000012)), "1.2e-6");
        assert_eq!(diff_text(Some(f64::INFINITY)), "inf");
        assert_eq!(diff_text(None), "–");
        let bf16 = ParityTolerance {
            abs: 0.05,
            rel: 0.02,
        };
        assert_eq!(tolerance_text(Some(bf16)), "5.0e-2 + 2% |logit|");
    }
}

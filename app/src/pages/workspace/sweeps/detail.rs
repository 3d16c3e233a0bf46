//! `/w/{id}/sweeps/{sweep}`: one sweep — its status and why it last changed, the control buttons
//! (pause, resume, cancel; editors and owners), what it searches and how it judges, its best trial so
//! far (its job's page, where its best checkpoint is evaluated or deployed in one click), and
//! every trial best first: the values it ran with, its objective, how far it got and the decision at
//! each rung it reached. Read again every few seconds while it is not over.

use std::time::Duration;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::list::SweepStatusBadge;
use super::promote::{winner_of, Promote, Winner};
use super::{objective_text, value_text};
use crate::api::sweeps::{get_sweep, SweepAction};
use crate::components::confirm::{AskButton, Busy, Confirm};
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, PageHeader};
use crate::components::poll::every;
use crate::components::table::{columns, DataTable};
use crate::i18n::*;
use crate::pages::workspace::compare::compare_href;
use crate::pages::workspace::jobs::job_href;
use crate::pages::workspace::jobs::parts::JobStatusBadge;
use crate::pages::workspace::{section_heading, use_current_workspace, use_detail, use_id_param};
use contracts::error::AppError;
use contracts::ids::SweepId;
use contracts::runs::MAX_COMPARED;
use contracts::sweeps::{
    EarlyStopping, Method, SweepDetail, SweepReason, SweepStatus, SweepVerb, Trial,
};

/// How often the sweep is read again while it is not over.
const POLL: Duration = Duration::from_secs(3);

fn best_checkpoint(detail: &SweepDetail) -> Option<contracts::ids::CheckpointId> {
    detail.summary.best.as_ref().and_then(|b| b.checkpoint_id)
}

/// The comparison of the sweep's trials: the first [`MAX_COMPARED`] as the trials table lists them
/// (best first).
fn compare_trials(detail: &SweepDetail) -> String {
    let ids: Vec<_> = detail
        .trials
        .iter()
        .take(MAX_COMPARED)
        .map(|t| t.job.id)
        .collect();
    compare_href(detail.summary.workspace_id, &ids)
}

#[component]
pub fn SweepPage() -> impl IntoView {
    let detail = use_detail("sweep", get_sweep);
    let current = use_current_workspace();
    let id = use_id_param::<SweepId>("sweep");
    let winner = Resource::new(
        move || (current.id.get(), id.get()),
        |(ws, id)| winner_of(ws, id),
    );
    view! {
        <div class="page">
            <Loaded load=move || async move { detail.await } failed=section_heading("sweeps") let:detail>
                <SweepView detail winner />
            </Loaded>
        </div>
    }
}

#[component]
fn SweepView(
    detail: SweepDetail,
    /// The winner and what can be done with it: read beside the sweep, again when another trial leads.
    winner: Resource<Result<Option<Winner>, AppError>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, sweep_id) = (detail.summary.workspace_id, detail.summary.id);
    let can_edit = detail.can_edit;
    let live = RwSignal::new(detail);
    let asked = StoredValue::new(live.with_untracked(best_checkpoint));
    Effect::new(move |_| {
        let now = live.with(best_checkpoint);
        if now != asked.get_value() {
            asked.set_value(now);
            winner.refetch();
        }
    });
    every(POLL, move || {
        if live.with_untracked(|d| {
            d.summary.status.is_final() || d.summary.status == SweepStatus::Finished
        }) {
            return;
        }
        leptos::task::spawn_local(async move {
            if let Ok(fresh) = get_sweep(workspace_id, sweep_id).await {
                live.set(fresh);
            }
        });
    });
    let name = Memo::new(move |_| live.with(|d| d.summary.name.clone()));
    view! {
        <Title text=move || format!("{} · Paddock", name.get()) />
        <PageHeader title=move || name.get() lead=move || t!(i18n, sweeps.detail_lead) />
        <section class="card" data-testid="sweep-summary">
            <p>
                {move || view! { <SweepStatusBadge status=live.with(|d| d.summary.status) /> }}
                {move || live.with(|d| reason_words(i18n.get_locale(), d.summary.status_reason, d.summary.status_message.clone())).map(|(words, raw)| view! {
                    <span class="muted small block" data-testid="sweep-message">
                        {words}
                        {raw.map(|r| view! { " " <code translate="no">{r}</code> })}
                    </span>
                })}
            </p>
            <dl class="facts">
                <div><dt>{t!(i18n, sweeps.objective)}</dt>
                <dd data-testid="sweep-objective">{move || live.with(|d| objective_text(&d.summary.objective))}</dd></div>
                <div><dt>{t!(i18n, sweeps.method)}</dt>
                <dd>{move || live.with(|d| match d.summary.method {
                    Method::Grid => t_string!(i18n, sweeps.method_grid),
                    Method::Random => t_string!(i18n, sweeps.method_random),
                })}</dd></div>
                <div><dt>{t!(i18n, sweeps.early_stopping)}</dt>
                <dd>{move || live.with(|d| match d.summary.early_stopping {
                    EarlyStopping::None => t_string!(i18n, sweeps.early_none).to_string(),
                    EarlyStopping::Asha { min_steps, reduction_factor } => {
                        td_string!(i18n.get_locale(), sweeps.early_asha, min_steps = min_steps, eta = reduction_factor).to_string()
                    }
                })}</dd></div>
                <div class="facts-wide"><dt>{t!(i18n, sweeps.trials)}</dt>
                <dd data-testid="sweep-counts">{move || live.with(|d| {
                    let (s, c) = (&d.summary, d.summary.counts);
                    td_string!(i18n.get_locale(), sweeps.counts, started = s.trials, max = s.max_trials,
                        active = c.active, completed = c.completed, pruned = c.pruned, failed = c.failed).to_string()
                })}</dd></div>
                <div><dt>{t!(i18n, sweeps.steps_run)}</dt>
                <dd class="num" data-testid="sweep-steps">{move || live.with(|d| d.summary.steps_run)}</dd></div>
            </dl>
            {move || can_edit.then(|| view! { <Actions live /> })}
        </section>
        {move || live.with(|d| d.summary.best.clone()).map(|best| view! {
            <section class="card" data-testid="sweep-best">
                <h2>{t!(i18n, sweeps.best)}</h2>
                <p>
                    {move || t!(i18n, sweeps.best_line, n = best.trial, value = format!("{:.4}", best.objective.value), step = best.objective.step)}
                </p>
                <div class="actions">
                    <A href=job_href(workspace_id, best.job_id) attr:class="button button-primary" attr:data-testid="sweep-best-job">
                        {t!(i18n, sweeps.best_open)}
                    </A>
                    <A href=move || live.with(compare_trials) attr:class="button" attr:data-testid="sweep-compare">
                        {t!(i18n, sweeps.compare_trials)}
                    </A>
                </div>
                <Loaded load=move || async move { winner.await } let:read>
                    {read.filter(|w| Some(w.checkpoint_id()) == best.checkpoint_id).map(|winner| view! {
                        <Promote workspace_id winner can_edit />
                    })}
                </Loaded>
            </section>
        })}
        <section class="card">
            <h2>{t!(i18n, sweeps.trials_heading)}</h2>
            {move || {
                let trials = live.with(|d| d.trials.clone());
                view! { <TrialsTable trials workspace_id /> }
            }}
        </section>
    }
    .into_any()
}

/// What the sweep's last move was, in `locale`, worded from its reason; the server's words follow
/// where they are what a person acts on (why a trial could not be queued).
fn reason_words(
    locale: Locale,
    reason: Option<SweepReason>,
    message: Option<String>,
) -> Option<(String, Option<String>)> {
    let words = match reason? {
        SweepReason::PauseRequested => td_string!(locale, sweeps.reason_paused),
        SweepReason::ResumeRequested => td_string!(locale, sweeps.reason_resumed),
        SweepReason::Extended => td_string!(locale, sweeps.reason_extended),
        SweepReason::Completed => td_string!(locale, sweeps.reason_completed),
        SweepReason::CancelRequested => td_string!(locale, sweeps.reason_cancelled),
        SweepReason::TrialRefused => {
            return Some((
                td_string!(locale, sweeps.reason_trial_refused).to_string(),
                message,
            ))
        }
    };
    Some((words.to_string(), None))
}

#[component]
fn TrialsTable(trials: Vec<Trial>, workspace_id: contracts::ids::WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    let rows = trials
        .into_iter()
        .map(|t| {
            let values = t
                .parameters
                .iter()
                .map(|(k, v)| format!("{k} = {}", value_text(v)))
                .collect::<Vec<_>>()
                .join(" · ");
            let objective = t
                .objective
                .map(|o| format!("{:.4} @ {}", o.value, o.step))
                .unwrap_or_else(|| "—".into());
            let rungs = t
                .rungs
                .iter()
                .map(|r| {
                    let mark = if r.continued { "✓" } else { "✗" };
                    format!("{} {mark} {:.4} ({})", r.step, r.value, r.peers)
                })
                .collect::<Vec<_>>()
                .join(" · ");
            let status = t.job.status;
            let pruned = t.pruned;
            view! {
                <tr data-testid=format!("trial-row-{}", t.trial) data-pruned=pruned.to_string()>
                    <th scope="row">
                        <A href=job_href(workspace_id, t.job.id) attr:data-testid="trial-link">
                            {move || t!(i18n, sweeps.trial_n, n = t.trial)}
                        </A>
                    </th>
                    <td>
                        {if pruned {
                            view! { <span class="badge badge-job badge-job-pruned" data-testid="trial-pruned">{t!(i18n, sweeps.pruned)}</span> }.into_any()
                        } else {
                            view! { <JobStatusBadge status=status /> }.into_any()
                        }}
                    </td>
                    <td class="small">{values}</td>
                    <td class="num" data-testid="trial-objective">{objective}</td>
                    <td class="num">{t.job.step}</td>
                    <td class="small nowrap" data-testid="trial-rungs">{rungs}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="trials-table" columns=columns!(sweeps: col_trial, col_status, col_values, col_objective, col_steps, col_rungs)>
            {rows}
        </DataTable>
    }
    .into_any()
}

#[component]
fn Actions(live: RwSignal<SweepDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, sweep_id) = live.with_untracked(|d| (d.summary.workspace_id, d.summary.id));
    let action = ServerAction::<SweepAction>::new();
    let cancelling = RwSignal::new(false);
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |detail| live.set(detail));
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let busy = action.pending();
    let act = move |verb: SweepVerb| {
        move || {
            action.dispatch(SweepAction {
                workspace_id,
                sweep_id,
                verb,
            });
        }
    };
    view! {
        <div class="actions" data-testid="sweep-actions">
            {move || match status.get() {
                SweepStatus::Running => Some(view! {
                    <button type="button" class="button" data-testid="sweep-pause" disabled=move || busy.get() on:click=move |_| act(SweepVerb::Pause)()>
                        {t!(i18n, sweeps.pause)}
                    </button>
                }.into_any()),
                SweepStatus::Paused => Some(view! {
                    <button type="button" class="button button-primary" data-testid="sweep-resume" disabled=move || busy.get() on:click=move |_| act(SweepVerb::Resume)()>
                        {t!(i18n, sweeps.resume)}
                    </button>
                }.into_any()),
                _ => None,
            }}
            {move || matches!(status.get(), SweepStatus::Running | SweepStatus::Paused).then(|| view! {
                <AskButton name="sweep-cancel" open=cancelling busy class="button">{t!(i18n, sweeps.cancel)}</AskButton>
            })}
            <Busy busy />
        </div>
        <Confirm name="sweep-cancel" open=cancelling busy question=move || t!(i18n, sweeps.cancel_confirm)
            yes=move || t!(i18n, sweeps.cancel_yes) no=move || t!(i18n, sweeps.cancel_no)
            on_yes=move || { cancelling.set(false); act(SweepVerb::Cancel)() } refused=error />
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

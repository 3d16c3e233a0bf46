//! Canary rollouts on the endpoint page. Without one, editors start one: a checkpoint of the workspace,
//! its replicas, the shares of calls it gets step by step and how long each step is watched. With one,
//! everyone sees where it stands and both versions' figures over the current step side by side, and
//! editors promote, pause, resume or roll it back. The canary judges itself on the server; the page
//! only reads what the polling brings.

use contracts::ids::CheckpointId;
use leptos::prelude::*;

use super::manage::Choice;
use super::scaling::figures_text;
use crate::api::endpoints::{CanaryStep, StartCanary};
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::{AppError, ErrorCode};
use contracts::scaling::{CanaryAction, CanaryFigures, CanaryPhase, CanaryRule, CanarySpec};
use contracts::types::{EndpointDetail, EndpointStatus};

/// `10, 50` → `[10, 50]`; `None` when a part is not a whole number.
pub fn parse_steps(text: &str) -> Option<Vec<u32>> {
    text.split([',', '，', ' '])
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.trim().trim_end_matches('%').parse().ok())
        .collect()
}

#[component]
pub fn CanaryCard(
    live: RwSignal<EndpointDetail>,
    choices: Vec<Choice>,
    can_edit: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let canary = Memo::new(move |_| live.with(|d| d.canary.clone()));
    let figures = Memo::new(move |_| live.with(|d| d.canary_figures.clone()));
    let ready = Memo::new(move |_| live.with(|d| d.summary.status == EndpointStatus::Ready));
    let choices = StoredValue::new(choices);
    view! {
        <section class="card" aria-labelledby="endpoint-canary-title" data-testid="endpoint-canary">
            <h2 id="endpoint-canary-title">{t!(i18n, endpoint_detail.canary_title)}</h2>
            {move || match canary.get() {
                Some(c) => {
                    let phase = match c.phase {
                        CanaryPhase::Starting => t_string!(i18n, endpoint_detail.canary_starting).to_string(),
                        CanaryPhase::Running => t_string!(i18n, endpoint_detail.canary_running, share = c.share_percent()).to_string(),
                        CanaryPhase::Paused => t_string!(i18n, endpoint_detail.canary_paused, share = c.share_percent()).to_string(),
                    };
                    let checkpoint = c.spec.checkpoint_id;
                    let step = format!("{}/{}", c.step + 1, c.spec.steps.len());
                    view! {
                        <p data-testid="canary-phase" data-phase=format!("{:?}", c.phase).to_lowercase()>
                            {move || t_string!(i18n, endpoint_detail.canary_of, id = checkpoint, step = step.clone()).to_string()}
                            " · "{phase}
                        </p>
                        {move || figures.get().map(|f| view! { <FiguresTable f /> })}
                        {can_edit.then(|| view! { <CanaryButtons live phase=c.phase /> })}
                    }
                    .into_any()
                }
                None if can_edit && ready.get() => view! { <CanaryForm live choices=choices.get_value() /> }.into_any(),
                None => view! { <p class="hint" data-testid="canary-none">{t!(i18n, endpoint_detail.canary_none)}</p> }.into_any(),
            }}
        </section>
    }
    .into_any()
}

/// Both versions over the current step, side by side.
#[component]
fn FiguresTable(f: CanaryFigures) -> impl IntoView {
    let i18n = use_i18n();
    let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let rows = [
        (
            "canary",
            f.canary_requests,
            pct(f.canary_error_rate),
            ms(f.canary_p95_ms),
            ms(f.canary_p99_ms),
        ),
        (
            "stable",
            f.stable_requests,
            pct(f.stable_error_rate),
            ms(f.stable_p95_ms),
            ms(f.stable_p99_ms),
        ),
    ];
    let verdict = f
        .fault
        .map(|_| figures_text(i18n.get_locale_untracked(), &f));
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="canary-figures">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, endpoint_detail.canary_col_version)}</th>
                        <th scope="col" class="num">{t!(i18n, endpoint_detail.canary_col_requests)}</th>
                        <th scope="col" class="num">{t!(i18n, endpoint_detail.canary_col_errors)}</th>
                        <th scope="col" class="num">"p95 ms"</th>
                        <th scope="col" class="num">"p99 ms"</th>
                    </tr>
                </thead>
                <tbody>
                    {rows.into_iter().map(|(version, n, err, p95, p99)| view! {
                        <tr data-testid="canary-version" data-version=version>
                            <th scope="row">{move || match version {
                                "canary" => t_string!(i18n, endpoint_detail.canary_version_canary).to_string(),
                                _ => t_string!(i18n, endpoint_detail.canary_version_stable).to_string(),
                            }}</th>
                            <td class="num" data-testid="canary-requests">{n}</td>
                            <td class="num">{err}</td>
                            <td class="num">{p95}</td>
                            <td class="num">{p99}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {verdict.map(|v| view! { <p class="notice notice-warning" data-testid="canary-fault">{v}</p> })}
    }
}

#[component]
fn CanaryButtons(live: RwSignal<EndpointDetail>, phase: CanaryPhase) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, endpoint_id) =
        live.with_untracked(|d| (d.summary.workspace_id, d.summary.id));
    let action = ServerAction::<CanaryStep>::new();
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |detail| live.set(detail));
    let busy = action.pending();
    let act = move |step: CanaryAction| {
        action.dispatch(CanaryStep {
            workspace_id,
            endpoint_id,
            action: step,
        });
    };
    let judged = phase != CanaryPhase::Starting;
    view! {
        <div class="actions" data-testid="canary-actions">
            {judged.then(|| view! {
                <button type="button" class="button button-primary" data-testid="canary-promote" disabled=move || busy.get()
                    on:click=move |_| act(CanaryAction::Promote)>{t!(i18n, endpoint_detail.canary_promote)}</button>
            })}
            {match phase {
                CanaryPhase::Running => Some(view! {
                    <button type="button" class="button" data-testid="canary-pause" disabled=move || busy.get()
                        on:click=move |_| act(CanaryAction::Pause)>{t!(i18n, endpoint_detail.canary_pause)}</button>
                }.into_any()),
                CanaryPhase::Paused => Some(view! {
                    <button type="button" class="button" data-testid="canary-resume" disabled=move || busy.get()
                        on:click=move |_| act(CanaryAction::Resume)>{t!(i18n, endpoint_detail.canary_resume)}</button>
                }.into_any()),
                CanaryPhase::Starting => None,
            }}
            <button type="button" class="button button-danger" data-testid="canary-roll-back" disabled=move || busy.get()
                on:click=move |_| act(CanaryAction::RollBack)>{t!(i18n, endpoint_detail.canary_roll_back)}</button>
        </div>
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
}

#[component]
fn CanaryForm(live: RwSignal<EndpointDetail>, choices: Vec<Choice>) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, endpoint_id, serving) = live.with_untracked(|d| {
        (
            d.summary.workspace_id,
            d.summary.id,
            d.summary.checkpoint_id,
        )
    });
    let choices: Vec<Choice> = choices
        .into_iter()
        .filter(|(id, _, _)| *id != serving)
        .collect();
    let checkpoint = RwSignal::new(
        choices
            .first()
            .map(|(id, _, _)| id.to_string())
            .unwrap_or_default(),
    );
    let defaults: CanarySpec = serde_json::from_value(serde_json::json!({ "checkpoint_id": 0 }))
        .expect("a canary has defaults for everything but its checkpoint");
    let replicas = RwSignal::new(defaults.replicas.to_string());
    let steps = RwSignal::new(
        defaults
            .steps
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    );
    let step_secs = RwSignal::new(defaults.step_secs.to_string());
    let min_requests = RwSignal::new(defaults.rule.min_requests.to_string());
    let action = ServerAction::<StartCanary>::new();
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |detail| live.set(detail));
    let busy = action.pending();
    let invalid = move |field: &str| {
        AppError::invalid(
            field,
            ErrorCode::EndpointSpecInvalid,
            td_string!(i18n.get_locale_untracked(), endpoints.err_number),
        )
    };
    let start = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let whole = |s: RwSignal<String>| s.get_untracked().trim().parse::<u32>().ok();
        let spec = (|| {
            Ok::<_, AppError>(CanarySpec {
                checkpoint_id: checkpoint
                    .get_untracked()
                    .parse::<CheckpointId>()
                    .map_err(|_| invalid("checkpoint_id"))?,
                replicas: whole(replicas).ok_or_else(|| invalid("replicas"))?,
                steps: parse_steps(&steps.get_untracked()).ok_or_else(|| invalid("steps"))?,
                step_secs: whole(step_secs).ok_or_else(|| invalid("step_secs"))?,
                rule: CanaryRule {
                    min_requests: whole(min_requests)
                        .ok_or_else(|| invalid("rule.min_requests"))?,
                    ..CanaryRule::default()
                },
            })
        })();
        match spec {
            Ok(spec) => {
                action.dispatch(StartCanary {
                    workspace_id,
                    endpoint_id,
                    spec,
                });
            }
            Err(e) => error.set(Some(e)),
        }
    };
    let text_field = move |id: &'static str,
                           label: String,
                           value: RwSignal<String>,
                           numeric: bool| {
        view! {
            <div class="field">
                <label for=id>{label}</label>
                <input id=id data-testid=id type=if numeric { "number" } else { "text" } inputmode=if numeric { "numeric" } else { "text" }
                    prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
            </div>
        }
    };
    let empty = choices.is_empty();
    view! {
        <form class="form" data-testid="canary-form" on:submit=start novalidate>
            <p class="hint">{t!(i18n, endpoint_detail.canary_hint)}</p>
            <div class="form-grid">
                <div class="field">
                    <label for="canary-checkpoint">{t!(i18n, endpoint_detail.canary_checkpoint)}</label>
                    <select id="canary-checkpoint" data-testid="canary-checkpoint" on:change=move |ev| checkpoint.set(event_target_value(&ev))>
                        {choices.into_iter().map(|(id, job, step)| {
                            let text = move || format!("#{id} · {job} · {}", t_string!(i18n, endpoints.checkpoint_step, step = step));
                            view! { <option value=id.to_string() selected=move || checkpoint.get() == id.to_string()>{text}</option> }
                        }).collect_view()}
                    </select>
                </div>
                {move || text_field("canary-replicas", t_string!(i18n, endpoint_detail.canary_replicas).to_string(), replicas, true)}
                {move || text_field("canary-steps", t_string!(i18n, endpoint_detail.canary_steps).to_string(), steps, false)}
                {move || text_field("canary-step-secs", t_string!(i18n, endpoint_detail.canary_step_secs).to_string(), step_secs, true)}
                {move || text_field("canary-min-requests", t_string!(i18n, endpoint_detail.canary_min_requests).to_string(), min_requests, true)}
            </div>
            <div class="actions">
                <button type="submit" class="button button-primary" data-testid="canary-start" disabled=move || busy.get() || empty>
                    {t!(i18n, endpoint_detail.canary_start)}
                </button>
            </div>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_read_from_a_list_of_percents() {
        assert_eq!(parse_steps("10, 50"), Some(vec![10, 50]));
        assert_eq!(parse_steps("5%，25% 75"), Some(vec![5, 25, 75]));
        assert_eq!(parse_steps("10, half"), None);
        assert_eq!(parse_steps(""), Some(vec![]));
    }
}

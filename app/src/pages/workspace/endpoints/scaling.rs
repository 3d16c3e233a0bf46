//! How an endpoint sizes itself: fixed at a number of replicas, or autoscaled between a floor and a
//! ceiling on its load (a floor of 0 stops every replica while nobody calls, and the next call waits for
//! a cold start, whose last duration is shown). Editors set or turn off the policy; everyone reads the
//! endpoint's history — what the scaler decided and on which figures, and who changed the policy.

use leptos::prelude::*;

use crate::api::endpoints::SetEndpointAutoscale;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::components::time::Timestamp;
use crate::i18n::*;
use contracts::error::{AppError, ErrorCode};
use contracts::scaling::{
    Autoscale, CanaryFault, CanaryFigures, EndpointEvent, HistoryEntry, ScaleMetric,
};
use contracts::types::EndpointDetail;

/// The form's texts, one per field.
#[derive(Clone, Copy)]
struct Fields {
    min: RwSignal<String>,
    max: RwSignal<String>,
    metric: RwSignal<String>,
    target: RwSignal<String>,
    up: RwSignal<String>,
    down: RwSignal<String>,
    idle: RwSignal<String>,
    cold_wait: RwSignal<String>,
}

impl Fields {
    /// Filled from the endpoint's policy, or from the server's defaults around its current replicas.
    fn new(policy: Option<Autoscale>, replicas: u32) -> Fields {
        let p = policy.unwrap_or_else(|| {
            serde_json::from_value(serde_json::json!({
                "min_replicas": replicas.max(1), "max_replicas": replicas.max(1),
                "metric": "in_flight", "target_per_replica": 4.0
            }))
            .expect("Autoscale has defaults for its delays")
        });
        let text = |n: u32| RwSignal::new(n.to_string());
        Fields {
            min: text(p.min_replicas),
            max: text(p.max_replicas),
            metric: RwSignal::new(p.metric.as_str().to_string()),
            target: RwSignal::new(p.target_per_replica.to_string()),
            up: text(p.scale_up_after_secs),
            down: text(p.scale_down_after_secs),
            idle: text(p.idle_after_secs),
            cold_wait: text(p.cold_start_wait_secs),
        }
    }

    /// The policy to send, or the first field whose text is not a number.
    fn policy(&self) -> Result<Autoscale, &'static str> {
        fn whole(s: RwSignal<String>, field: &'static str) -> Result<u32, &'static str> {
            s.get_untracked().trim().parse().map_err(|_| field)
        }
        Ok(Autoscale {
            min_replicas: whole(self.min, "autoscale.min_replicas")?,
            max_replicas: whole(self.max, "autoscale.max_replicas")?,
            metric: match self.metric.get_untracked().as_str() {
                "qps" => ScaleMetric::Qps,
                _ => ScaleMetric::InFlight,
            },
            target_per_replica: self
                .target
                .get_untracked()
                .trim()
                .parse()
                .map_err(|_| "autoscale.target_per_replica")?,
            scale_up_after_secs: whole(self.up, "autoscale.scale_up_after_secs")?,
            scale_down_after_secs: whole(self.down, "autoscale.scale_down_after_secs")?,
            idle_after_secs: whole(self.idle, "autoscale.idle_after_secs")?,
            cold_start_wait_secs: whole(self.cold_wait, "autoscale.cold_start_wait_secs")?,
        })
    }
}

fn metric_text(locale: Locale, metric: ScaleMetric) -> String {
    match metric {
        ScaleMetric::InFlight => td_string!(locale, endpoint_detail.metric_in_flight).to_string(),
        ScaleMetric::Qps => td_string!(locale, endpoint_detail.metric_qps).to_string(),
    }
}

/// One history line in the reader's language (the CLI's `paddock endpoint show` prints the English).
pub fn event_text(locale: Locale, event: &EndpointEvent) -> String {
    match event {
        EndpointEvent::Scaled {
            from,
            to,
            metric,
            load,
            target_per_replica,
        } => td_string!(
            locale,
            endpoint_detail.ev_scaled,
            from = from,
            to = to,
            load = format!("{load:.2}"),
            target = target_per_replica,
            metric = metric_text(locale, *metric)
        )
        .to_string(),
        EndpointEvent::ScaleRefused { to, message } => td_string!(
            locale,
            endpoint_detail.ev_refused,
            to = to,
            message = message.clone()
        )
        .to_string(),
        EndpointEvent::ScaledToZero { idle_secs } => {
            td_string!(locale, endpoint_detail.ev_to_zero, secs = idle_secs).to_string()
        }
        EndpointEvent::ColdStart { cold_start_ms } => {
            td_string!(locale, endpoint_detail.ev_cold_start, ms = cold_start_ms).to_string()
        }
        EndpointEvent::AutoscaleSet { policy: Some(p) } => td_string!(
            locale,
            endpoint_detail.ev_autoscale_on,
            min = p.min_replicas,
            max = p.max_replicas
        )
        .to_string(),
        EndpointEvent::AutoscaleSet { policy: None } => {
            td_string!(locale, endpoint_detail.ev_autoscale_off).to_string()
        }
        EndpointEvent::CanaryStarted { checkpoint_id } => td_string!(
            locale,
            endpoint_detail.ev_canary_started,
            id = checkpoint_id
        )
        .to_string(),
        EndpointEvent::CanaryStepped {
            share_percent,
            figures,
        } => format!(
            "{} {}",
            td_string!(
                locale,
                endpoint_detail.ev_canary_stepped,
                share = share_percent
            ),
            figures_text(locale, figures)
        ),
        EndpointEvent::CanaryPromoted {
            checkpoint_id,
            figures,
        } => {
            let said = td_string!(
                locale,
                endpoint_detail.ev_canary_promoted,
                id = checkpoint_id
            )
            .to_string();
            match figures {
                Some(f) => format!("{said} {}", figures_text(locale, f)),
                None => said,
            }
        }
        EndpointEvent::CanaryRolledBack {
            checkpoint_id,
            figures,
            message,
        } => {
            let said = td_string!(
                locale,
                endpoint_detail.ev_canary_rolled_back,
                id = checkpoint_id
            )
            .to_string();
            match (figures, message) {
                (Some(f), _) => format!("{said} {}", figures_text(locale, f)),
                (None, Some(m)) => format!("{said} {m}"),
                (None, None) => said,
            }
        }
        EndpointEvent::CanaryPaused => {
            td_string!(locale, endpoint_detail.ev_canary_paused).to_string()
        }
        EndpointEvent::CanaryResumed => {
            td_string!(locale, endpoint_detail.ev_canary_resumed).to_string()
        }
    }
}

/// The figures a canary decision was made on, in one sentence: both versions, and what failed.
pub fn figures_text(locale: Locale, f: &CanaryFigures) -> String {
    let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    let versions = td_string!(
        locale,
        endpoint_detail.canary_figures,
        canary_n = f.canary_requests,
        canary_err = format!("{:.1}", f.canary_error_rate * 100.0),
        canary_p95 = ms(f.canary_p95_ms),
        stable_n = f.stable_requests,
        stable_err = format!("{:.1}", f.stable_error_rate * 100.0),
        stable_p95 = ms(f.stable_p95_ms)
    )
    .to_string();
    let fault = match f.fault {
        Some(CanaryFault::Errors) => td_string!(locale, endpoint_detail.fault_errors).to_string(),
        Some(CanaryFault::P95Latency) => td_string!(locale, endpoint_detail.fault_p95).to_string(),
        Some(CanaryFault::P99Latency) => td_string!(locale, endpoint_detail.fault_p99).to_string(),
        None => return versions,
    };
    format!("{versions} {fault}")
}

#[component]
pub fn ScalingCard(live: RwSignal<EndpointDetail>, can_edit: bool) -> impl IntoView {
    let i18n = use_i18n();
    let summary = Memo::new(move |_| live.with(|d| d.summary.clone()));
    let history = Memo::new(move |_| live.with(|d| d.history.clone()));
    view! {
        <section class="card" aria-labelledby="endpoint-scaling-title" data-testid="endpoint-scaling">
            <h2 id="endpoint-scaling-title">{t!(i18n, endpoint_detail.scaling_title)}</h2>
            <p data-testid="scaling-mode">
                {move || {
                    let s = summary.get();
                    let locale = i18n.get_locale();
                    match s.autoscale {
                        Some(p) => td_string!(locale, endpoint_detail.scaling_auto,
                            min = p.min_replicas, max = p.max_replicas,
                            target = p.target_per_replica, metric = metric_text(locale, p.metric)).to_string(),
                        None => td_string!(locale, endpoint_detail.scaling_fixed, replicas = s.replicas).to_string(),
                    }
                }}
            </p>
            {move || {
                let s = summary.get();
                (s.autoscale.is_some() && s.replicas == 0).then(|| view! {
                    <p class="notice notice-info" data-testid="scaling-asleep">{t!(i18n, endpoint_detail.scaling_asleep)}</p>
                })
            }}
            {move || summary.get().cold_start_ms.map(|ms| view! {
                <p class="hint" data-testid="scaling-cold-start">{move || t_string!(i18n, endpoint_detail.cold_start, ms = ms).to_string()}</p>
            })}
            {can_edit.then(|| view! { <AutoscaleForm live /> })}
            <h3>{t!(i18n, endpoint_detail.history_title)}</h3>
            {move || {
                let entries = history.get();
                if entries.is_empty() {
                    view! { <p class="hint" data-testid="history-empty">{t!(i18n, endpoint_detail.history_empty)}</p> }.into_any()
                } else {
                    view! {
                        <ol class="history" data-testid="endpoint-history">
                            {entries.into_iter().map(|e| view! { <HistoryLine entry=e /> }).collect_view()}
                        </ol>
                    }
                    .into_any()
                }
            }}
        </section>
    }
    .into_any()
}

#[component]
fn HistoryLine(entry: HistoryEntry) -> impl IntoView {
    let i18n = use_i18n();
    let kind = serde_json::to_value(&entry.event)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_string))
        .unwrap_or_default();
    let event = entry.event;
    let by = entry.by;
    view! {
        <li data-testid="history-line" data-kind=kind>
            <Timestamp at=entry.at />
            " · "
            <span class="muted">
                {move || by.clone().unwrap_or_else(|| t_string!(i18n, endpoint_detail.by_scaler).to_string())}
            </span>
            " · "
            <span>{move || event_text(i18n.get_locale(), &event)}</span>
        </li>
    }
}

#[component]
fn AutoscaleForm(live: RwSignal<EndpointDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, endpoint_id, policy, replicas) = live.with_untracked(|d| {
        (
            d.summary.workspace_id,
            d.summary.id,
            d.summary.autoscale,
            d.summary.replicas,
        )
    });
    let fields = Fields::new(policy, replicas);
    let on = Memo::new(move |_| live.with(|d| d.summary.autoscale.is_some()));
    let action = ServerAction::<SetEndpointAutoscale>::new();
    let error = RwSignal::new(None::<AppError>);
    on_answer(action, error, move |detail| live.set(detail));
    let busy = action.pending();
    let send = move |policy: Option<Autoscale>| {
        action.dispatch(SetEndpointAutoscale {
            workspace_id,
            endpoint_id,
            policy,
        });
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match fields.policy() {
            Ok(policy) => send(Some(policy)),
            Err(field) => error.set(Some(AppError::invalid(
                field,
                ErrorCode::EndpointSpecInvalid,
                td_string!(i18n.get_locale_untracked(), endpoints.err_number),
            ))),
        }
    };
    let number = move |id: &'static str, label: String, value: RwSignal<String>| {
        view! {
            <div class="field">
                <label for=id>{label}</label>
                <input id=id data-testid=id type="number" min="0" inputmode="decimal" step="any"
                    prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
            </div>
        }
    };
    view! {
        <form class="form" data-testid="autoscale-form" on:submit=save novalidate>
            <div class="form-grid">
                {move || number("autoscale-min", t_string!(i18n, endpoint_detail.min_label).to_string(), fields.min)}
                {move || number("autoscale-max", t_string!(i18n, endpoint_detail.max_label).to_string(), fields.max)}
                <div class="field">
                    <label for="autoscale-metric">{t!(i18n, endpoint_detail.metric_label)}</label>
                    <select id="autoscale-metric" data-testid="autoscale-metric" on:change=move |ev| fields.metric.set(event_target_value(&ev))>
                        {[ScaleMetric::InFlight, ScaleMetric::Qps].into_iter().map(|m| view! {
                            <option value=m.as_str() selected=move || fields.metric.get() == m.as_str()>
                                {move || metric_text(i18n.get_locale(), m)}
                            </option>
                        }).collect_view()}
                    </select>
                </div>
                {move || number("autoscale-target", t_string!(i18n, endpoint_detail.target_label).to_string(), fields.target)}
                {move || number("autoscale-up", t_string!(i18n, endpoint_detail.up_label).to_string(), fields.up)}
                {move || number("autoscale-down", t_string!(i18n, endpoint_detail.down_label).to_string(), fields.down)}
                {move || number("autoscale-idle", t_string!(i18n, endpoint_detail.idle_label).to_string(), fields.idle)}
                {move || number("autoscale-cold-wait", t_string!(i18n, endpoint_detail.cold_wait_label).to_string(), fields.cold_wait)}
            </div>
            <p class="hint">{t!(i18n, endpoint_detail.scaling_hint)}</p>
            <div class="actions">
                <button type="submit" class="button button-primary" data-testid="autoscale-save" disabled=move || busy.get()>
                    {t!(i18n, endpoint_detail.scaling_save)}
                </button>
                {move || on.get().then(|| view! {
                    <button type="button" class="button" data-testid="autoscale-off" disabled=move || busy.get()
                        on:click=move |_| send(None)>
                        {t!(i18n, endpoint_detail.scaling_off)}
                    </button>
                })}
            </div>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
        </form>
    }
}

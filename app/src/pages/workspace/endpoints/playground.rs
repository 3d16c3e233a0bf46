//! The playground: a person types texts, one per line, and sees for each the predicted label and a bar
//! per label with its probability. It calls the endpoint through the gateway like any caller does (so it
//! counts in the traffic numbers), with the member's session instead of an API key; any member, viewers
//! included, may use it while the endpoint is ready.

use contracts::ids::{EndpointId, WorkspaceId};
use leptos::prelude::*;

use crate::api::endpoints::TryPredict;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::PlaygroundPrediction;

/// What the textarea suggests: a complaint, as in the issue, and a compliment.
const PLACEHOLDER: &str = "这家银行的服务态度很差，等了半小时还没人理我。\n质量很好，物流也快。";

/// The non-empty lines of the textarea, trimmed.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `0.8734` → `87.3%`: the bar's width and its text.
pub fn percent(p: f64) -> String {
    format!("{:.1}%", (p * 100.0).clamp(0.0, 100.0))
}

#[component]
pub fn Playground(
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    #[prop(into)] ready: Signal<bool>,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<AppError>);
    let predict = ServerAction::<TryPredict>::new();
    let results = RwSignal::new(Vec::<PlaygroundPrediction>::new());
    on_answer(predict, error, move |list| results.set(list));
    let empty = RwSignal::new(false);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let inputs = lines(&text.get_untracked());
        empty.set(inputs.is_empty());
        if !inputs.is_empty() {
            predict.dispatch(TryPredict {
                workspace_id,
                endpoint_id,
                inputs,
            });
        }
    };
    let pending = predict.pending();
    view! {
        <section class="card" aria-labelledby="playground-title" data-testid="playground">
            <h2 id="playground-title">{t!(i18n, endpoint_detail.playground_title)}</h2>
            <form class="form" data-testid="playground-form" on:submit=on_submit novalidate>
                <div class="field" class:field-invalid=move || empty.get()>
                    <label for="playground-input">{t!(i18n, endpoint_detail.playground_label)}</label>
                    <textarea id="playground-input" data-testid="playground-input" rows="4" placeholder=PLACEHOLDER
                        aria-describedby="playground-hint playground-error"
                        aria-invalid=move || empty.get().then_some("true")
                        prop:value=move || text.get()
                        on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                    <p class="hint" id="playground-hint">{t!(i18n, endpoint_detail.playground_hint)}</p>
                    <p class="field-error" id="playground-error" data-testid="playground-error">
                        {move || empty.get().then(|| t_string!(i18n, endpoint_detail.playground_empty))}
                    </p>
                </div>
                <div class="form-actions">
                    <button type="submit" class="button button-primary" data-testid="playground-submit"
                        disabled=move || pending.get() || !ready.get() aria-busy=move || pending.get().then_some("true")>
                        {t!(i18n, endpoint_detail.playground_submit)}
                    </button>
                    {move || (!ready.get()).then(|| view! {
                        <span class="muted" data-testid="playground-not-ready">{t!(i18n, endpoint_detail.playground_not_ready)}</span>
                    })}
                </div>
            </form>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
            <ol class="predictions" data-testid="playground-results" aria-live="polite">
                {move || results.get().into_iter().map(|p| view! { <PredictionView p /> }).collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

#[component]
fn PredictionView(p: PlaygroundPrediction) -> impl IntoView {
    let i18n = use_i18n();
    let latency = format!("{:.1}", p.latency_ms);
    // Colours follow the label, not the rank, so that a label keeps its colour from text to text.
    let mut names: Vec<&str> = p.probabilities.iter().map(|lp| lp.label.as_str()).collect();
    names.sort_unstable();
    let colour = |label: &str| names.binary_search(&label).unwrap_or(0) % 6;
    view! {
        <li class="prediction" data-testid="playground-result" data-label=p.label.clone()>
            <p class="prediction-text">{p.text.clone()}</p>
            <p class="prediction-head">
                <span class="badge badge-label" data-testid="playground-label">{p.label.clone()}</span>
                <span class="muted small">{move || t_string!(i18n, endpoint_detail.playground_latency, ms = latency.clone()).to_string()}</span>
            </p>
            <ul class="bars">
                {p.probabilities
                    .iter()
                    .map(|lp| {
                        let width = percent(lp.probability);
                        view! {
                            <li class="bar-row" data-testid="playground-probability" data-label=lp.label.clone()
                                data-probability=lp.probability.to_string()>
                                <span class="bar-label" title=lp.label.clone()>{lp.label.clone()}</span>
                                <span class="bar-track" role="presentation">
                                    <span class=format!("bar label-color-{}", colour(&lp.label)) style:width=width.clone()></span>
                                </span>
                                <span class="bar-value">{width}</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_text_per_non_empty_line() {
        assert_eq!(
            lines(" 很好 \n\n  \n太差了\r\n"),
            vec!["很好".to_string(), "太差了".to_string()]
        );
        assert!(lines("\n \n").is_empty());
        assert_eq!(percent(0.87349), "87.3%");
        assert_eq!(percent(1.0000001), "100.0%");
    }
}

//! The playground: a person types texts, one per line (for a matching model two columns of texts,
//! paired line by line), and sees for each the predicted label and a bar per label with its probability. It calls the endpoint through the gateway like any caller does (so it
//! counts in the traffic numbers), with the member's session instead of an API key; any member, viewers
//! included, may use it while the endpoint is ready.

use contracts::ids::{EndpointId, WorkspaceId};
use leptos::prelude::*;

use crate::api::endpoints::TryPredict;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::serving::{Input, Pair};
use contracts::task::Task;
use contracts::types::PlaygroundPrediction;

/// What the textarea suggests: a complaint, as in the issue, and a compliment.
const PLACEHOLDER: &str = "这家银行的服务态度很差，等了半小时还没人理我。\n质量很好，物流也快。";
/// What a matching model's two textareas suggest: one question asked two ways, and two questions.
const PLACEHOLDER_A: &str = "怎么修改登录密码\n银行卡丢了怎么办";
const PLACEHOLDER_B: &str = "密码忘了怎么办\n信用卡额度怎么提高";

/// The non-empty lines of the textarea, trimmed.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The inputs of a `task` model from the textareas: each line of the first, or for pairs each line of
/// the first with the same line of the second. `None` when a pair's side is missing.
pub fn inputs(task: Task, first: &str, second: &str) -> Option<Vec<Input>> {
    if !task.pairs() {
        return Some(lines(first).into_iter().map(Input::Text).collect());
    }
    let (a, b) = (lines(first), lines(second));
    (a.len() == b.len()).then(|| {
        a.into_iter()
            .zip(b)
            .map(|(text_a, text_b)| Input::Pair(Pair { text_a, text_b }))
            .collect()
    })
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
    /// What the model takes: texts, or pairs (two textareas).
    #[prop(into)]
    task: Signal<Task>,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = RwSignal::new(String::new());
    let second = RwSignal::new(String::new());
    let error = RwSignal::new(None::<AppError>);
    let predict = ServerAction::<TryPredict>::new();
    let results = RwSignal::new(Vec::<PlaygroundPrediction>::new());
    on_answer(predict, error, move |list| results.set(list));
    // Why nothing was sent: no text, or pairs with a side missing.
    let empty = RwSignal::new(None::<&'static str>);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let asked = inputs(
            task.get_untracked(),
            &text.get_untracked(),
            &second.get_untracked(),
        );
        match asked {
            Some(inputs) if !inputs.is_empty() => {
                empty.set(None);
                predict.dispatch(TryPredict {
                    workspace_id,
                    endpoint_id,
                    inputs,
                });
            }
            Some(_) => empty.set(Some("empty")),
            None => empty.set(Some("unpaired")),
        }
    };
    let invalid = move || empty.get().is_some();
    let pairs = move || task.get().pairs();
    let pending = predict.pending();
    view! {
        <section class="card" aria-labelledby="playground-title" data-testid="playground">
            <h2 id="playground-title">{t!(i18n, endpoint_detail.playground_title)}</h2>
            <form class="form" data-testid="playground-form" on:submit=on_submit novalidate>
                <div class="playground-inputs" class:playground-pairs=pairs>
                    <div class="field" class:field-invalid=invalid>
                        <label for="playground-input">
                            {move || match pairs() {
                                false => t_string!(i18n, endpoint_detail.playground_label).to_string(),
                                true => t_string!(i18n, endpoint_detail.playground_label_a).to_string(),
                            }}
                        </label>
                        <textarea id="playground-input" data-testid="playground-input" rows="4"
                            placeholder=move || if pairs() { PLACEHOLDER_A } else { PLACEHOLDER }
                            aria-describedby="playground-hint playground-error"
                            aria-invalid=move || invalid().then_some("true")
                            prop:value=move || text.get()
                            on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                    </div>
                    {move || pairs().then(|| view! {
                        <div class="field" class:field-invalid=invalid>
                            <label for="playground-input-b">{t!(i18n, endpoint_detail.playground_label_b)}</label>
                            <textarea id="playground-input-b" data-testid="playground-input-b" rows="4" placeholder=PLACEHOLDER_B
                                aria-describedby="playground-hint playground-error"
                                aria-invalid=move || invalid().then_some("true")
                                prop:value=move || second.get()
                                on:input=move |ev| second.set(event_target_value(&ev))></textarea>
                        </div>
                    })}
                </div>
                <p class="hint" id="playground-hint">
                    {move || match pairs() {
                        false => t_string!(i18n, endpoint_detail.playground_hint).to_string(),
                        true => t_string!(i18n, endpoint_detail.playground_hint_pairs).to_string(),
                    }}
                </p>
                <p class="field-error" id="playground-error" data-testid="playground-error">
                    {move || empty.get().map(|why| match why {
                        "unpaired" => t_string!(i18n, endpoint_detail.playground_unpaired).to_string(),
                        _ => t_string!(i18n, endpoint_detail.playground_empty).to_string(),
                    })}
                </p>
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
            {p.text_pair.clone().map(|b| view! { <p class="prediction-text prediction-pair" data-testid="playground-pair">{b}</p> })}
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
        assert_eq!(
            inputs(Task::Classification, "好\n差", "ignored"),
            Some(vec![Input::Text("好".into()), Input::Text("差".into())])
        );
        assert_eq!(
            inputs(Task::Matching, "怎么改密码\n", " 密码忘了 "),
            Some(vec![Input::Pair(Pair {
                text_a: "怎么改密码".into(),
                text_b: "密码忘了".into()
            })])
        );
        assert_eq!(inputs(Task::Matching, "a\nb", "c"), None, "b has no pair");
        assert_eq!(percent(0.87349), "87.3%");
        assert_eq!(percent(1.0000001), "100.0%");
    }
}

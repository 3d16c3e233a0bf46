//! The playground: a person types texts, one per line (for a matching model two columns of texts,
//! paired line by line), and sees for each the predicted label and a bar per label with its
//! probability, or for an entity model the text with its entities highlighted and listed. It calls the
//! endpoint through the gateway like any caller does (so it counts in the traffic numbers), with the
//! member's session instead of an API key; any member, viewers included, may use it while the endpoint
//! is ready.

use contracts::ids::{EndpointId, WorkspaceId};
use leptos::prelude::*;

use crate::api::endpoints::TryPredict;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::serving::{Entity, Input, Pair};
use contracts::task::Task;
use contracts::types::{LabelProbability, PlaygroundAnswer, PlaygroundPrediction};

use super::usage::EXAMPLE_ENTITY_TEXTS;

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

/// `text` cut into runs: plain text, and each entity's characters with the entity. Entities come in text
/// order from the model; one that overlaps the one before or lies past the text is left out rather than
/// drawn wrong.
pub fn segments<'a>(text: &str, entities: &'a [Entity]) -> Vec<(String, Option<&'a Entity>)> {
    let chars: Vec<char> = text.chars().collect();
    let mut runs = Vec::new();
    let mut at = 0;
    for e in entities {
        if e.start < at || e.start >= e.end || e.end > chars.len() {
            continue;
        }
        if e.start > at {
            runs.push((chars[at..e.start].iter().collect(), None));
        }
        runs.push((chars[e.start..e.end].iter().collect(), Some(e)));
        at = e.end;
    }
    if at < chars.len() {
        runs.push((chars[at..].iter().collect(), None));
    }
    runs
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
                            placeholder=move || match task.get() {
                                Task::Classification => PLACEHOLDER.to_string(),
                                Task::Matching => PLACEHOLDER_A.to_string(),
                                Task::Ner => EXAMPLE_ENTITY_TEXTS.join("\n"),
                            }
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
                    {move || match task.get() {
                        Task::Classification => t_string!(i18n, endpoint_detail.playground_hint).to_string(),
                        Task::Matching => t_string!(i18n, endpoint_detail.playground_hint_pairs).to_string(),
                        Task::Ner => t_string!(i18n, endpoint_detail.playground_hint_entities).to_string(),
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
    let latency = move || {
        t_string!(
            i18n,
            endpoint_detail.playground_latency,
            ms = latency.clone()
        )
        .to_string()
    };
    match p.answer {
        PlaygroundAnswer::Label { label, probabilities } => view! {
            <li class="prediction" data-testid="playground-result" data-label=label.clone()>
                <p class="prediction-text">{p.text}</p>
                {p.text_pair.map(|b| view! { <p class="prediction-text prediction-pair" data-testid="playground-pair">{b}</p> })}
                <p class="prediction-head">
                    <span class="badge badge-label" data-testid="playground-label">{label.clone()}</span>
                    <span class="muted small">{latency}</span>
                </p>
                <Bars probabilities />
            </li>
        }
        .into_any(),
        PlaygroundAnswer::Entities { entities } => {
            let found = entities.len();
            view! {
            <li class="prediction" data-testid="playground-result" data-entities=found>
                <EntitiesView text=p.text entities />
                <p class="prediction-head">
                    <span class="muted small">{latency}</span>
                </p>
            </li>
            }
            .into_any()
        }
    }
}

/// A bar per label with its probability, highest first. Colours follow the label, not the rank, so that
/// a label keeps its colour from text to text.
#[component]
fn Bars(probabilities: Vec<LabelProbability>) -> impl IntoView {
    let mut names: Vec<String> = probabilities.iter().map(|lp| lp.label.clone()).collect();
    names.sort_unstable();
    let colour = move |label: &str| names.iter().position(|n| n == label).unwrap_or(0) % 6;
    view! {
        <ul class="bars">
            {probabilities
                .into_iter()
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
    }
}

/// The text with each entity marked and its type after it (hidden from screen readers, which read the
/// list instead), then the entities as a list: type, text, characters, score. Colours follow the type.
#[component]
fn EntitiesView(text: String, entities: Vec<Entity>) -> impl IntoView {
    let i18n = use_i18n();
    let mut types: Vec<String> = entities.iter().map(|e| e.label.clone()).collect();
    types.sort_unstable();
    types.dedup();
    let colour = move |label: &str| types.iter().position(|t| t == label).unwrap_or(0) % 6;
    let marked = segments(&text, &entities)
        .into_iter()
        .map(|(run, entity)| match entity {
            None => view! { <span>{run}</span> }.into_any(),
            Some(e) => view! {
                <mark class=format!("entity entity-color-{}", colour(&e.label)) data-testid="playground-entity"
                    data-label=e.label.clone() title=format!("{} {}", e.label, percent(f64::from(e.score)))>
                    {run}<span class="entity-type" aria-hidden="true">{e.label.clone()}</span>
                </mark>
            }
            .into_any(),
        })
        .collect_view();
    let found = entities.len();
    view! {
        <p class="prediction-text entity-text">{marked}</p>
        {match found {
            0 => view! {
                <p class="muted" data-testid="playground-no-entities">{t!(i18n, endpoint_detail.playground_no_entities)}</p>
            }.into_any(),
            _ => view! {
                <ul class="entity-list" aria-label=move || t_string!(i18n, endpoint_detail.playground_entities_aria, count = found).to_string()>
                    {entities.iter().map(|e| {
                        let place = t_string!(i18n, endpoint_detail.playground_entity_place, start = e.start, end = e.end).to_string();
                        view! {
                            <li data-testid="playground-entity-row" data-label=e.label.clone() data-start=e.start data-end=e.end>
                                <span class="badge badge-label">{e.label.clone()}</span>" "
                                <strong>{e.text.clone()}</strong>" "
                                <span class="muted small">{place}" · "{percent(f64::from(e.score))}</span>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            }.into_any(),
        }}
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

    #[test]
    fn entities_cut_the_text_into_runs_by_character() {
        let entity = |start, end, label: &str| Entity {
            text: String::new(),
            label: label.into(),
            start,
            end,
            score: 0.9,
        };
        let found = [
            entity(0, 2, "PER"),
            entity(3, 5, "LOC"),
            entity(4, 6, "ORG"),
        ];
        let runs = segments("张伟在北京工作", &found);
        let said: Vec<(&str, Option<&str>)> = runs
            .iter()
            .map(|(run, e)| (run.as_str(), e.map(|e| e.label.as_str())))
            .collect();
        assert_eq!(
            said,
            vec![
                ("张伟", Some("PER")),
                ("在", None),
                ("北京", Some("LOC")),
                ("工作", None)
            ],
            "the overlapping ORG is left out"
        );
        assert_eq!(
            segments("短", &[entity(0, 5, "PER")]).len(),
            1,
            "past the end: left out"
        );
        assert!(segments("", &[]).is_empty());
    }
}

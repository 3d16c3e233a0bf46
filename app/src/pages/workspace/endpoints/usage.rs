//! How an application calls the endpoint: a curl command and a Python (`requests`) snippet, ready to
//! copy, with this server's real address and the endpoint's predict path, and the key created on this
//! page (else a placeholder to replace). The address is the browser's `location.origin`, which is what
//! a person reaching the dashboard would also reach the API at; it is filled in after hydration, so the
//! server-rendered page shows the path alone for a moment rather than guessing a host.

use contracts::task::Task;
use leptos::prelude::*;

use crate::components::copy::CopyButton;
use crate::i18n::*;

/// Stands for a key in the snippets until one is created on the page.
pub const KEY_PLACEHOLDER: &str = "YOUR_API_KEY";

/// Texts the snippets send: the issue's complaint and a compliment.
const EXAMPLE_INPUTS: [&str; 2] = [
    "这家银行的服务态度很差，等了半小时还没人理我。",
    "质量很好，物流也快。",
];
/// Pairs the snippets send to a matching model: the same question asked two ways, and two questions.
const EXAMPLE_PAIRS: [(&str, &str); 2] = [
    ("怎么修改登录密码", "密码忘了怎么办"),
    ("银行卡丢了怎么办", "信用卡额度怎么提高"),
];

/// Texts the snippets send to an entity model: people, places and organisations.
pub const EXAMPLE_ENTITY_TEXTS: [&str; 2] = [
    "张伟上周在北京见了阿里巴巴的代表。",
    "李娜的航班明天从上海飞往广州。",
];

/// The example inputs of a `task` model, as JSON (also a Python literal: strings, lists and objects).
fn inputs_json(task: Task) -> String {
    let inputs = match task {
        Task::Classification => serde_json::json!(EXAMPLE_INPUTS),
        Task::Ner => serde_json::json!(EXAMPLE_ENTITY_TEXTS),
        Task::Matching => EXAMPLE_PAIRS
            .iter()
            .map(|(a, b)| serde_json::json!({ "text_a": a, "text_b": b }))
            .collect(),
    };
    inputs.to_string()
}

pub fn curl_snippet(url: &str, key: &str, task: Task) -> String {
    format!(
        "curl -X POST '{url}' \\\n  -H 'Authorization: Bearer {key}' \\\n  -H 'Content-Type: application/json' \\\n  -d '{{\"inputs\":{}}}'",
        inputs_json(task)
    )
}

pub fn python_snippet(url: &str, key: &str, task: Task) -> String {
    let inputs = inputs_json(task);
    let show = match task {
        Task::Ner => {
            r#"print([(e["text"], e["label"], e["start"], e["end"]) for e in prediction["entities"]])"#
        }
        Task::Classification | Task::Matching => {
            r#"print(prediction["label"], dict(zip(reply["labels"], prediction["probabilities"])))"#
        }
    };
    format!(
        r#"import requests

response = requests.post(
    "{url}",
    headers={{"Authorization": "Bearer {key}"}},
    json={{"inputs": {inputs}}},
    timeout=10,
)
response.raise_for_status()
reply = response.json()
for prediction in reply["predictions"]:
    {show}
"#
    )
}

#[component]
pub fn UsageCard(
    predict_path: String,
    /// The key created on this page, if any.
    #[prop(into)]
    secret: Signal<Option<String>>,
    /// What the model takes: texts, or pairs.
    #[prop(into)]
    task: Signal<Task>,
) -> impl IntoView {
    let i18n = use_i18n();
    let origin = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Ok(o) = window().location().origin() {
            origin.set(o);
        }
    });
    let url = Signal::derive(move || format!("{}{predict_path}", origin.get()));
    let key = Signal::derive(move || secret.get().unwrap_or_else(|| KEY_PLACEHOLDER.to_string()));
    let curl = Signal::derive(move || curl_snippet(&url.get(), &key.get(), task.get()));
    let python = Signal::derive(move || python_snippet(&url.get(), &key.get(), task.get()));
    view! {
        <section class="card" aria-labelledby="endpoint-usage-title" data-testid="endpoint-usage">
            <h2 id="endpoint-usage-title">{t!(i18n, endpoint_detail.usage_title)}</h2>
            <p class="hint">
                {move || match task.get() {
                    Task::Ner => t_string!(i18n, endpoint_detail.usage_hint_entities).to_string(),
                    Task::Classification | Task::Matching => t_string!(i18n, endpoint_detail.usage_hint).to_string(),
                }}
            </p>
            {move || secret.with(Option::is_none).then(|| view! {
                <p class="hint" data-testid="usage-placeholder">{t!(i18n, endpoint_detail.usage_key_placeholder)}</p>
            })}
            <div class="snippet">
                <div class="snippet-heading"><h3>"curl"</h3><CopyButton text=curl testid="copy-curl" /></div>
                <pre class="log snippet-code" data-testid="snippet-curl">{move || curl.get()}</pre>
            </div>
            <div class="snippet">
                <div class="snippet-heading"><h3>"Python (requests)"</h3><CopyButton text=python testid="copy-python" /></div>
                <pre class="log snippet-code" data-testid="snippet-python">{move || python.get()}</pre>
            </div>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snippets_carry_the_url_the_key_and_valid_json() {
        let url = "http://10.0.0.5:3000/v1/endpoints/sentiment-ab12/predict";
        let curl = curl_snippet(url, "pdk_ep_secret", Task::Classification);
        assert!(curl.starts_with(&format!("curl -X POST '{url}'")));
        assert!(curl.contains("-H 'Authorization: Bearer pdk_ep_secret'"));
        let body = curl.split("-d '").nth(1).unwrap().trim_end_matches('\'');
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["inputs"][0], EXAMPLE_INPUTS[0]);

        let python = python_snippet(url, KEY_PLACEHOLDER, Task::Classification);
        assert!(python.contains(&format!("    \"{url}\",")));
        assert!(python.contains("headers={\"Authorization\": \"Bearer YOUR_API_KEY\"}"));
        assert!(python.contains("json={\"inputs\": [\"这家银行的服务态度很差，等了半小时还没人理我。\",\"质量很好，物流也快。\"]}"));
    }

    #[test]
    fn a_matching_endpoints_snippets_send_pairs() {
        let curl = curl_snippet("http://h/p", "k", Task::Matching);
        let body = curl.split("-d '").nth(1).unwrap().trim_end_matches('\'');
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["inputs"][0]["text_a"], EXAMPLE_PAIRS[0].0);
        assert_eq!(body["inputs"][0]["text_b"], EXAMPLE_PAIRS[0].1);
        let python = python_snippet("http://h/p", "k", Task::Matching);
        assert!(
            python.contains("json={\"inputs\": [{\"text_a\":\"怎么修改登录密码\""),
            "{python}"
        );
    }

    #[test]
    fn an_entity_endpoints_python_prints_the_entities() {
        let python = python_snippet("http://h/p", "k", Task::Ner);
        assert!(python.contains(EXAMPLE_ENTITY_TEXTS[0]), "{python}");
        assert!(
            python.contains(r#"for e in prediction["entities"]"#),
            "{python}"
        );
        assert!(!python.contains("probabilities"), "{python}");
    }
}

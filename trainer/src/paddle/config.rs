//! PaddleNLP's ERNIE `config.json` and the Hugging Face one Paddock reads, both ways.
//!
//! The keys mostly share names, but not defaults: a PaddleNLP config that omits `type_vocab_size` means
//! 16, not transformers' 2, so a PaddleNLP file is read with PaddleNLP's own defaults and written out
//! with every value explicit. Older PaddleNLP releases (2.4 and before) wrote `model_config.json`, whose
//! values sit in `init_args`; that layout is read too. Whatever PaddleNLP's model would compute
//! differently from Paddock's (a task id other than 0, a pooler activation other than tanh, the fused
//! attention layout) is refused here, by key, rather than imported into a model that answers otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::{ErnieConfig, Error, Result};
use contracts::task::{Head, Task};

/// The LayerNorm epsilon PaddleNLP's ERNIE runs with, whatever its config says: its weight-initialisation
/// hook sets `_epsilon = 1e-12` on every LayerNorm when the model is built (and so when it is loaded).
pub const PADDLE_LAYER_NORM_EPS: f64 = 1e-12;

/// The architectures Paddock can import and export. Others share tensor names and shapes with these (a
/// question-answering head looks like a token-classification one) but compute something else, so a
/// name in `architectures` outside this list is refused.
pub const ARCHITECTURES: &[&str] = &[
    "ErnieModel",
    "ErnieForSequenceClassification",
    "ErnieForTokenClassification",
];

/// The keys of a PaddleNLP `ErnieConfig`, with PaddleNLP 2.8's defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct PaddleConfig {
    pub architectures: Vec<String>,
    pub model_type: Option<String>,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub hidden_dropout_prob: f64,
    pub attention_probs_dropout_prob: f64,
    pub classifier_dropout: Option<f64>,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub task_type_vocab_size: usize,
    pub use_task_id: bool,
    pub task_id: i64,
    pub initializer_range: f64,
    pub pad_token_id: i64,
    pub pool_act: String,
    pub fuse: bool,
    pub num_labels: Option<usize>,
    pub id2label: BTreeMap<String, String>,
    /// `float32`, `float16` or `bfloat16`: the type the weights were saved in.
    pub dtype: Option<String>,
    /// What a Paddock export was fine-tuned for (PaddleNLP keeps a key it does not know), so that a
    /// matching model comes back as one: its head alone cannot say.
    pub paddock_task: Option<Task>,
}

impl Default for PaddleConfig {
    fn default() -> Self {
        PaddleConfig {
            architectures: Vec::new(),
            model_type: None,
            vocab_size: 30522,
            hidden_size: 768,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            hidden_act: "gelu".into(),
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            classifier_dropout: None,
            max_position_embeddings: 512,
            type_vocab_size: 16,
            task_type_vocab_size: 3,
            use_task_id: false,
            task_id: 0,
            initializer_range: 0.02,
            pad_token_id: 0,
            pool_act: "tanh".into(),
            fuse: false,
            num_labels: None,
            id2label: BTreeMap::new(),
            dtype: None,
            paddock_task: None,
        }
    }
}

impl PaddleConfig {
    /// Reads `config.json`, or the older `model_config.json`, from a PaddleNLP model directory.
    pub fn from_dir(dir: &Path) -> Result<PaddleConfig> {
        let current = dir.join("config.json");
        let legacy = dir.join("model_config.json");
        let path = if current.exists() {
            current
        } else if legacy.exists() {
            legacy
        } else {
            return Err(Error::Config(format!(
                "{} has neither config.json nor model_config.json: it is not a PaddleNLP model directory",
                dir.display()
            )));
        };
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        Self::from_json_str(&text)
            .map_err(|e| Error::Config(format!("{}: {}", path.display(), bare(e))))
    }

    /// Parses either layout and refuses what Paddock's model would compute differently.
    pub fn from_json_str(text: &str) -> Result<PaddleConfig> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| Error::Config(format!("not JSON: {e}")))?;
        let config: PaddleConfig = serde_json::from_value(flatten_legacy(value)?)
            .map_err(|e| Error::Config(e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if let Some(t) = &self.model_type {
            if t != "ernie" {
                return bad(format!(
                    "model_type `{t}`: only PaddleNLP ERNIE models (`ernie`) are imported"
                ));
            }
        }
        if let Some(a) = self
            .architectures
            .iter()
            .find(|a| !ARCHITECTURES.contains(&a.as_str()))
        {
            return bad(format!(
                "architectures: `{a}` is not imported (only {})",
                ARCHITECTURES.join(" and ")
            ));
        }
        if self.use_task_id && self.task_id != 0 {
            return bad(format!(
                "task_id {}: Paddock always feeds task type 0, so a model that defaults to another task \
                 would answer differently",
                self.task_id
            ));
        }
        if self.pool_act != "tanh" {
            return bad(format!(
                "pool_act `{}`: only the tanh pooler is supported",
                self.pool_act
            ));
        }
        if self.fuse {
            return bad(
                "fuse: true: the fused attention layout is not imported; save the model with fuse false"
                    .into(),
            );
        }
        Ok(())
    }

    /// The head the config names: `None` when it names no architecture, `Some(None)` for the bare
    /// `ErnieModel`.
    pub fn named_head(&self) -> Option<Option<Head>> {
        self.architectures.first().map(|a| Head::of_architecture(a))
    }

    /// The classification head of a model with these `params` (Paddle names): none without a
    /// classifier; with one, the head the config names (a legacy config names it too), else a sequence
    /// classifier — the weights of the two heads have the same names and shapes.
    pub fn head<T>(&self, params: &BTreeMap<String, T>) -> Option<Head> {
        params
            .contains_key("classifier.weight")
            .then(|| self.named_head().flatten().unwrap_or(Head::Sequence))
    }

    /// The Hugging Face config of the same network. `head` is the classification head and its width as
    /// the weights say (`None` for a bare encoder); the config's label names are kept when they agree
    /// with it, and a task a Paddock export recorded when it is one of that head's.
    pub fn to_hf(&self, head: Option<(Head, usize)>) -> Result<ErnieConfig> {
        // A preset only to start from a complete value: every field is set below.
        let mut config = ErnieConfig::preset("tiny", self.vocab_size, 2)?;
        config.model_type = "ernie".into();
        config.architectures = vec![match head {
            Some((head, _)) => head.architecture("ernie"),
            None => "ErnieModel".into(),
        }];
        config.task = self
            .paddock_task
            .filter(|task| head.is_some_and(|(head, _)| task.head() == head));
        config.hidden_size = self.hidden_size;
        config.num_hidden_layers = self.num_hidden_layers;
        config.num_attention_heads = self.num_attention_heads;
        config.intermediate_size = self.intermediate_size;
        config.hidden_act = self.hidden_act.clone();
        config.hidden_dropout_prob = self.hidden_dropout_prob;
        config.attention_probs_dropout_prob = self.attention_probs_dropout_prob;
        config.classifier_dropout = self.classifier_dropout;
        config.max_position_embeddings = self.max_position_embeddings;
        config.type_vocab_size = self.type_vocab_size;
        config.task_type_vocab_size = self.task_type_vocab_size;
        config.use_task_id = self.use_task_id;
        config.layer_norm_eps = PADDLE_LAYER_NORM_EPS;
        config.pad_token_id = self.pad_token_id;
        config.initializer_range = self.initializer_range;
        let width = head.map(|(_, n)| n).or(self.num_labels).unwrap_or(2);
        let named: Vec<String> = (0..width)
            .map_while(|i| self.id2label.get(&i.to_string()).cloned())
            .collect();
        let labels = if named.len() == width && self.id2label.len() == width {
            named
        } else {
            (0..width).map(|i| format!("LABEL_{i}")).collect()
        };
        config.set_labels(&labels);
        config.validate()?;
        Ok(config)
    }

    /// The PaddleNLP `config.json` of a Paddock model with its classification `head` (`None`: a bare
    /// encoder), for export; refuses what PaddleNLP's ERNIE cannot compute: a BERT model, or a GELU
    /// approximation Paddle's configs cannot name.
    pub fn from_hf(config: &ErnieConfig, head: Option<Head>) -> Result<Value> {
        if config.model_type != "ernie" {
            return Err(Error::Config(format!(
                "model_type `{}`: only ERNIE models are exported to PaddleNLP",
                config.model_type
            )));
        }
        if !matches!(
            config.hidden_act.as_str(),
            "gelu" | "relu" | "silu" | "swish" | "tanh" | "sigmoid"
        ) {
            return Err(Error::Config(format!(
                "hidden_act `{}` has no PaddleNLP equivalent (its configs name exact gelu, relu, silu, swish, \
                 tanh or sigmoid)",
                config.hidden_act
            )));
        }
        let mut out = Map::new();
        out.insert(
            "architectures".into(),
            json!([head.map_or("ErnieModel".into(), |h| h.architecture("ernie"))]),
        );
        if head.is_some() {
            out.insert("paddock_task".into(), json!(config.task()));
        }
        for (key, value) in [
            ("model_type", json!("ernie")),
            ("vocab_size", json!(config.vocab_size)),
            ("hidden_size", json!(config.hidden_size)),
            ("num_hidden_layers", json!(config.num_hidden_layers)),
            ("num_attention_heads", json!(config.num_attention_heads)),
            ("intermediate_size", json!(config.intermediate_size)),
            ("hidden_act", json!(config.hidden_act)),
            ("hidden_dropout_prob", json!(config.hidden_dropout_prob)),
            (
                "attention_probs_dropout_prob",
                json!(config.attention_probs_dropout_prob),
            ),
            ("classifier_dropout", json!(config.classifier_dropout)),
            (
                "max_position_embeddings",
                json!(config.max_position_embeddings),
            ),
            ("type_vocab_size", json!(config.type_vocab_size)),
            ("task_type_vocab_size", json!(config.task_type_vocab_size)),
            ("use_task_id", json!(config.use_task_id)),
            ("task_id", json!(0)),
            ("initializer_range", json!(config.initializer_range)),
            ("pad_token_id", json!(config.pad_token_id)),
            ("pool_act", json!("tanh")),
            ("fuse", json!(false)),
            ("layer_norm_eps", json!(PADDLE_LAYER_NORM_EPS)),
            ("dtype", json!("float32")),
            ("num_labels", json!(config.num_labels)),
            ("id2label", json!(config.id2label)),
            ("label2id", json!(config.label2id)),
        ] {
            out.insert(key.into(), value);
        }
        Ok(Value::Object(out))
    }
}

/// `model_config.json` keeps the encoder's arguments in `init_args[0]` (itself possibly nested the same
/// way) and the task model's own ones, such as `num_classes`, beside it: merged into one flat object.
fn flatten_legacy(value: Value) -> Result<Value> {
    let Value::Object(mut top) = value else {
        return Err(Error::Config("the file is not a JSON object".into()));
    };
    let Some(args) = top.remove("init_args") else {
        return Ok(Value::Object(top));
    };
    let inner = match args {
        Value::Array(items) => items.into_iter().find(Value::is_object),
        _ => None,
    }
    .ok_or_else(|| Error::Config("init_args holds no object of model arguments".into()))?;
    let Value::Object(mut flat) = flatten_legacy(inner)? else {
        unreachable!("flatten_legacy returns an object")
    };
    if let Some(class) = top
        .remove("init_class")
        .and_then(|c| c.as_str().map(String::from))
    {
        flat.insert("architectures".into(), json!([class]));
    }
    flat.remove("init_class");
    if let Some(n) = top.remove("num_classes") {
        flat.insert("num_labels".into(), n);
    }
    for (k, v) in top {
        flat.entry(k).or_insert(v);
    }
    Ok(Value::Object(flat))
}

/// The message of a config error without its `config: ` prefix, to put a file name in front.
fn bare(e: Error) -> String {
    match e {
        Error::Config(m) => m,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paddle_defaults_apply_where_the_file_is_silent() {
        let c = PaddleConfig::from_json_str(
            r#"{"vocab_size": 100, "hidden_size": 32, "num_attention_heads": 2}"#,
        )
        .unwrap();
        let hf = c.to_hf(Some((Head::Sequence, 3))).unwrap();
        assert_eq!(
            hf.type_vocab_size, 16,
            "PaddleNLP's default, not transformers' 2"
        );
        assert!(!hf.use_task_id);
        assert_eq!(hf.layer_norm_eps, PADDLE_LAYER_NORM_EPS);
        assert_eq!(hf.num_labels, 3);
        assert_eq!(hf.architectures, ["ErnieForSequenceClassification"]);
        assert_eq!(c.to_hf(None).unwrap().architectures, ["ErnieModel"]);
    }

    #[test]
    fn label_names_are_kept_only_when_they_fit_the_classifier() {
        let c = PaddleConfig::from_json_str(
            r#"{"vocab_size": 100, "hidden_size": 32, "num_attention_heads": 2,
                "id2label": {"0": "负面", "1": "正面"}}"#,
        )
        .unwrap();
        assert_eq!(
            c.to_hf(Some((Head::Sequence, 2))).unwrap().labels(),
            ["负面", "正面"]
        );
        assert_eq!(
            c.to_hf(Some((Head::Sequence, 3))).unwrap().labels(),
            ["LABEL_0", "LABEL_1", "LABEL_2"]
        );
    }

    #[test]
    fn the_legacy_layout_is_flattened() {
        let c = PaddleConfig::from_json_str(
            r#"{"init_args": [{"vocab_size": 100, "hidden_size": 32, "num_attention_heads": 2,
                               "init_class": "ErnieModel"}],
                "init_class": "ErnieForSequenceClassification", "num_classes": 4}"#,
        )
        .unwrap();
        assert_eq!(c.vocab_size, 100);
        assert_eq!(c.named_head(), Some(Some(Head::Sequence)));
        assert_eq!(c.num_labels, Some(4));
    }

    #[test]
    fn what_would_compute_differently_is_refused_by_key() {
        for (body, key) in [
            (
                r#"{"architectures": ["ErnieForQuestionAnswering"]}"#,
                "ErnieForQuestionAnswering",
            ),
            (r#"{"paddock_task": "poetry"}"#, "poetry"),
            (r#"{"model_type": "bert"}"#, "model_type"),
            (r#"{"use_task_id": true, "task_id": 2}"#, "task_id 2"),
            (r#"{"pool_act": "relu"}"#, "pool_act"),
            (r#"{"fuse": true}"#, "fuse"),
            (r#"{"vocab_size": "many"}"#, "invalid type"),
            (r#"[1, 2]"#, "not a JSON object"),
        ] {
            let e = PaddleConfig::from_json_str(body).unwrap_err().to_string();
            assert!(e.contains(key), "{body}: {e}");
        }
    }

    #[test]
    fn export_refuses_what_paddle_cannot_name() {
        let mut hf = ErnieConfig::preset("tiny", 50, 2).unwrap();
        hf.task = Some(Task::Matching);
        let out = PaddleConfig::from_hf(&hf, Some(Head::Sequence)).unwrap();
        assert_eq!(out["architectures"][0], "ErnieForSequenceClassification");
        assert_eq!(out["type_vocab_size"], 4);
        assert_eq!(out["paddock_task"], "matching");
        let back = PaddleConfig::from_json_str(&out.to_string()).unwrap();
        let hf_again = back.to_hf(Some((Head::Sequence, 2))).unwrap();
        assert_eq!(hf_again.type_vocab_size, 4);
        assert_eq!(hf_again.task(), Task::Matching, "the task comes back");
        // A recorded task that is not the weights' head's is not believed.
        let token = back.to_hf(Some((Head::Token, 2))).unwrap();
        assert_eq!(token.architectures, ["ErnieForTokenClassification"]);
        assert_eq!(token.task(), Task::Ner);
        hf.hidden_act = "gelu_new".into();
        assert!(PaddleConfig::from_hf(&hf, Some(Head::Sequence))
            .unwrap_err()
            .to_string()
            .contains("gelu_new"));
        hf.hidden_act = "gelu".into();
        hf.model_type = "bert".into();
        assert!(PaddleConfig::from_hf(&hf, None).is_err());
    }
}

//! The model configuration, read from and written to Hugging Face's `config.json` (model types `ernie` and
//! `bert`), plus the published ERNIE 3.0 shapes as presets for models trained from scratch.
//!
//! Unknown keys are kept in [`ErnieConfig::extra`] and written back unchanged, so that a checkpoint that
//! went through Paddock still carries whatever the original `config.json` said.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};
use contracts::task::{Head, Task};

/// Hyper-parameters of an ERNIE 3.0 / BERT encoder with a sequence-classification head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErnieConfig {
    /// `"ernie"` or `"bert"`; decides the parameter prefix (`ernie.` / `bert.`).
    #[serde(default = "default_model_type")]
    pub model_type: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    /// `"gelu"` (exact, erf-based), `"gelu_new"` / `"gelu_pytorch_tanh"` (tanh approximation), `"relu"`,
    /// `"silu"` / `"swish"`, `"tanh"` or `"sigmoid"`: the names transformers and Paddle both accept
    /// (PaddleNLP configs use Paddle's, so imported models need the last four).
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f64,
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f64,
    /// Dropout before the classifier; `None` means `hidden_dropout_prob`, as in transformers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier_dropout: Option<f64>,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_task_type_vocab")]
    pub task_type_vocab_size: usize,
    /// Whether the embeddings include ERNIE's task-type table. When `config.json` omits the key the
    /// value follows transformers' `ErnieConfig` default (false), so that Paddock and transformers build
    /// the same network from the same file; presets and Paddock-written configs always set it.
    #[serde(default)]
    pub use_task_id: bool,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: i64,
    #[serde(default = "default_initializer_range")]
    pub initializer_range: f64,
    /// Number of classes; when absent it is derived from `id2label` (or 2, transformers' default).
    #[serde(default)]
    pub num_labels: usize,
    /// Class names keyed by the decimal id, as transformers writes them (`{"0": "neg", "1": "pos"}`).
    #[serde(default)]
    pub id2label: BTreeMap<String, String>,
    #[serde(default)]
    pub label2id: BTreeMap<String, i64>,
    /// The task Paddock fine-tuned the model for, under a key of its own that transformers keeps as an
    /// attribute and ignores. Absent (any other model): what `architectures` says ([`ErnieConfig::task`]).
    #[serde(
        default,
        rename = "paddock_task",
        skip_serializing_if = "Option::is_none"
    )]
    pub task: Option<Task>,
    /// Every other key of `config.json`, preserved verbatim.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn default_model_type() -> String {
    "ernie".into()
}
fn default_hidden_act() -> String {
    "gelu".into()
}
fn default_dropout() -> f64 {
    0.1
}
fn default_max_positions() -> usize {
    512
}
fn default_type_vocab() -> usize {
    2
}
fn default_task_type_vocab() -> usize {
    3
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_initializer_range() -> f64 {
    0.02
}

/// The shapes of [`contracts::job::PRESETS`]: (layers, hidden, ffn, task-type vocab, heads). The
/// published ERNIE 3.0 ones, and `tiny` for runs that must take seconds.
const PRESETS: &[(&str, usize, usize, usize, usize, usize)] = &[
    ("base", 12, 768, 3072, 3, 12),
    ("medium", 6, 768, 3072, 16, 12),
    ("mini", 6, 384, 1536, 16, 12),
    ("micro", 4, 384, 1536, 16, 12),
    ("nano", 4, 312, 1248, 16, 12),
    ("tiny", 1, 32, 64, 16, 2),
];

impl ErnieConfig {
    /// A randomly-initialisable configuration with one of the [`PRESETS`] shapes: 2048 positions,
    /// 4 token types.
    pub fn preset(name: &str, vocab_size: usize, num_labels: usize) -> Result<ErnieConfig> {
        let &(_, layers, hidden, ffn, task_types, heads) =
            PRESETS.iter().find(|p| p.0 == name).ok_or_else(|| {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
                Error::Config(format!(
                    "unknown model preset `{name}` (expected one of {})",
                    names.join(", ")
                ))
            })?;
        let mut config = ErnieConfig {
            model_type: "ernie".into(),
            architectures: vec!["ErnieForSequenceClassification".into()],
            vocab_size,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: ffn,
            hidden_act: "gelu".into(),
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            classifier_dropout: None,
            max_position_embeddings: 2048,
            type_vocab_size: 4,
            task_type_vocab_size: task_types,
            use_task_id: true,
            layer_norm_eps: 1e-5,
            pad_token_id: 0,
            initializer_range: 0.02,
            num_labels: 0,
            id2label: BTreeMap::new(),
            label2id: BTreeMap::new(),
            task: None,
            extra: serde_json::Map::new(),
        };
        let labels: Vec<String> = (0..num_labels).map(|i| format!("LABEL_{i}")).collect();
        config.set_labels(&labels);
        config.validate()?;
        Ok(config)
    }

    /// Names of the known presets.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|p| p.0).collect()
    }

    /// Reads and validates a Hugging Face `config.json`.
    pub fn from_file(path: &Path) -> Result<ErnieConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json_str(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parses and validates the text of a `config.json`.
    pub fn from_json_str(text: &str) -> Result<ErnieConfig> {
        let mut config: ErnieConfig = serde_json::from_str(text)
            .map_err(|e| Error::Config(format!("invalid config.json: {e}")))?;
        config.normalise_labels()?;
        config.validate()?;
        Ok(config)
    }

    /// The `config.json` text (pretty-printed, keys of `extra` included).
    pub fn to_json_string(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| Error::Config(format!("cannot serialise config: {e}")))
    }

    /// Class names in id order (`LABEL_{i}` where `id2label` has no entry).
    pub fn labels(&self) -> Vec<String> {
        (0..self.num_labels)
            .map(|i| {
                self.id2label
                    .get(&i.to_string())
                    .cloned()
                    .unwrap_or_else(|| format!("LABEL_{i}"))
            })
            .collect()
    }

    /// Replaces the label set: `num_labels`, `id2label` and `label2id` all follow `labels` (id = position).
    pub fn set_labels(&mut self, labels: &[String]) {
        self.num_labels = labels.len();
        self.id2label = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (i.to_string(), l.clone()))
            .collect();
        self.label2id = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), i as i64))
            .collect();
    }

    /// What the model does: as Paddock recorded it, else read from its head (a token classifier finds
    /// entities; a sequence classifier is taken for one-text classification, the only such task a model
    /// from elsewhere can be known to be).
    pub fn task(&self) -> Task {
        self.task.unwrap_or(match self.head() {
            Some(Head::Token) => Task::Ner,
            _ => Task::Classification,
        })
    }

    /// The head `config.json`'s `architectures` names, when it is a classification head.
    pub fn head(&self) -> Option<Head> {
        self.architectures
            .first()
            .and_then(|a| Head::of_architecture(a))
    }

    /// The head a model of this configuration has: its task's where Paddock recorded one, else the one
    /// `architectures` names, else a sequence classifier (a bare encoder is fine-tuned as one).
    pub fn model_head(&self) -> Head {
        self.task
            .map(Task::head)
            .or_else(|| self.head())
            .unwrap_or(Head::Sequence)
    }

    /// The parameter prefix Hugging Face uses for the encoder: `"bert"` or `"ernie"`.
    pub fn base_prefix(&self) -> &'static str {
        if self.model_type == "bert" {
            "bert"
        } else {
            "ernie"
        }
    }

    /// Dropout probability in front of the classifier.
    pub fn classifier_dropout_prob(&self) -> f64 {
        self.classifier_dropout.unwrap_or(self.hidden_dropout_prob)
    }

    /// Checks that the sizes are usable; errors name the offending key.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.model_type != "ernie" && self.model_type != "bert" {
            return bad(format!(
                "model_type `{}` is not supported (expected `ernie` or `bert`)",
                self.model_type
            ));
        }
        for (key, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
            ("num_labels", self.num_labels),
        ] {
            if v == 0 {
                return bad(format!("{key} must be positive"));
            }
        }
        if self.use_task_id && self.task_type_vocab_size == 0 {
            return bad("task_type_vocab_size must be positive when use_task_id is true".into());
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !matches!(
            self.hidden_act.as_str(),
            "gelu"
                | "gelu_new"
                | "gelu_pytorch_tanh"
                | "relu"
                | "silu"
                | "swish"
                | "tanh"
                | "sigmoid"
        ) {
            return bad(format!(
                "hidden_act `{}` is not supported (gelu, gelu_new, relu, silu, swish, tanh, sigmoid)",
                self.hidden_act
            ));
        }
        if let Some(p) = self.extra.get("position_embedding_type") {
            if p.as_str() != Some("absolute") {
                return bad(format!(
                    "position_embedding_type {p} is not supported (only \"absolute\")"
                ));
            }
        }
        for (key, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
            ("classifier_dropout", self.classifier_dropout_prob()),
        ] {
            if !(0.0..1.0).contains(&p) {
                return bad(format!("{key} must be in [0, 1), got {p}"));
            }
        }
        // Written so that NaN is refused too.
        if self.layer_norm_eps.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return bad("layer_norm_eps must be positive".into());
        }
        if self.pad_token_id < 0 || self.pad_token_id as usize >= self.vocab_size {
            return bad(format!(
                "pad_token_id {} is outside the vocabulary",
                self.pad_token_id
            ));
        }
        Ok(())
    }

    /// Makes `num_labels`, `id2label` and `label2id` agree, the way transformers does when it reads a config.
    fn normalise_labels(&mut self) -> Result<()> {
        if self.num_labels == 0 {
            self.num_labels = if self.id2label.is_empty() {
                2
            } else {
                self.id2label.len()
            };
        }
        for key in self.id2label.keys() {
            match key.parse::<usize>() {
                Ok(i) if i < self.num_labels => {}
                _ => {
                    return Err(Error::Config(format!(
                        "id2label key `{key}` is not an id below num_labels {}",
                        self.num_labels
                    )))
                }
            }
        }
        let labels = self.labels();
        self.set_labels(&labels);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_the_spec_accepts_has_a_shape() {
        assert_eq!(ErnieConfig::preset_names(), contracts::job::PRESETS);
        let tiny = ErnieConfig::preset("tiny", 2000, 2).unwrap();
        assert_eq!(
            (
                tiny.num_hidden_layers,
                tiny.hidden_size,
                tiny.num_attention_heads,
                tiny.intermediate_size
            ),
            (1, 32, 2, 64)
        );
    }

    #[test]
    fn presets_have_published_shapes() {
        let nano = ErnieConfig::preset("nano", 40000, 2).unwrap();
        assert_eq!(
            (
                nano.num_hidden_layers,
                nano.hidden_size,
                nano.intermediate_size
            ),
            (4, 312, 1248)
        );
        assert_eq!(
            (
                nano.task_type_vocab_size,
                nano.type_vocab_size,
                nano.max_position_embeddings
            ),
            (16, 4, 2048)
        );
        let base = ErnieConfig::preset("base", 40000, 3).unwrap();
        assert_eq!(
            (
                base.num_hidden_layers,
                base.hidden_size,
                base.task_type_vocab_size
            ),
            (12, 768, 3)
        );
        assert_eq!(base.labels(), vec!["LABEL_0", "LABEL_1", "LABEL_2"]);
        assert!(
            matches!(ErnieConfig::preset("huge", 10, 2), Err(Error::Config(m)) if m.contains("huge"))
        );
    }

    #[test]
    fn hf_config_round_trips_with_unknown_keys() {
        let text = r#"{"model_type":"bert","vocab_size":100,"hidden_size":16,"num_hidden_layers":2,
            "num_attention_heads":4,"intermediate_size":32,"id2label":{"0":"neg","1":"pos","10":"x"},
            "num_labels":11,"torch_dtype":"float32","position_embedding_type":"absolute"}"#;
        let c = ErnieConfig::from_json_str(text).unwrap();
        assert_eq!(c.base_prefix(), "bert");
        assert!(!c.use_task_id);
        assert_eq!(c.labels()[10], "x");
        assert_eq!(c.labels()[2], "LABEL_2");
        assert_eq!(c.label2id["pos"], 1);
        assert_eq!(c.extra["torch_dtype"], "float32");
        let again = ErnieConfig::from_json_str(&c.to_json_string().unwrap()).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn invalid_configs_name_the_key() {
        let text = r#"{"vocab_size":100,"hidden_size":30,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":32}"#;
        let err = ErnieConfig::from_json_str(text).unwrap_err().to_string();
        assert!(err.contains("num_attention_heads"), "{err}");
        let err = ErnieConfig::from_json_str("{\"vocab_size\": 1}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("hidden_size"), "{err}");
    }
}

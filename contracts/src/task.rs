//! What a fine-tuned model does: the one value that decides, from the job spec to the endpoint, which
//! head sits on the encoder, what a data row holds, which loss trains it, which metrics judge it and what
//! a prediction answers (as text-embeddings-inference's `ModelType` does for its server). Every place that
//! differs by task asks this type instead of assuming sequence classification, so a new task is a new
//! variant, its head and its metric.

use serde::{Deserialize, Serialize};

/// A fine-tuning task. `classification` when a job, a checkpoint or a request does not say (everything
/// Paddock trained before tasks existed was one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// One text, one label (sentiment, topic, intent).
    #[default]
    Classification,
    /// Two texts, one label about the pair (same question or not, does the answer fit): ERNIE reads
    /// them as one sequence with token types 0 and 1, as in LCQMC and AFQMC.
    Matching,
    /// Entities in a text (people, places, organisations, products): a label per token, read back as
    /// character spans.
    Ner,
}

/// Which kind of head sits on the encoder: what the logits are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// One label per row, from the pooled `[CLS]` vector (`ErnieForSequenceClassification`).
    Sequence,
    /// One label per token, from each token's hidden state (`ErnieForTokenClassification`).
    Token,
}

impl Head {
    /// The Hugging Face class of this head over an encoder of `model_type` (`ernie` or `bert`), as
    /// `config.json`'s `architectures` names it.
    pub fn architecture(self, model_type: &str) -> String {
        let base = if model_type == "bert" {
            "Bert"
        } else {
            "Ernie"
        };
        let head = match self {
            Head::Sequence => "SequenceClassification",
            Head::Token => "TokenClassification",
        };
        format!("{base}For{head}")
    }

    /// The head a Hugging Face class name carries, when it is one of ours.
    pub fn of_architecture(name: &str) -> Option<Head> {
        let head = name
            .strip_prefix("ErnieFor")
            .or_else(|| name.strip_prefix("BertFor"))?;
        match head {
            "SequenceClassification" => Some(Head::Sequence),
            "TokenClassification" => Some(Head::Token),
            _ => None,
        }
    }
}

/// Every task, in the order forms offer them.
pub const TASKS: [Task; 3] = [Task::Classification, Task::Matching, Task::Ner];

/// `--task` on the command lines: a refusal names the tasks there are.
impl std::str::FromStr for Task {
    type Err = String;

    fn from_str(name: &str) -> Result<Task, String> {
        Task::parse(name).ok_or_else(|| {
            let names: Vec<&str> = TASKS.iter().map(|t| t.as_str()).collect();
            format!("`{name}` is not a task ({})", names.join(", "))
        })
    }
}

impl Task {
    /// The name in job files, specs, URLs and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Classification => "classification",
            Task::Matching => "matching",
            Task::Ner => "ner",
        }
    }

    /// The task named `name` (as [`Task::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Task> {
        TASKS.into_iter().find(|t| t.as_str() == name.trim())
    }

    /// The head its model has.
    pub fn head(self) -> Head {
        match self {
            Task::Classification | Task::Matching => Head::Sequence,
            Task::Ner => Head::Token,
        }
    }

    /// The metrics a job of this task may rank its checkpoints by (`metric_for_best`), the default
    /// first; every one is a name [`crate::metrics::Metrics::get`] answers.
    pub fn metric_names(self) -> &'static [&'static str] {
        match self {
            Task::Classification | Task::Matching => &["macro_f1", "accuracy", "loss"],
            Task::Ner => &["f1", "precision", "recall", "macro_f1", "accuracy", "loss"],
        }
    }

    /// Whether each row holds two texts (the data's pair column, required).
    pub fn pairs(self) -> bool {
        self == Task::Matching
    }

    /// The metric checkpoints are ranked by unless the job says otherwise.
    pub fn default_metric(self) -> &'static str {
        self.metric_names()[0]
    }
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_default_to_classification() {
        for t in TASKS {
            assert_eq!(Task::parse(t.as_str()), Some(t));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert!(crate::metrics::METRIC_NAMES.contains(&t.default_metric()));
        }
        assert_eq!(Task::default(), Task::Classification);
        assert_eq!(Task::parse("sentiment"), None);
    }

    #[test]
    fn heads_name_the_transformers_classes() {
        for (head, model_type, name) in [
            (Head::Sequence, "ernie", "ErnieForSequenceClassification"),
            (Head::Token, "ernie", "ErnieForTokenClassification"),
            (Head::Sequence, "bert", "BertForSequenceClassification"),
            (Head::Token, "bert", "BertForTokenClassification"),
        ] {
            assert_eq!(head.architecture(model_type), name);
            assert_eq!(Head::of_architecture(name), Some(head));
        }
        assert_eq!(Head::of_architecture("ErnieModel"), None);
        assert_eq!(Head::of_architecture("ErnieForMaskedLM"), None);
    }
}

//! The model server's HTTP API (`paddock serve-model`): what the gateway and the parity gate send and
//! read, what `paddock predict --json` prints one per line (the parity gate's reference), and the gate's
//! report on a replica.

use serde::{Deserialize, Serialize};

use crate::task::Task;

/// `POST /predict`: either `inputs` (one input or a list) or `text`. An input is a text, or for a
/// matching model a pair `{"text_a": …, "text_b": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Inputs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Also answer each input's raw logits.
    #[serde(default)]
    pub return_logits: bool,
}

impl PredictRequest {
    /// A request for `inputs`, as the platform sends it.
    pub fn many(inputs: Vec<Input>, return_logits: bool) -> PredictRequest {
        PredictRequest {
            inputs: Some(Inputs::Many(inputs)),
            text: None,
            return_logits,
        }
    }

    /// The inputs asked about, or `None` when the request gives none or both ways.
    pub fn into_inputs(self) -> Option<Vec<Input>> {
        match (self.inputs, self.text) {
            (Some(Inputs::Many(inputs)), None) => Some(inputs),
            (Some(Inputs::One(input)), None) => Some(vec![input]),
            (None, Some(text)) => Some(vec![Input::Text(text)]),
            _ => None,
        }
    }
}

/// One input or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Inputs {
    Many(Vec<Input>),
    One(Input),
}

/// What a model is asked about: one text, or the two texts a matching model compares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Pair(Pair),
}

/// The two texts of a matching input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Pair {
    pub text_a: String,
    pub text_b: String,
}

impl Input {
    /// `(text, second text)`, as the tokenizer takes them.
    pub fn into_texts(self) -> (String, Option<String>) {
        match self {
            Input::Text(text) => (text, None),
            Input::Pair(Pair { text_a, text_b }) => (text_a, Some(text_b)),
        }
    }

    /// The texts, for checks that apply to each.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Input::Text(text) => vec![text],
            Input::Pair(p) => vec![&p.text_a, &p.text_b],
        }
    }

    /// Whether a model of `task` takes this kind of input.
    pub fn fits(&self, task: Task) -> bool {
        matches!(self, Input::Pair(_)) == task.pairs()
    }
}

/// One prediction; vectors are in label-id order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Prediction {
    pub label: String,
    pub label_id: usize,
    pub probabilities: Vec<f32>,
    /// Present when asked for (`return_logits`), and always from `paddock predict --json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logits: Option<Vec<f32>>,
}

/// An entity a model found in a text: characters `start..end` (as Python slices the text), the text
/// there, its type, and the mean probability of its tokens' tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entity {
    pub text: String,
    pub label: String,
    pub start: usize,
    pub end: usize,
    pub score: f32,
}

/// An entity model's answer for one text: its entities in text order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntityPrediction {
    pub entities: Vec<Entity>,
    /// Each token's logits over the tags (`[CLS]` and `[SEP]` included), when asked for
    /// (`return_logits`), and always from `paddock predict --json`: what the parity gate compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logits: Option<Vec<Vec<f32>>>,
}

/// One input's answer: its label (classification, matching), or the entities found in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Answer {
    Label(Prediction),
    Entities(EntityPrediction),
}

impl Answer {
    /// The logits behind the answer, one row per sequence (a label) or per token (entities); empty
    /// when they were not asked for.
    pub fn logit_rows(&self) -> Vec<&[f32]> {
        match self {
            Answer::Label(p) => p.logits.as_deref().into_iter().collect(),
            Answer::Entities(e) => e.logits.iter().flatten().map(Vec::as_slice).collect(),
        }
    }

    /// The answer without its logits, for a caller who did not ask for them.
    pub fn without_logits(self) -> Answer {
        match self {
            Answer::Label(p) => Answer::Label(Prediction { logits: None, ..p }),
            Answer::Entities(e) => Answer::Entities(EntityPrediction { logits: None, ..e }),
        }
    }

    /// Whether two answers say the same thing to a person: the same label, or the same entities at the
    /// same places (their scores aside).
    pub fn same_reading(&self, other: &Answer) -> bool {
        match (self, other) {
            (Answer::Label(a), Answer::Label(b)) => a.label == b.label,
            (Answer::Entities(a), Answer::Entities(b)) => {
                let spans = |e: &EntityPrediction| -> Vec<(usize, usize, String)> {
                    e.entities
                        .iter()
                        .map(|x| (x.start, x.end, x.label.clone()))
                        .collect()
                };
                spans(a) == spans(b)
            }
            _ => false,
        }
    }
}

/// The answer to `POST /predict`: one prediction per input, in order, and the batch it ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictReply {
    /// The model's labels in id order: what each prediction's `probabilities` (and `logits`) are of
    /// (an entity model's: its tags).
    /// Replicas of an older `paddock` did not send them.
    #[serde(default)]
    pub labels: Vec<String>,
    pub predictions: Vec<Answer>,
    /// Rows in the forward pass that answered this request (with other requests' rows).
    pub batch_rows: u32,
    /// Requests that shared that forward pass.
    pub batch_requests: u32,
}

/// `GET /health` once the model is loaded and warm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// `ready`.
    pub status: String,
    pub model: String,
    /// What the model does, and so what its inputs are (replicas of an older `paddock` did not say:
    /// classification).
    #[serde(default)]
    pub task: Task,
    pub labels: Vec<String>,
    pub max_seq_len: usize,
    /// What the forward passes run in (`fp32`, `bf16`, `fp16`). Replicas of an older `paddock` did
    /// not say, and served float32 only.
    #[serde(default = "fp32")]
    pub precision: String,
    /// Why that precision: asked, or measured at start for `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_choice: Option<crate::precision::PrecisionChoice>,
    /// Where they run: `cpu`, or `cuda` (replicas of an older `paddock` did not say).
    #[serde(default = "cpu")]
    pub device: String,
}

fn cpu() -> String {
    "cpu".into()
}

fn fp32() -> String {
    "fp32".into()
}

/// Any refusal: a stable `code` (`invalid_body`, `invalid_inputs`, `overloaded`, `stopped`, `timeout`,
/// `inference_failed`) and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorReply {
    pub code: String,
    pub message: String,
}

/// The parity gate's verdict on a freshly started replica, kept with the endpoint: whether every logit
/// (and label) it served agreed with the trainer's own predict path, with the numbers, or why not. A
/// missing field reads as its default, so a report of a gate that could not compare at all (only
/// `passed`, `samples`, `message`) reads too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ParityReport {
    pub passed: bool,
    /// Texts compared.
    pub samples: usize,
    /// The precision the replica serves in.
    pub precision: Option<String>,
    /// Why it serves in that precision (a replica of an endpoint asked for `auto` measured it).
    pub precision_choice: Option<crate::precision::PrecisionChoice>,
    /// The largest logit difference; infinite when a logit was missing or not a number (written `"inf"`,
    /// which JSON numbers cannot say).
    #[serde(with = "difference")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>))]
    pub max_abs_diff: Option<f64>,
    /// What a served logit may differ by: `abs + rel * |reference|`.
    pub tolerance: Option<ParityTolerance>,
    /// The first text whose answer differed.
    pub mismatch: Option<ParityMismatch>,
    /// One sentence for people (English; the dashboard says the verdict in the user's language).
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParityTolerance {
    pub abs: f64,
    pub rel: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParityMismatch {
    /// Its position among the samples.
    pub index: usize,
    pub text: String,
    /// The second text of a matching model's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_pair: Option<String>,
    pub served: Answer,
    pub reference: Answer,
}

/// `max_abs_diff` on the wire: a number, `"inf"`, or absent.
mod difference {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Wire {
        Number(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) if d.is_finite() => Wire::Number(*d).serialize(s),
            Some(_) => Wire::Text("inf".into()).serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(match Option::<Wire>::deserialize(d)? {
            Some(Wire::Number(n)) => Some(n),
            Some(Wire::Text(_)) => Some(f64::INFINITY),
            None => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_gives_inputs_one_way_only() {
        let parse =
            |s: &str| serde_json::from_str::<PredictRequest>(s).map(PredictRequest::into_inputs);
        let text = |t: &str| Input::Text(t.into());
        assert_eq!(
            parse(r#"{"inputs":["a","b"]}"#).unwrap(),
            Some(vec![text("a"), text("b")])
        );
        assert_eq!(parse(r#"{"inputs":"a"}"#).unwrap(), Some(vec![text("a")]));
        assert_eq!(
            parse(r#"{"text":"a","return_logits":true}"#).unwrap(),
            Some(vec![text("a")])
        );
        let pair = Input::Pair(Pair {
            text_a: "a".into(),
            text_b: "b".into(),
        });
        assert_eq!(
            parse(r#"{"inputs":[{"text_a":"a","text_b":"b"}]}"#).unwrap(),
            Some(vec![pair.clone()])
        );
        assert_eq!(
            parse(r#"{"inputs":{"text_a":"a","text_b":"b"}}"#).unwrap(),
            Some(vec![pair.clone()])
        );
        assert!(pair.fits(Task::Matching) && !pair.fits(Task::Classification));
        assert!(text("a").fits(Task::Classification) && !text("a").fits(Task::Matching));
        assert!(
            parse(r#"{"inputs":[{"text_a":"a"}]}"#).is_err(),
            "half a pair is no input"
        );
        assert_eq!(parse(r#"{"text":"a","inputs":["b"]}"#).unwrap(), None);
        assert_eq!(parse("{}").unwrap(), None);
        assert!(
            parse(r#"{"input":"a"}"#).is_err(),
            "unknown fields are refused"
        );
    }

    #[test]
    fn logits_are_written_only_when_present_and_health_defaults_to_fp32() {
        let p = Prediction {
            label: "pos".into(),
            label_id: 1,
            probabilities: vec![0.25, 0.75],
            logits: None,
        };
        assert!(!serde_json::to_string(&p).unwrap().contains("logits"));
        let h: Health = serde_json::from_str(
            r#"{"status":"ready","model":"m","labels":["a"],"max_seq_len":32}"#,
        )
        .unwrap();
        assert_eq!(h.precision, "fp32");
    }

    #[test]
    fn an_answer_reads_as_a_label_or_as_entities_and_old_mismatches_still_read() {
        let label: Answer = serde_json::from_str(
            r#"{"label":"pos","label_id":1,"probabilities":[0.25,0.75],"logits":[0.0,1.1]}"#,
        )
        .unwrap();
        assert!(matches!(&label, Answer::Label(p) if p.label_id == 1));
        assert_eq!(label.logit_rows(), vec![&[0.0, 1.1][..]]);
        let entities: Answer = serde_json::from_str(
            r#"{"entities":[{"text":"北京","label":"LOC","start":2,"end":4,"score":0.9}],"logits":[[1.0,0.0],[0.0,1.0]]}"#,
        )
        .unwrap();
        assert_eq!(entities.logit_rows().len(), 2, "one row per token");
        let bare = entities.clone().without_logits();
        assert!(bare.logit_rows().is_empty() && bare.same_reading(&entities));
        assert!(!bare.same_reading(&label));
        assert!(!serde_json::to_string(&bare).unwrap().contains("logits"));
        // A report kept before entity models were served holds label answers.
        let old: ParityMismatch = serde_json::from_str(
            r#"{"index":0,"text":"好","served":{"label":"pos","label_id":1,"probabilities":[0.3,0.7]},
                "reference":{"label":"neg","label_id":0,"probabilities":[0.6,0.4]}}"#,
        )
        .unwrap();
        assert!(!old.served.same_reading(&old.reference));
    }

    #[test]
    fn a_parity_report_keeps_an_infinite_difference_and_old_reports_read() {
        let report = ParityReport {
            passed: false,
            samples: 4,
            max_abs_diff: Some(f64::INFINITY),
            message: "sample 0 differs".into(),
            ..Default::default()
        };
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["max_abs_diff"], "inf");
        assert_eq!(
            serde_json::from_value::<ParityReport>(json).unwrap(),
            report
        );
        let could_not_compare: ParityReport = serde_json::from_str(
            r#"{"passed":false,"samples":16,"message":"asking the replica: refused"}"#,
        )
        .unwrap();
        assert_eq!(
            (could_not_compare.max_abs_diff, could_not_compare.mismatch),
            (None, None)
        );
    }
}

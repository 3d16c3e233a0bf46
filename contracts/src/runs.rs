//! Jobs as runs to compare (issue 37): what the jobs list says of each run (its starting model, its
//! best dev score), the list's filters and order, and the comparison of chosen runs side by side.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ids::{CheckpointId, DatasetId, JobId, PretrainedId, SweepId};
use crate::types::{JobStatus, JobSummary};

/// Where a run's weights started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StartingModel {
    /// Random weights in the shape of `preset`.
    Scratch { preset: String },
    /// An uploaded pretrained model (its name, when it still exists).
    Pretrained {
        id: PretrainedId,
        name: Option<String>,
    },
    /// An earlier checkpoint, of job `job_id` (when it still exists).
    Checkpoint {
        id: CheckpointId,
        job_id: Option<JobId>,
    },
}

/// A run's best dev score so far: of the metric its checkpoints are ranked by (the task's), at the
/// first evaluation that reached it. Kept as evaluations arrive, so lists sort by it without reading
/// every evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BestScore {
    pub metric: String,
    pub value: f64,
    pub step: i64,
}

/// How the jobs list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobSort {
    /// By when it was queued (the default, newest first).
    #[default]
    Created,
    /// By best dev score (runs without one last, whatever the order).
    Best,
    /// By time spent running (runs that never started last).
    Duration,
    Name,
}

impl JobSort {
    pub const ALL: [JobSort; 4] = [
        JobSort::Created,
        JobSort::Best,
        JobSort::Duration,
        JobSort::Name,
    ];

    /// The word a URL, the REST query and `--sort` say it with (as serde writes it).
    pub fn as_str(self) -> &'static str {
        match self {
            JobSort::Created => "created",
            JobSort::Best => "best",
            JobSort::Duration => "duration",
            JobSort::Name => "name",
        }
    }
}

impl FromStr for JobSort {
    type Err = String;

    fn from_str(word: &str) -> Result<JobSort, String> {
        JobSort::ALL
            .into_iter()
            .find(|s| s.as_str() == word)
            .ok_or_else(|| {
                let words: Vec<&str> = JobSort::ALL.iter().map(|s| s.as_str()).collect();
                format!("`{word}` is not one of {}", words.join(", "))
            })
    }
}

/// Runs whose weights started from one kind of model, or from one model: `scratch`, `scratch:nano`,
/// `pretrained`, `pretrained:3`, `checkpoint`, `checkpoint:17` (a URL's query keeps it as one word).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ModelFilter {
    Scratch(Option<String>),
    Pretrained(Option<PretrainedId>),
    Checkpoint(Option<CheckpointId>),
}

impl FromStr for ModelFilter {
    type Err = String;

    fn from_str(text: &str) -> Result<ModelFilter, String> {
        let (kind, which) = match text.split_once(':') {
            Some((kind, which)) => (kind, Some(which)),
            None => (text, None),
        };
        let id = |which: &str| {
            which
                .parse::<i64>()
                .map_err(|_| format!("`{which}` is not an id in model filter `{text}`"))
        };
        Ok(match (kind, which) {
            ("scratch", None) => ModelFilter::Scratch(None),
            ("scratch", Some(preset)) if !preset.is_empty() && preset.len() <= 32 => {
                ModelFilter::Scratch(Some(preset.to_string()))
            }
            ("pretrained", None) => ModelFilter::Pretrained(None),
            ("pretrained", Some(w)) => ModelFilter::Pretrained(Some(PretrainedId::new(id(w)?))),
            ("checkpoint", None) => ModelFilter::Checkpoint(None),
            ("checkpoint", Some(w)) => ModelFilter::Checkpoint(Some(CheckpointId::new(id(w)?))),
            _ => {
                return Err(format!(
                    "model filter `{text}` is not one of scratch[:PRESET], pretrained[:ID], checkpoint[:ID]"
                ))
            }
        })
    }
}

impl TryFrom<String> for ModelFilter {
    type Error = String;
    fn try_from(text: String) -> Result<ModelFilter, String> {
        text.parse()
    }
}

impl From<ModelFilter> for String {
    fn from(filter: ModelFilter) -> String {
        filter.to_string()
    }
}

impl fmt::Display for ModelFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelFilter::Scratch(None) => f.write_str("scratch"),
            ModelFilter::Scratch(Some(preset)) => write!(f, "scratch:{preset}"),
            ModelFilter::Pretrained(None) => f.write_str("pretrained"),
            ModelFilter::Pretrained(Some(id)) => write!(f, "pretrained:{}", id.get()),
            ModelFilter::Checkpoint(None) => f.write_str("checkpoint"),
            ModelFilter::Checkpoint(Some(id)) => write!(f, "checkpoint:{}", id.get()),
        }
    }
}

impl ModelFilter {
    /// Whether a run that started from `start` passes.
    pub fn admits(&self, start: &StartingModel) -> bool {
        match (self, start) {
            (ModelFilter::Scratch(want), StartingModel::Scratch { preset }) => {
                want.as_ref().is_none_or(|w| w == preset)
            }
            (ModelFilter::Pretrained(want), StartingModel::Pretrained { id, .. }) => {
                want.is_none_or(|w| w == *id)
            }
            (ModelFilter::Checkpoint(want), StartingModel::Checkpoint { id, .. }) => {
                want.is_none_or(|w| w == *id)
            }
            _ => false,
        }
    }
}

/// The jobs list's filters and order: the REST query and the dashboard's URL say the same words.
/// Every filter is optional; all given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct JobQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(inline, value_type = Option<String>))]
    pub status: Option<JobStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>))]
    pub dataset_id: Option<DatasetId>,
    /// `scratch[:PRESET]`, `pretrained[:ID]` or `checkpoint[:ID]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>))]
    pub model: Option<ModelFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>))]
    pub sweep_id: Option<SweepId>,
    /// Queued on or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Queued on or before this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", param(inline, value_type = Option<String>))]
    pub sort: Option<JobSort>,
    /// Ascending instead of the sort's natural order (newest, best, longest first; names A to Z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
}

impl JobQuery {
    /// What is wrong with the query, by field: a day that is not `YYYY-MM-DD`, or days out of order.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        for (field, day) in [("since", &self.since), ("until", &self.until)] {
            if let Some(day) = day {
                if !is_day(day) {
                    problems.push((field, format!("`{day}` is not a day as YYYY-MM-DD")));
                }
            }
        }
        if let (Some(since), Some(until)) = (&self.since, &self.until) {
            if problems.is_empty() && since > until {
                problems.push(("until", format!("{until} is before since ({since})")));
            }
        }
        problems
    }

    /// Whether no filter is set (the order does not count).
    pub fn is_unfiltered(&self) -> bool {
        self.status.is_none()
            && self.dataset_id.is_none()
            && self.model.is_none()
            && self.sweep_id.is_none()
            && self.since.is_none()
            && self.until.is_none()
    }
}

/// `YYYY-MM-DD` with a month 01–12 and a day 01–31 (days compare as text against stored times).
fn is_day(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) {
        return false;
    }
    let (month, day) = (&text[5..7], &text[8..10]);
    digits(5..7) && digits(8..10) && ("01"..="12").contains(&month) && ("01"..="31").contains(&day)
}

/// The most runs one comparison takes: past this the curves are a tangle and the parallel coordinates
/// one colour.
pub const MAX_COMPARED: usize = 20;

/// The most points of one series a comparison sends for each run (a long run's steps are thinned
/// evenly, its first and last kept).
pub const MAX_SERIES_POINTS: usize = 1000;

/// One point of a run's series: its step, seconds since the run started, and the value.
pub type SeriesPoint = (i64, f64, f64);

/// Runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Comparison {
    pub runs: Vec<ComparedRun>,
    /// The spec's fields whose values are not the same in every run, in the spec's order
    /// (`starting_model` for where their weights started).
    pub differing: Vec<String>,
    /// The series some run has, in a fixed order: `train_loss`, `lr`, `samples_per_s`, then `dev_*`.
    pub series: Vec<String>,
}

/// One run of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ComparedRun {
    pub summary: JobSummary,
    /// Its value of every field in [`Comparison::differing`], as JSON (a number stays a number).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub fields: BTreeMap<String, serde_json::Value>,
    /// Its last dev evaluation's scores (`accuracy`, `macro_f1`, `loss`, entity `f1`…) and its step.
    pub last: BTreeMap<String, f64>,
    pub last_step: Option<i64>,
    /// Each score's best over its dev evaluations (the lowest loss, the highest of the others).
    pub best: BTreeMap<String, f64>,
    /// Series name → points (step, seconds since it started, value).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub series: BTreeMap<String, Vec<SeriesPoint>>,
}

/// Whether a higher value of score `metric` is better (all but the loss).
pub fn higher_is_better(metric: &str) -> bool {
    !metric.ends_with("loss")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_filters_read_as_they_are_written_and_refuse_the_rest() {
        for text in [
            "scratch",
            "scratch:nano",
            "pretrained",
            "pretrained:3",
            "checkpoint",
            "checkpoint:17",
        ] {
            let filter: ModelFilter = text.parse().unwrap();
            assert_eq!(filter.to_string(), text);
        }
        for bad in [
            "",
            "scratch:",
            "pretrained:x",
            "checkpoint:1.5",
            "hub:ernie",
            "model",
        ] {
            assert!(bad.parse::<ModelFilter>().is_err(), "{bad}");
        }
        let start = StartingModel::Pretrained {
            id: PretrainedId::new(3),
            name: None,
        };
        assert!(ModelFilter::Pretrained(None).admits(&start));
        assert!(ModelFilter::Pretrained(Some(PretrainedId::new(3))).admits(&start));
        assert!(!ModelFilter::Pretrained(Some(PretrainedId::new(4))).admits(&start));
        assert!(!ModelFilter::Scratch(None).admits(&start));
        let scratch = StartingModel::Scratch {
            preset: "nano".into(),
        };
        assert!(ModelFilter::Scratch(Some("nano".into())).admits(&scratch));
        assert!(!ModelFilter::Scratch(Some("tiny".into())).admits(&scratch));
    }

    #[test]
    fn days_are_checked_by_field() {
        let query = JobQuery {
            since: Some("2026-12-07".into()),
            until: Some("2026-12-01".into()),
            ..JobQuery::default()
        };
        assert_eq!(query.problems()[0].0, "until", "out of order");
        for bad in [
            "2026-13-01",
            "2026-12-32",
            "26-12-01",
            "2026/12/01",
            "2026-12-0x",
        ] {
            let query = JobQuery {
                since: Some(bad.into()),
                ..JobQuery::default()
            };
            assert_eq!(query.problems().len(), 1, "{bad}");
        }
        assert!(JobQuery::default().problems().is_empty());
        assert!(JobQuery::default().is_unfiltered());
    }

    #[test]
    fn a_query_reads_from_a_url_and_refuses_unknown_words() {
        let query: JobQuery =
            serde_json::from_value(serde_json::json!({ "model": "scratch:tiny", "sort": "best" }))
                .unwrap();
        assert_eq!(query.model, Some(ModelFilter::Scratch(Some("tiny".into()))));
        assert_eq!(query.sort, Some(JobSort::Best));
        assert!(serde_json::from_value::<JobQuery>(serde_json::json!({ "sort": "size" })).is_err());
        for sort in JobSort::ALL {
            assert_eq!(
                serde_json::to_value(sort).unwrap(),
                sort.as_str(),
                "one word, both ways"
            );
            assert_eq!(sort.as_str().parse::<JobSort>(), Ok(sort));
        }
        assert!("size".parse::<JobSort>().is_err());
        assert!(serde_json::from_value::<JobQuery>(serde_json::json!({ "order": "asc" })).is_err());
    }
}

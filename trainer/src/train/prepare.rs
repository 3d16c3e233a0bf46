//! Loading a job's data before anything is written: validate the train, dev and test files, settle the
//! label map (given, resumed, or inferred from the training file), split a dev set when none is given,
//! and refuse data that cannot train a classifier. All of it fails before the output directory exists.

use super::config::{data_options, JobConfig};
use std::collections::BTreeSet;

use crate::data::entities::bio_labels;
use crate::data::{split_dev, validate_file, Example, LabelMap, ValidationReport};
use crate::{Error, Result};
use contracts::task::Task;

/// A job's data, validated.
pub struct PreparedData {
    pub labels: LabelMap,
    pub train: Vec<Example>,
    pub dev: Vec<Example>,
    pub test: Option<Vec<Example>>,
    /// One report per file read (train, then dev and test when given).
    pub reports: Vec<ValidationReport>,
}

/// Reads and checks every data file of `job`. `known_labels` (from a checkpoint being resumed) wins
/// over the job's `data.labels`.
pub fn load_data(job: &JobConfig, known_labels: Option<Vec<String>>) -> Result<PreparedData> {
    let opts = data_options(job);
    let given = match known_labels.or_else(|| job.data.labels.clone()) {
        Some(names) => Some(LabelMap::new(names)?),
        None => None,
    };
    let mut reports = Vec::new();
    let train = validate_file(&job.data.train, &opts, given.as_ref(), None, None)?;
    reports.push(train.report.clone());
    crate::data::report::to_result(&train.report)?;
    let labels = match given {
        Some(m) => m,
        // An entity model learns BIO tags over the types the training file has.
        None if job.task == Task::Ner => {
            let types: BTreeSet<&String> = train
                .rows
                .iter()
                .flat_map(|r| r.entities.iter().map(|e| &e.label))
                .collect();
            let types: Vec<String> = types.into_iter().cloned().collect();
            LabelMap::new(bio_labels(&types))?
        }
        None => LabelMap::infer(train.rows.iter().filter_map(|r| r.label.as_deref()))?,
    };
    if labels.len() < 2 {
        return Err(Error::Data {
            line: None,
            field: Some(job.data.columns.label.clone()),
            message: format!(
                "{}: training needs at least two labels, found only `{}`",
                job.data.train.display(),
                labels.names().join(", ")
            ),
        });
    }
    let train = train.into_examples(Some(&labels))?;
    let mut read_other = |path: &std::path::Path| -> Result<Vec<Example>> {
        let v = validate_file(path, &opts, Some(&labels), None, None)?;
        reports.push(v.report.clone());
        v.into_examples(Some(&labels))
    };
    let (train, dev) = match &job.data.dev {
        Some(path) => (train, read_other(path)?),
        None => split_dev(train, job.data.dev_ratio, job.train.seed),
    };
    let test = job.data.test.as_deref().map(&mut read_other).transpose()?;
    if train.is_empty() || dev.is_empty() {
        return Err(Error::Data {
            line: None,
            field: None,
            message: format!(
                "{}: too few rows to train ({} for training, {} for dev)",
                job.data.train.display(),
                train.len(),
                dev.len()
            ),
        });
    }
    Ok(PreparedData {
        labels,
        train,
        dev,
        test,
        reports,
    })
}

//! The mapping between label strings and class ids. Ids follow a given list (the job's `labels`, or a
//! checkpoint's `id2label`), or else the sorted distinct labels of the training file — numerically when
//! every label is an integer, so that "2" sorts before "10" and integer-labelled data keeps its ids.

use std::collections::BTreeSet;

use crate::{Error, Result};

/// Label names in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelMap {
    names: Vec<String>,
}

impl LabelMap {
    /// A map with ids in the given order; names must be non-empty and distinct.
    pub fn new(names: Vec<String>) -> Result<Self> {
        if names.is_empty() {
            return Err(config_err("the label list is empty"));
        }
        let mut seen = BTreeSet::new();
        for n in &names {
            if n.trim().is_empty() {
                return Err(config_err("a label name is empty"));
            }
            if !seen.insert(n.as_str()) {
                return Err(config_err(&format!("label `{n}` is listed twice")));
            }
        }
        Ok(LabelMap { names })
    }

    /// The distinct labels seen, sorted (numerically if all are integers).
    pub fn infer<'a>(labels: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let distinct: BTreeSet<&str> = labels.into_iter().collect();
        let mut names: Vec<String> = distinct.into_iter().map(str::to_string).collect();
        if !names.is_empty() && names.iter().all(|n| n.parse::<i64>().is_ok()) {
            names.sort_by_key(|n| n.parse::<i64>().unwrap_or_default());
        }
        LabelMap::new(names).map_err(|_| Error::Data {
            line: None,
            field: Some("label".into()),
            message: "no labels found in the training data".into(),
        })
    }

    /// The id of `label`: its position by name, or — for integer labels that are not names — the
    /// integer itself when it is a valid id (data labelled 0/1 against names negative/positive).
    pub fn id(&self, label: &str) -> Option<usize> {
        self.names.iter().position(|n| n == label).or_else(|| {
            label
                .parse::<usize>()
                .ok()
                .filter(|&i| i < self.names.len())
        })
    }

    pub fn name(&self, id: usize) -> &str {
        &self.names[id]
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn config_err(msg: &str) -> Error {
    Error::Config(format!("labels: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inferred_order_is_sorted_and_numeric_for_integers() {
        let m = LabelMap::infer(["pos", "neg", "pos"]).unwrap();
        assert_eq!(m.names(), ["neg", "pos"]);
        let m = LabelMap::infer(["10", "2", "1"]).unwrap();
        assert_eq!(m.names(), ["1", "2", "10"]);
        assert_eq!(m.id("10"), Some(2));
        assert!(LabelMap::infer([]).is_err());
    }

    #[test]
    fn given_names_accept_integer_ids() {
        let m = LabelMap::new(vec!["negative".into(), "positive".into()]).unwrap();
        assert_eq!(m.id("positive"), Some(1));
        assert_eq!(m.id("0"), Some(0));
        assert_eq!(m.id("2"), None);
        assert_eq!(m.id("neutral"), None);
        assert!(LabelMap::new(vec!["a".into(), "a".into()]).is_err());
    }
}

//! Classification metrics over gold and predicted class ids: accuracy, macro-F1, per-class
//! precision/recall/F1/support and the confusion matrix. Conventions follow scikit-learn (a class with no
//! predictions has precision 0; macro-F1 averages over every label in the label map, present or not).

use serde::{Deserialize, Serialize};

/// Scores for one class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClassMetrics {
    pub label: String,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Gold rows of this class.
    pub support: usize,
}

/// Everything an evaluation reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Metrics {
    pub accuracy: f64,
    pub macro_f1: f64,
    /// Mean cross-entropy, when the caller computed it.
    pub loss: Option<f64>,
    pub count: usize,
    pub per_class: Vec<ClassMetrics>,
    /// `confusion[gold][predicted]`, in label-id order.
    pub confusion: Vec<Vec<usize>>,
}

/// Why a model's dev metrics say it learned nothing a user could rely on. A model like this still
/// ranks first among its job's checkpoints (the trainer ranks by the metric it was given), so the
/// dashboard must not call it "best", and deploying it asks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Degenerate {
    /// Every prediction is the same label, though the gold rows have several.
    OneLabel,
    /// Macro-F1 no better than guessing uniformly at random ([`Metrics::chance_macro_f1`]).
    AtChance,
}

/// Metric names accepted by [`Metrics::get`] and by the job's `metric_for_best`.
pub const METRIC_NAMES: [&str; 3] = ["accuracy", "macro_f1", "loss"];

impl Metrics {
    /// Computes metrics for `labels.len()` classes. Ids outside the label range are counted as wrong
    /// (and left out of the confusion matrix), never a panic.
    pub fn compute(
        labels: &[String],
        gold: &[usize],
        pred: &[usize],
        loss: Option<f64>,
    ) -> Metrics {
        let k = labels.len();
        let n = gold.len().min(pred.len());
        let mut confusion = vec![vec![0usize; k]; k];
        let mut correct = 0;
        for (&g, &p) in gold.iter().zip(pred) {
            if g == p && g < k {
                correct += 1;
            }
            if g < k && p < k {
                confusion[g][p] += 1;
            }
        }
        let support: Vec<usize> = (0..k)
            .map(|c| gold.iter().take(n).filter(|&&g| g == c).count())
            .collect();
        let predicted: Vec<usize> = (0..k)
            .map(|c| pred.iter().take(n).filter(|&&p| p == c).count())
            .collect();
        let per_class: Vec<ClassMetrics> = (0..k)
            .map(|c| {
                let tp = confusion[c][c] as f64;
                let precision = ratio(tp, predicted[c] as f64);
                let recall = ratio(tp, support[c] as f64);
                let f1 = ratio(2.0 * precision * recall, precision + recall);
                ClassMetrics {
                    label: labels[c].clone(),
                    precision,
                    recall,
                    f1,
                    support: support[c],
                }
            })
            .collect();
        let macro_f1 = if k == 0 {
            0.0
        } else {
            per_class.iter().map(|c| c.f1).sum::<f64>() / k as f64
        };
        Metrics {
            accuracy: ratio(correct as f64, n as f64),
            macro_f1,
            loss,
            count: n,
            per_class,
            confusion,
        }
    }

    /// The named metric (see [`METRIC_NAMES`]).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "accuracy" => Some(self.accuracy),
            "macro_f1" => Some(self.macro_f1),
            "loss" => self.loss,
            _ => None,
        }
    }

    /// The macro-F1 expected from guessing each label with equal chance, on this set's own gold
    /// labels: a class with a share `p` of the rows then gets precision `p` and recall `1/k`. This
    /// is the floor a model must beat, and it moves with the balance of the set (a 60/40 binary set
    /// gives 0.49, not 0.5).
    pub fn chance_macro_f1(&self) -> f64 {
        let k = self.per_class.len();
        if k == 0 || self.count == 0 {
            return 0.0;
        }
        let guess = 1.0 / k as f64;
        let sum: f64 = self
            .per_class
            .iter()
            .map(|c| {
                let share = c.support as f64 / self.count as f64;
                ratio(2.0 * share * guess, share + guess)
            })
            .sum();
        sum / k as f64
    }

    /// Whether the model behind these metrics learned nothing useful, and why. Judged only on a set
    /// with at least two labels present: on a one-label set every model predicts one label.
    pub fn degenerate(&self) -> Option<Degenerate> {
        let present = self.per_class.iter().filter(|c| c.support > 0).count();
        if present < 2 {
            return None;
        }
        let predicted = (0..self.confusion.len())
            .filter(|&p| {
                self.confusion
                    .iter()
                    .any(|row| row.get(p).is_some_and(|&n| n > 0))
            })
            .count();
        if predicted <= 1 {
            Some(Degenerate::OneLabel)
        } else if self.macro_f1 <= self.chance_macro_f1() {
            Some(Degenerate::AtChance)
        } else {
            None
        }
    }

    /// The classes the set has rows of that the model never gets right: each is a label it
    /// cannot produce when it matters.
    pub fn zero_recall(&self) -> impl Iterator<Item = &ClassMetrics> {
        self.per_class
            .iter()
            .filter(|c| c.support > 0 && c.recall == 0.0)
    }

    /// Whether a larger value of `name` is better (loss: no).
    pub fn higher_is_better(name: &str) -> bool {
        name != "loss"
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn matches_hand_computed_values() {
        // gold: 0 0 0 1 1 2 ; pred: 0 0 1 1 2 2
        let m = Metrics::compute(
            &labels(3),
            &[0, 0, 0, 1, 1, 2],
            &[0, 0, 1, 1, 2, 2],
            Some(0.5),
        );
        assert!((m.accuracy - 4.0 / 6.0).abs() < 1e-12);
        assert_eq!(
            m.confusion,
            vec![vec![2, 1, 0], vec![0, 1, 1], vec![0, 0, 1]]
        );
        let c0 = &m.per_class[0];
        assert_eq!((c0.precision, c0.support), (1.0, 3));
        assert!((c0.recall - 2.0 / 3.0).abs() < 1e-12);
        assert!((c0.f1 - 0.8).abs() < 1e-12);
        let c1 = &m.per_class[1];
        assert!((c1.precision - 0.5).abs() < 1e-12 && (c1.recall - 0.5).abs() < 1e-12);
        let c2 = &m.per_class[2];
        assert!((c2.precision - 0.5).abs() < 1e-12 && (c2.recall - 1.0).abs() < 1e-12);
        let expected_macro = (0.8 + 0.5 + 2.0 / 3.0) / 3.0;
        assert!((m.macro_f1 - expected_macro).abs() < 1e-12);
        assert_eq!(m.get("loss"), Some(0.5));
        assert_eq!(m.get("macro_f1"), Some(m.macro_f1));
        assert_eq!(m.get("nope"), None);
    }

    #[test]
    fn absent_predictions_give_zero_not_nan() {
        let m = Metrics::compute(&labels(2), &[0, 1, 1], &[1, 1, 1], None);
        assert_eq!(m.per_class[0].precision, 0.0);
        assert_eq!(m.per_class[0].f1, 0.0);
        assert!(m.macro_f1.is_finite());
        let empty = Metrics::compute(&labels(2), &[], &[], None);
        assert_eq!((empty.accuracy, empty.count), (0.0, 0));
    }

    #[test]
    fn a_model_that_predicts_the_majority_is_degenerate() {
        // The first user's job: 60/40 sentiment, every prediction the majority label.
        let gold: Vec<usize> = [vec![0; 6], vec![1; 4]].concat();
        let m = Metrics::compute(&labels(2), &gold, &[0; 10], None);
        assert!((m.accuracy - 0.6).abs() < 1e-12 && (m.macro_f1 - 0.375).abs() < 1e-12);
        assert_eq!(m.degenerate(), Some(Degenerate::OneLabel));
        let missed: Vec<&str> = m.zero_recall().map(|c| c.label.as_str()).collect();
        assert_eq!(missed, ["c1"]);
    }

    #[test]
    fn chance_is_measured_on_the_sets_own_balance() {
        let balanced = Metrics::compute(&labels(2), &[0, 0, 1, 1], &[0, 1, 0, 1], None);
        assert!((balanced.chance_macro_f1() - 0.5).abs() < 1e-12);
        // Two labels predicted, half of each wrong: exactly chance, so still degenerate.
        assert_eq!(balanced.degenerate(), Some(Degenerate::AtChance));
        // 60/40: 2·0.6·0.5/1.1 and 2·0.4·0.5/0.9, averaged.
        let skewed = Metrics::compute(&labels(2), &[0, 0, 0, 1, 1], &[0, 0, 0, 1, 1], None);
        let expected = (0.6 / 1.1 + 0.4 / 0.9) / 2.0;
        assert!((skewed.chance_macro_f1() - expected).abs() < 1e-12);
        assert_eq!(skewed.degenerate(), None, "a perfect model");
        assert_eq!(
            Metrics::compute(&labels(2), &[], &[], None).chance_macro_f1(),
            0.0
        );
    }

    #[test]
    fn a_set_with_one_label_present_cannot_judge() {
        let m = Metrics::compute(&labels(3), &[1, 1, 1], &[1, 1, 1], None);
        assert_eq!(m.degenerate(), None);
        let some_right = Metrics::compute(&labels(3), &[0, 1, 2, 2], &[0, 1, 1, 1], None);
        assert_eq!(some_right.degenerate(), None);
        let missed: Vec<&str> = some_right.zero_recall().map(|c| c.label.as_str()).collect();
        assert_eq!(missed, ["c2"]);
    }

    #[test]
    fn out_of_range_ids_are_wrong_not_a_panic() {
        let m = Metrics::compute(&labels(2), &[0, 5], &[0, 5], None);
        assert_eq!(m.accuracy, 0.5);
        assert!(Metrics::higher_is_better("accuracy") && !Metrics::higher_is_better("loss"));
    }
}

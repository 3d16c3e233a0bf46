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
    /// Entity extraction's own scores, over exact spans ([`Metrics::of_entities`]); absent for the
    /// tasks that label a whole row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<EntityScores>,
}

/// Micro-averaged scores over entities: a predicted entity is right only when its start, end and type
/// are a gold entity's (seqeval's default), so a boundary one character off is a miss and a false alarm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EntityScores {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Gold entities.
    pub gold: usize,
    /// Predicted entities.
    pub predicted: usize,
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

/// Metric names accepted by [`Metrics::get`] and by the job's `metric_for_best` (each task takes some:
/// [`crate::task::Task::metric_names`]).
pub const METRIC_NAMES: [&str; 6] = ["accuracy", "macro_f1", "loss", "f1", "precision", "recall"];

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
            entities: None,
        }
    }

    /// Entity-level metrics of texts whose gold entities are `gold[i]` and predicted ones `pred[i]`,
    /// of the entity `types`. `per_class` is per type (support: gold entities of it), `macro_f1` their
    /// mean, `entities` the micro scores over every entity; `confusion` is over the types and a last
    /// `O` (none): the type a span was predicted as against its gold type where both have the span, a
    /// gold span predicted as nothing in the `O` column, a predicted span of nothing in the `O` row.
    /// `accuracy` is the caller's token accuracy (of the words' first pieces) and `count` the texts.
    pub fn of_entities(
        types: &[String],
        gold: &[Vec<crate::data::EntitySpan>],
        pred: &[Vec<crate::data::EntitySpan>],
        token_accuracy: f64,
        loss: Option<f64>,
    ) -> Metrics {
        use std::collections::{BTreeMap, BTreeSet};
        let k = types.len();
        let index = |label: &str| types.iter().position(|t| t == label).unwrap_or(k);
        let mut confusion = vec![vec![0usize; k + 1]; k + 1];
        let (mut tp, mut gold_n, mut pred_n) =
            (vec![0usize; k + 1], vec![0; k + 1], vec![0; k + 1]);
        for (g, p) in gold.iter().zip(pred) {
            let gold_at: BTreeMap<(usize, usize), &str> = g
                .iter()
                .map(|e| ((e.start, e.end), e.label.as_str()))
                .collect();
            let pred_at: BTreeMap<(usize, usize), &str> = p
                .iter()
                .map(|e| ((e.start, e.end), e.label.as_str()))
                .collect();
            let exact: BTreeSet<&crate::data::EntitySpan> = g.iter().collect();
            for e in g {
                gold_n[index(&e.label)] += 1;
            }
            for e in p {
                pred_n[index(&e.label)] += 1;
                if exact.contains(e) {
                    tp[index(&e.label)] += 1;
                }
            }
            for (span, label) in &gold_at {
                let predicted = pred_at.get(span).map_or(k, |l| index(l));
                confusion[index(label)][predicted] += 1;
            }
            for (span, label) in &pred_at {
                if !gold_at.contains_key(span) {
                    confusion[k][index(label)] += 1;
                }
            }
        }
        let scores = |tp: usize, gold: usize, predicted: usize| {
            let precision = ratio(tp as f64, predicted as f64);
            let recall = ratio(tp as f64, gold as f64);
            (
                precision,
                recall,
                ratio(2.0 * precision * recall, precision + recall),
            )
        };
        let per_class: Vec<ClassMetrics> = (0..k)
            .map(|c| {
                let (precision, recall, f1) = scores(tp[c], gold_n[c], pred_n[c]);
                ClassMetrics {
                    label: types[c].clone(),
                    precision,
                    recall,
                    f1,
                    support: gold_n[c],
                }
            })
            .collect();
        let (all_tp, all_gold, all_pred) = (
            tp.iter().sum::<usize>(),
            gold_n.iter().sum::<usize>(),
            pred_n.iter().sum::<usize>(),
        );
        let (precision, recall, f1) = scores(all_tp, all_gold, all_pred);
        Metrics {
            accuracy: token_accuracy,
            macro_f1: ratio(per_class.iter().map(|c| c.f1).sum(), k as f64),
            loss,
            count: gold.len().min(pred.len()),
            per_class,
            confusion,
            entities: Some(EntityScores {
                precision,
                recall,
                f1,
                gold: all_gold,
                predicted: all_pred,
            }),
        }
    }

    /// The named metric (see [`METRIC_NAMES`]).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "accuracy" => Some(self.accuracy),
            "macro_f1" => Some(self.macro_f1),
            "loss" => self.loss,
            "f1" => self.entities.map(|e| e.f1),
            "precision" => self.entities.map(|e| e.precision),
            "recall" => self.entities.map(|e| e.recall),
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
    /// with at least two labels present: on a one-label set every model predicts one label. An entity
    /// model that finds no entity in a set that has some answers one label too (`O` everywhere).
    pub fn degenerate(&self) -> Option<Degenerate> {
        if let Some(e) = self.entities {
            return (e.gold > 0 && e.predicted == 0).then_some(Degenerate::OneLabel);
        }
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

    fn span(start: usize, end: usize, label: &str) -> crate::data::EntitySpan {
        crate::data::EntitySpan {
            start,
            end,
            label: label.into(),
        }
    }

    /// The figures seqeval gives for the same entities (its classification_report, micro avg).
    #[test]
    fn entity_scores_count_exact_spans_as_seqeval_does() {
        let types = vec!["LOC".to_string(), "PER".to_string()];
        let gold = vec![
            vec![span(0, 2, "PER"), span(5, 7, "LOC")],
            vec![span(1, 3, "LOC")],
        ];
        // Row 0: PER right, LOC one character short (a miss and a false alarm). Row 1: LOC typed PER,
        // and an extra PER.
        let pred = vec![
            vec![span(0, 2, "PER"), span(5, 6, "LOC")],
            vec![span(1, 3, "PER"), span(4, 5, "PER")],
        ];
        let m = Metrics::of_entities(&types, &gold, &pred, 0.9, None);
        let e = m.entities.unwrap();
        assert_eq!((e.gold, e.predicted), (3, 4));
        assert!((e.precision - 0.25).abs() < 1e-12 && (e.recall - 1.0 / 3.0).abs() < 1e-12);
        assert!((e.f1 - 2.0 * 0.25 * (1.0 / 3.0) / (0.25 + 1.0 / 3.0)).abs() < 1e-12);
        assert_eq!(m.get("f1"), Some(e.f1));
        let (loc, per) = (&m.per_class[0], &m.per_class[1]);
        assert_eq!((loc.support, loc.f1), (2, 0.0));
        assert_eq!(per.support, 1);
        assert!((per.precision - 1.0 / 3.0).abs() < 1e-12 && per.recall == 1.0);
        // gold LOC: once as nothing (the short span is another span), once as PER; gold PER as PER;
        // predicted from nothing: the short LOC and the extra PER.
        assert_eq!(
            m.confusion,
            vec![vec![0, 1, 1], vec![0, 1, 0], vec![1, 1, 0]]
        );
        assert_eq!(m.degenerate(), None);
        let silent = Metrics::of_entities(&types, &gold, &[vec![], vec![]], 0.8, None);
        assert_eq!(silent.degenerate(), Some(Degenerate::OneLabel));
        assert_eq!(silent.entities.unwrap().f1, 0.0);
    }

    #[test]
    fn out_of_range_ids_are_wrong_not_a_panic() {
        let m = Metrics::compute(&labels(2), &[0, 5], &[0, 5], None);
        assert_eq!(m.accuracy, 0.5);
        assert!(Metrics::higher_is_better("accuracy") && !Metrics::higher_is_better("loss"));
    }
}

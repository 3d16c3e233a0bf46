//! The sweep's arithmetic, apart from the database: which values a trial gets, what a spec may ask
//! for, and the decision at a rung. Pure functions, so a restarted server computes the same trials and
//! the tests walk every branch.

use std::collections::BTreeMap;

use contracts::error::{FieldProblem, Rule};
use contracts::sweeps::{
    Distribution, EarlyStopping, Goal, Method, SweepSpec, MAX_PARALLELISM, MAX_TRIALS, PARAMETERS,
};
use contracts::types::JobSpec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Trials of a random sweep that does not say how many.
pub const DEFAULT_RANDOM_TRIALS: u32 = 10;

/// What a parameter's values are, which says the distributions it takes.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Any number: every distribution.
    Real,
    /// A whole number: a list or `int_uniform`.
    Whole,
    /// An id or a word: a list only.
    Choice,
}

fn kind(parameter: &str) -> Kind {
    match parameter {
        "learning_rate" | "warmup_ratio" => Kind::Real,
        "batch_size" | "epochs" | "max_seq_len" | "grad_accum_steps" | "seed" => Kind::Whole,
        _ => Kind::Choice,
    }
}

fn distribution_name(d: &Distribution) -> &'static str {
    match d {
        Distribution::Values { .. } => "values",
        Distribution::Uniform { .. } => "uniform",
        Distribution::LogUniform { .. } => "log_uniform",
        Distribution::IntUniform { .. } => "int_uniform",
    }
}

/// The distributions a parameter of `kind` takes.
fn distributions(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Real => &["values", "uniform", "log_uniform", "int_uniform"],
        Kind::Whole => &["values", "int_uniform"],
        Kind::Choice => &["values"],
    }
}

/// Every combination of the lists' values, the last parameter varying fastest; `None` when the space
/// holds a distribution (a grid takes lists only) or an empty list.
fn grid(parameters: &BTreeMap<String, Distribution>) -> Option<Vec<BTreeMap<String, Value>>> {
    let mut points = vec![BTreeMap::new()];
    for (name, distribution) in parameters {
        let Distribution::Values { values } = distribution else {
            return None;
        };
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |value| {
                    let mut next = point.clone();
                    next.insert(name.clone(), value.clone());
                    next
                })
            })
            .collect();
        if points.is_empty() || points.len() > MAX_TRIALS as usize {
            return (!points.is_empty()).then_some(points);
        }
    }
    Some(points)
}

/// How many combinations a grid sweep has (at most one more than [`MAX_TRIALS`]: enough to refuse it).
pub fn grid_size(parameters: &BTreeMap<String, Distribution>) -> Option<u32> {
    grid(parameters).map(|points| points.len() as u32)
}

/// The trials a sweep may start in all: what it says, or the whole grid, or
/// [`DEFAULT_RANDOM_TRIALS`].
pub fn max_trials(spec: &SweepSpec) -> u32 {
    match (spec.max_trials, spec.method) {
        (Some(n), _) => n,
        (None, Method::Grid) => grid_size(&spec.parameters).unwrap_or(0),
        (None, Method::Random) => DEFAULT_RANDOM_TRIALS,
    }
}

/// The values trial `index` (0 for the first) runs with. A random sweep's trial draws from its own
/// stream of the seed's generator (ChaCha8, whose output is fixed by its specification, not by a
/// crate's version), so each trial's values depend only on the spec, the seed and its number; a grid's
/// trial is the `index`-th combination of a seeded shuffle of the whole grid. `None` past a grid's end.
pub fn trial_values(spec: &SweepSpec, index: u32) -> Option<BTreeMap<String, Value>> {
    match spec.method {
        Method::Grid => {
            let mut points = grid(&spec.parameters)?;
            if index as usize >= points.len() {
                return None;
            }
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
            // Fisher–Yates from the front, stopped once position `index` is settled.
            for i in 0..=index as usize {
                let j = rng.gen_range(i..points.len());
                points.swap(i, j);
            }
            Some(points.swap_remove(index as usize))
        }
        Method::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
            rng.set_stream(u64::from(index));
            Some(
                spec.parameters
                    .iter()
                    .map(|(name, distribution)| (name.clone(), draw(&mut rng, distribution)))
                    .collect(),
            )
        }
    }
}

fn draw(rng: &mut ChaCha8Rng, distribution: &Distribution) -> Value {
    match *distribution {
        Distribution::Values { ref values } => values[rng.gen_range(0..values.len())].clone(),
        Distribution::Uniform { min, max } => Value::from(min + rng.gen::<f64>() * (max - min)),
        Distribution::LogUniform { min, max } => {
            let (lo, hi) = (min.ln(), max.ln());
            Value::from((lo + rng.gen::<f64>() * (hi - lo)).exp())
        }
        Distribution::IntUniform { min, max } => Value::from(rng.gen_range(min..=max)),
    }
}

/// `job` with `values` put in: the trial's spec, or what is wrong with a value (by parameter).
pub fn with_values(
    job: &JobSpec,
    values: &BTreeMap<String, Value>,
) -> Result<JobSpec, (String, String)> {
    let mut json = serde_json::to_value(job).map_err(|e| (String::new(), e.to_string()))?;
    let object = json.as_object_mut().expect("a job spec is an object");
    for (name, value) in values {
        object.insert(name.clone(), value.clone());
        // Each value alone, so that a wrong one is named.
        let mut alone = serde_json::to_value(job).expect("a job spec is an object");
        alone[name.as_str()] = value.clone();
        if let Err(e) = serde_json::from_value::<JobSpec>(alone) {
            return Err((name.clone(), e.to_string()));
        }
    }
    serde_json::from_value(json).map_err(|e| (String::new(), e.to_string()))
}

/// The values of `spec` that must each be checked as a job would be: every listed value, and the
/// ends of every range; `(where, values)` pairs, `where` a field path under `parameters`.
pub fn values_to_check(spec: &SweepSpec) -> Vec<(String, BTreeMap<String, Value>)> {
    let mut out = Vec::new();
    for (name, distribution) in &spec.parameters {
        let one = |at: String, value: Value| (at, BTreeMap::from([(name.clone(), value)]));
        match distribution {
            Distribution::Values { values } => out.extend(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| one(format!("parameters.{name}.values[{i}]"), v.clone())),
            ),
            Distribution::Uniform { min, max } | Distribution::LogUniform { min, max } => {
                out.push(one(format!("parameters.{name}.min"), Value::from(*min)));
                out.push(one(format!("parameters.{name}.max"), Value::from(*max)));
            }
            Distribution::IntUniform { min, max } => {
                out.push(one(format!("parameters.{name}.min"), Value::from(*min)));
                out.push(one(format!("parameters.{name}.max"), Value::from(*max)));
            }
        }
    }
    out
}

/// What is wrong with a sweep's own fields (its job and values are checked as jobs, apart): every
/// problem, named by its path in the spec. `metrics`: the objective's choices (the job's task's).
pub fn problems(spec: &SweepSpec, metrics: &[&str]) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    if crate::names::display_name(&spec.name).is_none() {
        out.push(FieldProblem::new(
            "name",
            Rule::Name,
            format!("must be {}", crate::names::NAME_RULE),
        ));
    }
    if spec.parameters.is_empty() {
        out.push(FieldProblem::new(
            "parameters",
            Rule::NotEmpty,
            "name at least one job field to vary",
        ));
    }
    for (name, distribution) in &spec.parameters {
        let at = |field: &str| format!("parameters.{name}.{field}");
        if !PARAMETERS.contains(&name.as_str()) {
            out.push(FieldProblem::new(
                format!("parameters.{name}"),
                Rule::OneOf {
                    values: PARAMETERS.iter().map(|p| p.to_string()).collect(),
                },
                format!("a sweep varies one of {}", PARAMETERS.join(", ")),
            ));
            continue;
        }
        let allowed = distributions(kind(name));
        if !allowed.contains(&distribution_name(distribution)) {
            out.push(FieldProblem::new(
                at("distribution"),
                Rule::OneOf {
                    values: allowed.iter().map(|d| d.to_string()).collect(),
                },
                format!("{name} takes {}", allowed.join(", ")),
            ));
            continue;
        }
        if spec.method == Method::Grid && !matches!(distribution, Distribution::Values { .. }) {
            out.push(FieldProblem::new(
                at("distribution"),
                Rule::GridNeedsValues,
                "a grid takes lists of values only: give values, or use the random method",
            ));
        }
        match *distribution {
            Distribution::Values { ref values } if values.is_empty() => out.push(
                FieldProblem::new(at("values"), Rule::NotEmpty, "give at least one value"),
            ),
            Distribution::Values { ref values } if values.len() > MAX_TRIALS as usize => {
                out.push(FieldProblem::new(
                    at("values"),
                    Rule::AtMost {
                        max: i64::from(MAX_TRIALS),
                    },
                    format!("at most {MAX_TRIALS} values"),
                ))
            }
            Distribution::Uniform { min, max } | Distribution::LogUniform { min, max }
                if !(min.is_finite() && max.is_finite()) =>
            {
                out.push(FieldProblem::said(at("min"), "min and max must be numbers"))
            }
            Distribution::LogUniform { min, .. } if min <= 0.0 => out.push(FieldProblem::new(
                at("min"),
                Rule::Above { min: 0.0 },
                "a log-uniform range starts above 0",
            )),
            Distribution::Uniform { min, max } | Distribution::LogUniform { min, max }
                if max <= min =>
            {
                out.push(FieldProblem::new(
                    at("max"),
                    Rule::Above { min },
                    format!("must be above min ({min})"),
                ))
            }
            Distribution::IntUniform { min, max } if max <= min => out.push(FieldProblem::new(
                at("max"),
                Rule::Above { min: min as f64 },
                format!("must be above min ({min})"),
            )),
            _ => {}
        }
    }
    let limit = match spec.method {
        Method::Random => Some(MAX_TRIALS),
        // A grid with a bad axis has no size: that axis is the problem, said above.
        Method::Grid => grid_size(&spec.parameters).map(|size| size.min(MAX_TRIALS)),
    };
    if spec.method == Method::Grid && grid_size(&spec.parameters) > Some(MAX_TRIALS) {
        out.push(FieldProblem::new(
            "parameters",
            Rule::AtMost {
                max: i64::from(MAX_TRIALS),
            },
            format!("the grid has more than {MAX_TRIALS} combinations: fewer values, or the random method"),
        ));
    }
    if let (Some(n), Some(limit)) = (spec.max_trials, limit) {
        if !(1..=limit).contains(&n) {
            out.push(FieldProblem::new(
                "max_trials",
                Rule::Between {
                    min: 1,
                    max: i64::from(limit),
                },
                format!("must be between 1 and {limit}"),
            ));
        }
    }
    if !(1..=MAX_PARALLELISM).contains(&spec.parallelism) {
        out.push(FieldProblem::new(
            "parallelism",
            Rule::Between {
                min: 1,
                max: i64::from(MAX_PARALLELISM),
            },
            format!("must be between 1 and {MAX_PARALLELISM}"),
        ));
    }
    if !metrics.contains(&spec.objective.metric.as_str()) {
        out.push(FieldProblem::new(
            "objective.metric",
            Rule::OneOf {
                values: metrics.iter().map(|m| m.to_string()).collect(),
            },
            format!("the job's task reports {}", metrics.join(", ")),
        ));
    }
    if let EarlyStopping::Asha {
        min_steps,
        reduction_factor,
    } = spec.early_stopping
    {
        if min_steps == 0 {
            out.push(FieldProblem::new(
                "early_stopping.min_steps",
                Rule::AtLeast { min: 1 },
                "must be at least 1",
            ));
        }
        if !(2..=8).contains(&reduction_factor) {
            out.push(FieldProblem::new(
                "early_stopping.reduction_factor",
                Rule::Between { min: 2, max: 8 },
                "must be between 2 and 8",
            ));
        }
    }
    out
}

/// The decision at a rung for a trial whose objective there is `value`, `earlier` being the values of
/// the trials that reached it before: it goes on when fewer than ⌈n/η⌉ of the n trials there (itself
/// included) did strictly better, so the first to arrive always goes on and ties are kept together.
pub fn continues(value: f64, earlier: &[f64], goal: Goal, reduction_factor: u32) -> bool {
    let peers = earlier.len() + 1;
    let keep = peers.div_ceil(reduction_factor.max(2) as usize);
    let better = earlier.iter().filter(|v| goal.better(**v, value)).count();
    better < keep
}

/// A trial's best objective over its evaluations up to `step` (its value at the rung at `step`), from
/// `(step, value)` pairs in step order.
pub fn best_until(evals: &[(i64, f64)], step: i64, goal: Goal) -> Option<(i64, f64)> {
    evals
        .iter()
        .filter(|(s, v)| *s <= step && v.is_finite())
        .fold(None, |best: Option<(i64, f64)>, &(s, v)| match best {
            Some((_, b)) if !goal.better(v, b) => best,
            _ => Some((s, v)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(method: Method, parameters: Value) -> SweepSpec {
        serde_json::from_value(json!({
            "name": "lr search",
            "job": { "name": "sentiment", "dataset_id": 1, "preset": "tiny" },
            "parameters": parameters,
            "method": method,
            "objective": { "metric": "macro_f1" },
        }))
        .unwrap()
    }

    fn grid_spec() -> SweepSpec {
        spec(
            Method::Grid,
            json!({
                "learning_rate": { "distribution": "values", "values": [1e-4, 3e-4, 1e-3] },
                "batch_size": { "distribution": "values", "values": [16, 32] },
                "preset": { "distribution": "values", "values": ["tiny", "nano"] },
            }),
        )
    }

    #[test]
    fn a_grid_runs_every_combination_once_in_a_seeded_order() {
        let spec = grid_spec();
        assert_eq!(max_trials(&spec), 12);
        let trials: Vec<_> = (0..12).map(|i| trial_values(&spec, i).unwrap()).collect();
        for (i, a) in trials.iter().enumerate() {
            assert_eq!(a.len(), 3);
            assert!(trials[i + 1..].iter().all(|b| a != b), "trial {i} repeats");
        }
        assert_eq!(trial_values(&spec, 12), None);
        // Not the grid's own order, and the same again for the same seed; another seed, another order.
        let in_order = grid(&spec.parameters).unwrap();
        assert_ne!(trials, in_order);
        assert_eq!(trial_values(&spec, 5), Some(trials[5].clone()));
        let reseeded = SweepSpec { seed: 7, ..spec };
        let other: Vec<_> = (0..12)
            .map(|i| trial_values(&reseeded, i).unwrap())
            .collect();
        assert_ne!(other, trials);
    }

    #[test]
    fn random_trials_stay_in_their_ranges_and_depend_only_on_seed_and_number() {
        let spec = spec(
            Method::Random,
            json!({
                "learning_rate": { "distribution": "log_uniform", "min": 1e-5, "max": 1e-2 },
                "warmup_ratio": { "distribution": "uniform", "min": 0.0, "max": 0.2 },
                "epochs": { "distribution": "int_uniform", "min": 1, "max": 3 },
                "batch_size": { "distribution": "values", "values": [8, 16] },
            }),
        );
        let trials: Vec<_> = (0..200).map(|i| trial_values(&spec, i).unwrap()).collect();
        let lrs: Vec<f64> = trials
            .iter()
            .map(|t| t["learning_rate"].as_f64().unwrap())
            .collect();
        assert!(lrs.iter().all(|lr| (1e-5..=1e-2).contains(lr)));
        // Log-uniform: about a third of the draws in each decade.
        let first_decade = lrs.iter().filter(|lr| **lr < 1e-4).count();
        assert!(
            (40..=95).contains(&first_decade),
            "{first_decade} of 200 below 1e-4"
        );
        for t in &trials {
            assert!((0.0..0.2).contains(&t["warmup_ratio"].as_f64().unwrap()));
            assert!((1..=3).contains(&t["epochs"].as_i64().unwrap()));
            assert!([8, 16].contains(&t["batch_size"].as_i64().unwrap()));
        }
        let epochs: std::collections::BTreeSet<i64> = trials
            .iter()
            .map(|t| t["epochs"].as_i64().unwrap())
            .collect();
        assert_eq!(epochs.len(), 3, "both ends of an int range are drawn");
        assert_eq!(trial_values(&spec, 150), Some(trials[150].clone()));
        assert_eq!(max_trials(&spec), DEFAULT_RANDOM_TRIALS);
    }

    #[test]
    fn values_go_into_the_job_and_a_wrong_one_is_named() {
        let spec = grid_spec();
        let values = trial_values(&spec, 0).unwrap();
        let job = with_values(&spec.job, &values).unwrap();
        assert_eq!(Value::from(job.batch_size), values["batch_size"]);
        assert_eq!(Value::from(job.preset.clone()), values["preset"]);
        let wrong = BTreeMap::from([
            ("learning_rate".to_string(), json!(0.01)),
            ("batch_size".to_string(), json!("big")),
        ]);
        let (field, why) = with_values(&spec.job, &wrong).unwrap_err();
        assert_eq!(field, "batch_size");
        assert!(why.contains("big"), "{why}");
    }

    #[test]
    fn every_problem_is_named_by_its_path() {
        let mut bad = spec(
            Method::Grid,
            json!({
                "learning_rate": { "distribution": "log_uniform", "min": 0.0, "max": 1e-3 },
                "batch_size": { "distribution": "uniform", "min": 8, "max": 32 },
                "dataset_id": { "distribution": "values", "values": [2] },
                "seed": { "distribution": "values", "values": [] },
                "warmup_ratio": { "distribution": "int_uniform", "min": 1, "max": 1 },
            }),
        );
        bad.parallelism = 0;
        bad.objective.metric = "bleu".into();
        bad.early_stopping = EarlyStopping::Asha {
            min_steps: 0,
            reduction_factor: 9,
        };
        let fields: Vec<String> = problems(&bad, &["macro_f1", "accuracy", "loss"])
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(
            fields,
            [
                "parameters.batch_size.distribution",
                "parameters.dataset_id",
                "parameters.learning_rate.distribution",
                "parameters.learning_rate.min",
                "parameters.seed.values",
                "parameters.warmup_ratio.distribution",
                "parameters.warmup_ratio.max",
                "parallelism",
                "objective.metric",
                "early_stopping.min_steps",
                "early_stopping.reduction_factor",
            ]
        );
        assert!(problems(&grid_spec(), &["macro_f1"]).is_empty());
        let mut capped = grid_spec();
        capped.max_trials = Some(13);
        assert_eq!(problems(&capped, &["macro_f1"])[0].field, "max_trials");
    }

    #[test]
    fn a_grid_too_large_is_refused_before_it_is_built() {
        let many: Vec<u32> = (0..40).collect();
        let spec = spec(
            Method::Grid,
            json!({
                "seed": { "distribution": "values", "values": many },
                "epochs": { "distribution": "values", "values": many },
            }),
        );
        assert_eq!(grid_size(&spec.parameters), Some(1600));
        assert!(problems(&spec, &["macro_f1"])
            .iter()
            .any(|p| p.field == "parameters" && p.rule == Some(Rule::AtMost { max: 1000 })));
    }

    #[test]
    fn asha_keeps_the_best_share_at_each_rung() {
        let max = Goal::Maximize;
        // The first to reach a rung always goes on.
        assert!(continues(0.1, &[], max, 3));
        // Of two, ⌈2/3⌉ = 1 goes on: the better.
        assert!(!continues(0.5, &[0.6], max, 3));
        assert!(continues(0.7, &[0.6], max, 3));
        // Of four, 2 go on: second best continues, third does not.
        assert!(continues(0.65, &[0.6, 0.7, 0.5], max, 3));
        assert!(!continues(0.55, &[0.6, 0.7, 0.5], max, 3));
        // η = 2 keeps half; ties are kept together.
        assert!(continues(0.6, &[0.6], max, 2));
        // Lower is better for a loss.
        assert!(continues(0.3, &[0.4], Goal::Minimize, 3));
        assert!(!continues(0.5, &[0.4], Goal::Minimize, 3));
    }

    #[test]
    fn the_value_at_a_rung_is_the_best_so_far() {
        let evals = [(10, 0.5), (20, 0.7), (30, 0.6), (40, f64::NAN), (50, 0.9)];
        assert_eq!(best_until(&evals, 30, Goal::Maximize), Some((20, 0.7)));
        assert_eq!(best_until(&evals, 45, Goal::Maximize), Some((20, 0.7)));
        assert_eq!(best_until(&evals, 30, Goal::Minimize), Some((10, 0.5)));
        assert_eq!(best_until(&evals, 5, Goal::Maximize), None);
    }
}

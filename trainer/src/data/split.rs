//! Splits a dev set off the training data when the job names none: stratified by label, reproducible
//! from the seed, and keeping file order inside each part so the split reads naturally in reports.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::validate::Example;

/// Returns `(train, dev)` with about `ratio` of each label's rows in dev (at least one row of every label
/// that has two or more, so that dev metrics cover every class).
pub fn split_dev(examples: Vec<Example>, ratio: f64, seed: u64) -> (Vec<Example>, Vec<Example>) {
    let mut by_label: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
    for (i, e) in examples.iter().enumerate() {
        by_label.entry(e.label).or_default().push(i);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut in_dev = vec![false; examples.len()];
    for idx in by_label.values_mut() {
        idx.shuffle(&mut rng);
        let n = idx.len();
        let mut take = (n as f64 * ratio).round() as usize;
        if n >= 2 {
            take = take.clamp(1, n - 1);
        } else {
            take = 0;
        }
        for &i in &idx[..take] {
            in_dev[i] = true;
        }
    }
    let (mut train, mut dev) = (Vec::new(), Vec::new());
    for (e, d) in examples.into_iter().zip(in_dev) {
        if d {
            dev.push(e)
        } else {
            train.push(e)
        }
    }
    (train, dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(line: usize, label: usize) -> Example {
        Example {
            line,
            text: format!("t{line}"),
            text_pair: None,
            label: Some(label),
            entities: Vec::new(),
        }
    }

    #[test]
    fn stratified_and_reproducible() {
        let data: Vec<Example> = (0..100)
            .map(|i| ex(i + 2, usize::from(i % 4 == 0)))
            .collect();
        let (train, dev) = split_dev(data.clone(), 0.2, 7);
        assert_eq!(train.len() + dev.len(), 100);
        assert_eq!(dev.iter().filter(|e| e.label == Some(1)).count(), 5);
        assert_eq!(dev.iter().filter(|e| e.label == Some(0)).count(), 15);
        let (_, dev2) = split_dev(data.clone(), 0.2, 7);
        assert_eq!(dev, dev2);
        let (_, dev3) = split_dev(data, 0.2, 8);
        assert_ne!(dev, dev3);
        assert!(dev.windows(2).all(|w| w[0].line < w[1].line));
    }
}

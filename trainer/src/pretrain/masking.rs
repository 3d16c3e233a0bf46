//! Whole-word masking (WWM), the masked-LM recipe of BERT-wwm and ERNIE: in each row a share of the
//! *words* (`rate`, 15% by default, at least one) is chosen, and every token of a chosen word is a
//! prediction target, so the model cannot guess a character from the rest of its own word. Each target
//! token is then replaced by `[MASK]` (80%), by a random ordinary token (10%) or kept (10%), as in BERT.
//!
//! The choice is a pure function of (seed, epoch, row): every epoch masks a row differently (dynamic
//! masking), a rerun with the same seed masks identically, and the batch order cannot change it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::words::WordTokens;

/// transformers' ignore index: positions with this label are not scored.
pub const IGNORE: i64 = -100;

/// How many words are masked and what their tokens become.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaskingPolicy {
    /// Fraction of a row's whole words that are prediction targets.
    pub rate: f64,
    /// Of the target tokens: the share replaced by `[MASK]`…
    pub mask_share: f64,
    /// …and the share replaced by a random token (the rest keep their id).
    pub random_share: f64,
}

impl Default for MaskingPolicy {
    fn default() -> Self {
        MaskingPolicy {
            rate: 0.15,
            mask_share: 0.8,
            random_share: 0.1,
        }
    }
}

/// The ids masking needs from the vocabulary.
#[derive(Debug, Clone)]
pub struct MaskVocab {
    pub mask_id: i64,
    pub vocab_size: i64,
    /// Never drawn as random replacements: `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.
    pub special_ids: Vec<i64>,
}

impl MaskVocab {
    pub fn of(tokenizer: &crate::Tokenizer) -> Self {
        MaskVocab {
            mask_id: tokenizer.mask_id(),
            vocab_size: tokenizer.vocab_size() as i64,
            special_ids: vec![
                tokenizer.pad_id(),
                tokenizer.unk_id(),
                tokenizer.cls_id(),
                tokenizer.sep_id(),
                tokenizer.mask_id(),
            ],
        }
    }

    fn random_token(&self, rng: &mut StdRng) -> i64 {
        // The specials are a handful of ids among thousands, so this loop ends almost at once; a vocabulary
        // of specials only would have no ordinary token to draw, and keeps the original instead.
        if self.vocab_size as usize <= self.special_ids.len() {
            return self.mask_id;
        }
        loop {
            let id = rng.gen_range(0..self.vocab_size);
            if !self.special_ids.contains(&id) {
                return id;
            }
        }
    }
}

/// A masked row: the model's input and the labels (`IGNORE` except at target positions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked {
    pub input_ids: Vec<i64>,
    pub labels: Vec<i64>,
}

/// The generator for one row in one epoch (splitmix64 over the three numbers, so nearby rows and epochs
/// get unrelated streams).
pub fn row_rng(seed: u64, epoch: u64, row: u64) -> StdRng {
    let mut h = seed;
    for x in [epoch, row] {
        h = splitmix64(h ^ splitmix64(x));
    }
    StdRng::seed_from_u64(h)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Masks whole words of `row` with `rng`. A row without words comes back unmasked (all labels `IGNORE`).
pub fn mask_whole_words(
    row: &WordTokens,
    policy: &MaskingPolicy,
    vocab: &MaskVocab,
    rng: &mut StdRng,
) -> Masked {
    let mut input_ids = row.input_ids.clone();
    let mut labels = vec![IGNORE; input_ids.len()];
    if row.words == 0 {
        return Masked { input_ids, labels };
    }
    let count = ((row.words as f64 * policy.rate).round() as usize).clamp(1, row.words);
    let mut chosen = vec![false; row.words];
    for w in rand::seq::index::sample(rng, row.words, count) {
        chosen[w] = true;
    }
    for (i, word) in row.word_ids.iter().enumerate() {
        let Some(w) = word else { continue };
        if !chosen[*w as usize] {
            continue;
        }
        labels[i] = input_ids[i];
        let r: f64 = rng.gen();
        if r < policy.mask_share {
            input_ids[i] = vocab.mask_id;
        } else if r < policy.mask_share + policy.random_share {
            input_ids[i] = vocab.random_token(rng);
        }
    }
    Masked { input_ids, labels }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 200 words of 1 to 4 tokens each (ids 10.., vocabulary 1000) between [CLS]=2 and [SEP]=3.
    fn row() -> WordTokens {
        let mut input_ids = vec![2];
        let mut word_ids = vec![None];
        for w in 0..200u32 {
            for _ in 0..(w % 4 + 1) {
                input_ids.push(10 + input_ids.len() as i64);
                word_ids.push(Some(w));
            }
        }
        input_ids.push(3);
        word_ids.push(None);
        WordTokens {
            input_ids,
            word_ids,
            words: 200,
        }
    }

    fn vocab() -> MaskVocab {
        MaskVocab {
            mask_id: 4,
            vocab_size: 1000,
            special_ids: vec![0, 1, 2, 3, 4],
        }
    }

    #[test]
    fn every_token_of_a_chosen_word_is_a_target_and_no_other() {
        let row = row();
        for seed in 0..20 {
            let m = mask_whole_words(
                &row,
                &MaskingPolicy::default(),
                &vocab(),
                &mut row_rng(seed, 0, 0),
            );
            for w in 0..200u32 {
                let targets: Vec<bool> = (0..row.input_ids.len())
                    .filter(|&i| row.word_ids[i] == Some(w))
                    .map(|i| m.labels[i] != IGNORE)
                    .collect();
                assert!(
                    targets.iter().all(|&t| t) || targets.iter().all(|&t| !t),
                    "word {w} partly masked"
                );
            }
            assert_eq!(m.labels[0], IGNORE);
            assert_eq!(*m.labels.last().unwrap(), IGNORE);
            for (i, &l) in m.labels.iter().enumerate() {
                if l != IGNORE {
                    assert_eq!(l, row.input_ids[i], "labels are the original ids");
                } else {
                    assert_eq!(
                        m.input_ids[i], row.input_ids[i],
                        "non-targets are untouched"
                    );
                }
            }
        }
    }

    #[test]
    fn rate_and_replacement_shares_match_the_policy() {
        let row = row();
        let (mut words, mut targets, mut masks, mut kept) = (0usize, 0usize, 0usize, 0usize);
        for r in 0..200 {
            let m = mask_whole_words(
                &row,
                &MaskingPolicy::default(),
                &vocab(),
                &mut row_rng(42, 0, r),
            );
            let mut chosen: Vec<u32> = (0..m.labels.len())
                .filter(|&i| m.labels[i] != IGNORE)
                .filter_map(|i| row.word_ids[i])
                .collect();
            chosen.dedup();
            words += chosen.len();
            for i in 0..m.labels.len() {
                if m.labels[i] != IGNORE {
                    targets += 1;
                    masks += usize::from(m.input_ids[i] == 4);
                    kept += usize::from(m.input_ids[i] == row.input_ids[i]);
                    assert!(
                        !(0..4).contains(&m.input_ids[i]),
                        "a special token other than [MASK] was drawn"
                    );
                }
            }
        }
        // round(200 * 0.15) = 30 words per row, exactly.
        assert_eq!(words, 200 * 30);
        let (mask_share, kept_share) =
            (masks as f64 / targets as f64, kept as f64 / targets as f64);
        assert!((mask_share - 0.8).abs() < 0.02, "[MASK] share {mask_share}");
        // A random replacement may draw the original id (1 in 995), hence the slightly wider bound.
        assert!((kept_share - 0.1).abs() < 0.02, "kept share {kept_share}");
    }

    #[test]
    fn same_seed_epoch_and_row_mask_the_same_way() {
        let row = row();
        let p = MaskingPolicy::default();
        let m = |s, e, r| mask_whole_words(&row, &p, &vocab(), &mut row_rng(s, e, r));
        assert_eq!(m(7, 1, 3), m(7, 1, 3));
        assert_ne!(m(7, 1, 3), m(7, 2, 3), "each epoch masks anew");
        assert_ne!(m(7, 1, 3), m(7, 1, 4));
        assert_ne!(m(7, 1, 3), m(8, 1, 3));
    }

    #[test]
    fn short_rows_mask_at_least_one_word_and_empty_rows_none() {
        let row = WordTokens {
            input_ids: vec![2, 11, 12, 3],
            word_ids: vec![None, Some(0), Some(0), None],
            words: 1,
        };
        let m = mask_whole_words(
            &row,
            &MaskingPolicy::default(),
            &vocab(),
            &mut row_rng(1, 0, 0),
        );
        assert_eq!(m.labels, vec![IGNORE, 11, 12, IGNORE]);
        let empty = WordTokens {
            input_ids: vec![2, 1, 3],
            word_ids: vec![None, None, None],
            words: 0,
        };
        let m = mask_whole_words(
            &empty,
            &MaskingPolicy::default(),
            &vocab(),
            &mut row_rng(1, 0, 0),
        );
        assert!(m.labels.iter().all(|&l| l == IGNORE));
    }
}

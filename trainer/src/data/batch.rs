//! Batching: length-bucketed batch order for training (rows of similar length share a batch, so dynamic
//! padding wastes little), length-sorted batches for evaluation, and collation of token ids into padded
//! tensors. The training order is a pure function of (seed, epoch), which is what makes resuming exact:
//! the trainer only needs to remember the epoch and how many batches of it were consumed.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use tch::{Device, Tensor};

/// Token ids of one row, as the tokenizer produced them (with [CLS]/[SEP], already truncated), and what
/// the model should say of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub input_ids: Vec<i64>,
    pub token_type_ids: Vec<i64>,
    pub gold: Gold,
}

/// A row's gold answer, in the shape of its task's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gold {
    /// Nothing to learn or score (prediction, pretraining).
    None,
    /// One label id for the row (a sequence head).
    Class(i64),
    /// One label id per token, aligned with `input_ids`; [`IGNORED`] where no label is scored (the
    /// special tokens, the word pieces after a word's first, padding).
    Tags(Vec<i64>),
}

/// The label of a position the loss and the metrics leave out (transformers' `ignore_index`).
pub const IGNORED: i64 = -100;

impl Features {
    /// A row with nothing to score.
    pub fn unlabelled(input_ids: Vec<i64>, token_type_ids: Vec<i64>) -> Features {
        Features {
            input_ids,
            token_type_ids,
            gold: Gold::None,
        }
    }

    /// How many labels of this row the loss counts: what a step's summed loss is divided by.
    pub fn scored(&self) -> usize {
        match &self.gold {
            Gold::None => 0,
            Gold::Class(_) => 1,
            Gold::Tags(tags) => tags.iter().filter(|&&t| t != IGNORED).count(),
        }
    }
}

/// A padded batch on the model's device.
#[derive(Debug)]
pub struct Batch {
    /// [batch, seq] Int64
    pub input_ids: Tensor,
    /// [batch, seq] Int64, 1 for real tokens, 0 for padding
    pub attention_mask: Tensor,
    /// [batch, seq] Int64
    pub token_type_ids: Tensor,
    /// When every row has a gold answer: `[batch]` Int64 class ids, or `[batch, seq]` tag ids with
    /// [`IGNORED`] at unscored and padded positions.
    pub labels: Option<Tensor>,
    pub rows: usize,
    /// Real (non-padding) tokens, for tokens/s.
    pub tokens: usize,
}

impl Batch {
    /// The batch as the model's inputs (no task-type ids: the data files carry none, for fine-tuning or
    /// pretraining).
    pub fn inputs(&self) -> crate::Inputs<'_> {
        crate::Inputs {
            input_ids: &self.input_ids,
            attention_mask: &self.attention_mask,
            token_type_ids: Some(&self.token_type_ids),
            task_type_ids: None,
        }
    }
}

/// How many batches' worth of rows are sorted together. Larger buckets pad less but make batches more
/// uniform in length (and so less random); 50 is the usual compromise.
const BUCKET_BATCHES: usize = 50;

/// The batches of one training epoch: shuffle, sort within buckets by length, cut, shuffle batches.
pub fn bucketed_batches(
    lengths: &[usize],
    batch_size: usize,
    seed: u64,
    epoch: u64,
) -> Vec<Vec<usize>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        seed ^ epoch.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let mut idx: Vec<usize> = (0..lengths.len()).collect();
    idx.shuffle(&mut rng);
    let mut batches = Vec::with_capacity(lengths.len().div_ceil(batch_size.max(1)));
    for bucket in idx.chunks_mut(batch_size.max(1) * BUCKET_BATCHES) {
        bucket.sort_by_key(|&i| lengths[i]);
        batches.extend(bucket.chunks(batch_size.max(1)).map(<[usize]>::to_vec));
    }
    batches.shuffle(&mut rng);
    batches
}

/// Evaluation batches: rows sorted by length (longest first, so a memory problem shows at once).
pub fn sorted_batches(lengths: &[usize], batch_size: usize) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..lengths.len()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    idx.chunks(batch_size.max(1))
        .map(<[usize]>::to_vec)
        .collect()
}

/// The rows' gold answers as one flat list and its shape, when every row has one of the same kind.
fn gold_labels(rows: &[&Features], seq: usize) -> Option<(Vec<i64>, Vec<i64>)> {
    let n = rows.len() as i64;
    match rows.first().map(|r| &r.gold) {
        Some(Gold::Class(_)) => rows
            .iter()
            .map(|r| match r.gold {
                Gold::Class(c) => Some(c),
                _ => None,
            })
            .collect::<Option<Vec<i64>>>()
            .map(|l| (l, vec![n])),
        Some(Gold::Tags(_)) => {
            let mut flat = vec![IGNORED; rows.len() * seq];
            for (b, r) in rows.iter().enumerate() {
                let Gold::Tags(tags) = &r.gold else {
                    return None;
                };
                let len = tags.len().min(seq);
                flat[b * seq..b * seq + len].copy_from_slice(&tags[..len]);
            }
            Some((flat, vec![n, seq as i64]))
        }
        _ => None,
    }
}

/// Pads `rows` to their longest length with `pad_id` and moves them to `device`.
pub fn collate(rows: &[&Features], pad_id: i64, device: Device) -> Batch {
    let seq = rows
        .iter()
        .map(|r| r.input_ids.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let n = rows.len();
    let mut ids = vec![pad_id; n * seq];
    let mut mask = vec![0i64; n * seq];
    let mut types = vec![0i64; n * seq];
    let mut tokens = 0;
    for (b, r) in rows.iter().enumerate() {
        let len = r.input_ids.len();
        tokens += len;
        ids[b * seq..b * seq + len].copy_from_slice(&r.input_ids);
        mask[b * seq..b * seq + len].fill(1);
        let tl = r.token_type_ids.len().min(len);
        types[b * seq..b * seq + tl].copy_from_slice(&r.token_type_ids[..tl]);
    }
    let shape = [n as i64, seq as i64];
    let labels = gold_labels(rows, seq).map(|(l, dims)| {
        Tensor::from_slice(&l)
            .view(dims.as_slice())
            .to_device(device)
    });
    Batch {
        input_ids: Tensor::from_slice(&ids).view(shape).to_device(device),
        attention_mask: Tensor::from_slice(&mask).view(shape).to_device(device),
        token_type_ids: Tensor::from_slice(&types).view(shape).to_device(device),
        labels,
        rows: n,
        tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucketed_batches_cover_every_row_once_and_depend_on_epoch() {
        let lengths: Vec<usize> = (0..1000).map(|i| (i * 37) % 120 + 3).collect();
        let b = bucketed_batches(&lengths, 16, 42, 0);
        let mut all: Vec<usize> = b.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
        assert_eq!(b, bucketed_batches(&lengths, 16, 42, 0));
        assert_ne!(b, bucketed_batches(&lengths, 16, 42, 1));
        // Bucketing keeps lengths inside a batch close: much less padding than random batches.
        let spread: usize = b
            .iter()
            .map(|x| {
                let l: Vec<usize> = x.iter().map(|&i| lengths[i]).collect();
                l.iter().max().unwrap() - l.iter().min().unwrap()
            })
            .sum();
        assert!(spread < b.len() * 20, "spread {spread}");
    }

    #[test]
    fn collate_pads_and_masks() {
        let a = Features {
            input_ids: vec![2, 5, 3],
            token_type_ids: vec![0, 0, 0],
            gold: Gold::Class(1),
        };
        let b = Features {
            input_ids: vec![2, 3],
            token_type_ids: vec![0, 0],
            gold: Gold::Class(0),
        };
        let batch = collate(&[&a, &b], 0, Device::Cpu);
        assert_eq!(batch.input_ids.size(), [2, 3]);
        assert_eq!(
            Vec::<i64>::try_from(batch.input_ids.view(-1)).unwrap(),
            [2, 5, 3, 2, 3, 0]
        );
        assert_eq!(
            Vec::<i64>::try_from(batch.attention_mask.view(-1)).unwrap(),
            [1, 1, 1, 1, 1, 0]
        );
        assert_eq!(Vec::<i64>::try_from(batch.labels.unwrap()).unwrap(), [1, 0]);
        assert_eq!(batch.tokens, 5);
        let unlabelled = Features {
            gold: Gold::None,
            ..b.clone()
        };
        assert!(collate(&[&a, &unlabelled], 0, Device::Cpu).labels.is_none());
        assert_eq!((a.scored(), unlabelled.scored()), (1, 0));
    }

    #[test]
    fn tags_are_padded_with_the_ignored_label() {
        let a = Features {
            input_ids: vec![2, 5, 6, 3],
            token_type_ids: vec![0; 4],
            gold: Gold::Tags(vec![IGNORED, 1, 2, IGNORED]),
        };
        let b = Features {
            input_ids: vec![2, 7, 3],
            token_type_ids: vec![0; 3],
            gold: Gold::Tags(vec![IGNORED, 0, IGNORED]),
        };
        let batch = collate(&[&a, &b], 0, Device::Cpu);
        let labels = batch.labels.unwrap();
        assert_eq!(labels.size(), [2, 4]);
        assert_eq!(
            Vec::<i64>::try_from(labels.view(-1)).unwrap(),
            [IGNORED, 1, 2, IGNORED, IGNORED, 0, IGNORED, IGNORED]
        );
        assert_eq!((a.scored(), b.scored()), (2, 1));
        let class = Features {
            gold: Gold::Class(0),
            ..b
        };
        assert!(
            collate(&[&a, &class], 0, Device::Cpu).labels.is_none(),
            "a batch of two kinds has no labels"
        );
    }
}

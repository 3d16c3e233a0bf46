//! Batching: length-bucketed batch order for training (rows of similar length share a batch, so dynamic
//! padding wastes little), length-sorted batches for evaluation, and collation of token ids into padded
//! tensors. The training order is a pure function of (seed, epoch), which is what makes resuming exact:
//! the trainer only needs to remember the epoch and how many batches of it were consumed.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use tch::{Device, Kind, Tensor};

/// Token ids of one row, as the tokenizer produced them (with [CLS]/[SEP], already truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub input_ids: Vec<i64>,
    pub token_type_ids: Vec<i64>,
    pub label: Option<i64>,
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
    /// [batch] Int64 when every row has a label
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
    let labels: Option<Vec<i64>> = rows.iter().map(|r| r.label).collect();
    Batch {
        input_ids: Tensor::from_slice(&ids).view(shape).to_device(device),
        attention_mask: Tensor::from_slice(&mask).view(shape).to_device(device),
        token_type_ids: Tensor::from_slice(&types).view(shape).to_device(device),
        labels: labels.map(|l| {
            Tensor::from_slice(&l)
                .to_kind(Kind::Int64)
                .to_device(device)
        }),
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
            label: Some(1),
        };
        let b = Features {
            input_ids: vec![2, 3],
            token_type_ids: vec![0, 0],
            label: Some(0),
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
        let unlabelled = Features { label: None, ..b };
        assert!(collate(&[&a, &unlabelled], 0, Device::Cpu).labels.is_none());
    }
}

//! Data parallelism: several ranks (processes, one per GPU or a share of the CPU) train one run, as
//! PyTorch's DistributedDataParallel does, over [`crate::collectives`].
//!
//! `train.batch_size` stays the run's batch, whatever the number of ranks: every rank draws the same
//! batches (the order is a function of seed and epoch) and computes every `world`-th row of each, so
//! a run is the same run with 1, 2 or 8 ranks, and resumes with any number. Each rank weights its
//! rows' loss by their share of the whole step's rows, so summing the gradients over the ranks gives
//! the step's mean gradient exactly, uneven shards included (DDP divides by the world size, which is
//! exact only when every rank has as many rows). Clipping, loss scaling and the optimizer then see the
//! same gradients on every rank, and the weights stay equal without being sent again.
//!
//! Evaluation is shared too: each rank predicts its share of the dev set and the predictions are summed
//! into every rank's copy, so every rank computes the same metrics and takes the same early-stopping
//! decision; only rank 0 writes events, checkpoints and the summary.

use tch::{nn::VarStore, Device, Kind, Tensor};

use super::optimizer::AdamW;
use crate::collectives::{Group, Rank};
use crate::data::batch::Features;
use crate::metrics::Metrics;
use crate::predict::Inference;
use crate::{Precision, Result};

/// This rank's part in a run trained by several.
pub struct DataParallel {
    group: Group,
}

impl DataParallel {
    /// Meets the run's other ranks.
    pub fn join(me: &Rank) -> Result<DataParallel> {
        Ok(DataParallel {
            group: Group::join(me)?,
        })
    }

    /// Joins the run's other ranks where `rank` is one of several (`None`: a run alone), and says on
    /// stderr where this rank runs: the log is where a run across machines is looked into.
    pub fn for_rank(rank: Option<&Rank>, device: &Device) -> Result<Option<DataParallel>> {
        let Some(rank) = rank.filter(|r| r.world > 1) else {
            return Ok(None);
        };
        let p = DataParallel::join(rank)?;
        eprintln!(
            "rank {} of {} on {} ({device:?})",
            p.rank(),
            p.world(),
            machine_name()
        );
        Ok(Some(p))
    }

    pub fn rank(&self) -> usize {
        self.group.rank()
    }

    pub fn world(&self) -> usize {
        self.group.world()
    }

    /// The rows of a batch this rank computes: every `world`-th, from its rank on (lengths are sorted
    /// within a batch, so the shards' lengths stay alike).
    pub fn shard<T>(&self, rows: impl IntoIterator<Item = T>) -> Vec<T> {
        shard(rows, self.rank(), self.world())
    }

    /// Gives every rank rank 0's weights (and buffers), so that all start from one model whatever each
    /// built on its own.
    pub fn same_start(&mut self, vs: &VarStore) -> Result<()> {
        let mut named = vs.variables().into_iter().collect::<Vec<_>>();
        // The same order on every rank: the collectives pair tensors by position.
        named.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, var) in named {
            let mut values = var.detach();
            self.group.broadcast(&mut values, 0)?;
        }
        Ok(())
    }

    /// Rank 0's precision, for every rank: `auto` is measured on each, and measurements differ.
    pub fn same_precision(&mut self, mine: Precision) -> Result<Precision> {
        const ALL: [Precision; 3] = [Precision::Fp32, Precision::Fp16, Precision::Bf16];
        let index = ALL.iter().position(|p| *p == mine).unwrap_or(0) as i64;
        let mut chosen = Tensor::from_slice(&[index]);
        self.group.broadcast(&mut chosen, 0)?;
        let chosen = i64::try_from(chosen)?;
        Ok(ALL.get(chosen as usize).copied().unwrap_or(mine))
    }

    /// Sums the step's gradients over the ranks, with the step's `figures` (loss, token count, a stop
    /// asked of any rank); returns the summed figures.
    pub fn sum_step(&mut self, opt: &mut AdamW, figures: &[f64]) -> Result<Vec<f64>> {
        let mut grads = opt.flat_grads();
        self.group.all_reduce_sum(&mut grads)?;
        opt.set_grads(&grads);
        let mut sums = Tensor::from_slice(figures);
        self.group.all_reduce_sum(&mut sums)?;
        Ok(Vec::<f64>::try_from(sums)?)
    }

    /// The metrics of `rows`, each rank predicting its share.
    pub fn evaluate(
        &mut self,
        inference: &Inference<'_>,
        rows: &[Features],
        labels: &[String],
    ) -> Result<Metrics> {
        let mine: Vec<usize> = self.shard(0..rows.len());
        let shard: Vec<Features> = mine.iter().map(|&i| rows[i].clone()).collect();
        let gold: Vec<i64> = rows.iter().map(|r| r.label.unwrap_or(-1)).collect();
        let labelled = !rows.is_empty() && gold.iter().all(|&g| g >= 0);
        let mut pred = Tensor::zeros([rows.len() as i64], (Kind::Int64, Device::Cpu));
        let mut loss = Tensor::zeros([1], (Kind::Double, Device::Cpu));
        if !shard.is_empty() {
            let logits = inference.logits(&shard)?;
            let index = Tensor::from_slice(&mine.iter().map(|&i| i as i64).collect::<Vec<_>>());
            let _ = pred.index_copy_(0, &index, &logits.argmax(-1, false));
            if labelled {
                let gold = Tensor::from_slice(&mine.iter().map(|&i| gold[i]).collect::<Vec<_>>());
                let sum = logits.cross_entropy_loss::<Tensor>(
                    &gold,
                    None,
                    tch::Reduction::Sum,
                    -100,
                    0.0,
                );
                loss = sum.to_kind(Kind::Double).reshape([1]);
            }
        }
        self.group.all_reduce_sum(&mut pred)?;
        self.group.all_reduce_sum(&mut loss)?;
        let pred: Vec<usize> = Vec::<i64>::try_from(pred)?
            .into_iter()
            .map(|p| p.max(0) as usize)
            .collect();
        let loss = labelled.then(|| f64::try_from(loss).unwrap_or(f64::NAN) / rows.len() as f64);
        let gold: Vec<usize> = gold.into_iter().map(|g| g.max(0) as usize).collect();
        Ok(Metrics::compute(labels, &gold, &pred, loss))
    }
}

/// This machine's name as its cluster knows it (`SLURMD_NODENAME`, which differs from the hostname
/// where several nodes share a host), else its hostname.
fn machine_name() -> String {
    if let Ok(node) = std::env::var("SLURMD_NODENAME") {
        return node;
    }
    let mut name = [0u8; 256];
    // SAFETY: the buffer is ours and its length is given; gethostname NUL-terminates within it.
    let got = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    match got {
        0 => String::from_utf8_lossy(&name[..end]).into_owned(),
        _ => "this machine".to_string(),
    }
}

fn shard<T>(rows: impl IntoIterator<Item = T>, rank: usize, world: usize) -> Vec<T> {
    rows.into_iter().skip(rank).step_by(world.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_of_a_batch_cover_it_once_whatever_its_size() {
        for n in 0..9 {
            let rows: Vec<usize> = (0..n).collect();
            for world in 1..5 {
                let mut all: Vec<usize> = (0..world)
                    .flat_map(|r| shard(rows.clone(), r, world))
                    .collect();
                all.sort_unstable();
                assert_eq!(all, rows, "{n} rows over {world} ranks");
            }
        }
        assert_eq!(shard([10, 11, 12, 13, 14], 1, 2), vec![11, 13]);
    }
}

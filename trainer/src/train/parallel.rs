//! Data parallelism: several ranks (processes, one per GPU or a share of the CPU) train one run, as
//! PyTorch's DistributedDataParallel does, over [`crate::collectives`].
//!
//! `train.batch_size` stays the run's batch, whatever the number of ranks: every rank draws the same
//! batches (the order is a function of seed and epoch) and computes every `world`-th row of each, so
//! a run is the same run with 1, 2 or 8 ranks, and resumes with any number. Each rank divides its
//! rows' summed loss by the whole step's gold answers (rows, or tokens for a token head), so summing the
//! gradients over the ranks gives the step's mean gradient exactly, uneven shards included (DDP divides by the world size, which is
//! exact only when every rank has as many rows). Clipping, loss scaling and the optimizer then see the
//! same gradients on every rank, and the weights stay equal without being sent again.
//!
//! Evaluation is shared too: each rank predicts its share of the dev set and the predictions are summed
//! into every rank's copy, so every rank computes the same metrics and takes the same early-stopping
//! decision; only rank 0 writes events, checkpoints and the summary.

use tch::{nn::VarStore, Device, Tensor};

use super::optimizer::AdamW;
use crate::collectives::{Group, Rank};
use crate::data::batch::Features;
use crate::metrics::Metrics;
use crate::predict::{score, Inference};
use crate::{Precision, Result};
use contracts::task::Task;

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

    /// The metrics of `rows`, each rank predicting its share: the predicted ids (a row's one, or one per
    /// token) are summed into every rank's table, so all score the same predictions.
    pub fn evaluate(
        &mut self,
        inference: &Inference<'_>,
        rows: &[Features],
        labels: &[String],
        task: Task,
    ) -> Result<Metrics> {
        let mine: Vec<usize> = self.shard(0..rows.len());
        let shard: Vec<Features> = mine.iter().map(|&i| rows[i].clone()).collect();
        let width = rows
            .iter()
            .map(|r| r.input_ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        // Ids + 1, so that the zeros of other ranks' rows and of positions past a row's end are no id.
        let mut table = vec![0i64; rows.len() * width];
        let mut loss = [0.0, 0.0, 1.0]; // (summed loss, answers, every share had gold)
        if !shard.is_empty() {
            let out = inference.run(&shard)?;
            for (&i, ids) in mine.iter().zip(out.predicted()) {
                for (k, id) in ids.into_iter().enumerate().take(width) {
                    table[i * width + k] = id as i64 + 1;
                }
            }
            loss = match out.loss {
                Some((sum, n)) => [sum, n as f64, 1.0],
                None => [0.0, 0.0, 0.0],
            };
        }
        let mut table = Tensor::from_slice(&table);
        self.group.all_reduce_sum(&mut table)?;
        let mut sums = Tensor::from_slice(&loss);
        self.group.all_reduce_sum(&mut sums)?;
        let sums = Vec::<f64>::try_from(sums)?;
        let table = Vec::<i64>::try_from(table)?;
        let pred: Vec<Vec<usize>> = table
            .chunks(width)
            .map(|row| {
                row.iter()
                    .take_while(|&&id| id > 0)
                    .map(|&id| id as usize - 1)
                    .collect()
            })
            .collect();
        let all_gold = !rows.is_empty() && sums[2] as usize == self.world();
        let loss = (all_gold && sums[1] > 0.0).then(|| sums[0] / sums[1]);
        Ok(score(task, labels, rows, &pred, loss))
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

//! Dropout, with the CPU mask drawn in parallel. libtorch's CPU dropout draws every element from one
//! mt19937 generator, on one thread, under its lock: for the attention probabilities of a nano-shaped batch
//! (`[32, 12, 128, 128]`) that costs about as much as the layer's matmuls, and `make bench-train` measured a
//! training step a third faster with attention dropout off. Here the mask is a pure function of a seed and
//! each element's position — the element's 16-bit lane of `splitmix64(seed + group · φ)` for groups of four
//! — so it is computed on libtorch's thread count in chunks and comes out identical whatever that count is.
//! The seed is drawn from libtorch's generator, so `tch::manual_seed` still fixes every mask (the trainer
//! seeds each step, which is what makes runs and resumed runs repeat bit for bit). On CUDA libtorch's own
//! dropout is used: its generator is not the bottleneck there.

use tch::{Device, Kind, Tensor};

/// Zeroes each element with probability `p` and scales the rest so that the expectation is unchanged, when
/// `train`; otherwise returns `x`. Differentiable in `x` (the gradient is the same mask).
pub fn dropout(x: &Tensor, p: f64, train: bool) -> Tensor {
    if !train || p <= 0.0 {
        return x.shallow_clone();
    }
    if x.device() != Device::Cpu {
        return x.dropout(p, true);
    }
    let Some(keep) = Keep::new(p) else {
        return x * 0.0;
    };
    let seed = Tensor::randint(i64::MAX, [1], (Kind::Int64, Device::Cpu)).int64_value(&[0]) as u64;
    let mask = mask(&x.size(), keep, seed);
    match x.kind() {
        Kind::Float => x * mask,
        kind => x * mask.to_kind(kind),
    }
}

/// The keep rule: an element is kept when its 16-bit lane is below `threshold`, and then multiplied by
/// `65536 / threshold`, the exact inverse of the keep probability, so that the mask's mean is 1.
#[derive(Clone, Copy, Debug)]
struct Keep {
    threshold: u64,
    scale: f32,
}

impl Keep {
    /// `None` when nothing would be kept (`p` within 2^-17 of 1).
    fn new(p: f64) -> Option<Keep> {
        let threshold = ((1.0 - p) * 65536.0).round().clamp(0.0, 65536.0) as u64;
        (threshold > 0).then(|| Keep {
            threshold,
            scale: (65536.0 / threshold as f64) as f32,
        })
    }
}

/// Elements per unit of parallel work: small enough to spread a `[B, S, H]` activation over the cores,
/// large enough that a thread's start-up is noise. A multiple of four.
const CHUNK: usize = 1 << 16;

/// A new Float tensor of `size` holding the mask for `seed`.
fn mask(size: &[i64], keep: Keep, seed: u64) -> Tensor {
    let mask = Tensor::empty(size, (Kind::Float, Device::Cpu));
    let n = mask.numel();
    if n == 0 {
        return mask;
    }
    // SAFETY: `mask` was just allocated as a contiguous Float tensor of `n` elements and nothing else
    // refers to its storage until this function returns it.
    let out = unsafe { std::slice::from_raw_parts_mut(mask.data_ptr() as *mut f32, n) };
    let threads = (tch::get_num_threads().max(1) as usize).min(n.div_ceil(CHUNK));
    fill(out, keep, seed, threads);
    mask
}

/// Fills `out` (element 0 being position 0) on `threads` threads.
fn fill(out: &mut [f32], keep: Keep, seed: u64, threads: usize) {
    if threads <= 1 {
        fill_from(out, 0, keep, seed);
        return;
    }
    // Each thread's share starts on a group boundary, so every group is drawn whole by one thread.
    let share = out.len().div_ceil(threads).next_multiple_of(4);
    std::thread::scope(|scope| {
        for (i, part) in out.chunks_mut(share).enumerate() {
            scope.spawn(move || fill_from(part, i * share, keep, seed));
        }
    });
}

/// Fills `out`, whose first element is at position `first` (a multiple of four) of the whole mask.
fn fill_from(out: &mut [f32], first: usize, keep: Keep, seed: u64) {
    const PHI: u64 = 0x9e37_79b9_7f4a_7c15;
    let first_group = (first / 4) as u64;
    for (j, group) in out.chunks_mut(4).enumerate() {
        let mut bits = splitmix64(seed.wrapping_add((first_group + j as u64).wrapping_mul(PHI)));
        for v in group {
            *v = if bits & 0xffff < keep.threshold {
                keep.scale
            } else {
                0.0
            };
            bits >>= 16;
        }
    }
}

/// The splitmix64 finaliser: a bijective mix whose output bits pass BigCrush as a counter-based generator.
fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(n: usize, p: f64, seed: u64, threads: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; n];
        fill(&mut out, Keep::new(p).unwrap(), seed, threads);
        out
    }

    #[test]
    fn the_mask_depends_on_seed_and_position_only() {
        let n = 3 * CHUNK + 7;
        let one = drawn(n, 0.1, 42, 1);
        assert_eq!(one, drawn(n, 0.1, 42, 2));
        assert_eq!(one, drawn(n, 0.1, 42, 5));
        assert_ne!(one, drawn(n, 0.1, 43, 1));
        assert!(one.iter().all(|v| v.is_finite()), "every element written");
    }

    #[test]
    fn keeps_the_asked_share_and_the_expectation() {
        for p in [0.1, 0.5, 0.9] {
            let n = 1 << 20;
            let m = drawn(n, p, 7, 2);
            let kept = m.iter().filter(|&&v| v > 0.0).count() as f64 / n as f64;
            // Four standard deviations of a binomial share.
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (kept - (1.0 - p)).abs() < 4.0 * sd + 1.0 / 65536.0,
                "p {p}: kept {kept}"
            );
            let mean = m.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            assert!(
                (mean - 1.0).abs() < 4.0 * sd / (1.0 - p) + 1e-4,
                "p {p}: mean {mean}"
            );
            // Neighbouring elements are not correlated (lanes of one draw, and successive draws).
            let both =
                m.windows(2).filter(|w| w[0] > 0.0 && w[1] > 0.0).count() as f64 / (n - 1) as f64;
            assert!(
                (both - kept * kept).abs() < 0.01,
                "p {p}: pairs {both} vs {}",
                kept * kept
            );
        }
    }

    #[test]
    fn is_seeded_by_libtorch_and_differentiable() {
        let x = Tensor::ones([64, 300], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        tch::manual_seed(3);
        let a = dropout(&x, 0.25, true);
        tch::manual_seed(3);
        let b = dropout(&x, 0.25, true);
        assert!(a.equal(&b), "the same libtorch seed gives the same mask");
        assert!(!a.equal(&dropout(&x, 0.25, true)), "the next draw differs");
        a.sum(Kind::Float).backward();
        assert!(x.grad().equal(&a.detach()), "the gradient is the mask");
        assert!(dropout(&x, 0.25, false).equal(&x));
        assert!(dropout(&x, 0.0, true).equal(&x));
        assert_eq!(
            dropout(&x, 1.0, true)
                .abs()
                .sum(Kind::Float)
                .double_value(&[]),
            0.0
        );
        let half = x.to_kind(Kind::BFloat16);
        assert_eq!(dropout(&half, 0.5, true).kind(), Kind::BFloat16);
    }
}

//! `auto` precision: time one layer of the run's own model in float32 and in bfloat16, and keep bf16 only
//! where it pays (`contracts::precision`). Asked precisions are checked as before
//! ([`Precision::check`]); this module adds the measured choice and the record of why.
//!
//! One layer stands for the model because every layer of an ERNIE encoder has the same shape: the ratio
//! of one is the ratio of twelve, at a twelfth of the cost (a few hundred milliseconds at start).

use std::time::Instant;

use contracts::precision::{PrecisionChoice, PrecisionProbe, PrecisionReason, Work};
use tch::{nn, Device, Kind, Tensor};

use crate::{ErnieConfig, ErnieModel, Error, Inputs, Precision, Result};

/// Timed batches per precision: a median of three survives one noisy neighbour.
pub const BATCHES: usize = 3;

/// The precision a run asked for (`auto`, `fp32`, `bf16`, `fp16`) made into the one it runs in, on
/// `device`; `measure` is called only where `auto` has something to decide.
pub fn choose(
    asked: &str,
    device: Device,
    measure: impl FnOnce() -> Result<PrecisionProbe>,
) -> Result<(Precision, PrecisionChoice)> {
    let gpu = match device {
        Device::Cuda(i) => hostcaps::cuda::device_compute_capability(i),
        _ => None,
    };
    choose_with(asked, device, hostcaps::cpu::bf16(), gpu.as_ref(), measure)
}

/// [`choose`] on a CPU of bf16 tier `cpu` and a GPU of compute capability `gpu`, whatever this machine
/// has: the tests walk every branch with it.
pub fn choose_with(
    asked: &str,
    device: Device,
    cpu: hostcaps::cpu::Bf16,
    gpu: Option<&hostcaps::cuda::Version>,
    measure: impl FnOnce() -> Result<PrecisionProbe>,
) -> Result<(Precision, PrecisionChoice)> {
    let record = |precision: Precision, reason, probe| PrecisionChoice {
        asked: asked.trim().to_ascii_lowercase(),
        precision: precision.as_str().into(),
        cpu_bf16: cpu.name().into(),
        reason,
        probe,
    };
    if !asked.trim().eq_ignore_ascii_case("auto") {
        let precision = Precision::parse(asked)?;
        precision.check_with(device, cpu.is_native(), gpu)?;
        return Ok((precision, record(precision, PrecisionReason::Asked, None)));
    }
    let ampere = hostcaps::cuda::Version::from_parts(&[8, 0]);
    let skip = match device {
        Device::Cuda(_) if gpu.is_some_and(|cc| *cc < ampere) => {
            Some(PrecisionReason::GpuBeforeAmpere)
        }
        Device::Cuda(_) => None,
        _ if !cpu.is_native() => Some(PrecisionReason::NoNativeBf16),
        _ => None,
    };
    if let Some(reason) = skip {
        return Ok((Precision::Fp32, record(Precision::Fp32, reason, None)));
    }
    let probe = measure()?;
    let precision = if probe.bf16_pays() {
        Precision::Bf16
    } else {
        Precision::Fp32
    };
    Ok((
        precision,
        record(precision, PrecisionReason::Measured, Some(probe)),
    ))
}

/// A resumed `auto` run's precision: what its first part ran in (`ran`, from its saved state), checked
/// again on this device.
pub fn resumed(ran: &str, device: Device) -> Result<(Precision, PrecisionChoice)> {
    let precision = Precision::parse(ran)?;
    precision.check(device)?;
    Ok((
        precision,
        PrecisionChoice {
            asked: "auto".into(),
            precision: precision.as_str().into(),
            cpu_bf16: hostcaps::cpu::bf16().name().into(),
            reason: PrecisionReason::Resumed,
            probe: None,
        },
    ))
}

/// One line for the run's log (the pages say it in the reader's language from the same record).
pub fn describe(choice: &PrecisionChoice) -> String {
    let why = match (choice.reason, &choice.probe) {
        (PrecisionReason::Asked, _) => "asked".to_string(),
        (PrecisionReason::Resumed, _) => "auto, kept from the run resumed".to_string(),
        (PrecisionReason::NoNativeBf16, _) => {
            "auto: this CPU has no bfloat16 instructions".to_string()
        }
        (PrecisionReason::GpuBeforeAmpere, _) => {
            "auto: bfloat16 is emulated on GPUs before Ampere".to_string()
        }
        (PrecisionReason::Measured, None) => "auto, measured".to_string(),
        (PrecisionReason::Measured, Some(probe)) => format!(
            "auto: one layer (hidden {}, batch {}×{} tokens, {}) took {:.1} ms in fp32 and {:.1} ms in \
             bf16 on the {}: bf16 {:.2}× fp32, kept only from {:.1}×",
            probe.hidden_size,
            probe.batch,
            probe.seq_len,
            probe.work.name(),
            probe.fp32_ms,
            probe.bf16_ms,
            probe.device,
            probe.speedup(),
            contracts::precision::BF16_MIN_SPEEDUP,
        ),
    };
    format!(
        "precision: {} ({why}; CPU bfloat16: {})",
        choice.precision, choice.cpu_bf16
    )
}

/// The largest batch the probe times: the ratio of bf16 to float32 settles well below the batches runs
/// use (a 768-wide layer on 1,024 tokens is already matmul-bound), while the cost grows with them.
pub const MAX_ROWS: usize = 8;
pub const MAX_TOKENS: usize = 128;

/// Times `batches` batches of `batch` rows (at most [`MAX_ROWS`]) of `seq_len` tokens (at most
/// [`MAX_TOKENS`] and the model's positions) through one layer of `config`'s shape on `device`, in
/// float32 and in bfloat16, the way `work` runs them: inference casts the weights once and runs without
/// gradients (as `serve-model` does); training runs forward and backward under autocast on float32
/// weights (as `train` does). The weights are random: speed does not depend on their values.
pub fn measure(
    config: &ErnieConfig,
    batch: usize,
    seq_len: usize,
    work: Work,
    device: Device,
    batches: usize,
) -> Result<PrecisionProbe> {
    let mut c = config.clone();
    c.num_hidden_layers = 1;
    // The embedding table's size does not change the layer's speed; a small one keeps the probe small.
    c.vocab_size = c.vocab_size.clamp(8, 4096);
    c.pad_token_id = 0;
    let seq_len = seq_len
        .min(MAX_TOKENS)
        .clamp(2, c.max_position_embeddings.max(2));
    let batch = batch.clamp(1, MAX_ROWS);
    let batches = batches.max(1);
    tch::manual_seed(0);
    let mut vs = nn::VarStore::new(device);
    // The encoder's full forward: a classifier computes its last layer for `[CLS]` only, which on a
    // one-layer probe would leave the feed-forward matmuls, the largest, out of the timing.
    let model = ErnieModel::new(&vs.root().sub(c.base_prefix()), &c);
    let shape = [batch as i64, seq_len as i64];
    let ids = Tensor::randint(c.vocab_size as i64, shape, (Kind::Int64, device));
    let mask = Tensor::ones(shape, (Kind::Int64, device));
    let inputs = Inputs {
        input_ids: &ids,
        attention_mask: &mask,
        token_type_ids: None,
        task_type_ids: None,
    };
    let (fp32_ms, bf16_ms) = match work {
        Work::Serve => {
            let forward = || {
                let _ = tch::no_grad(|| model.forward_t(inputs, false));
            };
            let fp32 = median_ms(device, batches, forward)?;
            vs.bfloat16();
            let bf16 = median_ms(device, batches, forward)?;
            (fp32, bf16)
        }
        Work::Train => {
            let variables = vs.trainable_variables();
            let (model, variables) = (&model, &variables);
            let step = |precision: Precision| {
                move || -> Result<()> {
                    let out = precision.autocast(device, || model.forward_t(inputs, true))?;
                    // Any scalar of every output reaches every weight; its value does not matter.
                    out.sequence_output
                        .to_kind(Kind::Float)
                        .mean(Kind::Float)
                        .backward();
                    for v in variables {
                        let mut grad = v.grad();
                        if grad.defined() {
                            let _ = grad.zero_();
                        }
                    }
                    Ok(())
                }
            };
            let fp32 = median_ms_fallible(device, batches, step(Precision::Fp32))?;
            let bf16 = median_ms_fallible(device, batches, step(Precision::Bf16))?;
            (fp32, bf16)
        }
    };
    Ok(PrecisionProbe {
        work,
        device: if device.is_cuda() { "cuda" } else { "cpu" }.into(),
        hidden_size: c.hidden_size,
        num_attention_heads: c.num_attention_heads,
        intermediate_size: c.intermediate_size,
        batch,
        seq_len,
        batches,
        fp32_ms,
        bf16_ms,
    })
}

fn median_ms(device: Device, batches: usize, mut f: impl FnMut()) -> Result<f64> {
    median_ms_fallible(device, batches, || {
        f();
        Ok(())
    })
}

/// One untimed call (the first allocates and picks kernels), then the median of `batches` timed ones.
fn median_ms_fallible(
    device: Device,
    batches: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let sync = || {
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    f()?;
    sync();
    let mut times = Vec::with_capacity(batches);
    for _ in 0..batches {
        let start = Instant::now();
        f()?;
        sync();
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    times
        .get(times.len() / 2)
        .copied()
        .ok_or_else(|| Error::Config("no batch was timed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostcaps::cpu::Bf16;

    fn probe(fp32_ms: f64, bf16_ms: f64) -> PrecisionProbe {
        PrecisionProbe::base_layer(Work::Serve, fp32_ms, bf16_ms)
    }

    fn never() -> Result<PrecisionProbe> {
        panic!("nothing to measure here")
    }

    /// Every tier, on any machine: `auto` measures only where bf16 runs natively, and follows the
    /// measurement, not the tier.
    #[test]
    fn auto_measures_where_bf16_is_native_and_follows_the_figures() {
        let (p, why) = choose_with("auto", Device::Cpu, Bf16::None, None, never).unwrap();
        assert_eq!(
            (p, why.reason),
            (Precision::Fp32, PrecisionReason::NoNativeBf16)
        );
        for tier in [Bf16::Avx512, Bf16::Amx] {
            let (p, why) =
                choose_with("AUTO", Device::Cpu, tier, None, || Ok(probe(10.0, 16.0))).unwrap();
            assert_eq!(
                (p, why.precision.as_str()),
                (Precision::Fp32, "fp32"),
                "{tier:?}"
            );
            assert_eq!(
                (why.asked.as_str(), why.cpu_bf16.as_str()),
                ("auto", tier.name())
            );
            let (p, why) =
                choose_with("auto", Device::Cpu, tier, None, || Ok(probe(25.0, 10.0))).unwrap();
            assert_eq!(p, Precision::Bf16, "{tier:?}");
            assert_eq!(why.reason, PrecisionReason::Measured);
            assert_eq!(why.probe.map(|p| p.bf16_ms), Some(10.0));
        }
    }

    #[test]
    fn auto_on_a_gpu_before_ampere_is_float32_without_measuring() {
        let volta = hostcaps::cuda::Version::from_parts(&[7, 0]);
        let (p, why) =
            choose_with("auto", Device::Cuda(0), Bf16::None, Some(&volta), never).unwrap();
        assert_eq!(
            (p, why.reason),
            (Precision::Fp32, PrecisionReason::GpuBeforeAmpere)
        );
        let ampere = hostcaps::cuda::Version::from_parts(&[8, 6]);
        let (p, _) = choose_with("auto", Device::Cuda(0), Bf16::None, Some(&ampere), || {
            Ok(probe(10.0, 4.0))
        })
        .unwrap();
        assert_eq!(p, Precision::Bf16);
    }

    #[test]
    fn an_asked_precision_is_checked_as_before_and_recorded_as_asked() {
        let (p, why) = choose_with("bf16", Device::Cpu, Bf16::Avx512, None, never).unwrap();
        assert_eq!((p, why.reason), (Precision::Bf16, PrecisionReason::Asked));
        let err = choose_with("bf16", Device::Cpu, Bf16::None, None, never).unwrap_err();
        assert!(err.to_string().contains("AVX512-BF16"), "{err}");
        assert!(choose_with("fp8", Device::Cpu, Bf16::Amx, None, never).is_err());
    }

    /// A real measurement on this machine's libtorch, in both ways of working: whatever the CPU, both
    /// precisions run (libtorch emulates bf16 where it must) and take measurable time.
    #[test]
    fn one_layer_is_timed_in_both_precisions_for_both_kinds_of_work() {
        let config = ErnieConfig::preset("nano", 1000, 2).unwrap();
        for work in [Work::Serve, Work::Train] {
            let p = measure(&config, 4, 32, work, Device::Cpu, 2).unwrap();
            assert_eq!((p.work, p.batch, p.seq_len, p.batches), (work, 4, 32, 2));
            assert_eq!(p.hidden_size, config.hidden_size);
            assert!(p.fp32_ms > 0.0 && p.bf16_ms > 0.0, "{p:?}");
        }
        let big = measure(&config, 1_000, 1_000_000, Work::Serve, Device::Cpu, 1).unwrap();
        assert_eq!(
            (big.batch, big.seq_len),
            (MAX_ROWS, MAX_TOKENS.min(config.max_position_embeddings))
        );
    }
}

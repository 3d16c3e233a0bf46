//! Which numeric precision a run uses when it was asked for `auto`, and the measurement that decided it.
//!
//! bfloat16 is faster than float32 only on some hardware (AMX tiles on the CPU, Ampere and later GPUs):
//! on a CPU with AVX512-BF16 but no AMX it was measured at 0.57–0.85× of float32 (issue 34). So `auto`
//! does not decide from a flag list: the run times a few batches of one layer of its own model, at its
//! own batch size and length, in both precisions, and keeps bf16 only when it is at least
//! [`BF16_MIN_SPEEDUP`] times as fast. The choice travels in the job's `start` event and in a replica's
//! `/health`, and the job and endpoint pages show it with its figures.

use serde::{Deserialize, Serialize};

/// What `auto` asks of bf16 before choosing it: a margin over noise, since a bf16 that merely ties
/// float32 costs accuracy for nothing.
pub const BF16_MIN_SPEEDUP: f64 = 1.1;

/// The precision values a job or an endpoint may ask for; `auto` measures at start.
pub const CHOICES: [&str; 4] = ["auto", "fp32", "bf16", "fp16"];

/// What is timed: inference (weights cast once, no gradients) or a training step (forward and
/// backward under autocast).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Work {
    Serve,
    Train,
}

impl Work {
    pub fn name(self) -> &'static str {
        match self {
            Work::Serve => "serve",
            Work::Train => "train",
        }
    }
}

/// One measurement: the median time of a batch of one encoder layer in each precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrecisionProbe {
    pub work: Work,
    /// `cpu` or `cuda`.
    pub device: String,
    /// The model's hidden size, heads and feed-forward size the layer was built with.
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    /// Rows and tokens per row of each timed batch.
    pub batch: usize,
    pub seq_len: usize,
    /// Timed batches per precision (after one untimed warm-up each).
    pub batches: usize,
    pub fp32_ms: f64,
    pub bf16_ms: f64,
}

impl PrecisionProbe {
    /// A measurement of one ERNIE 3.0 base layer (768 wide, 12 heads, feed-forward 3072) on 8 rows of
    /// 128 tokens with the given times: the advice's shape, and the example the crates' tests share.
    pub fn base_layer(work: Work, fp32_ms: f64, bf16_ms: f64) -> PrecisionProbe {
        PrecisionProbe {
            work,
            device: "cpu".into(),
            hidden_size: 768,
            num_attention_heads: 12,
            intermediate_size: 3072,
            batch: 8,
            seq_len: 128,
            batches: 3,
            fp32_ms,
            bf16_ms,
        }
    }

    /// How many times faster bf16 ran than float32 (below 1: slower).
    pub fn speedup(&self) -> f64 {
        if self.bf16_ms > 0.0 {
            self.fp32_ms / self.bf16_ms
        } else {
            0.0
        }
    }

    /// Whether bf16 pays by the rule `auto` follows.
    pub fn bf16_pays(&self) -> bool {
        self.speedup() >= BF16_MIN_SPEEDUP
    }
}

/// Why a run uses the precision it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PrecisionReason {
    /// The job or endpoint named it.
    Asked,
    /// `auto`, decided by the measurement (`PrecisionChoice::probe`).
    Measured,
    /// `auto` on a CPU without bfloat16 instructions: nothing to measure, float32.
    NoNativeBf16,
    /// `auto` on a GPU before Ampere (compute capability below 8.0): bf16 is emulated there.
    GpuBeforeAmpere,
    /// `auto` in a resumed run: what its first part measured, so that the steps replay.
    Resumed,
}

/// The precision a run uses and why, as the run reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrecisionChoice {
    /// What the job or endpoint asked for (`auto`, `fp32`, `bf16`, `fp16`).
    pub asked: String,
    /// What runs: `fp32`, `bf16` or `fp16`.
    pub precision: String,
    /// The CPU's bfloat16 tier where the run started: `amx`, `avx512_bf16` or `none`.
    pub cpu_bf16: String,
    pub reason: PrecisionReason,
    /// The measurement, when `reason` is `measured`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<PrecisionProbe>,
}

/// What the forms start from on this server: the CPU's tier, a measurement made at first use (one layer
/// of ERNIE 3.0 base, the shape most teams fine-tune), and the default that follows from both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrecisionAdvice {
    /// `amx`, `avx512_bf16` or `none`.
    pub cpu_bf16: String,
    /// The form's default: `auto` where bf16 was measured to pay, else `fp32`.
    pub default: String,
    /// `None` where nothing was measured (no bf16 instructions) or the measurement failed.
    pub probe: Option<PrecisionProbe>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(fp32_ms: f64, bf16_ms: f64) -> PrecisionProbe {
        PrecisionProbe::base_layer(Work::Serve, fp32_ms, bf16_ms)
    }

    #[test]
    fn bf16_pays_only_past_the_margin() {
        assert!(probe(25.0, 10.0).bf16_pays());
        assert!(probe(11.0, 10.0).bf16_pays());
        assert!(
            !probe(10.5, 10.0).bf16_pays(),
            "a tie within noise is not a win"
        );
        assert!(!probe(10.0, 16.0).bf16_pays());
        assert!(
            !probe(10.0, 0.0).bf16_pays(),
            "a broken measurement never picks bf16"
        );
    }

    #[test]
    fn a_choice_reads_back_with_its_reason_beside_its_fields() {
        let choice = PrecisionChoice {
            asked: "auto".into(),
            precision: "fp32".into(),
            cpu_bf16: "avx512_bf16".into(),
            reason: PrecisionReason::Measured,
            probe: Some(probe(10.0, 16.0)),
        };
        let json = serde_json::to_value(&choice).unwrap();
        assert_eq!(json["reason"], "measured");
        assert_eq!(json["probe"]["bf16_ms"], 16.0);
        assert_eq!(
            serde_json::from_value::<PrecisionChoice>(json).unwrap(),
            choice
        );
    }
}

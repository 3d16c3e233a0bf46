//! What the job and deploy forms offer as their precision on this server: `auto` where bf16 was measured
//! to pay here, float32 where it was not or cannot run natively (issue 34: with AVX512-BF16 and no AMX,
//! bf16 served at 0.57–0.85× of float32 on a Xeon VM and at 1.13–1.72× on an AMD EPYC: the flags alone
//! cannot tell).
//!
//! The measurement is `paddock probe-precision` (one layer of ERNIE 3.0 base, 8 rows of 128 tokens, the
//! way runs time their own model for `auto`), made at first use, once per kind of work, and kept for the
//! server's life: the CPU does not change under a running server. It runs as a child under the limits of
//! every process the server starts, so a failure is a form without figures, never a server without
//! memory — and a failure is not kept: a child killed on a busy machine must not decide the forms'
//! default until the next restart, so it is measured again once [`RETRY_AFTER`] has passed. Runs
//! themselves still measure their own shape when they are asked for `auto`.

use std::future::Future;
use std::time::{Duration, Instant};

use contracts::precision::{PrecisionAdvice, PrecisionProbe, Work};
use tokio::sync::Mutex;

use crate::storage::Storage;

/// How long a failed measurement's advice (float32, no figures) stands before it is measured again.
pub const RETRY_AFTER: Duration = Duration::from_secs(10 * 60);

/// The advice per kind of work, measured once each when it succeeds.
#[derive(Debug, Default)]
pub struct Advisor {
    serve: Slot,
    train: Slot,
}

/// One kind of work's advice. Behind a lock held while measuring: callers that arrive meanwhile wait
/// for the one measurement.
#[derive(Debug, Default)]
struct Slot(Mutex<Option<Kept>>);

#[derive(Debug)]
struct Kept {
    advice: PrecisionAdvice,
    /// When a failed measurement is tried again; `None`: kept for good.
    retry_at: Option<Instant>,
}

impl Advisor {
    /// This server's advice for `work`, measuring it first if nobody has asked before (or the last
    /// measurement failed more than [`RETRY_AFTER`] ago).
    pub async fn advice(&self, storage: &Storage, work: Work) -> PrecisionAdvice {
        let slot = match work {
            Work::Serve => &self.serve,
            Work::Train => &self.train,
        };
        slot.advice(hostcaps::cpu::bf16(), RETRY_AFTER, || {
            measure(storage, work)
        })
        .await
    }
}

impl Slot {
    /// The kept advice, or `measure`'s where there is none to keep (measured only where the CPU runs
    /// bf16 natively: elsewhere float32 is the answer without a figure).
    async fn advice<F: Future<Output = Option<PrecisionProbe>>>(
        &self,
        cpu: hostcaps::cpu::Bf16,
        retry_after: Duration,
        measure: impl FnOnce() -> F,
    ) -> PrecisionAdvice {
        let mut kept = self.0.lock().await;
        if let Some(k) = kept.as_ref() {
            if k.retry_at.is_none_or(|at| Instant::now() < at) {
                return k.advice.clone();
            }
        }
        let probe = if cpu.is_native() {
            measure().await
        } else {
            None
        };
        let failed = cpu.is_native() && probe.is_none();
        let advice = advise(cpu, probe);
        *kept = Some(Kept {
            advice: advice.clone(),
            retry_at: failed.then(|| Instant::now() + retry_after),
        });
        advice
    }
}

/// The default that follows from the CPU's tier and the measurement: `auto` only where bf16 runs
/// natively and was measured to pay.
pub fn advise(cpu: hostcaps::cpu::Bf16, probe: Option<PrecisionProbe>) -> PrecisionAdvice {
    let pays = cpu.is_native() && probe.as_ref().is_some_and(PrecisionProbe::bf16_pays);
    PrecisionAdvice {
        cpu_bf16: cpu.name().into(),
        default: if pays { "auto" } else { "fp32" }.into(),
        probe,
    }
}

async fn measure(storage: &Storage, work: Work) -> Option<PrecisionProbe> {
    let args = ["probe-precision", "--json", "--work", work.name()];
    let probe = match storage.run_trainer(args, 0).await {
        Ok(Ok(stdout)) => {
            serde_json::from_slice::<PrecisionProbe>(&stdout).map_err(|e| e.to_string())
        }
        Ok(Err(failure)) => Err(format!("{failure:?}")),
        Err(e) => Err(e.to_string()),
    };
    match probe {
        Ok(probe) => {
            tracing::info!(
                work = work.name(),
                fp32_ms = probe.fp32_ms,
                bf16_ms = probe.bf16_ms,
                "bf16 measured against float32 for the forms' default"
            );
            Some(probe)
        }
        Err(why) => {
            tracing::warn!(work = work.name(), %why, "bf16 could not be measured; the forms offer fp32");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostcaps::cpu::Bf16;

    fn probe(fp32_ms: f64, bf16_ms: f64) -> PrecisionProbe {
        PrecisionProbe::base_layer(Work::Serve, fp32_ms, bf16_ms)
    }

    /// Every tier and outcome, on any machine: AMX alone does not make the default, the figures do.
    #[test]
    fn the_default_is_auto_only_where_bf16_was_measured_to_pay() {
        for (cpu, measured, default) in [
            (Bf16::Amx, Some(probe(30.0, 10.0)), "auto"),
            (Bf16::Amx, Some(probe(10.0, 10.0)), "fp32"),
            (Bf16::Amx, None, "fp32"),
            (Bf16::Avx512, Some(probe(10.0, 16.0)), "fp32"),
            (Bf16::Avx512, Some(probe(30.0, 10.0)), "auto"),
            (Bf16::None, Some(probe(30.0, 10.0)), "fp32"),
            (Bf16::None, None, "fp32"),
        ] {
            let advice = advise(cpu, measured.clone());
            assert_eq!(advice.default, default, "{cpu:?} {measured:?}");
            assert_eq!(advice.cpu_bf16, cpu.name());
        }
    }

    /// A measurement that failed is made again once its retry time has passed, and one that worked is
    /// kept; a CPU without native bf16 is never measured.
    #[tokio::test]
    async fn a_failed_measurement_is_tried_again_and_a_good_one_kept() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let outcomes = [None, Some(probe(30.0, 10.0))];
        let measure = || async {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            outcomes.get(n).cloned().flatten()
        };
        let slot = Slot::default();
        // Failed, and not tried again within its retry time.
        let hour = Duration::from_secs(3600);
        assert_eq!(slot.advice(Bf16::Amx, hour, measure).await.default, "fp32");
        assert_eq!(slot.advice(Bf16::Amx, hour, measure).await.default, "fp32");
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Past it (a retry time of zero): measured again, and the good measurement is kept.
        let slot = Slot::default();
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            slot.advice(Bf16::Amx, Duration::ZERO, measure)
                .await
                .default,
            "fp32"
        );
        assert_eq!(
            slot.advice(Bf16::Amx, Duration::ZERO, measure)
                .await
                .default,
            "auto"
        );
        assert_eq!(
            slot.advice(Bf16::Amx, Duration::ZERO, measure)
                .await
                .default,
            "auto"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        // No native bf16: float32, nothing measured.
        let slot = Slot::default();
        assert_eq!(
            slot.advice(Bf16::None, Duration::ZERO, measure)
                .await
                .default,
            "fp32"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}

//! What the job and deploy forms offer as their precision on this server: `auto` where bf16 was measured
//! to pay here, float32 where it was not or cannot run natively (issue 34: on a CPU with AVX512-BF16 but
//! no AMX, bf16 served at 0.57–0.85× of float32).
//!
//! The measurement is `paddock probe-precision` (one layer of ERNIE 3.0 base, 8 rows of 128 tokens, the
//! way runs time their own model for `auto`), made at first use, once per kind of work, and kept for the
//! server's life: the CPU does not change under a running server. It runs as a child under the limits of
//! every process the server starts, so a failure is a form without figures, never a server without
//! memory. Runs themselves still measure their own shape when they are asked for `auto`.

use contracts::precision::{PrecisionAdvice, PrecisionProbe, Work};
use tokio::sync::OnceCell;

use crate::storage::Storage;

/// The advice per kind of work, measured at most once each.
#[derive(Debug, Default)]
pub struct Advisor {
    serve: OnceCell<PrecisionAdvice>,
    train: OnceCell<PrecisionAdvice>,
}

impl Advisor {
    /// This server's advice for `work`, measuring it first if nobody has asked before. Callers that
    /// arrive while it is measured wait for the one measurement.
    pub async fn advice(&self, storage: &Storage, work: Work) -> PrecisionAdvice {
        let cell = match work {
            Work::Serve => &self.serve,
            Work::Train => &self.train,
        };
        cell.get_or_init(|| async {
            let cpu = hostcaps::cpu::bf16();
            let probe = if cpu.is_native() {
                measure(storage, work).await
            } else {
                None
            };
            advise(cpu, probe)
        })
        .await
        .clone()
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
}

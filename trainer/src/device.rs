//! Device and numeric-precision selection for training and inference: `auto` / `cpu` / `cuda` / `cuda:N`
//! requests, and the mixed-precision mode (fp32, fp16 autocast with loss scaling on CUDA).

use tch::Device;

use crate::{Error, Result};

/// Resolves a device request: `auto` (first CUDA device when present, else CPU), `cpu`, `cuda`, `cuda:N`.
pub fn pick_device(request: &str) -> Result<Device> {
    let request = request.trim().to_ascii_lowercase();
    let cuda_count = || {
        if tch::Cuda::is_available() {
            tch::Cuda::device_count() as usize
        } else {
            0
        }
    };
    match request.as_str() {
        "auto" | "" => Ok(if cuda_count() > 0 {
            Device::Cuda(0)
        } else {
            Device::Cpu
        }),
        "cpu" => Ok(Device::Cpu),
        "cuda" | "gpu" => {
            if cuda_count() == 0 {
                return Err(Error::Config(
                    "device `cuda` requested but no CUDA device is available".into(),
                ));
            }
            Ok(Device::Cuda(0))
        }
        other => {
            let Some(index) = other.strip_prefix("cuda:") else {
                return Err(Error::Config(format!(
                    "device `{other}` is not one of auto, cpu, cuda, cuda:N"
                )));
            };
            let index: usize = index.parse().map_err(|_| {
                Error::Config(format!("device `{other}`: `{index}` is not a device index"))
            })?;
            let count = cuda_count();
            if index >= count {
                return Err(Error::Config(format!(
                    "device `{other}` requested but {count} CUDA device(s) are available"
                )));
            }
            Ok(Device::Cuda(index))
        }
    }
}

/// Numeric precision of the forward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    /// Everything in float32 (the only choice on CPU).
    #[default]
    Fp32,
    /// CUDA autocast to float16; the loss must be scaled to keep small gradients representable.
    Fp16,
    /// bfloat16. tch 0.26 exposes autocast only with libtorch's default float16 dtype, so this mode is
    /// accepted by the parser but refused by [`Precision::check`] until autocast dtype control exists.
    Bf16,
}

impl Precision {
    /// Parses `fp32`/`float32`, `fp16`/`float16`/`half`, `bf16`/`bfloat16`.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "float32" | "f32" => Ok(Precision::Fp32),
            "fp16" | "float16" | "f16" | "half" => Ok(Precision::Fp16),
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            other => Err(Error::Config(format!(
                "precision `{other}` is not one of fp32, fp16, bf16"
            ))),
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
        }
    }

    /// Refuses combinations that cannot run: half precision needs CUDA.
    pub fn check(&self, device: Device) -> Result<()> {
        match (self, device) {
            (Precision::Fp32, _) => Ok(()),
            (Precision::Fp16, Device::Cuda(_)) => Ok(()),
            (Precision::Bf16, Device::Cuda(_)) => Err(Error::Config(
                "precision bf16: tch 0.26 cannot select the bfloat16 autocast dtype; use fp16 or fp32".into(),
            )),
            (p, d) => Err(Error::Config(format!("precision {} needs a CUDA device, not {d:?}", p.as_str()))),
        }
    }

    /// Whether the loss should be scaled (fp16 gradients underflow without it).
    pub fn needs_loss_scaling(&self) -> bool {
        *self == Precision::Fp16
    }

    /// Runs `f` (a forward pass) under autocast when this precision asks for it.
    pub fn autocast<T>(&self, f: impl FnOnce() -> T) -> T {
        match self {
            Precision::Fp32 => f(),
            Precision::Fp16 | Precision::Bf16 => tch::autocast(true, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests() {
        assert_eq!(pick_device("cpu").unwrap(), Device::Cpu);
        assert!(pick_device("tpu").unwrap_err().to_string().contains("tpu"));
        assert!(pick_device("cuda:x").is_err());
        assert_eq!(Precision::parse("FP16").unwrap(), Precision::Fp16);
        assert!(Precision::parse("int8").is_err());
        assert!(Precision::Fp16.check(Device::Cpu).is_err());
        assert!(Precision::Fp32.check(Device::Cpu).is_ok());
    }
}

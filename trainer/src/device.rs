//! Device and numeric-precision selection for training and inference: `auto` / `cpu` / `cuda` / `cuda:N`
//! requests, and the mixed-precision mode (fp32; fp16 autocast with loss scaling on CUDA; bf16 autocast on
//! CUDA or on CPUs with native bfloat16).

use tch::Device;

use crate::{Error, Result};

/// Resolves a device request: `auto` (first CUDA device when present, else CPU), `cpu`, `cuda`, `cuda:N`.
pub fn pick_device(request: &str) -> Result<Device> {
    let request = request.trim().to_ascii_lowercase();
    let cuda_count = || {
        if !hostcaps::is_hidden(hostcaps::Capability::Cuda) && tch::Cuda::is_available() {
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
    /// Everything in float32.
    #[default]
    Fp32,
    /// CUDA autocast to float16; the loss must be scaled to keep small gradients representable.
    Fp16,
    /// Autocast to bfloat16, on CUDA or on a CPU with native bfloat16 instructions (AVX512-BF16, and AMX
    /// where present), where matmuls run several times faster than in float32. bfloat16 has float32's
    /// exponent range, so no loss scaling is needed.
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

    /// Refuses combinations that cannot run well: fp16 needs CUDA; bf16 needs CUDA or a CPU with native
    /// bfloat16 instructions (elsewhere libtorch emulates it, slower than float32).
    pub fn check(&self, device: Device) -> Result<()> {
        self.check_with(device, hostcaps::cpu_bf16())
    }

    /// [`Precision::check`] on a CPU that has native bfloat16 or not (`cpu_bf16`), whatever this one has.
    pub fn check_with(&self, device: Device, cpu_bf16: bool) -> Result<()> {
        match (self, device) {
            (Precision::Fp32, _) | (_, Device::Cuda(_)) => Ok(()),
            (Precision::Bf16, Device::Cpu) if cpu_bf16 => Ok(()),
            (Precision::Bf16, Device::Cpu) => Err(Error::Config(
                "precision bf16 on the CPU needs AVX512-BF16 instructions, which this CPU lacks; use fp32 or a GPU".into(),
            )),
            (p, d) => Err(Error::Config(format!("precision {} needs a CUDA device, not {d:?}", p.as_str()))),
        }
    }

    /// Whether the loss should be scaled (fp16 gradients underflow without it).
    pub fn needs_loss_scaling(&self) -> bool {
        *self == Precision::Fp16
    }

    /// Runs `f` (a forward pass on `device`) under autocast when this precision asks for it. Matmuls,
    /// linear layers and attention then run in the reduced type while libtorch keeps losses, softmax and
    /// normalisations in float32; the backward pass follows the types of the forward, so it needs no
    /// autocast of its own.
    pub fn autocast<T>(&self, device: Device, f: impl FnOnce() -> T) -> Result<T> {
        if *self == Precision::Fp32 {
            return Ok(f());
        }
        let _guard = AutocastGuard::enter(device, *self == Precision::Bf16)?;
        Ok(f())
    }
}

unsafe extern "C" {
    fn paddock_autocast_enter(
        cuda: i32,
        bf16: i32,
        prev_enabled: *mut i32,
        prev_dtype: *mut i32,
        err: *mut std::os::raw::c_char,
        err_len: usize,
    ) -> i32;
    fn paddock_autocast_exit(cuda: i32, prev_enabled: i32, prev_dtype: i32);
}

/// One autocast scope (`csrc/autocast.cpp`): autocast state is thread-local in libtorch, and the guard
/// restores it on drop, also when the forward pass panics.
struct AutocastGuard {
    cuda: i32,
    prev_enabled: i32,
    prev_dtype: i32,
}

impl AutocastGuard {
    /// `bf16`: bfloat16, else float16.
    fn enter(device: Device, bf16: bool) -> Result<Self> {
        let cuda = i32::from(device.is_cuda());
        let (mut prev_enabled, mut prev_dtype) = (0, 0);
        let mut err = [0 as std::os::raw::c_char; 512];
        // SAFETY: the out-pointers and the message buffer live for the call; the shim catches every
        // C++ exception and writes at most `err.len()` bytes, NUL included.
        let rc = unsafe {
            paddock_autocast_enter(
                cuda,
                i32::from(bf16),
                &mut prev_enabled,
                &mut prev_dtype,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            // SAFETY: snprintf NUL-terminated the buffer.
            let msg = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
            return Err(Error::Config(format!(
                "autocast to {} on {device:?}: {}",
                if bf16 { "bf16" } else { "fp16" },
                msg.to_string_lossy()
            )));
        }
        Ok(AutocastGuard {
            cuda,
            prev_enabled,
            prev_dtype,
        })
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        // SAFETY: plain integers; the shim catches every C++ exception.
        unsafe { paddock_autocast_exit(self.cuda, self.prev_enabled, self.prev_dtype) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

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

    /// The reduced type reaches the matmuls inside the scope, and the thread's autocast state is back to
    /// float32 after it, also after a nested scope.
    #[test]
    fn bf16_autocast_reaches_the_cpu_matmuls_and_is_undone() {
        // Refused on a CPU without native bfloat16, on any CPU; the rest needs the instructions.
        let err = Precision::Bf16
            .check_with(Device::Cpu, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("AVX512-BF16"), "{err}");
        assert!(Precision::Bf16.check_with(Device::Cpu, true).is_ok());
        let check = Precision::Bf16.check(Device::Cpu);
        assert_eq!(check.is_ok(), hostcaps::cpu_bf16());
        if !hostcaps::cpu_bf16() {
            return;
        }
        let x = Tensor::randn([4, 8], (tch::Kind::Float, Device::Cpu));
        let w = Tensor::randn([3, 8], (tch::Kind::Float, Device::Cpu));
        let linear = || x.linear(&w, None::<Tensor>);
        let bf16 = Precision::Bf16;
        let (outer, inner) = bf16
            .autocast(Device::Cpu, || {
                let inner = bf16.autocast(Device::Cpu, linear).unwrap();
                (linear(), inner)
            })
            .unwrap();
        assert_eq!(outer.kind(), tch::Kind::BFloat16);
        assert_eq!(inner.kind(), tch::Kind::BFloat16);
        let after = linear();
        assert_eq!(after.kind(), tch::Kind::Float);
        // bfloat16 keeps about 3 significant digits.
        let diff = (outer.to_kind(tch::Kind::Float) - &after)
            .abs()
            .max()
            .double_value(&[]);
        let scale = after.abs().max().double_value(&[]);
        assert!(
            diff <= 2e-2 * scale,
            "bf16 {diff} off a float32 result of scale {scale}"
        );
        assert_eq!(
            Precision::Fp32
                .autocast(Device::Cpu, linear)
                .unwrap()
                .kind(),
            tch::Kind::Float
        );
    }
}

//! Device and numeric-precision selection for training and inference: `auto` / `cpu` / `cuda` / `cuda:N`
//! requests, and the mixed-precision mode (fp32; fp16 autocast with loss scaling on CUDA; bf16 autocast on
//! CUDA or on CPUs with native bfloat16).

use tch::Device;

use crate::{Error, Result};

/// Resolves a device request: `auto` (first CUDA device when present, else CPU), `cpu`, `cuda`, `cuda:N`.
/// `auto` falls back to the CPU only on a machine without an NVIDIA driver, or where every GPU was hidden
/// on purpose (`CUDA_VISIBLE_DEVICES=""`, as the server runs its checks): where a driver is loaded but
/// CUDA cannot use it (a driver too old for Paddock's CUDA, GPUs too old), a run meant for the GPU
/// would otherwise train for hours on the CPU without a word, so it is refused with the reason.
pub fn pick_device(request: &str) -> Result<Device> {
    pick_device_with(request, &Cuda::probe())
}

/// What the trainer knows about CUDA on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuda {
    /// CUDA devices libtorch can use.
    pub devices: usize,
    /// The loaded NVIDIA driver, when there is one.
    pub driver: Option<hostcaps::cuda::Version>,
    /// Why libtorch can use none, when it can use none.
    pub why_none: String,
    /// Whoever started this process hid every GPU from it (`CUDA_VISIBLE_DEVICES` empty or `-1`, or
    /// the `cuda` capability hidden): the CPU is what it was meant to use.
    pub hidden_on_purpose: bool,
}

impl Cuda {
    pub fn probe() -> Cuda {
        Cuda::probe_with(hostcaps::cuda::driver_present())
    }

    /// [`Cuda::probe`] on a host that shows an NVIDIA driver or not (`driver_present`), whatever this
    /// machine has: libtorch's CUDA library is loaded only where a driver is, and nothing asks libtorch
    /// about CUDA before it is (libtorch keeps its first answer).
    pub fn probe_with(driver_present: bool) -> Cuda {
        let hidden = hostcaps::is_hidden(hostcaps::Capability::Cuda);
        let loaded = hostcaps::cuda::load_where_gpus_may_be(driver_present);
        // Asked once, and only where the library was loaded (see `cuda_hooks_registered`).
        let hooks = loaded == Ok(true) && cuda_hooks_registered();
        let devices = if hooks && tch::Cuda::is_available() {
            tch::Cuda::device_count() as usize
        } else {
            0
        };
        let driver = hostcaps::cuda::nvidia_driver();
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        // Read only where it was loaded: reading loads it.
        let runtime = match loaded {
            Ok(true) => hostcaps::cuda::cuda_runtime().ok_or("its version cannot be read"),
            Ok(false) => Err("its CUDA library is not loaded"),
            Err(why) => Err(why),
        };
        let why_none = if hidden {
            format!("CUDA is hidden by {}", hostcaps::HIDE_ENV)
        } else if loaded == Ok(true) && !hooks {
            "libtorch was asked about CUDA before its CUDA library was loaded, and keeps that first answer \
             (a fault in Paddock: please report it)"
                .into()
        } else {
            why_no_device(runtime, driver.as_ref(), visible.as_deref())
        };
        Cuda {
            devices,
            driver,
            why_none,
            hidden_on_purpose: hostcaps::cuda::gpus_hidden_on_purpose(),
        }
    }
}

/// Whether libtorch's CUDA half is registered with ATen (`at::detail::getCUDAHooks()` is the real one,
/// which knows its CUDA runtime's version): true once `libtorch_cuda.so` was loaded before libtorch was
/// first asked about CUDA. Asking fixes the answer for the life of the process, so call it only after
/// [`hostcaps::cuda::load_runtime`].
pub fn cuda_hooks_registered() -> bool {
    // SAFETY: no arguments; the shim catches every C++ exception.
    unsafe { paddock_cuda_hooks_runtime_version() > 0 }
}

/// Why CUDA has no device here, from what can be read without one: the driver, `CUDA_VISIBLE_DEVICES`,
/// and Paddock's CUDA runtime (or why there is none).
pub fn why_no_device(
    runtime: std::result::Result<&hostcaps::cuda::CudaRuntime, &str>,
    driver: Option<&hostcaps::cuda::Version>,
    visible: Option<&str>,
) -> String {
    let Some(driver) = driver else {
        return "no NVIDIA driver is loaded on this machine (/proc/driver/nvidia/version is missing)"
            .into();
    };
    if let Some(v) = visible.filter(|v| hostcaps::cuda::hides_every_gpu(v)) {
        return format!("CUDA_VISIBLE_DEVICES={v:?} hides every GPU from this process");
    }
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(why) => return format!("Paddock has no CUDA runtime here: {why}"),
    };
    if let Some(refused) = runtime.refuses(driver, None) {
        return refused;
    }
    format!(
        "NVIDIA driver {driver} is loaded but CUDA finds no usable GPU (GPUs older than compute capability {} have no kernels in Paddock's CUDA {} runtime)",
        runtime
            .min_compute_capability()
            .map_or_else(|| "?".to_string(), ToString::to_string),
        runtime.version
    )
}

/// [`pick_device`] against `cuda`, whatever this machine has.
pub fn pick_device_with(request: &str, cuda: &Cuda) -> Result<Device> {
    let request = request.trim().to_ascii_lowercase();
    let none = |asked: &str| {
        Error::Config(format!(
            "device `{asked}` requested but CUDA cannot be used: {}",
            cuda.why_none
        ))
    };
    match request.as_str() {
        "auto" | "" if cuda.devices > 0 => Ok(Device::Cuda(0)),
        "auto" | "" => match &cuda.driver {
            None => Ok(Device::Cpu),
            Some(_) if cuda.hidden_on_purpose => Ok(Device::Cpu),
            Some(driver) => Err(Error::Config(format!(
                "device `auto`: this machine has NVIDIA driver {driver}, but CUDA cannot be used: {}; \
                 set device = \"cpu\" to train on the CPU on purpose",
                cuda.why_none
            ))),
        },
        "cpu" => Ok(Device::Cpu),
        "cuda" | "gpu" if cuda.devices == 0 => Err(none(&request)),
        "cuda" | "gpu" => Ok(Device::Cuda(0)),
        other => {
            let Some(index) = other.strip_prefix("cuda:") else {
                return Err(Error::Config(format!(
                    "device `{other}` is not one of auto, cpu, cuda, cuda:N"
                )));
            };
            let index: usize = index.parse().map_err(|_| {
                Error::Config(format!("device `{other}`: `{index}` is not a device index"))
            })?;
            if cuda.devices == 0 {
                return Err(none(other));
            }
            if index >= cuda.devices {
                return Err(Error::Config(format!(
                    "device `{other}` requested but {} CUDA device(s) are available",
                    cuda.devices
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

    /// Refuses combinations that cannot run well: fp16 needs CUDA; bf16 needs a GPU of compute
    /// capability 8.0 (Ampere) or newer, or a CPU with native bfloat16 instructions (elsewhere it is
    /// emulated, slower than float32).
    pub fn check(&self, device: Device) -> Result<()> {
        let gpu = match device {
            Device::Cuda(i) => hostcaps::cuda::device_compute_capability(i),
            _ => None,
        };
        self.check_with(device, hostcaps::cpu::bf16().is_native(), gpu.as_ref())
    }

    /// [`Precision::check`] on a CPU that has native bfloat16 or not (`cpu_bf16`) and a GPU of compute
    /// capability `gpu` (unknown: `None`), whatever this machine has.
    pub fn check_with(
        &self,
        device: Device,
        cpu_bf16: bool,
        gpu: Option<&hostcaps::cuda::Version>,
    ) -> Result<()> {
        let ampere: hostcaps::cuda::Version = hostcaps::cuda::Version::from_parts(&[8, 0]);
        match (self, device) {
            (Precision::Bf16, Device::Cuda(i)) if gpu.is_some_and(|cc| *cc < ampere) => {
                Err(Error::Config(format!(
                    "precision bf16 on GPU {i} (compute capability {}) is emulated, slower than fp32: \
                     bfloat16 runs natively from compute capability 8.0 (Ampere); use fp16 or fp32",
                    gpu.map_or_else(String::new, ToString::to_string)
                )))
            }
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

/// Makes training on CUDA deterministic (see `paddock_deterministic` in `csrc/shim.cpp`): cuBLAS
/// reads `CUBLAS_WORKSPACE_CONFIG` when its first handle is made, so this runs before the model touches
/// the GPU; a value the user set is kept.
pub fn deterministic_cuda() -> Result<()> {
    if std::env::var_os("CUBLAS_WORKSPACE_CONFIG").is_none() {
        std::env::set_var("CUBLAS_WORKSPACE_CONFIG", ":4096:8");
    }
    let mut err = [0 as std::os::raw::c_char; 512];
    // SAFETY: the shim writes at most `err.len()` bytes, NUL-terminated, and catches every exception.
    let status = unsafe { paddock_deterministic(err.as_mut_ptr(), err.len()) };
    if status != 0 {
        // SAFETY: written NUL-terminated by the shim.
        let why = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) };
        return Err(Error::Config(format!(
            "cannot make CUDA deterministic: {}",
            why.to_string_lossy()
        )));
    }
    Ok(())
}

unsafe extern "C" {
    fn paddock_cuda_hooks_runtime_version() -> std::os::raw::c_long;
    fn paddock_deterministic(err: *mut std::os::raw::c_char, err_len: usize) -> i32;
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

/// One autocast scope (`csrc/shim.cpp`): autocast state is thread-local in libtorch, and the guard
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

    fn v(s: &str) -> hostcaps::cuda::Version {
        s.parse().unwrap()
    }

    /// Every answer on every machine: no driver, a driver CUDA cannot use, GPUs.
    #[test]
    fn auto_falls_back_to_the_cpu_only_without_a_driver() {
        let no_driver = Cuda {
            devices: 0,
            driver: None,
            why_none: "no NVIDIA driver is loaded".into(),
            hidden_on_purpose: false,
        };
        assert_eq!(pick_device_with("auto", &no_driver).unwrap(), Device::Cpu);
        let err = pick_device_with("cuda", &no_driver)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no NVIDIA driver is loaded"), "{err}");

        let old_driver = Cuda {
            devices: 0,
            driver: Some(v("550.54.15")),
            why_none: "NVIDIA driver 550.54.15 is older than the 580.65.06 …".into(),
            hidden_on_purpose: false,
        };
        for request in ["auto", "cuda", "cuda:0"] {
            let err = pick_device_with(request, &old_driver)
                .unwrap_err()
                .to_string();
            assert!(err.contains("550.54.15 is older"), "{request}: {err}");
        }
        assert_eq!(pick_device_with("cpu", &old_driver).unwrap(), Device::Cpu);
        // A check the server runs with every GPU hidden is meant for the CPU.
        let hidden = Cuda {
            hidden_on_purpose: true,
            ..old_driver
        };
        assert_eq!(pick_device_with("auto", &hidden).unwrap(), Device::Cpu);
        assert!(pick_device_with("cuda", &hidden).is_err());

        let two = Cuda {
            devices: 2,
            driver: Some(v("580.95.05")),
            why_none: String::new(),
            hidden_on_purpose: false,
        };
        assert_eq!(pick_device_with("auto", &two).unwrap(), Device::Cuda(0));
        assert_eq!(pick_device_with("cuda:1", &two).unwrap(), Device::Cuda(1));
        assert!(pick_device_with("cuda:2", &two).is_err());
    }

    #[test]
    fn the_reason_names_the_driver_and_the_runtime() {
        let runtime = hostcaps::cuda::CudaRuntime {
            version: v("13.0"),
            architectures: vec![v("7.5"), v("9.0")],
        };
        let why = why_no_device(Ok(&runtime), Some(&v("550.54.15")), None);
        assert!(
            why.contains("550.54.15") && why.contains("580.65.06"),
            "{why}"
        );
        let why = why_no_device(Ok(&runtime), Some(&v("580.95.05")), Some(""));
        assert!(why.contains("CUDA_VISIBLE_DEVICES"), "{why}");
        let why = why_no_device(Ok(&runtime), Some(&v("580.95.05")), Some("0"));
        assert!(why.contains("7.5"), "{why}");
        assert!(why_no_device(Ok(&runtime), None, None).contains("no NVIDIA driver"));
        let why = why_no_device(Err("an image without CUDA"), Some(&v("580.95.05")), None);
        assert!(
            why.contains("no CUDA runtime here: an image without CUDA"),
            "{why}"
        );
    }

    /// The trainer links libtorch with CUDA: the runtime is read from its libraries, and agrees with the
    /// version the torch wheel declares (`torch/version.py`).
    #[test]
    fn the_runtime_is_read_from_the_loaded_libraries() {
        let Some(runtime) = hostcaps::cuda::cuda_runtime() else {
            panic!("the trainer's libtorch has no CUDA runtime");
        };
        let declared = std::env::var("LIBTORCH")
            .ok()
            .and_then(|dir| std::fs::read_to_string(format!("{dir}/version.py")).ok())
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("cuda: Optional[str] = '"))
                    .map(|v| v.trim_end_matches('\'').to_string())
            });
        if let Some(declared) = declared {
            assert_eq!(runtime.version.to_string(), declared);
        }
        assert!(
            !runtime.architectures.is_empty() && runtime.min_driver().is_some(),
            "{runtime:?}"
        );
    }

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
            .check_with(Device::Cpu, false, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("AVX512-BF16"), "{err}");
        assert!(Precision::Bf16.check_with(Device::Cpu, true, None).is_ok());
        // On a GPU: native from Ampere on, refused before it; fp16 is fine on both.
        let (turing, ampere) = (v("7.5"), v("8.0"));
        let gpu = Device::Cuda(0);
        let err = Precision::Bf16
            .check_with(gpu, false, Some(&turing))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("compute capability 7.5") && err.contains("fp16"),
            "{err}"
        );
        assert!(Precision::Bf16
            .check_with(gpu, false, Some(&ampere))
            .is_ok());
        assert!(Precision::Fp16
            .check_with(gpu, false, Some(&turing))
            .is_ok());
        let check = Precision::Bf16.check(Device::Cpu);
        assert_eq!(check.is_ok(), hostcaps::cpu::bf16().is_native());
        if !hostcaps::cpu::bf16().is_native() {
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

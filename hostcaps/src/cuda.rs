//! CUDA versions, NVIDIA driver versions and compute capabilities, and the table that ties CUDA toolkit
//! releases to the oldest Linux driver able to run them. The table is NVIDIA's "CUDA Toolkit and
//! Corresponding Driver Versions" (CUDA release notes, table 3, Linux x86_64 column). It uses the toolkit
//! requirement, not the looser "minor version compatibility" floor (driver ≥ 525 for all of 12.x, ≥ 580 for
//! 13.x, ≥ 450.80.02 for 11.x), because the official CUDA images set `NVIDIA_REQUIRE_CUDA=cuda>=12.x` and the
//! NVIDIA container runtime enforces exactly that at container start — which is the failure users meet and
//! that preflight exists to predict.
//!
//! Also the CUDA that Paddock's own libtorch needs, read from the libraries loaded in this process rather than
//! written down here: the wheel decides it (2.13.0+cu130 today, another build tomorrow), and a table in
//! the code would be right only until the next upgrade.
//!
//! - The CUDA version is what the CUDA runtime library answers (`cudaRuntimeGetVersion`, which needs no
//!   driver and no GPU).
//! - The GPU architectures are the nvcc `-gencode` flags libtorch_cuda was compiled with, which it keeps
//!   as a string (PyTorch reports the same list as `torch.cuda.get_arch_list()`): a GPU older than the
//!   oldest of them has no kernels to run.
//!
//! libtorch's CUDA half (`libtorch_cuda.so`, and through it the CUDA runtime, cuBLAS, cuDNN and NCCL) is
//! not linked but loaded ([`load_runtime`]) by the processes that may use a GPU: loading it costs every
//! process about 0.3 s of start-up and 400 MB (its kernels' registrations), and most of Paddock's
//! processes (the server, the CLI, every check on a CPU host) never touch a GPU. A process without it (a
//! CPU-only libtorch, an image built without CUDA, a test binary that does not link libtorch) has no
//! CUDA runtime: [`cuda_runtime`] is `None`.

use std::ffi::{c_char, c_int, CStr};
use std::fmt;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

/// What Paddock's CUDA runtime is and runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaRuntime {
    /// The CUDA runtime's version, `major.minor` (`13.0`).
    pub version: Version,
    /// Compute capabilities with compiled kernels (`sm_75` → `7.5`), oldest first; empty when the
    /// library's flags could not be found.
    pub architectures: Vec<Version>,
}

impl CudaRuntime {
    /// The oldest compute capability a GPU may have to run libtorch's kernels.
    pub fn min_compute_capability(&self) -> Option<&Version> {
        self.architectures.first()
    }

    /// The oldest driver that runs this CUDA (`None`: a CUDA newer than [`DRIVER_TABLE`] knows).
    pub fn min_driver(&self) -> Option<Version> {
        min_driver_for(&self.version)
    }

    /// Why a GPU with this driver and compute capability cannot run Paddock's kernels, in English for
    /// logs and the trainer's errors; `None` when it can. An unknown compute capability (drivers before
    /// R510 do not report it) is not held against the GPU.
    pub fn refuses(&self, driver: &Version, compute: Option<&Version>) -> Option<String> {
        match self.min_driver() {
            Some(min) if driver < &min => {
                return Some(format!(
                    "NVIDIA driver {driver} is older than the {min} that Paddock's CUDA {} runtime needs; upgrade the driver to {min} or newer",
                    self.version
                ))
            }
            None => {
                return Some(format!(
                    "Paddock's CUDA {} runtime is newer than its driver table, so driver {driver} cannot be confirmed to run it",
                    self.version
                ))
            }
            Some(_) => {}
        }
        match (compute, self.min_compute_capability()) {
            (Some(cc), Some(min)) if cc < min => Some(format!(
                "compute capability {cc} is below the {min} that Paddock's CUDA {} kernels are built for",
                self.version
            )),
            _ => None,
        }
    }

    /// One line for `paddock version` and logs: `CUDA 13.0 (driver 580.65.06 or newer; GPUs 7.5 … 12.0)`.
    pub fn describe(&self) -> String {
        let driver = self.min_driver().map_or_else(
            || "driver unknown".to_string(),
            |d| format!("driver {d} or newer"),
        );
        let gpus = match (self.architectures.first(), self.architectures.last()) {
            (Some(first), Some(last)) => format!("; GPUs of compute capability {first} to {last}"),
            _ => String::new(),
        };
        format!("CUDA {} ({driver}{gpus})", self.version)
    }
}

/// Paddock's CUDA runtime, loaded ([`load_runtime`]) and read once. `None` when this process's libtorch
/// has none ([`load_runtime`]'s error says why).
pub fn cuda_runtime() -> Option<&'static CudaRuntime> {
    static RUNTIME: OnceLock<Option<CudaRuntime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let _ = load_runtime();
            read()
        })
        .as_ref()
}

/// The file name of libtorch's CUDA library, beside `libtorch_cpu.so` in the wheel and in images.
const TORCH_CUDA: &str = "libtorch_cuda.so";

/// Loads `libtorch_cuda.so` from beside the process's `libtorch_cpu.so` into the global namespace, once,
/// and says why it could not: no libtorch in this process, a libtorch (or an image's runtime layer)
/// without CUDA, or the loader's own words (a missing library).
///
/// libtorch answers its first question about CUDA once per process (`at::detail::getCUDAHooks`): asked
/// before this ran, it says "no CUDA" for good. So a process that may use a GPU calls
/// [`load_where_gpus_may_be`] before anything touches libtorch (`paddock`'s `main` does, first thing).
pub fn load_runtime() -> Result<(), &'static str> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let cpu = loaded_library("libtorch_cpu.so")
                .ok_or_else(|| "no libtorch is loaded in this process".to_string())?;
            let cuda = cpu.with_file_name(TORCH_CUDA);
            if !cuda.is_file() {
                return Err(format!(
                    "{} has no {TORCH_CUDA}: this libtorch was built for the CPU, or the image was built without CUDA",
                    cpu.parent().unwrap_or(Path::new("/")).display()
                ));
            }
            let path = std::ffi::CString::new(cuda.as_os_str().as_bytes())
                .map_err(|_| format!("{} is not a loadable path", cuda.display()))?;
            // SAFETY: a NUL-terminated path; the handle is kept for the life of the process (never closed).
            let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if handle.is_null() {
                // SAFETY: dlerror returns the thread's last loader error, NUL-terminated, or null.
                let why = unsafe { libc::dlerror() };
                let why = if why.is_null() {
                    "unknown loader error".into()
                } else {
                    // SAFETY: non-null, NUL-terminated, valid until the next loader call on this thread.
                    unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned()
                };
                return Err(format!("loading {}: {why}", cuda.display()));
            }
            Ok(())
        })
        .as_ref()
        .map(|_| ())
        .map_err(String::as_str)
}

/// Whether libtorch's CUDA library is loaded in this process.
pub fn runtime_loaded() -> bool {
    loaded_library(TORCH_CUDA).is_some()
}

/// Whether this host shows an NVIDIA driver: its kernel module's `/proc` entry or its control device.
pub fn driver_present() -> bool {
    nvidia_driver().is_some() || Path::new("/dev/nvidiactl").exists()
}

/// Whether a `CUDA_VISIBLE_DEVICES` value shows no GPU at all.
pub fn hides_every_gpu(value: &str) -> bool {
    matches!(value.trim(), "" | "-1" | "void" | "none" | "NoDevFiles")
}

/// Whoever started this process hid every GPU from it on purpose: the `cuda` capability hidden
/// ([`crate::HIDE_ENV`]) or `CUDA_VISIBLE_DEVICES` showing none (as the server runs its checks).
pub fn gpus_hidden_on_purpose() -> bool {
    crate::is_hidden(crate::Capability::Cuda)
        || std::env::var("CUDA_VISIBLE_DEVICES").is_ok_and(|v| hides_every_gpu(&v))
}

/// Loads libtorch's CUDA library ([`load_runtime`]) where a GPU may be used: a host with an NVIDIA
/// driver (`driver_present`), unless every GPU was hidden on purpose. `Ok(false)`: not needed here.
pub fn load_where_gpus_may_be(driver_present: bool) -> Result<bool, &'static str> {
    if !driver_present || gpus_hidden_on_purpose() {
        return Ok(false);
    }
    load_runtime().map(|()| true)
}

fn read() -> Option<CudaRuntime> {
    let version = runtime_version()?;
    let architectures = loaded_library("libtorch_cuda.so")
        .and_then(|path| gencode_flags(&path))
        .map(|flags| architectures(&flags))
        .unwrap_or_default();
    Some(CudaRuntime {
        version,
        architectures,
    })
}

/// `cudaRuntimeGetVersion` of the CUDA runtime loaded in the process (libtorch_cuda needs it).
fn runtime_version() -> Option<Version> {
    type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: dlsym with RTLD_DEFAULT only looks a name up among the loaded objects.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"cudaRuntimeGetVersion".as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: the CUDA runtime API declares `cudaError_t cudaRuntimeGetVersion(int*)`.
    let get: GetVersion = unsafe { std::mem::transmute::<*mut libc::c_void, GetVersion>(symbol) };
    let mut encoded: c_int = 0;
    // SAFETY: `encoded` outlives the call; the function only writes it.
    let status = unsafe { get(&mut encoded) };
    (status == 0 && encoded > 0).then(|| decode_version(encoded as u32))
}

/// The compute capability of CUDA device `device` (as this process numbers them), asked of the CUDA
/// runtime already loaded (`cudaDeviceGetAttribute`); `None` without one or without that device.
pub fn device_compute_capability(device: usize) -> Option<Version> {
    type GetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
    /// `cudaDevAttrComputeCapabilityMajor` and `…Minor` in the CUDA runtime's `cudaDeviceAttr`.
    const MAJOR: c_int = 75;
    const MINOR: c_int = 76;
    let device = c_int::try_from(device).ok()?;
    // SAFETY: dlsym with RTLD_DEFAULT only looks a name up among the loaded objects.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"cudaDeviceGetAttribute".as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: the CUDA runtime API declares `cudaError_t cudaDeviceGetAttribute(int*, cudaDeviceAttr, int)`.
    let get: GetAttribute =
        unsafe { std::mem::transmute::<*mut libc::c_void, GetAttribute>(symbol) };
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both outputs outlive the calls, which only write them.
    let ok = unsafe { get(&mut major, MAJOR, device) == 0 && get(&mut minor, MINOR, device) == 0 };
    (ok && major > 0).then(|| Version::from_parts(&[major as u32, minor as u32]))
}

/// CUDA's `1000 * major + 10 * minor` (13000 → 13.0, 12080 → 12.8).
pub fn decode_version(encoded: u32) -> Version {
    Version::from_parts(&[encoded / 1000, (encoded % 1000) / 10])
}

/// The path of the loaded shared object whose file name starts with `prefix`.
fn loaded_library(prefix: &str) -> Option<PathBuf> {
    struct Search<'a> {
        prefix: &'a str,
        found: Option<PathBuf>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> c_int {
        // SAFETY: `data` is the `Search` passed below, and `info` is valid for this call.
        let search = unsafe { &mut *(data as *mut Search) };
        let name: *const c_char = unsafe { (*info).dlpi_name };
        if name.is_null() {
            return 0;
        }
        // SAFETY: the loader's names are NUL-terminated and live while the object is loaded.
        let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
        let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
        let matches = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(search.prefix));
        if matches {
            search.found = Some(path.to_path_buf());
            return 1;
        }
        0
    }
    let mut search = Search {
        prefix,
        found: None,
    };
    // SAFETY: the callback only reads what the loader passes and writes `search`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut libc::c_void) };
    search.found
}

/// The first `-gencode;arch=…` string in the file at `path`, read in chunks (the flags sit in the
/// library's read-only data, tens of megabytes in; reading stops there).
fn gencode_flags(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    find_gencode(file)
}

/// The NUL-terminated string starting at the first `-gencode;arch=` in `reader`.
pub fn find_gencode(mut reader: impl Read) -> Option<String> {
    const NEEDLE: &[u8] = b"-gencode;arch=";
    /// Longer than any flag list: the string is cut off rather than searched for without end.
    const MAX_FLAGS: usize = 4096;
    let mut buffer = Vec::with_capacity(8 << 20);
    let mut chunk = vec![0u8; 4 << 20];
    let mut searched = 0; // bytes of `buffer` known not to start a match
    loop {
        let n = reader.read(&mut chunk).ok()?;
        let at_end = n == 0;
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(start) = find(&buffer[searched..], NEEDLE).map(|i| i + searched) {
            let rest = &buffer[start..];
            match rest.iter().position(|&b| b == 0) {
                Some(end) if end <= MAX_FLAGS => {
                    return Some(String::from_utf8_lossy(&rest[..end]).into_owned())
                }
                Some(_) => return None,
                None if rest.len() > MAX_FLAGS || at_end => return None,
                None => continue, // the string goes on in the next chunk
            }
        }
        if at_end {
            return None;
        }
        // Keep only a tail that could hold the start of a match.
        let keep = NEEDLE.len() - 1;
        if buffer.len() > keep {
            buffer.drain(..buffer.len() - keep);
        }
        searched = 0;
    }
}

/// The loaded NVIDIA kernel driver's version (`550.54.15`), from `/proc/driver/nvidia/version`, which
/// the NVIDIA container runtime also mounts into containers; `None` without the driver.
pub fn nvidia_driver() -> Option<Version> {
    driver_version(&std::fs::read_to_string("/proc/driver/nvidia/version").ok()?)
}

/// The version in the first line of `/proc/driver/nvidia/version`: the first word after "Module" made
/// of digits and dots.
pub fn driver_version(text: &str) -> Option<Version> {
    let line = text.lines().next()?;
    let (_, after) = line.split_once("Module")?;
    after.split_whitespace().find_map(|w| {
        (w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then(|| w.parse().ok())
            .flatten()
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut from = 0;
    while let Some(i) = haystack[from..].iter().position(|&b| b == first) {
        let at = from + i;
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The compute capabilities in nvcc flags: `code=sm_86` (machine code) and `code=compute_120` (PTX,
/// which newer GPUs compile at load time), oldest first, each once.
pub fn architectures(flags: &str) -> Vec<Version> {
    let mut found: Vec<Version> = flags
        .split(';')
        .filter_map(|flag| flag.strip_prefix("arch="))
        .filter_map(|arch| arch.split_once(",code="))
        .flat_map(|(_, code)| code.trim_matches(['[', ']']).split(','))
        .filter_map(|code| {
            let number = code
                .strip_prefix("sm_")
                .or_else(|| code.strip_prefix("compute_"))?;
            // `sm_90a`, `sm_100f`: architecture-specific variants of the same capability.
            let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
            let n: u32 = digits.parse().ok()?;
            Some(Version::from_parts(&[n / 10, n % 10]))
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// A dotted numeric version (`550.54.15`, `12.4.1`, `9.0`), compared component by component with missing
/// components as zero (`12.4` = `12.4.0`). The text is kept as written, because driver versions have
/// meaningful leading zeros for people (`535.104.05`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Version {
    parts: Vec<u32>,
    text: String,
}

impl Version {
    /// `[13, 0]` → `13.0`.
    pub fn from_parts(parts: &[u32]) -> Version {
        Version {
            parts: parts.to_vec(),
            text: parts
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("."),
        }
    }

    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// `major.minor` only (CUDA `12.4.1` → `12.4`).
    pub fn major_minor(&self) -> Version {
        let (major, minor) = (
            self.parts.first().copied().unwrap_or(0),
            self.parts.get(1).copied().unwrap_or(0),
        );
        Version {
            parts: vec![major, minor],
            text: format!("{major}.{minor}"),
        }
    }

    /// Components without trailing zeros: the identity used for equality and hashing.
    fn significant(&self) -> &[u32] {
        let end = self
            .parts
            .iter()
            .rposition(|&p| p != 0)
            .map_or(0, |i| i + 1);
        &self.parts[..end]
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.significant() == other.significant()
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.significant().hash(state);
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let n = self.parts.len().max(other.parts.len());
        (0..n)
            .map(|i| {
                self.parts
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .cmp(&other.parts.get(i).copied().unwrap_or(0))
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Version {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let parts: Result<Vec<u32>, _> = s.split('.').map(str::parse::<u32>).collect();
        match parts {
            Ok(parts) if !parts.is_empty() && parts.len() <= 4 => Ok(Version {
                parts,
                text: s.to_string(),
            }),
            _ => Err(format!("{s:?} is not a dotted version number")),
        }
    }
}

impl TryFrom<String> for Version {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Version> for String {
    fn from(v: Version) -> String {
        v.to_string()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// CUDA toolkit release (`major.minor[.patch]`) → oldest Linux x86_64 driver, newest first. Only the point
/// releases that raised the requirement have a row; the others share the row before them (12.6 Update 2 needs
/// what 12.6 Update 1 needs). NVIDIA's "Update N" of `x.y` is `x.y.N`, except in 11.0, whose RC was 11.0.1,
/// GA 11.0.2 and Update 1 11.0.3.
///
/// Source: table 3 of the CUDA 13.1 release notes,
/// <https://docs.nvidia.com/cuda/archive/13.1.0/cuda-toolkit-release-notes/index.html>, checked against the
/// current notes (13.4 Update 1, <https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html>),
/// whose table for 12.9 and earlier is the same. The current notes give CUDA 13.2 and later only as a driver
/// branch (R595, R610, R615), not a minimum version, so those releases are left out: preflight then says it
/// cannot confirm compatibility rather than guessing.
const DRIVER_TABLE: &[(&str, &str)] = &[
    ("13.1", "590.44.01"),
    ("13.0.2", "580.95.05"),
    ("13.0.1", "580.82.07"),
    ("13.0", "580.65.06"),
    ("12.9.1", "575.57.08"),
    ("12.9", "575.51.03"),
    ("12.8.1", "570.124.06"),
    ("12.8", "570.26"),
    ("12.6.3", "560.35.05"),
    ("12.6.1", "560.35.03"),
    ("12.6", "560.28.03"),
    ("12.5.1", "555.42.06"),
    ("12.5", "555.42.02"),
    ("12.4.1", "550.54.15"),
    ("12.4", "550.54.14"),
    ("12.3.1", "545.23.08"),
    ("12.3", "545.23.06"),
    ("12.2.2", "535.104.05"),
    ("12.2.1", "535.86.09"),
    ("12.2", "535.54.03"),
    ("12.1", "530.30.02"),
    ("12.0.1", "525.85.12"),
    ("12.0", "525.60.13"),
    ("11.8", "520.61.05"),
    ("11.7.1", "515.48.07"),
    ("11.7", "515.43.04"),
    ("11.6.1", "510.47.03"),
    ("11.6", "510.39.01"),
    ("11.5", "495.29.05"),
    ("11.4.3", "470.82.01"),
    ("11.4.1", "470.57.02"),
    ("11.4", "470.42.01"),
    ("11.3", "465.19.01"),
    ("11.2.1", "460.32.03"),
    ("11.2", "460.27.03"),
    ("11.1.1", "455.32"),
    ("11.1", "455.23"),
    ("11.0.3", "450.51.06"),
    ("11.0.2", "450.51.05"),
    ("11.0", "450.36.06"),
];

/// The oldest driver that runs CUDA `cuda`: the entry for the newest listed release not newer than `cuda`
/// within the same major.minor. `None` for a CUDA version the table does not know (newer or older than all
/// entries) — callers must then refuse to guess.
pub fn min_driver_for(cuda: &Version) -> Option<Version> {
    DRIVER_TABLE.iter().find_map(|(c, d)| {
        let c: Version = c.parse().expect("table entry");
        (c.major_minor() == cuda.major_minor() && &c <= cuda)
            .then(|| d.parse().expect("table entry"))
    })
}

/// The newest CUDA release in the table that `driver` can run, for messages ("driver 535.104.05 supports up
/// to CUDA 12.2.2").
pub fn max_cuda_for(driver: &Version) -> Option<Version> {
    DRIVER_TABLE.iter().find_map(|(c, d)| {
        let d: Version = d.parse().expect("table entry");
        (&d <= driver).then(|| c.parse().expect("table entry"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags libtorch 2.13.0+cu130 keeps (copied from the wheel's libtorch_cuda.so).
    const CU130: &str = "-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_80,code=sm_80;-gencode;arch=compute_86,code=sm_86;-gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_100,code=sm_100;-gencode;arch=compute_120,code=sm_120";

    #[test]
    fn architectures_are_read_from_nvcc_flags() {
        let text = |v: Vec<Version>| v.iter().map(Version::to_string).collect::<Vec<_>>();
        assert_eq!(
            text(architectures(CU130)),
            ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
        );
        let older = "-gencode;arch=compute_50,code=sm_50;-gencode;arch=compute_90a,code=[sm_90a,compute_90a]";
        assert_eq!(text(architectures(older)), ["5.0", "9.0"]);
        assert!(architectures("-O3 -std=c++17").is_empty());
    }

    #[test]
    fn cuda_versions_decode() {
        assert_eq!(decode_version(13000).to_string(), "13.0");
        assert_eq!(decode_version(12080).to_string(), "12.8");
        assert_eq!(decode_version(11080), v("11.8"));
    }

    /// The flags are found wherever they fall, across chunk boundaries, and nothing is found in a file
    /// without them or with an unterminated string.
    #[test]
    fn the_flags_are_found_in_a_large_file() {
        for offset in [0usize, 1, (4 << 20) - 5, (4 << 20) + 3, 9 << 20] {
            let mut file = vec![b'x'; offset];
            file.extend_from_slice(CU130.as_bytes());
            file.push(0);
            file.extend_from_slice(b"-gencode;arch=compute_50,code=sm_50\0");
            assert_eq!(
                find_gencode(file.as_slice()).as_deref(),
                Some(CU130),
                "{offset}"
            );
        }
        assert_eq!(find_gencode(&[b'y'; 1000][..]), None);
        assert_eq!(find_gencode(&b"xx-gencode;arch=compute_75"[..]), None);
    }

    #[test]
    fn the_driver_version_is_read_from_the_kernel_module_line() {
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0\n";
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 2025\n";
        assert_eq!(driver_version(proprietary), Some(v("550.54.15")));
        assert_eq!(driver_version(open), Some(v("580.65.06")));
        assert_eq!(driver_version(""), None);
        assert_eq!(driver_version("GCC version: 12.3.0"), None);
    }

    /// What the runtime refuses: an old driver, an old GPU; an unknown compute capability is let through.
    #[test]
    fn the_runtime_names_what_it_cannot_run_on() {
        let runtime = CudaRuntime {
            version: v("13.0"),
            architectures: architectures(CU130),
        };
        assert_eq!(runtime.min_driver(), Some(v("580.65.06")));
        let old_driver = runtime.refuses(&v("550.54.15"), Some(&v("9.0"))).unwrap();
        assert!(
            old_driver.contains("550.54.15") && old_driver.contains("580.65.06"),
            "{old_driver}"
        );
        let old_gpu = runtime.refuses(&v("580.95.05"), Some(&v("7.0"))).unwrap();
        assert!(
            old_gpu.contains("7.0") && old_gpu.contains("7.5"),
            "{old_gpu}"
        );
        assert_eq!(runtime.refuses(&v("580.95.05"), Some(&v("9.0"))), None);
        assert_eq!(runtime.refuses(&v("590.44.01"), None), None);
        assert_eq!(
            runtime.describe(),
            "CUDA 13.0 (driver 580.65.06 or newer; GPUs of compute capability 7.5 to 12.0)"
        );
        let unknown = CudaRuntime {
            version: v("14.2"),
            architectures: vec![],
        };
        assert!(unknown
            .refuses(&v("610.1"), None)
            .unwrap()
            .contains("cannot be confirmed"));
    }

    /// A test binary without libtorch: no runtime, asking is harmless, and loading says why not.
    #[test]
    fn a_process_without_the_cuda_runtime_has_none() {
        assert_eq!(cuda_runtime(), None);
        assert_eq!(load_runtime(), Err("no libtorch is loaded in this process"));
        assert!(!runtime_loaded());
        assert_eq!(load_where_gpus_may_be(false), Ok(false));
    }

    #[test]
    fn visible_devices_that_show_no_gpu() {
        for hides in ["", " ", "-1", "void", "none", "NoDevFiles"] {
            assert!(hides_every_gpu(hides), "{hides:?}");
        }
        for shows in ["0", "GPU-5c3a", "all", "1,2"] {
            assert!(!hides_every_gpu(shows), "{shows:?}");
        }
    }

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn versions_compare_numerically() {
        assert!(v("550.54.15") > v("550.54.14"));
        assert!(v("550.100") > v("550.54.15"));
        assert!(v("12.4") == v("12.4.0"));
        assert!(v("9.0") < v("10.0"));
        assert_eq!(v("535.104.05").to_string(), "535.104.05");
        assert_eq!(v("535.104.05"), v("535.104.5"));
        assert!("12.x".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
    }

    #[test]
    fn driver_table_lookups() {
        assert_eq!(min_driver_for(&v("12.4.1")), Some(v("550.54.15")));
        assert_eq!(min_driver_for(&v("12.4.0")), Some(v("550.54.14")));
        assert_eq!(min_driver_for(&v("12.8.1")), Some(v("570.124.06")));
        assert_eq!(min_driver_for(&v("12.6.2")), Some(v("560.35.03")));
        assert_eq!(min_driver_for(&v("11.8.0")), Some(v("520.61.05")));
        // Update releases that raised the requirement, per NVIDIA's table.
        assert_eq!(min_driver_for(&v("12.3.1")), Some(v("545.23.08")));
        assert_eq!(min_driver_for(&v("12.3.2")), Some(v("545.23.08")));
        assert_eq!(min_driver_for(&v("12.9.1")), Some(v("575.57.08")));
        assert_eq!(min_driver_for(&v("11.7.1")), Some(v("515.48.07")));
        assert_eq!(min_driver_for(&v("11.6.1")), Some(v("510.47.03")));
        assert_eq!(min_driver_for(&v("11.4.2")), Some(v("470.57.02")));
        assert_eq!(min_driver_for(&v("11.0.3")), Some(v("450.51.06")));
        assert_eq!(min_driver_for(&v("13.0.0")), Some(v("580.65.06")));
        assert_eq!(min_driver_for(&v("13.0.2")), Some(v("580.95.05")));
        assert_eq!(min_driver_for(&v("13.1.1")), Some(v("590.44.01")));
        // Known to NVIDIA only as a driver branch: not guessed.
        assert_eq!(min_driver_for(&v("13.2")), None);
        assert_eq!(min_driver_for(&v("14.0")), None);
        assert_eq!(min_driver_for(&v("10.2")), None);
    }

    #[test]
    fn driver_to_cuda() {
        assert_eq!(max_cuda_for(&v("535.104.05")), Some(v("12.2.2")));
        assert_eq!(max_cuda_for(&v("550.54.15")), Some(v("12.4.1")));
        assert_eq!(max_cuda_for(&v("575.57.08")), Some(v("12.9.1")));
        assert_eq!(max_cuda_for(&v("580.95.05")), Some(v("13.0.2")));
        assert_eq!(max_cuda_for(&v("400.0")), None);
    }

    #[test]
    fn table_is_ordered_newest_first() {
        let entries: Vec<(Version, Version)> =
            DRIVER_TABLE.iter().map(|(c, d)| (v(c), v(d))).collect();
        for pair in entries.windows(2) {
            assert!(pair[0].0 > pair[1].0 && pair[0].1 >= pair[1].1, "{pair:?}");
        }
    }
}

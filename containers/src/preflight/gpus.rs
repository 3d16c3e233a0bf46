//! The host's NVIDIA GPUs, as `nvidia-smi` reports them, one GPU at a time: a GPU whose line cannot be
//! read (a lost GPU, an `[Unknown Error]`), or that Paddock cannot place (MIG on), is left out with the
//! reason, and the others stay usable. Parsing is a pure function over the CSV text so it is tested on
//! recorded output; [`detect`] runs the binary when it exists and reports no GPUs otherwise (a CPU-only
//! host is normal, not an error).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hostcaps::cuda::{CudaRuntime, Version};

/// The columns [`detect`] asks for, the name last because it may contain commas. Drivers before R510
/// do not know `compute_cap`; they are asked again without it ([`WITHOUT_COMPUTE_CAP`]).
const COLUMNS: &str =
    "index,uuid,pci.bus_id,driver_version,memory.total,mig.mode.current,compute_cap,name";
const WITHOUT_COMPUTE_CAP: &str =
    "index,uuid,pci.bus_id,driver_version,memory.total,mig.mode.current,name";

/// How long `nvidia-smi` may take; it can hang for seconds when the driver is wedged.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuInfo {
    /// nvidia-smi's index (PCI bus order), what people and the forms call the GPU. Placement uses
    /// [`GpuInfo::uuid`], which does not change when another GPU falls off the bus.
    pub index: u32,
    pub uuid: String,
    pub pci_bus_id: String,
    pub name: String,
    pub driver_version: Version,
    /// `None` on drivers before R510, which do not report it.
    pub compute_capability: Option<Version>,
    /// `None` where the driver answers `[N/A]` (some integrated and Grace Hopper parts).
    pub memory_mib: Option<u64>,
}

/// What detection found: the usable GPUs, and one sentence per GPU (or line) left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detected {
    pub gpus: Vec<GpuInfo>,
    pub left_out: Vec<String>,
}

impl Detected {
    /// Sets aside the GPUs Paddock's own CUDA runtime cannot run on (its driver or compute capability),
    /// naming why: every job, replica and environment carries that runtime. `runtime` is asked only
    /// when there are GPUs: reading it loads libtorch's CUDA library (see `hostcaps::cuda`), which a
    /// host without GPUs should not pay for.
    pub fn for_runtime<'a>(
        mut self,
        runtime: impl FnOnce() -> Option<&'a CudaRuntime>,
    ) -> Detected {
        if self.gpus.is_empty() {
            return self;
        }
        let Some(runtime) = runtime() else {
            return self;
        };
        let mut usable = Vec::new();
        for gpu in self.gpus {
            match runtime.refuses(&gpu.driver_version, gpu.compute_capability.as_ref()) {
                Some(why) => self
                    .left_out
                    .push(format!("GPU {} ({}): {why}", gpu.index, gpu.name)),
                None => usable.push(gpu),
            }
        }
        self.gpus = usable;
        self
    }
}

/// A value nvidia-smi writes where it has none: `[N/A]`, `[Not Supported]`, `[Unknown Error]`,
/// `[GPU is lost]`, `[Insufficient Permissions]`, `[Requested functionality has been deprecated]`.
fn missing(value: &str) -> bool {
    value.starts_with('[') && value.ends_with(']')
}

/// Parses the output of [`detect`]'s query (`with_compute_cap`: the columns of [`COLUMNS`], else of
/// [`WITHOUT_COMPUTE_CAP`]).
pub fn parse(csv: &str, with_compute_cap: bool) -> Detected {
    let fixed = if with_compute_cap { 7 } else { 6 };
    let mut found = Detected::default();
    for (n, line) in csv
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match parse_line(line, fixed) {
            Ok(Some(gpu)) => found.gpus.push(gpu),
            Ok(None) => {}
            Err(why) => found.left_out.push(format!(
                "nvidia-smi line {}: {why}: {:?}",
                n + 1,
                line.trim()
            )),
        }
    }
    found
}

/// One GPU's line; `Ok(None)` is impossible today but keeps the shape for lines that are not GPUs.
fn parse_line(line: &str, fixed: usize) -> Result<Option<GpuInfo>, String> {
    let fields: Vec<&str> = line.splitn(fixed + 1, ',').map(str::trim).collect();
    if fields.len() != fixed + 1 {
        return Err("not a GPU's line".into());
    }
    let (index, uuid, bus, driver, memory, mig) = (
        fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
    );
    let name = fields[fixed];
    let index: u32 = index
        .parse()
        .map_err(|_| format!("index {index:?} is not a number"))?;
    if missing(uuid) || !uuid.starts_with("GPU-") {
        return Err(format!("GPU {index} has no UUID ({uuid})"));
    }
    let driver_version: Version = driver
        .parse()
        .map_err(|_| format!("GPU {index}: driver_version {driver:?} is not a version"))?;
    let memory_mib = if missing(memory) {
        None
    } else {
        Some(
            memory
                .strip_suffix("MiB")
                .and_then(|m| m.trim().parse().ok())
                .ok_or_else(|| format!("GPU {index}: memory.total {memory:?} is not \"N MiB\""))?,
        )
    };
    if mig.eq_ignore_ascii_case("enabled") {
        return Err(format!(
            "GPU {index} ({name}) has MIG enabled; Paddock places whole GPUs, not MIG slices \
             (disable it with `nvidia-smi -i {index} -mig 0` to use this GPU here)"
        ));
    }
    let compute_capability = match fields.get(6).filter(|_| fixed == 7) {
        Some(cc) if !missing(cc) => Some(
            cc.parse()
                .map_err(|_| format!("GPU {index}: compute_cap {cc:?} is not a version"))?,
        ),
        _ => None,
    };
    Ok(Some(GpuInfo {
        index,
        uuid: uuid.to_string(),
        pci_bus_id: bus.to_string(),
        name: name.to_string(),
        driver_version,
        compute_capability,
        memory_mib,
    }))
}

/// The host's GPUs: none when `nvidia-smi` is not installed or the `gpus` capability is hidden
/// (`hostcaps`); an error when it exists but reports no GPU it could read (driver not loaded, …), so
/// preflight can say why GPUs are unavailable.
pub async fn detect() -> Result<Detected, String> {
    if hostcaps::is_hidden(hostcaps::Capability::Gpus) {
        return Ok(Detected::default());
    }
    match find_in_path("nvidia-smi") {
        Some(binary) => detect_with(&binary).await,
        None => Ok(Detected::default()),
    }
}

/// [`detect`] with this `nvidia-smi`.
pub async fn detect_with(binary: &Path) -> Result<Detected, String> {
    let (status, text) = query(binary, COLUMNS).await?;
    let (status, text, with_cc) = if text.contains("is not a valid field to query") {
        let (status, text) = query(binary, WITHOUT_COMPUTE_CAP).await?;
        (status, text, false)
    } else {
        (status, text, true)
    };
    let mut found = parse(&text, with_cc);
    if !status.success() {
        // A lost GPU makes nvidia-smi fail while it still reports the others.
        if found.gpus.is_empty() {
            return Err(format!("nvidia-smi failed ({status}): {}", text.trim()));
        }
        found
            .left_out
            .push(format!("nvidia-smi exited with {status}"));
    }
    Ok(found)
}

/// Runs `nvidia-smi --query-gpu=<columns>`; its status and stdout and stderr together.
async fn query(binary: &Path, columns: &str) -> Result<(std::process::ExitStatus, String), String> {
    let run = tokio::process::Command::new(binary)
        .arg(format!("--query-gpu={columns}"))
        .arg("--format=csv,noheader")
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(NVIDIA_SMI_TIMEOUT, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("running {}: {e}", binary.display())),
        Err(_) => {
            return Err(format!(
                "{} did not answer within {NVIDIA_SMI_TIMEOUT:?}",
                binary.display()
            ))
        }
    };
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((output.status, text))
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like real output of two hosts (an H100 node and a mixed workstation).
    const H100: &str = "0, GPU-2f6b4b3e-1c3a-4e3c-9d5e-1f2a3b4c5d6e, 00000000:18:00.0, 580.95.05, 81559 MiB, Disabled, 9.0, NVIDIA H100 80GB HBM3\n";
    const MIXED: &str = "\
0, GPU-aaaaaaaa-0000-0000-0000-000000000000, 00000000:01:00.0, 580.95.05, 24564 MiB, [N/A], 8.9, NVIDIA GeForce RTX 4090
1, GPU-bbbbbbbb-0000-0000-0000-000000000000, 00000000:02:00.0, 580.95.05, [N/A], [N/A], 8.6, NVIDIA RTX A4000, Laptop
2, GPU-cccccccc-0000-0000-0000-000000000000, 00000000:41:00.0, 580.95.05, 81920 MiB, Enabled, 8.0, NVIDIA A100-SXM4-80GB
Unable to determine the device handle for GPU0000:81:00.0: Unknown Error
4, [GPU is lost], 00000000:C1:00.0, 580.95.05, 16384 MiB, Disabled, 7.0, Tesla V100-SXM2-16GB
";

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn parses_one_gpu() {
        let found = parse(H100, true);
        assert_eq!(
            found.gpus,
            vec![GpuInfo {
                index: 0,
                uuid: "GPU-2f6b4b3e-1c3a-4e3c-9d5e-1f2a3b4c5d6e".into(),
                pci_bus_id: "00000000:18:00.0".into(),
                name: "NVIDIA H100 80GB HBM3".into(),
                driver_version: v("580.95.05"),
                compute_capability: Some(v("9.0")),
                memory_mib: Some(81559),
            }]
        );
        assert!(found.left_out.is_empty());
    }

    /// Each GPU on its own: `[N/A]` values are kept as unknown, a name with a comma whole, and a MIG GPU,
    /// an unreadable line and a lost GPU are left out with their reason while the others stay.
    #[test]
    fn each_gpu_is_read_on_its_own() {
        let found = parse(MIXED, true);
        let indices: Vec<u32> = found.gpus.iter().map(|g| g.index).collect();
        assert_eq!(indices, [0, 1]);
        assert_eq!(found.gpus[1].name, "NVIDIA RTX A4000, Laptop");
        assert_eq!(found.gpus[1].memory_mib, None);
        assert_eq!(found.gpus[0].memory_mib, Some(24564));
        assert_eq!(found.left_out.len(), 3, "{:?}", found.left_out);
        assert!(found.left_out[0].contains("GPU 2 (NVIDIA A100-SXM4-80GB) has MIG enabled"));
        assert!(found.left_out[0].contains("nvidia-smi -i 2 -mig 0"));
        assert!(
            found.left_out[1].contains("line 4") && found.left_out[1].contains("Unknown Error")
        );
        assert!(found.left_out[2].contains("GPU 4 has no UUID ([GPU is lost])"));
    }

    #[test]
    fn old_drivers_without_compute_cap_are_read() {
        let old = "0, GPU-dddddddd-0000-0000-0000-000000000000, 00000000:3B:00.0, 470.182.03, 32510 MiB, [N/A], Tesla V100-PCIE-32GB\n";
        let found = parse(old, false);
        assert_eq!(found.gpus.len(), 1, "{found:?}");
        assert_eq!(found.gpus[0].compute_capability, None);
        assert_eq!(found.gpus[0].driver_version, v("470.182.03"));
    }

    #[test]
    fn empty_output_means_no_gpus() {
        assert_eq!(parse("", true), Detected::default());
        assert_eq!(parse("\n", true), Detected::default());
    }

    #[test]
    fn malformed_values_name_the_column() {
        let bad = |line: &str| parse(line, true).left_out.join("; ");
        assert!(bad("0, GPU-x, 0:1:0.0, 580.95.05").contains("not a GPU's line"));
        assert!(bad("x, GPU-x, 0:1:0.0, 580.95.05, 1 MiB, Disabled, 9.0, H100").contains("index"));
        assert!(
            bad("0, GPU-x, 0:1:0.0, 580.95.05, lots, Disabled, 9.0, H100").contains("memory.total")
        );
        assert!(
            bad("0, GPU-x, 0:1:0.0, 580.95.05, 1 MiB, Disabled, nine, H100")
                .contains("compute_cap")
        );
        assert!(
            bad("0, GPU-x, 0:1:0.0, r580, 1 MiB, Disabled, 9.0, H100").contains("driver_version")
        );
    }

    /// What Paddock's CUDA 13.0 runtime cannot use is set aside with the reason; without a runtime
    /// (a CPU-only build) nothing is.
    #[test]
    fn gpus_the_runtime_cannot_use_are_set_aside() {
        let runtime = CudaRuntime {
            version: v("13.0"),
            architectures: vec![v("7.5"), v("12.0")],
        };
        let host = "\
0, GPU-a, 00000000:01:00.0, 580.95.05, 16384 MiB, Disabled, 7.0, Tesla V100
1, GPU-b, 00000000:02:00.0, 580.95.05, 24564 MiB, Disabled, 8.9, RTX 4090
";
        let found = parse(host, true).for_runtime(|| Some(&runtime));
        assert_eq!(found.gpus.len(), 1);
        assert_eq!(found.gpus[0].index, 1);
        assert!(found.left_out[0].starts_with("GPU 0 (Tesla V100): compute capability 7.0"));
        let old_driver = host.replace("580.95.05", "550.54.15");
        let found = parse(&old_driver, true).for_runtime(|| Some(&runtime));
        assert!(found.gpus.is_empty());
        assert!(found
            .left_out
            .iter()
            .all(|l| l.contains("550.54.15 is older than the 580.65.06")));
        assert_eq!(parse(&old_driver, true).for_runtime(|| None).gpus.len(), 2);
    }

    /// A fake `nvidia-smi` that knows no `compute_cap` (as before R510), then one that fails for a lost
    /// GPU after printing the others, then one that fails outright.
    #[tokio::test]
    async fn detection_asks_again_and_keeps_what_it_could_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = |name: &str, script: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let old = fake(
            "old",
            r#"case "$1" in *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; exit 2;; esac
echo '0, GPU-dddddddd, 00000000:3B:00.0, 470.182.03, 32510 MiB, [N/A], Tesla V100-PCIE-32GB'"#,
        );
        let found = detect_with(&old).await.unwrap();
        assert_eq!(
            (found.gpus.len(), found.gpus[0].compute_capability.clone()),
            (1, None)
        );

        let lost = fake(
            "lost",
            "echo '0, GPU-a, 00000000:01:00.0, 580.95.05, 16384 MiB, Disabled, 9.0, H100'\n\
             echo 'Unable to determine the device handle for GPU0000:02:00.0: GPU is lost'\nexit 15",
        );
        let found = detect_with(&lost).await.unwrap();
        assert_eq!(found.gpus.len(), 1);
        assert!(
            found.left_out.iter().any(|l| l.contains("GPU is lost")),
            "{found:?}"
        );
        assert!(
            found.left_out.iter().any(|l| l.contains("exited with")),
            "{found:?}"
        );

        let broken = fake(
            "broken",
            "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9",
        );
        let err = detect_with(&broken).await.unwrap_err();
        assert!(err.contains("could not communicate"), "{err}");
    }
}

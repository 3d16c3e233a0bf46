//! The host's NVIDIA GPUs, as `nvidia-smi` reports them. Parsing is a pure function over the CSV text so it
//! can be tested on recorded output; [`detect`] runs the binary when it exists and reports no GPUs otherwise
//! (a CPU-only host is normal, not an error).

use std::time::Duration;

use crate::cuda::Version;

/// The query [`detect`] runs; [`parse`] expects exactly these columns.
pub const NVIDIA_SMI_ARGS: &[&str] = &[
    "--query-gpu=index,name,driver_version,compute_cap,memory.total,uuid",
    "--format=csv,noheader",
];

/// How long `nvidia-smi` may take; it can hang for seconds when the driver is wedged, and preflight runs in
/// a request.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuInfo {
    /// Device index as Docker's `--gpus device=N` and CUDA number it.
    pub index: u32,
    pub name: String,
    pub driver_version: Version,
    pub compute_capability: Version,
    pub memory_mib: u64,
    pub uuid: String,
}

/// Parses `nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total,uuid
/// --format=csv,noheader`. The name may contain ", " so the fixed columns are taken from both ends.
pub fn parse(csv: &str) -> Result<Vec<GpuInfo>, String> {
    let mut gpus = Vec::new();
    for (n, line) in csv
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let err = |what: &str| format!("nvidia-smi line {}: {what}: {line:?}", n + 1);
        let (index, rest) = line.split_once(',').ok_or_else(|| err("too few columns"))?;
        let mut tail: Vec<&str> = rest.rsplitn(5, ',').collect();
        if tail.len() != 5 {
            return Err(err("too few columns"));
        }
        tail.reverse(); // name, driver, compute_cap, memory, uuid
        let memory = tail[3].trim();
        let memory_mib = memory
            .strip_suffix("MiB")
            .and_then(|m| m.trim().parse().ok())
            .ok_or_else(|| err("memory.total is not \"N MiB\""))?;
        gpus.push(GpuInfo {
            index: index
                .trim()
                .parse()
                .map_err(|_| err("index is not a number"))?,
            name: tail[0].trim().to_string(),
            driver_version: tail[1]
                .parse()
                .map_err(|_| err("driver_version is not a version"))?,
            compute_capability: tail[2]
                .parse()
                .map_err(|_| err("compute_cap is not a version"))?,
            memory_mib,
            uuid: tail[4].trim().to_string(),
        });
    }
    Ok(gpus)
}

/// The host's GPUs: empty when `nvidia-smi` is not installed; an error message when it exists but fails
/// (driver not loaded, …), so preflight can say why GPUs are unavailable. None when the `gpus` capability
/// is hidden (`hostcaps`).
pub async fn detect() -> Result<Vec<GpuInfo>, String> {
    if hostcaps::is_hidden(hostcaps::Capability::Gpus) {
        return Ok(Vec::new());
    }
    let Some(binary) = find_in_path("nvidia-smi") else {
        return Ok(Vec::new());
    };
    let run = tokio::process::Command::new(&binary)
        .args(NVIDIA_SMI_ARGS)
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
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string()
            + String::from_utf8_lossy(&output.stderr).trim();
        return Err(format!("nvidia-smi failed ({}): {text}", output.status));
    }
    parse(&String::from_utf8_lossy(&output.stdout))
}

fn find_in_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like real output of two hosts (an H100 node and a mixed workstation).
    const H100: &str = "0, NVIDIA H100 80GB HBM3, 550.54.15, 9.0, 81559 MiB, GPU-2f6b4b3e-1c3a-4e3c-9d5e-1f2a3b4c5d6e\n";
    const MIXED: &str = "\
0, NVIDIA GeForce RTX 4090, 535.104.05, 8.9, 24564 MiB, GPU-aaaaaaaa-0000-0000-0000-000000000000
1, NVIDIA RTX A4000, Laptop, 535.104.05, 8.6, 16376 MiB, GPU-bbbbbbbb-0000-0000-0000-000000000000
";

    #[test]
    fn parses_one_gpu() {
        let gpus = parse(H100).unwrap();
        assert_eq!(
            gpus,
            vec![GpuInfo {
                index: 0,
                name: "NVIDIA H100 80GB HBM3".into(),
                driver_version: "550.54.15".parse().unwrap(),
                compute_capability: "9.0".parse().unwrap(),
                memory_mib: 81559,
                uuid: "GPU-2f6b4b3e-1c3a-4e3c-9d5e-1f2a3b4c5d6e".into(),
            }]
        );
    }

    #[test]
    fn parses_several_and_names_with_commas() {
        let gpus = parse(MIXED).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[1].index, 1);
        assert_eq!(gpus[1].name, "NVIDIA RTX A4000, Laptop");
        assert_eq!(gpus[1].compute_capability, "8.6".parse().unwrap());
    }

    #[test]
    fn empty_output_means_no_gpus() {
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("\n").unwrap(), vec![]);
    }

    #[test]
    fn malformed_output_is_an_error() {
        assert!(parse("0, H100, 550.54.15")
            .unwrap_err()
            .contains("too few columns"));
        assert!(parse("0, H100, 550.54.15, [N/A], 81559 MiB, GPU-x")
            .unwrap_err()
            .contains("compute_cap"));
        assert!(parse("x, H100, 550.54.15, 9.0, 81559 MiB, GPU-x")
            .unwrap_err()
            .contains("index"));
        assert!(parse("0, H100, 550.54.15, 9.0, lots, GPU-x")
            .unwrap_err()
            .contains("memory.total"));
    }
}

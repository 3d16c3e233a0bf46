//! Preflight: before provisioning, decide whether this host can run the environment at all, and refuse
//! with a sentence the user can act on. The checks are the failures users of CUDA images meet most: GPUs
//! asked for on a host without any, too many or non-existent device indices, a driver older than the image's
//! CUDA needs, and a GPU too old for the image's CUDA. CPU-only environments pass on any host.

pub mod gpus;

use crate::catalog::ImageRequirements;
use crate::error::{Error, Result};
use crate::spec::{EnvSpec, GpuRequest};
pub use gpus::{Detected, GpuInfo};
use hostcaps::cuda::{max_cuda_for, min_driver_for};

impl crate::Docker {
    /// Preflight for `spec` on this host: its base image's requirements (catalog entry, else the image's
    /// own `CUDA_VERSION` when the image is present) against the GPUs `nvidia-smi` reports.
    pub async fn preflight(&self, spec: &EnvSpec) -> Result<()> {
        let image_env = match self.image_info(&spec.base_image).await {
            Ok(info) => info.env,
            Err(Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        let image = ImageRequirements::for_image(&spec.base_image, &image_env);
        let host = match gpus::detect().await {
            // An image that carries Paddock's runtime needs what its CUDA needs, too.
            Ok(found) => found.for_runtime(|| {
                spec.runtime
                    .as_ref()
                    .and_then(|_| hostcaps::cuda::cuda_runtime())
            }),
            Err(why) if spec.gpus.count() > 0 => {
                return Err(Error::Preflight(vec![format!(
                    "GPUs are unavailable on this host: {why}"
                )]))
            }
            Err(_) => Detected::default(),
        };
        check(spec, &image, &host)
    }
}

/// Checks `spec` (with the requirements of its image) against the host's usable GPUs. All problems are
/// reported together in [`Error::Preflight`], with why any GPU of the host was left out.
pub fn check(spec: &EnvSpec, image: &ImageRequirements, host: &Detected) -> Result<()> {
    let requested = spec.gpus.count();
    if requested == 0 {
        return Ok(());
    }
    let host_gpus = host.gpus.as_slice();
    let mut problems = Vec::new();
    if host_gpus.is_empty() {
        problems.push(if host.left_out.is_empty() {
            format!(
                "the environment requests {requested} GPU{} but this host has no NVIDIA GPU (nvidia-smi is missing or reports none); use gpus \"none\" for a CPU environment",
                plural(requested)
            )
        } else {
            format!(
                "the environment requests {requested} GPU{} but no GPU of this host can be used",
                plural(requested)
            )
        });
        problems.extend(host.left_out.iter().cloned());
        return Err(Error::Preflight(problems));
    }

    // The GPUs the environment may end up on.
    let candidates: Vec<&GpuInfo> = match &spec.gpus {
        GpuRequest::None => Vec::new(),
        GpuRequest::Count(n) => {
            if *n as usize > host_gpus.len() {
                problems.push(format!(
                    "the environment requests {n} GPUs but this host has only {}",
                    host_gpus.len()
                ));
            }
            host_gpus.iter().collect()
        }
        GpuRequest::Devices(indices) => {
            let known: Vec<u32> = host_gpus.iter().map(|g| g.index).collect();
            for index in indices {
                if !known.contains(index) {
                    problems.push(format!(
                        "GPU device index {index} does not exist; this host has GPU{} {}",
                        plural(known.len()),
                        known
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            host_gpus
                .iter()
                .filter(|g| indices.contains(&g.index))
                .collect()
        }
    };

    if let Some(cuda) = &image.cuda {
        // One driver serves every GPU of a host; take the oldest reported to be safe.
        let driver = host_gpus
            .iter()
            .map(|g| &g.driver_version)
            .min()
            .expect("non-empty");
        match min_driver_for(cuda) {
            None => problems.push(format!(
                "the image needs CUDA {cuda}, which is not in Paddock's CUDA/driver table, so compatibility with driver {driver} cannot be confirmed"
            )),
            Some(min) if driver < &min => {
                let supports = max_cuda_for(driver)
                    .map(|c| format!(" (it supports up to CUDA {c})"))
                    .unwrap_or_default();
                problems.push(format!(
                    "the image needs CUDA {cuda}, which requires NVIDIA driver {min} or newer, but this host has driver {driver}{supports}; choose an image with an older CUDA or upgrade the driver"
                ));
            }
            Some(_) => {}
        }
    }

    if let Some(min_cc) = &image.min_compute_capability {
        let too_old: Vec<&GpuInfo> = candidates
            .iter()
            .copied()
            // Unknown (drivers before R510): the driver check above speaks for such hosts.
            .filter(|g| g.compute_capability.as_ref().is_some_and(|cc| cc < min_cc))
            .collect();
        // Explicit devices must all be usable; for a count, enough usable GPUs must remain for the
        // inventory to pick from (a count beyond the host is reported above already).
        let refuse = match &spec.gpus {
            GpuRequest::Devices(_) => !too_old.is_empty(),
            _ => requested <= host_gpus.len() && candidates.len() - too_old.len() < requested,
        };
        if refuse {
            for gpu in too_old {
                problems.push(format!(
                    "GPU {} ({}) has compute capability {}, below the {} the image's CUDA supports",
                    gpu.index,
                    gpu.name,
                    gpu.compute_capability
                        .as_ref()
                        .map_or("?".into(), ToString::to_string),
                    min_cc
                ));
            }
        }
    }

    if problems.is_empty() {
        Ok(())
    } else {
        // Why the host has fewer GPUs than it seems to.
        problems.extend(host.left_out.iter().cloned());
        Err(Error::Preflight(problems))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;

    fn gpu(index: u32, driver: &str, cc: &str) -> GpuInfo {
        GpuInfo {
            index,
            uuid: format!("GPU-{index}"),
            pci_bus_id: format!("00000000:0{index}:00.0"),
            name: format!("Test GPU {index}"),
            driver_version: driver.parse().unwrap(),
            compute_capability: Some(cc.parse().unwrap()),
            memory_mib: Some(24_000),
        }
    }

    /// A host with these usable GPUs and none left out.
    fn host(gpus: &[GpuInfo]) -> Detected {
        Detected {
            gpus: gpus.to_vec(),
            left_out: Vec::new(),
        }
    }

    fn spec(gpus: GpuRequest, base: &str) -> EnvSpec {
        EnvSpec::from_json(&format!(
            r#"{{"name":"t","base_image":"{base}","cpus":1,"memory":"1g","workspace_volume":"w"}}"#
        ))
        .map(|s| EnvSpec { gpus, ..s })
        .unwrap()
    }

    const CUDA_124: &str = "nvidia/cuda:12.4.1-runtime-ubuntu22.04";

    fn problems(result: Result<()>) -> Vec<String> {
        match result {
            Err(Error::Preflight(p)) => p,
            other => panic!("expected a preflight refusal, got {other:?}"),
        }
    }

    fn req(reference: &str) -> ImageRequirements {
        lookup(reference).unwrap().requirements()
    }

    #[test]
    fn cpu_environments_pass_anywhere() {
        assert!(check(
            &spec(GpuRequest::None, CUDA_124),
            &req(CUDA_124),
            &host(&[])
        )
        .is_ok());
    }

    #[test]
    fn gpus_requested_without_gpus() {
        let p = problems(check(
            &spec(GpuRequest::Count(1), CUDA_124),
            &req(CUDA_124),
            &host(&[]),
        ));
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("no NVIDIA GPU"), "{p:?}");
    }

    #[test]
    fn too_many_gpus() {
        let gpus = [gpu(0, "550.54.15", "9.0")];
        let p = problems(check(
            &spec(GpuRequest::Count(99), CUDA_124),
            &req(CUDA_124),
            &host(&gpus),
        ));
        assert_eq!(
            p,
            ["the environment requests 99 GPUs but this host has only 1"]
        );
    }

    #[test]
    fn device_index_out_of_range() {
        let gpus = [gpu(0, "550.54.15", "9.0"), gpu(1, "550.54.15", "9.0")];
        let p = problems(check(
            &spec(GpuRequest::Devices(vec![1, 7]), CUDA_124),
            &req(CUDA_124),
            &host(&gpus),
        ));
        assert_eq!(
            p,
            ["GPU device index 7 does not exist; this host has GPUs 0, 1"]
        );
    }

    #[test]
    fn driver_too_old_names_both_versions() {
        let gpus = [gpu(0, "535.104.05", "8.9")];
        let p = problems(check(
            &spec(GpuRequest::Count(1), CUDA_124),
            &req(CUDA_124),
            &host(&gpus),
        ));
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("CUDA 12.4.1"), "{}", p[0]);
        assert!(p[0].contains("550.54.15"), "{}", p[0]);
        assert!(p[0].contains("535.104.05"), "{}", p[0]);
        assert!(p[0].contains("supports up to CUDA 12.2.2"), "{}", p[0]);
    }

    #[test]
    fn new_enough_driver_passes() {
        let gpus = [gpu(0, "550.54.15", "9.0")];
        assert!(check(
            &spec(GpuRequest::Count(1), CUDA_124),
            &req(CUDA_124),
            &host(&gpus)
        )
        .is_ok());
        let gpus = [gpu(0, "570.124.06", "12.0")];
        let cuda_128 = "nvidia/cuda:12.8.1-runtime-ubuntu24.04";
        assert!(check(
            &spec(GpuRequest::Devices(vec![0]), cuda_128),
            &req(cuda_128),
            &host(&gpus)
        )
        .is_ok());
    }

    #[test]
    fn compute_capability_too_low() {
        let gpus = [gpu(0, "550.54.15", "3.7")];
        let p = problems(check(
            &spec(GpuRequest::Devices(vec![0]), CUDA_124),
            &req(CUDA_124),
            &host(&gpus),
        ));
        assert_eq!(p, ["GPU 0 (Test GPU 0) has compute capability 3.7, below the 5.0 the image's CUDA supports"]);
        // With a count, an old GPU beside enough new ones is fine: the inventory can pick the new ones.
        let gpus = [gpu(0, "550.54.15", "3.7"), gpu(1, "550.54.15", "8.0")];
        assert!(check(
            &spec(GpuRequest::Count(1), CUDA_124),
            &req(CUDA_124),
            &host(&gpus)
        )
        .is_ok());
        assert!(check(
            &spec(GpuRequest::Count(2), CUDA_124),
            &req(CUDA_124),
            &host(&gpus)
        )
        .is_err());
    }

    /// GPUs left out at detection are named when the rest do not suffice, and only then.
    #[test]
    fn gpus_left_out_are_named_when_they_are_missed() {
        let why = "GPU 1 (A100) has MIG enabled; …".to_string();
        let one_left = Detected {
            gpus: vec![gpu(0, "550.54.15", "9.0")],
            left_out: vec![why.clone()],
        };
        let base = spec(GpuRequest::Count(1), CUDA_124);
        assert!(check(&base, &req(CUDA_124), &one_left).is_ok());
        let p = problems(check(
            &spec(GpuRequest::Count(2), CUDA_124),
            &req(CUDA_124),
            &one_left,
        ));
        assert_eq!(p.last(), Some(&why));
        let none_left = Detected {
            gpus: vec![],
            left_out: vec![why.clone()],
        };
        let p = problems(check(&base, &req(CUDA_124), &none_left));
        assert_eq!(
            p,
            [
                "the environment requests 1 GPU but no GPU of this host can be used".to_string(),
                why
            ]
        );
    }

    #[test]
    fn unknown_cuda_is_refused_plainly() {
        let gpus = [gpu(0, "580.65.06", "9.0")];
        let image = ImageRequirements {
            cuda: Some("14.1".parse().unwrap()),
            min_compute_capability: None,
        };
        let p = problems(check(
            &spec(GpuRequest::Count(1), "team/x:1"),
            &image,
            &host(&gpus),
        ));
        assert!(p[0].contains("not in Paddock's CUDA/driver table"), "{p:?}");
    }
}

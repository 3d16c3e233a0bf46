//! A small catalog of base images Paddock knows: their CUDA version (None for CPU-only), the oldest driver
//! that runs them (from [`hostcaps::cuda`]), the lowest GPU compute capability their CUDA supports, and their
//! family (which decides whether apt packages are possible). Images outside the catalog are allowed; their
//! CUDA requirement is then read from the image's own `CUDA_VERSION` variable (see
//! [`ImageRequirements::from_image_env`]).

use hostcaps::cuda::{min_driver_for, Version};

/// The image Paddock builds itself, without any registry (see `base`).
pub const BUSYBOX_BASE: &str = "paddock/base:busybox";

/// What a base image is made of, as far as building on top of it is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Static busybox on scratch: a POSIX shell, no package manager, no libc.
    Busybox,
    /// Debian or Ubuntu: apt and glibc.
    Debian,
}

impl Family {
    pub fn has_apt(self) -> bool {
        matches!(self, Family::Debian)
    }

    /// Whether the image brings its own glibc (then the runtime layer must not ship one).
    pub fn has_libc(self) -> bool {
        matches!(self, Family::Debian)
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BaseImage {
    pub reference: &'static str,
    pub description: &'static str,
    pub description_zh: &'static str,
    pub family: Family,
    /// Built on this host by Paddock (no pull needed).
    pub local: bool,
    /// CUDA toolkit version inside; None for CPU-only images.
    pub cuda: Option<&'static str>,
    /// Lowest compute capability the image's CUDA can run on (`major.minor`).
    pub min_compute_capability: Option<&'static str>,
}

impl BaseImage {
    /// What preflight needs to know about this image.
    pub fn requirements(&self) -> ImageRequirements {
        ImageRequirements {
            cuda: self.cuda.map(|c| c.parse().expect("catalog entry")),
            min_compute_capability: self
                .min_compute_capability
                .map(|c| c.parse().expect("catalog entry")),
        }
    }

    /// Oldest driver that runs this image; None for CPU images.
    pub fn min_driver(&self) -> Option<Version> {
        self.requirements().cuda.as_ref().and_then(min_driver_for)
    }
}

/// The catalog. CUDA 12.x supports compute capability 5.0 (Maxwell) and newer; 11.8 still 3.5.
pub const CATALOG: &[BaseImage] = &[
    BaseImage {
        reference: BUSYBOX_BASE,
        description:
            "Static busybox on scratch, built locally; CPU only, for tests and minimal jobs",
        description_zh: "scratch 上的静态 busybox，本机构建；仅 CPU，用于测试和最小的任务",
        family: Family::Busybox,
        local: true,
        cuda: None,
        min_compute_capability: None,
    },
    BaseImage {
        reference: "debian:bookworm-slim",
        description: "Debian 12 slim; CPU only",
        description_zh: "Debian 12 精简版；仅 CPU",
        family: Family::Debian,
        local: false,
        cuda: None,
        min_compute_capability: None,
    },
    BaseImage {
        reference: "nvidia/cuda:12.8.1-runtime-ubuntu24.04",
        description: "CUDA 12.8.1 runtime on Ubuntu 24.04 (Blackwell support)",
        description_zh: "Ubuntu 24.04 上的 CUDA 12.8.1 运行时（支持 Blackwell）",
        family: Family::Debian,
        local: false,
        cuda: Some("12.8.1"),
        min_compute_capability: Some("5.0"),
    },
    BaseImage {
        reference: "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
        description: "CUDA 12.4.1 runtime on Ubuntu 22.04",
        description_zh: "Ubuntu 22.04 上的 CUDA 12.4.1 运行时",
        family: Family::Debian,
        local: false,
        cuda: Some("12.4.1"),
        min_compute_capability: Some("5.0"),
    },
    BaseImage {
        reference: "nvidia/cuda:11.8.0-runtime-ubuntu22.04",
        description: "CUDA 11.8 runtime on Ubuntu 22.04, for older drivers (without the Paddock runtime, whose CUDA has its own needs)",
        description_zh: "Ubuntu 22.04 上的 CUDA 11.8 运行时，适合较旧的驱动（不含 Paddock 运行时；运行时自带的 CUDA 另有要求）",
        family: Family::Debian,
        local: false,
        cuda: Some("11.8.0"),
        min_compute_capability: Some("3.5"),
    },
];

/// The catalog entry for a reference, if any.
pub fn lookup(reference: &str) -> Option<&'static BaseImage> {
    CATALOG.iter().find(|b| b.reference == reference)
}

/// What an image needs from the host's GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageRequirements {
    pub cuda: Option<Version>,
    pub min_compute_capability: Option<Version>,
}

impl ImageRequirements {
    /// For a catalog reference, its entry; otherwise from the image's environment (`CUDA_VERSION=12.4.1`, as
    /// set by NVIDIA's images and most derived from them). CUDA ≥ 12 implies compute capability ≥ 5.0.
    pub fn for_image(reference: &str, image_env: &[String]) -> Self {
        match lookup(reference) {
            Some(entry) => entry.requirements(),
            None => Self::from_image_env(image_env),
        }
    }

    pub fn from_image_env(image_env: &[String]) -> Self {
        let cuda: Option<Version> = image_env
            .iter()
            .find_map(|kv| kv.strip_prefix("CUDA_VERSION="))
            .and_then(|v| v.parse().ok());
        let min_compute_capability = cuda.as_ref().map(|c| {
            let floor = if c.parts()[0] >= 13 {
                "7.5"
            } else if c.parts()[0] >= 12 {
                "5.0"
            } else {
                "3.5"
            };
            floor.parse().expect("literal")
        });
        ImageRequirements {
            cuda,
            min_compute_capability,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_consistent() {
        for entry in CATALOG {
            assert_eq!(
                crate::spec::check_image_ref(entry.reference),
                Ok(()),
                "{}",
                entry.reference
            );
            match entry.cuda {
                Some(_) => {
                    assert!(
                        entry.min_driver().is_some(),
                        "{} needs a driver table entry",
                        entry.reference
                    );
                    assert!(entry.min_compute_capability.is_some());
                }
                None => assert!(entry.min_driver().is_none()),
            }
        }
        assert!(lookup(BUSYBOX_BASE).unwrap().local);
    }

    #[test]
    fn known_driver_requirements() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert_eq!(
            lookup("nvidia/cuda:12.4.1-runtime-ubuntu22.04")
                .unwrap()
                .min_driver(),
            Some(v("550.54.15"))
        );
        assert_eq!(
            lookup("nvidia/cuda:12.8.1-runtime-ubuntu24.04")
                .unwrap()
                .min_driver(),
            Some(v("570.124.06"))
        );
        assert_eq!(
            lookup("nvidia/cuda:11.8.0-runtime-ubuntu22.04")
                .unwrap()
                .min_driver(),
            Some(v("520.61.05"))
        );
    }

    #[test]
    fn requirements_from_image_env() {
        let env = vec![
            "PATH=/usr/bin".to_string(),
            "CUDA_VERSION=12.6.3".to_string(),
        ];
        let r = ImageRequirements::for_image("team/custom:1", &env);
        assert_eq!(r.cuda, Some("12.6.3".parse().unwrap()));
        assert_eq!(r.min_compute_capability, Some("5.0".parse().unwrap()));
        assert_eq!(
            ImageRequirements::for_image("team/custom:1", &[]),
            ImageRequirements::default()
        );
        // The catalog wins over the environment for known references.
        assert_eq!(
            ImageRequirements::for_image(BUSYBOX_BASE, &env),
            ImageRequirements::default()
        );
    }
}

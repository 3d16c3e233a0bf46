//! The environment spec: what a user asks for (image, runtime layer, packages, resources, GPUs, variables,
//! working directory, workspace volume). It is plain serde data, stored by the app as a versioned JSON
//! document; [`EnvSpec::validate`] lists every broken rule at once so a form can mark all bad fields, and
//! [`EnvSpec::spec_hash`] identifies a version (see `canonical`).

mod canonical;
mod rules;
pub use rules::reserved_env;
mod size;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use canonical::CANONICAL_VERSION;
pub use rules::check_image_ref;
pub use size::{format_size, parse_size};

/// One environment version, as the user wrote it. Sizes stay strings ("8g") so that what is stored is what
/// was typed; [`EnvSpec::resources`] gives the parsed values after validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Display name; no shell metacharacters (it ends up in labels, logs and container names).
    pub name: String,
    /// Base image reference (`debian:bookworm-slim`, `paddock/base:busybox`, `sha256:…`).
    pub base_image: String,
    /// Paddock's runtime (its binary and shared libraries) copied into the image, so jobs and model servers
    /// can run inside the environment.
    #[serde(default)]
    pub runtime: Option<RuntimeLayer>,
    /// Extra OS packages installed with apt; only for Debian/Ubuntu bases. `name` or `name=version`.
    #[serde(default)]
    pub os_packages: Vec<String>,
    /// CPU limit in cores (fractions allowed), greater than zero and at most the host's CPUs.
    pub cpus: f64,
    /// Memory limit ("8g", "512m"); swap is disabled, so this is the hard ceiling.
    pub memory: String,
    /// Size of `/dev/shm` ("1g"); PyTorch data loaders need more than Docker's 64m default.
    #[serde(default = "default_shm")]
    pub shm_size: String,
    /// GPUs the environment needs.
    #[serde(default)]
    pub gpus: GpuRequest,
    /// Whether the GPUs may also be assigned to other environments; the app's inventory honours it.
    #[serde(default)]
    pub shared_gpus: bool,
    /// Environment variables baked into the image. A BTreeMap so that order never changes the hash.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory inside the container.
    #[serde(default = "default_working_dir")]
    pub working_dir: String,
    /// Name of the workspace's persistent volume, mounted at `/workspace`.
    pub workspace_volume: String,
}

/// GPUs an environment asks for. Serialized as `"none"`, `{"count": 2}` or `{"devices": [0, 3]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuRequest {
    #[default]
    None,
    /// Any N GPUs; the app's inventory picks which.
    Count(u32),
    /// These host device indices exactly (as `nvidia-smi` numbers them).
    Devices(Vec<u32>),
}

impl GpuRequest {
    /// How many GPUs are requested.
    pub fn count(&self) -> usize {
        match self {
            GpuRequest::None => 0,
            GpuRequest::Count(n) => *n as usize,
            GpuRequest::Devices(d) => d.len(),
        }
    }
}

/// Where the runtime layer comes from on the Paddock host: an absolute path to the binary. Its shared-library
/// closure (found with `ldd` at build time) is copied along.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeLayer {
    pub binary: String,
}

/// A rule broken by one field. `field` uses the serde name (`memory`, `env.HF_HOME`, `os_packages[2]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// "field: message; field: message", for one-line error displays.
    pub fn join(errors: &[FieldError]) -> String {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The machine the environment will run on; CPU and memory requests must fit in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLimits {
    pub cpus: f64,
    pub memory_bytes: u64,
}

impl HostLimits {
    /// This machine's limits (available parallelism and `/proc/meminfo`). When Docker runs elsewhere, use
    /// [`crate::Docker::host_limits`] instead.
    pub fn local() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .unwrap_or(u64::MAX);
        HostLimits { cpus, memory_bytes }
    }
}

/// Parsed resource limits of a valid spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// CPU limit in billionths of a CPU (Docker's `NanoCpus`).
    pub nano_cpus: i64,
    pub memory_bytes: i64,
    pub shm_bytes: i64,
}

/// Smallest memory limit accepted: below this Docker itself refuses (6 MiB) and nothing useful runs.
pub const MIN_MEMORY_BYTES: u64 = 16 << 20;

fn default_shm() -> String {
    "64m".into()
}

fn default_working_dir() -> String {
    "/workspace".into()
}

impl EnvSpec {
    /// Parses a spec from JSON, naming the offending path when the document itself is malformed
    /// (unknown field, wrong type).
    pub fn from_json(json: &str) -> Result<Self, FieldError> {
        serde_json::from_str(json).map_err(|e| {
            let msg = e.to_string();
            // serde_json names unknown fields in its message; keep the message, attribute it to the document.
            FieldError::new("spec", msg)
        })
    }

    /// Validates against this machine's CPUs and memory. See [`EnvSpec::validate_against`].
    pub fn validate(&self) -> Vec<FieldError> {
        self.validate_against(&HostLimits::local())
    }

    /// Every broken rule, in field order; empty when the spec is valid.
    pub fn validate_against(&self, host: &HostLimits) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut check = |field: &str, result: Result<(), String>| {
            if let Err(message) = result {
                errors.push(FieldError::new(field, message));
            }
        };
        check("name", rules::check_name(&self.name));
        check("base_image", rules::check_image_ref(&self.base_image));
        if let Some(runtime) = &self.runtime {
            check("runtime.binary", check_host_path(&runtime.binary));
        }
        if !self.os_packages.is_empty() {
            if let Some(base) = crate::catalog::lookup(&self.base_image) {
                if !base.family.has_apt() {
                    check(
                        "os_packages",
                        Err(format!("{} has no package manager; extra OS packages need a Debian or Ubuntu base", base.reference)),
                    );
                }
            }
        }
        for (i, package) in self.os_packages.iter().enumerate() {
            check(&format!("os_packages[{i}]"), rules::check_package(package));
        }
        check("cpus", check_cpus(self.cpus, host));
        let memory = parse_size(&self.memory);
        check(
            "memory",
            match memory {
                None => Err(format!(
                    "{:?} is not a size; use a number with a unit, like 512m or 8g",
                    self.memory
                )),
                Some(b) if b < MIN_MEMORY_BYTES => Err(format!(
                    "must be at least {}",
                    format_size(MIN_MEMORY_BYTES)
                )),
                Some(b) if b > host.memory_bytes => Err(format!(
                    "{} is more than the host's {}",
                    self.memory,
                    format_size(host.memory_bytes)
                )),
                Some(_) => Ok(()),
            },
        );
        check(
            "shm_size",
            match parse_size(&self.shm_size) {
                None => Err(format!(
                    "{:?} is not a size; use a number with a unit, like 64m or 1g",
                    self.shm_size
                )),
                Some(0) => Err("must be greater than zero".into()),
                // /dev/shm is tmpfs charged to the container's memory, so it cannot usefully exceed the limit.
                Some(s) if memory.is_some_and(|m| s > m) => {
                    Err("must not be larger than memory".into())
                }
                Some(_) => Ok(()),
            },
        );
        check(
            "gpus",
            match &self.gpus {
                GpuRequest::Count(0) => Err("use \"none\" instead of a count of 0".into()),
                GpuRequest::Devices(d) if d.is_empty() => {
                    Err("list at least one device index, or use \"none\"".into())
                }
                GpuRequest::Devices(d) => {
                    let mut sorted = d.clone();
                    sorted.sort_unstable();
                    sorted.dedup();
                    if sorted.len() != d.len() {
                        Err("device indices must not repeat".into())
                    } else {
                        Ok(())
                    }
                }
                _ => Ok(()),
            },
        );
        for (name, value) in &self.env {
            check(
                &format!("env.{name}"),
                rules::check_env_name(name).and_then(|_| rules::check_env_value(value)),
            );
        }
        check("working_dir", rules::check_abs_path(&self.working_dir));
        check(
            "workspace_volume",
            rules::check_volume(&self.workspace_volume),
        );
        errors
    }

    /// Parsed limits; fails with every field error when the spec is invalid.
    pub fn resources(&self, host: &HostLimits) -> Result<Resources, crate::Error> {
        let errors = self.validate_against(host);
        if !errors.is_empty() {
            return Err(crate::Error::InvalidSpec(errors));
        }
        Ok(Resources {
            nano_cpus: (self.cpus * 1e9).round() as i64,
            memory_bytes: parse_size(&self.memory).expect("validated") as i64,
            shm_bytes: parse_size(&self.shm_size).expect("validated") as i64,
        })
    }
}

fn check_cpus(cpus: f64, host: &HostLimits) -> Result<(), String> {
    if !cpus.is_finite() || cpus <= 0.0 {
        return Err("must be greater than 0".into());
    }
    if cpus < 0.01 {
        return Err("must be at least 0.01".into());
    }
    if cpus > host.cpus {
        return Err(format!("{cpus} is more than the host's {} CPUs", host.cpus));
    }
    Ok(())
}

/// Host paths for the runtime binary: absolute, no `..`. Characters are not restricted (the path is read by
/// Paddock, never written into a Dockerfile).
fn check_host_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("{path:?} must be an absolute path"));
    }
    if path.split('/').any(|s| s == "..") || path.contains('\0') {
        return Err(format!("{path:?} must not contain '..'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> EnvSpec {
        EnvSpec {
            name: "pytorch dev".into(),
            base_image: "debian:bookworm-slim".into(),
            runtime: None,
            os_packages: vec!["curl".into(), "git".into()],
            cpus: 1.5,
            memory: "2g".into(),
            shm_size: "256m".into(),
            gpus: GpuRequest::None,
            shared_gpus: false,
            env: BTreeMap::from([("HF_HOME".into(), "/workspace/hf".into())]),
            working_dir: "/workspace".into(),
            workspace_volume: "team-data".into(),
        }
    }

    const HOST: HostLimits = HostLimits {
        cpus: 2.0,
        memory_bytes: 24 << 30,
    };

    fn fields(spec: &EnvSpec) -> Vec<String> {
        spec.validate_against(&HOST)
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn sample_is_valid() {
        assert_eq!(sample().validate_against(&HOST), vec![]);
        let r = sample().resources(&HOST).unwrap();
        assert_eq!(
            r,
            Resources {
                nano_cpus: 1_500_000_000,
                memory_bytes: 2 << 30,
                shm_bytes: 256 << 20
            }
        );
    }

    #[test]
    fn memory_lots_names_the_field() {
        let spec = EnvSpec {
            memory: "lots".into(),
            ..sample()
        };
        let errors = spec.validate_against(&HOST);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "memory");
        assert!(
            errors[0].message.contains("\"lots\" is not a size"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn memory_bounds() {
        assert_eq!(
            fields(&EnvSpec {
                memory: "1m".into(),
                shm_size: "1m".into(),
                ..sample()
            }),
            ["memory"]
        );
        assert_eq!(
            fields(&EnvSpec {
                memory: "100g".into(),
                ..sample()
            }),
            ["memory"]
        );
        assert_eq!(
            fields(&EnvSpec {
                shm_size: "4g".into(),
                ..sample()
            }),
            ["shm_size"]
        );
        assert_eq!(
            fields(&EnvSpec {
                shm_size: "0".into(),
                ..sample()
            }),
            ["shm_size"]
        );
        assert_eq!(
            fields(&EnvSpec {
                shm_size: "big".into(),
                ..sample()
            }),
            ["shm_size"]
        );
    }

    #[test]
    fn cpus_bounds() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 3.0, 0.001] {
            assert_eq!(
                fields(&EnvSpec {
                    cpus: bad,
                    ..sample()
                }),
                ["cpus"],
                "{bad}"
            );
        }
        assert!(fields(&EnvSpec {
            cpus: 2.0,
            ..sample()
        })
        .is_empty());
    }

    #[test]
    fn gpus_rules() {
        assert_eq!(
            fields(&EnvSpec {
                gpus: GpuRequest::Count(0),
                ..sample()
            }),
            ["gpus"]
        );
        assert_eq!(
            fields(&EnvSpec {
                gpus: GpuRequest::Devices(vec![]),
                ..sample()
            }),
            ["gpus"]
        );
        assert_eq!(
            fields(&EnvSpec {
                gpus: GpuRequest::Devices(vec![1, 1]),
                ..sample()
            }),
            ["gpus"]
        );
        // 99 GPUs is syntactically fine; the host check (preflight) refuses it.
        assert!(fields(&EnvSpec {
            gpus: GpuRequest::Count(99),
            ..sample()
        })
        .is_empty());
    }

    #[test]
    fn all_errors_are_reported_at_once() {
        let spec = EnvSpec {
            name: "x; rm -rf /".into(),
            base_image: "Not An Image".into(),
            memory: "lots".into(),
            workspace_volume: "../../etc".into(),
            working_dir: "/a/../b".into(),
            env: BTreeMap::from([
                ("BAD-NAME".into(), "v".into()),
                ("NVIDIA_VISIBLE_DEVICES".into(), "all".into()),
                ("OK".into(), "a\0b".into()),
            ]),
            os_packages: vec!["Bad Package".into()],
            runtime: Some(RuntimeLayer {
                binary: "relative/paddock".into(),
            }),
            ..sample()
        };
        assert_eq!(
            fields(&spec),
            [
                "name",
                "base_image",
                "runtime.binary",
                "os_packages[0]",
                "memory",
                "env.BAD-NAME",
                "env.NVIDIA_VISIBLE_DEVICES",
                "env.OK",
                "working_dir",
                "workspace_volume"
            ]
        );
    }

    #[test]
    fn packages_need_an_apt_base() {
        let spec = EnvSpec {
            base_image: crate::catalog::BUSYBOX_BASE.into(),
            ..sample()
        };
        assert_eq!(fields(&spec), ["os_packages"]);
        let spec = EnvSpec {
            base_image: crate::catalog::BUSYBOX_BASE.into(),
            os_packages: vec![],
            ..sample()
        };
        assert!(fields(&spec).is_empty());
    }

    #[test]
    fn serde_round_trip_and_unknown_fields() {
        let json = serde_json::to_string(&sample()).unwrap();
        assert_eq!(EnvSpec::from_json(&json).unwrap(), sample());
        let gpus: EnvSpec =
            serde_json::from_str(&json.replace("\"none\"", "{\"devices\":[0,3]}")).unwrap();
        assert_eq!(gpus.gpus, GpuRequest::Devices(vec![0, 3]));
        let bad = json.replacen('{', "{\"memroy\":\"8g\",", 1);
        let err = EnvSpec::from_json(&bad).unwrap_err();
        assert!(err.message.contains("unknown field `memroy`"), "{err}");
    }

    #[test]
    fn defaults_apply() {
        let spec = EnvSpec::from_json(
            r#"{"name":"a","base_image":"paddock/base:busybox","cpus":1,"memory":"1g","workspace_volume":"w"}"#,
        )
        .unwrap();
        assert_eq!(spec.shm_size, "64m");
        assert_eq!(spec.working_dir, "/workspace");
        assert_eq!(spec.gpus, GpuRequest::None);
        assert!(spec.validate_against(&HOST).is_empty());
    }
}

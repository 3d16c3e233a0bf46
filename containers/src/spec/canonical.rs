//! Canonical serialization and hashes of a spec. The canonical form is JSON with a fixed field order (a
//! struct, not a map), sizes normalized to bytes, CPUs to nano-CPUs (no float formatting), packages and GPU
//! indices sorted, and env vars sorted by name — so two specs that mean the same thing hash the same, and the
//! hash never changes between releases unless [`CANONICAL_VERSION`] does.
//!
//! Two hashes: [`EnvSpec::spec_hash`] identifies an environment version (everything), and
//! [`EnvSpec::build_hash`] only what goes into the image — so changing the memory limit makes a new version
//! that reuses the same image.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{parse_size, EnvSpec, GpuRequest};

/// Prefix of every canonical document; bump it when the canonical form changes meaning.
pub const CANONICAL_VERSION: &str = "paddock.env.v1";

/// A size as bytes when it parses, else the raw text (an invalid spec still gets a stable hash).
#[derive(Serialize)]
#[serde(untagged)]
enum Size<'a> {
    Bytes(u64),
    Raw(&'a str),
}

fn size(text: &str) -> Size<'_> {
    parse_size(text).map_or(Size::Raw(text.trim()), Size::Bytes)
}

#[derive(Serialize)]
struct ImagePart<'a> {
    base_image: &'a str,
    runtime_binary: Option<&'a str>,
    os_packages: Vec<&'a str>,
    env: &'a BTreeMap<String, String>,
    working_dir: &'a str,
}

#[derive(Serialize)]
struct Canonical<'a> {
    version: &'static str,
    name: &'a str,
    image: ImagePart<'a>,
    nano_cpus: i64,
    memory: Size<'a>,
    shm_size: Size<'a>,
    gpus: GpuRequest,
    shared_gpus: bool,
    workspace_volume: &'a str,
}

impl EnvSpec {
    fn image_part(&self) -> ImagePart<'_> {
        let mut os_packages: Vec<&str> = self.os_packages.iter().map(String::as_str).collect();
        os_packages.sort_unstable();
        os_packages.dedup();
        ImagePart {
            base_image: &self.base_image,
            runtime_binary: self.runtime.as_ref().map(|r| r.binary.as_str()),
            os_packages,
            env: &self.env,
            working_dir: self.working_dir.trim_end_matches('/').max("/"),
        }
    }

    /// The canonical JSON document of the whole spec.
    pub fn canonical_json(&self) -> String {
        let gpus = match &self.gpus {
            GpuRequest::Devices(d) => {
                let mut d = d.clone();
                d.sort_unstable();
                GpuRequest::Devices(d)
            }
            other => other.clone(),
        };
        let doc = Canonical {
            version: CANONICAL_VERSION,
            name: self.name.trim(),
            image: self.image_part(),
            nano_cpus: if self.cpus.is_finite() {
                (self.cpus * 1e9).round() as i64
            } else {
                -1
            },
            memory: size(&self.memory),
            shm_size: size(&self.shm_size),
            gpus,
            shared_gpus: self.shared_gpus,
            workspace_volume: &self.workspace_volume,
        };
        serde_json::to_string(&doc).expect("canonical spec serializes")
    }

    /// SHA-256 (hex) of [`EnvSpec::canonical_json`]: the identity of an environment version.
    pub fn spec_hash(&self) -> String {
        sha256_hex(self.canonical_json().as_bytes())
    }

    /// The canonical JSON of the image-relevant part only (base, runtime, packages, env, working dir).
    pub fn build_canonical_json(&self) -> String {
        serde_json::to_string(&(CANONICAL_VERSION, self.image_part()))
            .expect("canonical spec serializes")
    }

    /// SHA-256 (hex) of [`EnvSpec::build_canonical_json`]. The image build cache key adds the resolved base
    /// image ID and the runtime files' digest to this (see `build`).
    pub fn build_hash(&self) -> String {
        sha256_hex(self.build_canonical_json().as_bytes())
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn hash_is_pinned() {
        // A literal: if this changes, every stored environment version would look edited. Change the
        // canonical form only together with CANONICAL_VERSION.
        assert_eq!(
            sample().canonical_json(),
            r#"{"version":"paddock.env.v1","name":"pytorch dev","image":{"base_image":"debian:bookworm-slim","runtime_binary":null,"os_packages":["curl","git"],"env":{"HF_HOME":"/workspace/hf"},"working_dir":"/workspace"},"nano_cpus":1500000000,"memory":2147483648,"shm_size":268435456,"gpus":"none","shared_gpus":false,"workspace_volume":"team-data"}"#
        );
        assert_eq!(
            sample().spec_hash(),
            sha256_hex(sample().canonical_json().as_bytes())
        );
        assert_eq!(sample().spec_hash().len(), 64);
    }

    #[test]
    fn equivalent_specs_hash_the_same() {
        let a = sample();
        let mut b = sample();
        b.memory = "2048m".into();
        b.os_packages = vec!["git".into(), "curl".into(), "git".into()];
        b.working_dir = "/workspace/".into();
        b.env.insert("A_FIRST".into(), "1".into());
        let mut c = a.clone();
        c.env.insert("A_FIRST".into(), "1".into());
        assert_eq!(b.spec_hash(), c.spec_hash());
        // Env insertion order cannot matter: the map is ordered.
        let json_a = serde_json::to_string(&c).unwrap();
        let reordered = json_a.replace(
            r#""A_FIRST":"1","HF_HOME":"/workspace/hf""#,
            r#""HF_HOME":"/workspace/hf","A_FIRST":"1""#,
        );
        assert_ne!(json_a, reordered);
        let d: EnvSpec = serde_json::from_str(&reordered).unwrap();
        assert_eq!(d.spec_hash(), c.spec_hash());
    }

    #[test]
    fn every_field_changes_the_spec_hash() {
        let base = sample().spec_hash();
        let variants: Vec<EnvSpec> = vec![
            EnvSpec {
                name: "other".into(),
                ..sample()
            },
            EnvSpec {
                base_image: "debian:trixie-slim".into(),
                ..sample()
            },
            EnvSpec {
                runtime: Some(super::super::RuntimeLayer {
                    binary: "/usr/bin/paddock".into(),
                }),
                ..sample()
            },
            EnvSpec {
                os_packages: vec!["curl".into()],
                ..sample()
            },
            EnvSpec {
                cpus: 1.0,
                ..sample()
            },
            EnvSpec {
                memory: "3g".into(),
                ..sample()
            },
            EnvSpec {
                shm_size: "1g".into(),
                ..sample()
            },
            EnvSpec {
                gpus: GpuRequest::Count(1),
                ..sample()
            },
            EnvSpec {
                shared_gpus: true,
                ..sample()
            },
            EnvSpec {
                env: BTreeMap::new(),
                ..sample()
            },
            EnvSpec {
                working_dir: "/srv".into(),
                ..sample()
            },
            EnvSpec {
                workspace_volume: "other".into(),
                ..sample()
            },
        ];
        let mut seen = std::collections::HashSet::from([base]);
        for v in variants {
            assert!(seen.insert(v.spec_hash()), "{v:?} collides");
        }
    }

    #[test]
    fn build_hash_ignores_resources_but_not_image_fields() {
        let base = sample().build_hash();
        assert_eq!(
            EnvSpec {
                memory: "4g".into(),
                cpus: 2.0,
                name: "x".into(),
                ..sample()
            }
            .build_hash(),
            base
        );
        assert_eq!(
            EnvSpec {
                gpus: GpuRequest::Count(2),
                workspace_volume: "v".into(),
                ..sample()
            }
            .build_hash(),
            base
        );
        assert_ne!(
            EnvSpec {
                os_packages: vec!["vim".into()],
                ..sample()
            }
            .build_hash(),
            base
        );
        assert_ne!(
            EnvSpec {
                env: BTreeMap::new(),
                ..sample()
            }
            .build_hash(),
            base
        );
        assert_ne!(
            EnvSpec {
                base_image: "ubuntu:24.04".into(),
                ..sample()
            }
            .build_hash(),
            base
        );
    }
}

//! From the form to a spec Docker can build: the conversion to `containers::EnvSpec`, the spec hash, and
//! every check that must pass before an environment or version is written — the spec's own rules (all
//! broken fields at once), the Docker host's CPUs and memory, whether the base image exists (locally or in
//! a registry, without downloading it), and the GPU preflight (driver and compute capability against the
//! image's CUDA). A spec that fails any of them creates nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use containers::catalog::ImageRequirements;
use containers::mirror::Mirror;
use containers::spec::{EnvSpec, GpuRequest, RuntimeLayer};

use crate::engine::{map_error, spec_invalid, Engine};
use contracts::error::{AppError, ErrorCode};
use contracts::types::{EnvironmentSpec, GpuSpec};

/// The base image Paddock makes itself (no registry needed); always available, built on first use.
pub const LOCAL_BASE: &str = containers::catalog::BUSYBOX_BASE;

/// How long asking a registry whether an image exists may take. Short: on machines without a registry
/// the answer is "no" and should come quickly.
const REGISTRY_TIMEOUT: Duration = Duration::from_secs(15);

/// Stand-in for the runtime binary's path in the spec hash, so the same spec hashes the same on every
/// machine wherever `paddock` is installed.
const RUNTIME_PLACEHOLDER: &str = "/opt/paddock/bin/paddock";

/// A spec that passed every check.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The form as stored (trimmed name).
    pub spec_json: String,
    pub spec_hash: String,
}

/// The containers-crate spec for `spec`, with the runtime layer taken from `runtime_binary`.
pub fn to_env_spec(spec: &EnvironmentSpec, runtime_binary: &Path) -> EnvSpec {
    EnvSpec {
        name: spec.name.trim().to_string(),
        base_image: spec.base_image.trim().to_string(),
        runtime: spec.runtime.then(|| RuntimeLayer {
            binary: runtime_binary.to_string_lossy().into_owned(),
        }),
        os_packages: spec.os_packages.clone(),
        cpus: spec.cpus,
        memory: spec.memory.trim().to_string(),
        shm_size: spec.shm_size.trim().to_string(),
        gpus: match &spec.gpus {
            GpuSpec::None => GpuRequest::None,
            GpuSpec::Count(n) => GpuRequest::Count(*n),
            GpuSpec::Devices(d) => GpuRequest::Devices(d.clone()),
        },
        shared_gpus: spec.shared_gpus,
        env: spec.env.clone(),
        working_dir: spec.working_dir.trim().to_string(),
        workspace_volume: spec.workspace_volume.trim().to_string(),
    }
}

/// The identity of a spec: the containers crate's canonical hash, independent of where `paddock` lives.
pub fn spec_hash(spec: &EnvironmentSpec) -> String {
    to_env_spec(spec, Path::new(RUNTIME_PLACEHOLDER)).spec_hash()
}

/// The binary the runtime layer copies: configured, else the running executable.
pub fn runtime_binary(engine: &Engine) -> Result<PathBuf, AppError> {
    match &engine.config.runtime_binary {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe()
            .map_err(|e| contracts::error::internal("locating the paddock binary", e)),
    }
}

/// Runs every check; see the module docs.
pub async fn check(
    engine: &Engine,
    spec: &EnvironmentSpec,
    mirror: Option<&Mirror>,
) -> Result<Checked, AppError> {
    let docker = engine.docker().await?;
    let env_spec = to_env_spec(spec, &runtime_binary(engine)?);
    let host = docker
        .host_limits()
        .await
        .map_err(|e| map_error("reading the Docker host's size", e))?;
    let errors = env_spec.validate_against(&host);
    if !errors.is_empty() {
        return Err(spec_invalid(&errors));
    }
    let host_gpus = engine.detected(spec.runtime).await;
    let preflight = |needs: &ImageRequirements| {
        containers::preflight::check(&env_spec, needs, &host_gpus)
            .map_err(|e| map_error("preflight", e))
    };
    // A catalog image's needs are known without the image: "your driver cannot run this" comes before
    // "this image is not here", because it stays true after the image arrives.
    if let Some(entry) = containers::catalog::lookup(&env_spec.base_image) {
        preflight(&entry.requirements())?;
    }
    let image_env = image_env(&docker, &env_spec.base_image, mirror).await?;
    preflight(&ImageRequirements::for_image(
        &env_spec.base_image,
        &image_env,
    ))?;
    let mut stored = spec.clone();
    stored.name = env_spec.name.clone();
    // Secrets live apart from the versions (see `secrets`).
    stored.secret_env.clear();
    Ok(Checked {
        spec_json: serde_json::to_string(&stored)
            .map_err(|e| contracts::error::internal("spec to JSON", e))?,
        spec_hash: spec_hash(&stored),
    })
}

/// The base image's environment variables (where its `CUDA_VERSION` is), proving on the way that the
/// image exists: present locally, Paddock's own base (built on demand), or known to a registry — the
/// mirror, for a Docker Hub image when an admin set one.
async fn image_env(
    docker: &containers::Docker,
    reference: &str,
    mirror: Option<&Mirror>,
) -> Result<Vec<String>, AppError> {
    match docker.image_info(reference).await {
        Ok(info) => return Ok(info.env),
        Err(containers::Error::NotFound { .. }) => {}
        Err(e) => return Err(map_error("inspecting the base image", e)),
    }
    if reference == LOCAL_BASE {
        return Ok(Vec::new());
    }
    let local_only = reference.starts_with("paddock/") || reference.starts_with("sha256:");
    let mirrored = mirror
        .filter(|_| !local_only)
        .and_then(|m| m.rewrite(reference));
    let unavailable = |why: String| {
        let asked = match &mirrored {
            Some(m) => format!("the registry mirror does not have it as {m}"),
            None => "no registry knows it".into(),
        };
        AppError::invalid(
            "base_image",
            ErrorCode::ImageUnavailable,
            format!("{reference} is not on this machine and {asked} ({why}); pick an image from the catalog or load it with `docker load`"),
        )
    };
    if local_only {
        return Err(unavailable(
            "images named paddock/… and image IDs are local only".into(),
        ));
    }
    match tokio::time::timeout(
        REGISTRY_TIMEOUT,
        docker
            .api()
            .inspect_registry_image(mirrored.as_deref().unwrap_or(reference), None),
    )
    .await
    {
        Ok(Ok(_)) => Ok(Vec::new()),
        // The registry's own answer (a mirror's error page, "connection refused") stays in the log:
        // it would quote whatever the mirror's address serves and tell open ports from closed ones.
        Ok(Err(e)) => Err(unavailable(format!(
            "incident {} in the server log",
            crate::incident("asking a registry for a base image", e)
        ))),
        Err(_) => Err(unavailable(format!(
            "the registry did not answer within {REGISTRY_TIMEOUT:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_where_paddock_is_installed_and_cosmetic_spaces() {
        let mut spec = EnvironmentSpec {
            name: "nlp".into(),
            runtime: true,
            ..Default::default()
        };
        let a = spec_hash(&spec);
        spec.name = "  nlp ".into();
        assert_eq!(spec_hash(&spec), a);
        assert_eq!(
            to_env_spec(&spec, Path::new("/usr/bin/paddock")).build_hash(),
            to_env_spec(&spec, Path::new("/usr/bin/paddock")).build_hash()
        );
        spec.memory = "2g".into();
        assert_ne!(
            spec_hash(&spec),
            a,
            "a different limit is a different version"
        );
    }

    #[test]
    fn the_form_and_the_containers_spec_share_one_json_shape() {
        // The REST body is the form; the containers crate must read the same document (minus runtime
        // and the secrets, which never reach an image).
        let spec = EnvironmentSpec {
            name: "x".into(),
            gpus: GpuSpec::Devices(vec![1, 0]),
            env: [("HF_HOME".to_string(), "/workspace/hf".to_string())].into(),
            ..Default::default()
        };
        let mut json = serde_json::to_value(&spec).unwrap();
        json.as_object_mut().unwrap().remove("runtime");
        json.as_object_mut().unwrap().remove("secret_env");
        let parsed = EnvSpec::from_json(&json.to_string()).unwrap();
        assert_eq!(parsed, to_env_spec(&spec, Path::new("/unused")));
    }
}

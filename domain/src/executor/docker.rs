//! The Docker executor: units run in a fresh container from their environment's image (its runtime
//! layer carries `paddock` and libtorch), with the environment's limits, the leased GPUs, the workspace's
//! network and volume at `/workspace`, and the store read-only at `/paddock`. A run's folder is in the
//! volume — the same directory on the host, since the volume is bound to it — so the server reads the
//! run's files there, as hostile input: the container may have put anything under their names. Stopping a
//! run sends TERM to PID 1, the wrapper, which passes it on.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use containers::labels;
use containers::lifecycle::{Limits, ProvisionRequest};
use sqlx::SqlitePool;

use super::{
    last_lines, wrapper_args, Executor, Handle, InImage, Served, Service, Stop, Unit, Work,
};
use crate::engine::Engine;
use crate::environments::lifecycle::{network_name, store_dir, volume_dir, volume_name};
use crate::environments::spec::to_env_spec;
use crate::storage::{Storage, DEFAULT_VOLUME};
use contracts::types::EnvironmentSpec;

/// The port `serve-model` listens on inside a replica container.
const SERVICE_PORT: u16 = 8080;

pub struct Docker {
    storage: Arc<Storage>,
    engine: Arc<Engine>,
    /// For the environment's current limits, read when a unit starts.
    db: SqlitePool,
}

impl Docker {
    pub fn new(storage: Arc<Storage>, engine: Arc<Engine>, db: SqlitePool) -> Docker {
        Docker {
            storage,
            engine,
            db,
        }
    }

    /// A unit's deterministic container name.
    pub fn container_name(&self, unit: Unit) -> String {
        let parts = unit.name_parts();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        labels::container_name(&self.engine.instance, &parts)
    }

    /// This server's instance id, which names and labels its containers.
    pub(crate) fn instance(&self) -> &str {
        &self.engine.instance
    }

    /// What a container of workspace `workspace_id` mounts and joins: the volume's name and host
    /// directory (`None`: in Docker's storage), the store's host directory, the workspace's network.
    #[allow(clippy::type_complexity)]
    pub(crate) fn mounts(
        &self,
        workspace_id: WorkspaceId,
    ) -> Result<(String, Option<String>, Option<String>, String), String> {
        Ok((
            volume_name(&self.engine, workspace_id, DEFAULT_VOLUME),
            volume_dir(&self.engine, workspace_id, DEFAULT_VOLUME).map_err(|e| e.to_string())?,
            store_dir(&self.engine, workspace_id).map_err(|e| e.to_string())?,
            network_name(&self.engine, workspace_id),
        ))
    }

    /// Environment `environment_id`'s current spec (its limits, for the containers that run in its
    /// image: jobs and endpoint replicas) and the tag of its current image.
    pub(crate) async fn environment(
        &self,
        environment_id: EnvironmentId,
    ) -> Result<(EnvironmentSpec, Option<String>), String> {
        let (spec_json, tag): (String, Option<String>) = sqlx::query_as(
            "SELECT v.spec_json, v.image_tag FROM environments e JOIN environment_versions v
                 ON v.environment_id = e.id AND v.version = e.current_version WHERE e.id = ?",
        )
        .bind(environment_id)
        .fetch_optional(&self.db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the environment was deleted")?;
        let spec = serde_json::from_str(&spec_json).map_err(|e| e.to_string())?;
        Ok((spec, tag))
    }

    /// Creates and starts `unit`'s container, replacing a leftover of an earlier attempt (a crash between
    /// create and record).
    async fn provision(
        &self,
        unit: Unit,
        workspace_id: WorkspaceId,
        image: Option<InImage>,
        devices: &[u32],
        cmd: Vec<String>,
    ) -> Result<(containers::Docker, String), String> {
        let image = image.ok_or("the unit has no environment image")?;
        let docker = self.engine.docker().await.map_err(|e| e.to_string())?;
        let (spec, _) = self.environment(image.environment_id).await?;
        let host = docker.host_limits().await.map_err(|e| e.to_string())?;
        let limits = limits_on(&spec, &host)?;
        let (volume, volume_dir, store_dir, network) = self.mounts(workspace_id)?;
        let name = self.container_name(unit);
        docker.remove(&name).await.map_err(|e| e.to_string())?;
        let request = ProvisionRequest {
            name: name.clone(),
            image: image.image_id,
            workspace: workspace_id.to_string(),
            environment: image.environment_id.to_string(),
            instance: self.engine.instance.clone(),
            extra_labels: BTreeMap::from([unit.label()]),
            limits,
            gpu_device_ids: devices.iter().map(u32::to_string).collect(),
            volume,
            network: Some(network),
            volume_dir,
            store_dir,
            cmd: Some(cmd),
            env: image.env,
        };
        docker
            .provision(&request)
            .await
            .map_err(|e| e.to_string())?;
        Ok((docker, name))
    }
}

#[async_trait::async_trait]
impl Executor for Docker {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    fn run_root(&self, workspace_id: WorkspaceId) -> beneath::Result<beneath::Dir> {
        self.storage.volume(workspace_id)
    }

    fn run_root_dir(&self, workspace_id: WorkspaceId) -> PathBuf {
        self.storage.volume_dir(workspace_id, DEFAULT_VOLUME)
    }

    fn run_roots_seen(&self, workspace_id: WorkspaceId) -> Vec<PathBuf> {
        vec![
            self.run_root_dir(workspace_id),
            PathBuf::from(containers::build::WORKSPACE_DIR),
        ]
    }

    fn store_seen(&self, _workspace_id: WorkspaceId) -> String {
        containers::build::STORE_DIR.to_string()
    }

    fn run_folder_is_theirs(&self) -> bool {
        true
    }

    async fn start(&self, work: Work) -> Result<Handle, String> {
        give_to_container_user(&work.folder)?;
        let inside = Path::new(containers::build::WORKSPACE_DIR).join(&work.rel);
        let cmd = wrapper_args(&inside.to_string_lossy(), "paddock", &work);
        let (_, name) = self
            .provision(work.unit, work.workspace_id, work.image, &work.devices, cmd)
            .await?;
        Ok(Handle::Container { name })
    }

    /// Ready when `/health` answers on the container's bridge address.
    async fn serve(&self, service: Service) -> Result<Served, String> {
        let mut image = service.image;
        if let Some(image) = image.as_mut() {
            image
                .env
                .push(format!("{}={}", super::TOKEN_ENV, service.token));
        }
        let mut cmd = vec!["paddock".to_string()];
        cmd.extend(service.args.iter().cloned());
        cmd.extend([
            "--model".to_string(),
            format!("{}/{}", containers::build::STORE_DIR, service.model),
            "--bind".to_string(),
            format!("0.0.0.0:{SERVICE_PORT}"),
        ]);
        let (docker, name) = self
            .provision(
                service.unit,
                service.workspace_id,
                image,
                &service.devices,
                cmd,
            )
            .await
            .map_err(|e| format!("starting the replica container: {e}"))?;
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + service.start_timeout;
        loop {
            let status = docker.status(&name).await.map_err(|e| e.to_string())?;
            if !status.is_running() {
                let tail = docker.logs_tail(&name, 5).await.unwrap_or_default();
                let _ = docker.remove(&name).await;
                return Err(format!(
                    "it did not start ({status:?}): {}",
                    last_lines(&tail, 5)
                ));
            }
            if let Ok(Some(ip)) = docker.ip_address(&name).await {
                let base_url = format!("http://{ip}:{SERVICE_PORT}");
                if super::healthy(&client, &base_url).await {
                    return Ok(Served {
                        handle: Handle::Container { name },
                        base_url,
                    });
                }
            }
            if tokio::time::Instant::now() > deadline {
                let _ = docker.remove(&name).await;
                return Err(format!(
                    "it was not ready within {} s",
                    service.start_timeout.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn is_running(&self, handle: &Handle) -> Option<bool> {
        let name = handle.container()?;
        let docker = self.engine.docker().await.ok()?;
        match docker.status(name).await {
            Ok(status) => Some(status.is_running()),
            Err(e) if e.is_unreachable() => None,
            Err(_) => Some(false),
        }
    }

    async fn stop(&self, handle: &Handle, how: Stop) {
        let Some(name) = handle.container() else {
            return;
        };
        let Ok(docker) = self.engine.docker().await else {
            return;
        };
        let done = match how {
            Stop::Ask => docker.signal(name, "TERM").await,
            Stop::Within(grace) => docker.stop(name, grace.as_secs() as i32).await,
            Stop::Kill => docker.remove(name).await,
        };
        if let Err(e) = done {
            tracing::warn!(container = name, error = %e, "could not stop a container");
        }
    }

    async fn clean_up(&self, handle: &Handle) {
        let Some(name) = handle.container() else {
            return;
        };
        if let Ok(docker) = self.engine.docker().await {
            if let Err(e) = docker.remove(name).await {
                tracing::warn!(container = name, error = %e, "could not remove an ended unit's container");
            }
        }
    }
}

/// The CPU, memory, shared-memory and pids limits of a container in an environment with `spec`, on a
/// Docker host with `host`'s CPUs and memory (this server's, or a cluster node's).
pub(crate) fn limits_on(
    spec: &EnvironmentSpec,
    host: &containers::spec::HostLimits,
) -> Result<Limits, String> {
    let resources = to_env_spec(spec, Path::new("/unused"))
        .resources(host)
        .map_err(|e| e.to_string())?;
    Ok(Limits::from_resources(&resources))
}

/// The container runs as uid 1000; the run folder the server made, and the files it wrote there for the
/// run (a job's `job.toml`), must be its own. Owner and mode are changed on open descriptors: a path in
/// the volume could be a link to any file on the host (`beneath` refuses links in the listing).
pub(crate) fn give_to_container_user(dir: &beneath::Dir) -> Result<(), String> {
    /// More than a fresh run folder ever holds; a folder with more is not one the server just made.
    const FILES_AT_START: usize = 64;
    let (uid, gid) = (containers::build::users::UID, containers::build::users::GID);
    if std::os::unix::fs::fchown(dir, Some(uid), Some(gid)).is_err() {
        dir.set_mode(0o777).map_err(|e| e.to_string())?;
    }
    for entry in dir.files(FILES_AT_START).map_err(|e| e.to_string())? {
        let _ = std::os::unix::fs::fchown(&entry.file, Some(uid), Some(gid));
    }
    Ok(())
}

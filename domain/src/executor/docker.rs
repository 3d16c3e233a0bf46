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
use serde::{Deserialize, Serialize};
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

    /// The container `unit` of workspace `workspace_id` runs in, from `image`, running `cmd`: all but
    /// what the Docker host that runs it decides (see [`UnitContainer::request`]), and the
    /// environment's secrets, which are never written down with it.
    pub(crate) async fn unit_container(
        &self,
        unit: Unit,
        workspace_id: WorkspaceId,
        image: &InImage,
        cmd: Vec<String>,
    ) -> Result<UnitContainer, String> {
        let (spec_json, tag): (String, Option<String>) = sqlx::query_as(
            "SELECT v.spec_json, v.image_tag FROM environments e JOIN environment_versions v
                 ON v.environment_id = e.id AND v.version = e.current_version WHERE e.id = ?",
        )
        .bind(image.environment_id)
        .fetch_optional(&self.db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the environment was deleted")?;
        Ok(UnitContainer {
            name: self.container_name(unit),
            image_id: image.image_id.clone(),
            image_tag: tag,
            environment_id: image.environment_id,
            environment: serde_json::from_str(&spec_json).map_err(|e| e.to_string())?,
            workspace_id,
            instance: self.engine.instance.clone(),
            labels: BTreeMap::from([unit.label()]),
            volume: volume_name(&self.engine, workspace_id, DEFAULT_VOLUME),
            volume_dir: volume_dir(&self.engine, workspace_id, DEFAULT_VOLUME)
                .map_err(|e| e.to_string())?,
            store_dir: store_dir(&self.engine, workspace_id).map_err(|e| e.to_string())?,
            network: network_name(&self.engine, workspace_id),
            cmd,
        })
    }

    /// Creates and starts `unit`'s container, replacing a leftover of an earlier attempt (a crash between
    /// create and record).
    async fn provision(
        &self,
        unit: Unit,
        workspace_id: WorkspaceId,
        image: Option<InImage>,
        devices: &[String],
        cmd: Vec<String>,
    ) -> Result<(containers::Docker, String), String> {
        let image = image.ok_or("the unit has no environment image")?;
        let docker = self.engine.docker().await.map_err(|e| e.to_string())?;
        let container = self.unit_container(unit, workspace_id, &image, cmd).await?;
        let request = container
            .request(&docker, devices.to_vec(), image.env)
            .await?;
        docker
            .provision(&request)
            .await
            .map_err(|e| e.to_string())?;
        Ok((docker, container.name))
    }
}

/// The container a unit runs in, as this server decides it: what its Docker executor starts here, and
/// what a cluster node starts for a job in an environment's image (see `slurm::in_image`), which is why
/// it can be written down and read back.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitContainer {
    pub name: String,
    /// The image ID the unit is locked to, and the environment's tag for it (what a node that has
    /// another image under that name is told).
    pub image_id: String,
    pub image_tag: Option<String>,
    pub environment_id: EnvironmentId,
    /// The environment's spec: its limits are worked out against the Docker host that runs it.
    pub environment: EnvironmentSpec,
    pub workspace_id: WorkspaceId,
    pub instance: String,
    pub labels: BTreeMap<String, String>,
    pub volume: String,
    /// The host directory behind the volume (`None`: in Docker's own storage).
    pub volume_dir: Option<String>,
    pub store_dir: Option<String>,
    pub network: String,
    pub cmd: Vec<String>,
}

impl UnitContainer {
    /// The request that starts it on `docker` (a leftover of the same name removed first): its limits
    /// measured against that host, the GPUs `devices` there, and `env`, the environment's secrets.
    pub async fn request(
        &self,
        docker: &containers::Docker,
        devices: Vec<String>,
        env: Vec<String>,
    ) -> Result<ProvisionRequest, String> {
        let host = docker.host_limits().await.map_err(|e| e.to_string())?;
        let resources = to_env_spec(&self.environment, Path::new("/unused"))
            .resources(&host)
            .map_err(|e| format!("it cannot give the environment what it asks: {e}"))?;
        docker.remove(&self.name).await.map_err(|e| e.to_string())?;
        Ok(ProvisionRequest {
            name: self.name.clone(),
            image: self.image_id.clone(),
            workspace: self.workspace_id.to_string(),
            environment: self.environment_id.to_string(),
            instance: self.instance.clone(),
            extra_labels: self.labels.clone(),
            limits: Limits::from_resources(&resources),
            gpu_device_ids: devices,
            volume: self.volume.clone(),
            volume_dir: self.volume_dir.clone(),
            network: Some(self.network.clone()),
            store_dir: self.store_dir.clone(),
            cmd: Some(self.cmd.clone()),
            env,
        })
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

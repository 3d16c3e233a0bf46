//! Container lifecycle: provision (create + start) a long-running, hardened, resource-limited container with
//! Paddock's labels and the workspace volume; stop, start, restart, remove; inspect its status. Every
//! operation is idempotent — provisioning an existing name returns that container (started), stopping a
//! stopped one or removing a missing one succeeds — so the app can retry and reconcile freely.

pub mod events;
pub mod stats;
mod status;

use std::collections::{BTreeMap, HashMap};

use bollard::models::{
    ContainerCreateBody, DeviceRequest, HostConfig, Mount, MountType, VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RestartContainerOptionsBuilder, StopContainerOptionsBuilder,
};

pub use events::ContainerEvent;
pub use stats::ContainerStats;
pub use status::ContainerStatus;

use crate::build::users::{GID, UID};
use crate::build::{STORE_DIR, WORKSPACE_DIR};
use crate::error::{Error, Result};
use crate::labels;
use crate::spec::{FieldError, Resources};
use crate::Docker;

/// Process limit per environment: generous for data loaders and compilers, small enough that a fork bomb
/// cannot exhaust the host's PID space.
pub const DEFAULT_PIDS_LIMIT: i64 = 4096;

/// The default main process: a shell that waits forever and exits 0 on SIGTERM, so `stop` is immediate
/// (a bare `sh` or `sleep` as PID 1 ignores SIGTERM and is killed only after the stop timeout). Works with
/// any POSIX shell, busybox included. Users work in it through exec sessions.
pub const KEEPALIVE_CMD: &[&str] = &[
    "/bin/sh",
    "-c",
    "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
];

/// Resource limits of one container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Billionths of a CPU (Docker's `NanoCpus`).
    pub nano_cpus: i64,
    /// Hard memory limit; swap is set equal, i.e. no swap.
    pub memory_bytes: i64,
    /// Size of /dev/shm.
    pub shm_bytes: i64,
    pub pids: i64,
}

impl Limits {
    pub fn from_resources(r: &Resources) -> Self {
        Limits {
            nano_cpus: r.nano_cpus,
            memory_bytes: r.memory_bytes,
            shm_bytes: r.shm_bytes,
            pids: DEFAULT_PIDS_LIMIT,
        }
    }
}

/// Everything needed to provision one container. Names are decided by the caller (see
/// [`labels::container_name`] and [`labels::volume_name`]) so that they are deterministic.
#[derive(Debug, Clone)]
pub struct ProvisionRequest {
    /// Container name, e.g. `paddock-<instance>-env-<id>`.
    pub name: String,
    /// Image ID (preferably) or reference.
    pub image: String,
    /// Label values identifying the owner; see [`labels`].
    pub workspace: String,
    pub environment: String,
    pub instance: String,
    /// More labels (e.g. `paddock.version`); cannot override the four above.
    pub extra_labels: BTreeMap<String, String>,
    pub limits: Limits,
    /// GPU device IDs (indices or UUIDs) assigned by the app's GPU inventory; empty for none.
    pub gpu_device_ids: Vec<String>,
    /// Docker volume name of the workspace volume, mounted at `/workspace` (created if missing).
    pub volume: String,
    /// A directory on the Docker host that backs the volume (a `local` volume bound to it), so that the
    /// app can read and write the same files — datasets in, checkpoints out. `None`: Docker's own storage.
    pub volume_dir: Option<String>,
    /// Main process; default [`KEEPALIVE_CMD`].
    pub cmd: Option<Vec<String>>,
    /// Extra `KEY=value` variables for this container only (the image carries the spec's).
    pub env: Vec<String>,
    /// The workspace's own bridge network (created if missing), so that containers of different
    /// workspaces cannot reach each other; `None`: Docker's default bridge.
    pub network: Option<String>,
    /// The workspace's store on the Docker host (datasets, uploaded models and registered checkpoints,
    /// written only by the server), bound read-only at [`STORE_DIR`]: containers read what the server
    /// keeps but cannot change or rename it. `None`: not mounted (volumes in Docker's own storage).
    pub store_dir: Option<String>,
}

/// A provisioned container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    pub id: String,
    pub name: String,
    /// False when the container already existed and was returned (and started if needed).
    pub created: bool,
    pub status: ContainerStatus,
}

/// What `inspect` tells the app about a container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerDetails {
    pub id: String,
    pub name: String,
    pub image: String,
    pub status: ContainerStatus,
    pub labels: BTreeMap<String, String>,
    /// The raw inspect response, for the detail page and for tests that check limits.
    pub raw: bollard::models::ContainerInspectResponse,
}

impl ProvisionRequest {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let docker_name = |s: &str| {
            s.len() >= 2
                && s.starts_with(|c: char| c.is_ascii_alphanumeric())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        };
        if !docker_name(&self.name) {
            errors.push(FieldError::new(
                "name",
                "must match [a-zA-Z0-9][a-zA-Z0-9_.-]+",
            ));
        }
        if !docker_name(&self.volume) {
            errors.push(FieldError::new(
                "volume",
                "must match [a-zA-Z0-9][a-zA-Z0-9_.-]+",
            ));
        }
        for (field, dir) in [
            ("volume_dir", &self.volume_dir),
            ("store_dir", &self.store_dir),
        ] {
            if let Some(dir) = dir {
                if !dir.starts_with('/') || dir.split('/').any(|part| part == "..") {
                    errors.push(FieldError::new(
                        field,
                        "must be an absolute path without ..",
                    ));
                }
            }
        }
        if self.image.is_empty() {
            errors.push(FieldError::new("image", "must not be empty"));
        }
        if self.limits.nano_cpus <= 0 {
            errors.push(FieldError::new("cpus", "must be greater than 0"));
        }
        if self.limits.memory_bytes < crate::spec::MIN_MEMORY_BYTES as i64 {
            errors.push(FieldError::new("memory", "is below the minimum"));
        }
        if self.limits.shm_bytes <= 0 {
            errors.push(FieldError::new("shm_size", "must be greater than 0"));
        }
        if self.limits.pids <= 0 {
            errors.push(FieldError::new("pids", "must be greater than 0"));
        }
        for id in &self.gpu_device_ids {
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                errors.push(FieldError::new(
                    "gpu_device_ids",
                    format!("{id:?} is not a device index or UUID"),
                ));
            }
        }
        errors
    }

    fn labels(&self) -> HashMap<String, String> {
        let mut all: HashMap<String, String> = self.extra_labels.clone().into_iter().collect();
        all.insert(labels::MANAGED.into(), "true".into());
        all.insert(labels::WORKSPACE.into(), self.workspace.clone());
        all.insert(labels::ENVIRONMENT.into(), self.environment.clone());
        all.insert(labels::INSTANCE.into(), self.instance.clone());
        all
    }

    fn mounts(&self) -> Vec<Mount> {
        let workspace = Mount {
            target: Some(WORKSPACE_DIR.into()),
            source: Some(self.volume.clone()),
            typ: Some(MountType::VOLUME),
            ..Default::default()
        };
        let store = self.store_dir.as_ref().map(|dir| Mount {
            target: Some(STORE_DIR.into()),
            source: Some(dir.clone()),
            typ: Some(MountType::BIND),
            read_only: Some(true),
            ..Default::default()
        });
        std::iter::once(workspace).chain(store).collect()
    }

    /// What the container sees of the GPUs, set last: none at all without a device request (the
    /// `nvidia/cuda` images say `NVIDIA_VISIBLE_DEVICES=all`, and on hosts whose default runtime is
    /// `nvidia` that alone would hand every GPU past the leases), and the requested ones in PCI order.
    fn gpu_env(&self) -> Vec<String> {
        if self.gpu_device_ids.is_empty() {
            vec!["NVIDIA_VISIBLE_DEVICES=void".into()]
        } else {
            vec!["CUDA_DEVICE_ORDER=PCI_BUS_ID".into()]
        }
    }

    fn body(&self) -> ContainerCreateBody {
        let device_requests = (!self.gpu_device_ids.is_empty()).then(|| {
            vec![DeviceRequest {
                driver: Some("nvidia".into()),
                device_ids: Some(self.gpu_device_ids.clone()),
                capabilities: Some(vec![vec!["gpu".into()]]),
                ..Default::default()
            }]
        });
        // A capability hidden from this server is hidden from what runs in its containers too, or a
        // trainer there would accept what the server's forms refused (see `hostcaps`).
        let env: Vec<String> = self
            .env
            .iter()
            .filter(|e| !crate::spec::reserved_env(e.split('=').next().unwrap_or_default()))
            .cloned()
            .chain(hostcaps::override_for_child())
            .chain(self.gpu_env())
            .collect();
        ContainerCreateBody {
            image: Some(self.image.clone()),
            cmd: Some(
                self.cmd
                    .clone()
                    .unwrap_or_else(|| KEEPALIVE_CMD.iter().map(|s| s.to_string()).collect()),
            ),
            user: Some(format!("{UID}:{GID}")),
            env: (!env.is_empty()).then_some(env),
            labels: Some(self.labels()),
            tty: Some(true),
            open_stdin: Some(true),
            host_config: Some(HostConfig {
                memory: Some(self.limits.memory_bytes),
                memory_swap: Some(self.limits.memory_bytes),
                nano_cpus: Some(self.limits.nano_cpus),
                pids_limit: Some(self.limits.pids),
                shm_size: Some(self.limits.shm_bytes),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                mounts: Some(self.mounts()),
                device_requests,
                network_mode: self.network.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

impl Docker {
    /// Creates and starts the container, or returns the existing one with that name (starting it if it is
    /// not running). The workspace volume is created first if missing.
    pub async fn provision(&self, request: &ProvisionRequest) -> Result<Provisioned> {
        let errors = request.validate();
        if !errors.is_empty() {
            return Err(Error::InvalidSpec(errors));
        }
        if let Some(existing) = self.existing(&request.name).await? {
            return Ok(existing);
        }
        self.ensure_volume(
            &request.volume,
            request.volume_dir.as_deref(),
            &request.workspace,
            &request.instance,
        )
        .await?;
        if let Some(network) = &request.network {
            self.ensure_network(network, &request.workspace, &request.instance)
                .await?;
        }
        let options = CreateContainerOptionsBuilder::default()
            .name(&request.name)
            .build();
        let id = match self
            .api()
            .create_container(Some(options), request.body())
            .await
        {
            Ok(created) => created.id,
            Err(e) => match Error::docker(
                format!("creating container {}", request.name),
                "image",
                &request.image,
                e,
            ) {
                // Someone created it between our inspect and create: return theirs.
                Error::Conflict(_) => {
                    return self
                        .existing(&request.name)
                        .await?
                        .ok_or_else(|| Error::Conflict(request.name.clone()))
                }
                other => return Err(other),
            },
        };
        self.start(&id).await?;
        let status = self.status(&id).await?;
        Ok(Provisioned {
            id,
            name: request.name.clone(),
            created: true,
            status,
        })
    }

    async fn existing(&self, name: &str) -> Result<Option<Provisioned>> {
        match self.inspect(name).await {
            Ok(details) => {
                let mut status = details.status;
                if !status.is_running() {
                    self.start(&details.id).await?;
                    status = self.status(&details.id).await?;
                }
                Ok(Some(Provisioned {
                    id: details.id,
                    name: details.name,
                    created: false,
                    status,
                }))
            }
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates the named volume if missing, labelled as Paddock's; bound to the host directory `dir` (which
    /// must exist) when given.
    pub async fn ensure_volume(
        &self,
        name: &str,
        dir: Option<&str>,
        workspace: &str,
        instance: &str,
    ) -> Result<()> {
        match self.api().inspect_volume(name).await {
            Ok(_) => return Ok(()),
            Err(e) => match Error::docker(format!("inspecting volume {name}"), "volume", name, e) {
                Error::NotFound { .. } => {}
                other => return Err(other),
            },
        }
        let volume_labels = HashMap::from([
            (labels::MANAGED.to_string(), "true".to_string()),
            (labels::WORKSPACE.to_string(), workspace.to_string()),
            (labels::INSTANCE.to_string(), instance.to_string()),
        ]);
        let driver_opts = dir.map(|dir| {
            HashMap::from([
                ("type".to_string(), "none".to_string()),
                ("o".to_string(), "bind".to_string()),
                ("device".to_string(), dir.to_string()),
            ])
        });
        let request = VolumeCreateRequest {
            name: Some(name.into()),
            labels: Some(volume_labels),
            driver: dir.map(|_| "local".to_string()),
            driver_opts,
            ..Default::default()
        };
        self.api()
            .create_volume(request)
            .await
            .map(|_| ())
            .map_err(|e| Error::docker(format!("creating volume {name}"), "volume", name, e))
    }

    /// Creates the named bridge network if missing, labelled as Paddock's. Docker isolates user-defined
    /// bridges from each other, so one network per workspace keeps a team's containers (and the
    /// endpoint replicas it serves) out of every other team's reach; the server, on the host, still
    /// reaches all of them.
    pub async fn ensure_network(&self, name: &str, workspace: &str, instance: &str) -> Result<()> {
        match self
            .api()
            .inspect_network(
                name,
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => match Error::docker(format!("inspecting network {name}"), "network", name, e)
            {
                Error::NotFound { .. } => {}
                other => return Err(other),
            },
        }
        let request = bollard::models::NetworkCreateRequest {
            name: name.into(),
            driver: Some("bridge".into()),
            labels: Some(HashMap::from([
                (labels::MANAGED.to_string(), "true".to_string()),
                (labels::WORKSPACE.to_string(), workspace.to_string()),
                (labels::INSTANCE.to_string(), instance.to_string()),
            ])),
            ..Default::default()
        };
        match self.api().create_network(request).await {
            Ok(_) => Ok(()),
            Err(e) if pools_exhausted(&e) => Err(Error::Preflight(vec![format!(
                "Docker has no address range left for this workspace's network {name}: every range in \
                 its default-address-pools is taken by another network. Remove networks no longer used \
                 (docker network prune), or start dockerd with more, smaller ranges, for example \
                 --default-address-pool base=10.213.0.0/16,size=24 (256 networks)."
            )])),
            Err(e) => match Error::docker(format!("creating network {name}"), "network", name, e) {
                // Created by a concurrent provision of the same workspace.
                Error::Conflict(_) => Ok(()),
                other => Err(other),
            },
        }
    }

    /// Removes the volumes and networks of one workspace of one installation (found by their labels),
    /// after its containers are gone: the last step of deleting a workspace.
    pub async fn remove_workspace_objects(&self, workspace: &str, instance: &str) -> Result<()> {
        let filters = HashMap::from([(
            "label".to_string(),
            vec![
                format!("{}={workspace}", labels::WORKSPACE),
                format!("{}={instance}", labels::INSTANCE),
            ],
        )]);
        let volumes = self
            .api()
            .list_volumes(Some(
                bollard::query_parameters::ListVolumesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| Error::docker("listing volumes", "volume", workspace, e))?;
        for volume in volumes.volumes.unwrap_or_default() {
            self.remove_volume(&volume.name).await?;
        }
        let networks = self
            .api()
            .list_networks(Some(
                bollard::query_parameters::ListNetworksOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| Error::docker("listing networks", "network", workspace, e))?;
        for network in networks {
            let Some(name) = network.name else { continue };
            match self.api().remove_network(&name).await {
                Ok(()) => {}
                Err(e) => {
                    match Error::docker(format!("removing network {name}"), "network", &name, e) {
                        Error::NotFound { .. } => {}
                        other => return Err(other),
                    }
                }
            }
        }
        Ok(())
    }

    /// Removes a volume (its data is gone). Missing is fine; in use is a conflict.
    pub async fn remove_volume(&self, name: &str) -> Result<()> {
        match self
            .api()
            .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) => match Error::docker(format!("removing volume {name}"), "volume", name, e) {
                Error::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    }

    /// Starts a container; starting a running one is fine.
    pub async fn start(&self, name: &str) -> Result<()> {
        let result = self
            .api()
            .start_container(
                name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await;
        not_modified_ok(result, format!("starting {name}"), name)
    }

    /// Stops a container, giving its main process `timeout_secs` to exit after SIGTERM before SIGKILL.
    /// Stopping a stopped container is fine.
    pub async fn stop(&self, name: &str, timeout_secs: i32) -> Result<()> {
        let options = StopContainerOptionsBuilder::default()
            .t(timeout_secs)
            .build();
        not_modified_ok(
            self.api().stop_container(name, Some(options)).await,
            format!("stopping {name}"),
            name,
        )
    }

    /// Restarts a container (stop with `timeout_secs`, then start).
    pub async fn restart(&self, name: &str, timeout_secs: i32) -> Result<()> {
        let options = RestartContainerOptionsBuilder::default()
            .t(timeout_secs)
            .build();
        self.api()
            .restart_container(name, Some(options))
            .await
            .map_err(|e| Error::docker(format!("restarting {name}"), "container", name, e))
    }

    /// Sends `signal` (`TERM`, `INT`, …) to the container's main process, for programs that stop
    /// gracefully on their own (a training job writes a checkpoint first). Not running is a conflict.
    pub async fn signal(&self, name: &str, signal: &str) -> Result<()> {
        let options = KillContainerOptionsBuilder::default()
            .signal(signal)
            .build();
        self.api()
            .kill_container(name, Some(options))
            .await
            .map_err(|e| Error::docker(format!("signalling {name}"), "container", name, e))
    }

    /// Removes a container, killing it if running. The workspace volume stays. Missing is fine.
    pub async fn remove(&self, name: &str) -> Result<()> {
        let options = RemoveContainerOptionsBuilder::default().force(true).build();
        match self.api().remove_container(name, Some(options)).await {
            Ok(()) => Ok(()),
            Err(e) => match Error::docker(format!("removing {name}"), "container", name, e) {
                Error::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    }

    /// Inspects a container by name or ID.
    pub async fn inspect(&self, name: &str) -> Result<ContainerDetails> {
        let raw = self
            .api()
            .inspect_container(
                name,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .map_err(|e| Error::docker(format!("inspecting {name}"), "container", name, e))?;
        let mut status = raw
            .state
            .as_ref()
            .map_or(ContainerStatus::Dead, ContainerStatus::from_state);
        if status == (ContainerStatus::Exited { code: 137 }) {
            if let Some(id) = raw.id.as_deref() {
                status = self.sigkill_status(id).await;
            }
        }
        let container_labels = raw
            .config
            .as_ref()
            .and_then(|c| c.labels.clone())
            .unwrap_or_default();
        Ok(ContainerDetails {
            id: raw.id.clone().unwrap_or_default(),
            name: raw
                .name
                .clone()
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            image: raw.image.clone().unwrap_or_default(),
            status,
            labels: container_labels.into_iter().collect(),
            raw,
        })
    }

    /// The container's address on Docker's bridge network, once it has one: how the server reaches a
    /// service inside (an endpoint replica) without publishing a host port.
    pub async fn ip_address(&self, name: &str) -> Result<Option<String>> {
        let details = self.inspect(name).await?;
        let settings = details.raw.network_settings.as_ref();
        let from_networks = settings
            .and_then(|s| s.networks.as_ref())
            .and_then(|n| n.values().find_map(|e| e.ip_address.clone()))
            .filter(|ip| !ip.is_empty());
        Ok(from_networks)
    }

    /// The last `lines` lines the container wrote (stdout and stderr), for error messages.
    pub async fn logs_tail(&self, name: &str, lines: usize) -> Result<String> {
        use futures_util::StreamExt;
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail(&lines.to_string())
            .build();
        let mut stream = self.api().logs(name, Some(options));
        let mut out = String::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                Error::docker(format!("reading logs of {name}"), "container", name, e)
            })?;
            out.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
        }
        Ok(out)
    }

    /// The status of a container; [`ContainerStatus::Missing`] when it does not exist.
    pub async fn status(&self, name: &str) -> Result<ContainerStatus> {
        match self.inspect(name).await {
            Ok(details) => Ok(details.status),
            Err(Error::NotFound { .. }) => Ok(ContainerStatus::Missing),
            Err(e) => Err(e),
        }
    }
}

/// Docker answers 304 Not Modified for "already started/stopped"; that is success for us.
fn not_modified_ok(
    result: std::result::Result<(), bollard::errors::Error>,
    context: String,
    name: &str,
) -> Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 304, ..
        }) => Ok(()),
        Err(e) => Err(Error::docker(context, "container", name, e)),
    }
}

/// Docker answers a network it cannot give an address range with a 404 (as if something were missing);
/// told apart by its message so that the user reads what is wrong with the host, not "not found".
fn pools_exhausted(e: &bollard::errors::Error) -> bool {
    matches!(e, bollard::errors::Error::DockerResponseServerError { status_code: 404, message }
        if message.contains("non-overlapping"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_404_about_address_pools_means_docker_ran_out_of_them() {
        let answer =
            |status_code, message: &str| bollard::errors::Error::DockerResponseServerError {
                status_code,
                message: message.into(),
            };
        let exhausted = "could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network";
        assert!(pools_exhausted(&answer(404, exhausted)));
        assert!(!pools_exhausted(&answer(
            404,
            "network paddock-net-w1 not found"
        )));
        assert!(!pools_exhausted(&answer(500, exhausted)));
    }

    fn request() -> ProvisionRequest {
        ProvisionRequest {
            network: None,
            name: labels::container_name("main", &["env", "1"]),
            image: "sha256:abc".into(),
            workspace: "ws".into(),
            environment: "1".into(),
            instance: "main".into(),
            extra_labels: BTreeMap::from([
                (labels::MANAGED.to_string(), "false".to_string()),
                ("x".into(), "y".into()),
            ]),
            limits: Limits {
                nano_cpus: 500_000_000,
                memory_bytes: 256 << 20,
                shm_bytes: 64 << 20,
                pids: 128,
            },
            gpu_device_ids: vec!["0".into(), "GPU-1234-abcd".into()],
            volume: labels::volume_name("main", "ws"),
            volume_dir: None,
            store_dir: Some("/data/store/w1".into()),
            cmd: None,
            env: vec![],
        }
    }

    #[test]
    fn body_is_hardened_and_limited() {
        let body = request().body();
        let host = body.host_config.unwrap();
        assert_eq!(body.user.as_deref(), Some("1000:1000"));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(
            host.security_opt,
            Some(vec!["no-new-privileges".to_string()])
        );
        assert_eq!(
            (host.memory, host.memory_swap),
            (Some(256 << 20), Some(256 << 20))
        );
        assert_eq!(host.pids_limit, Some(128));
        let mounts = host.mounts.unwrap();
        let store = mounts
            .iter()
            .find(|m| m.target.as_deref() == Some(STORE_DIR))
            .unwrap();
        assert_eq!(
            (store.source.as_deref(), store.typ, store.read_only),
            (Some("/data/store/w1"), Some(MountType::BIND), Some(true))
        );
        let gpus = &host.device_requests.unwrap()[0];
        assert_eq!(gpus.driver.as_deref(), Some("nvidia"));
        assert_eq!(gpus.device_ids.as_ref().unwrap(), &["0", "GPU-1234-abcd"]);
        // The managed label cannot be overridden by extras.
        let l = body.labels.unwrap();
        assert_eq!(l[labels::MANAGED], "true");
        assert_eq!(l["x"], "y");
    }

    #[test]
    fn no_gpus_no_device_requests() {
        let body = ProvisionRequest {
            gpu_device_ids: vec![],
            env: vec!["NVIDIA_VISIBLE_DEVICES=all".into(), "A=1".into()],
            ..request()
        }
        .body();
        assert!(body.host_config.unwrap().device_requests.is_none());
        // No GPU at all, whatever the image or a variable says.
        assert_eq!(body.env.unwrap(), ["A=1", "NVIDIA_VISIBLE_DEVICES=void"]);
        let with = request().body().env.unwrap();
        assert_eq!(
            with.last().map(String::as_str),
            Some("CUDA_DEVICE_ORDER=PCI_BUS_ID")
        );
        use crate::spec::reserved_env;
        assert!(reserved_env("NVIDIA_DRIVER_CAPABILITIES") && reserved_env("CUDA_VISIBLE_DEVICES"));
        assert!(!reserved_env("CUDA_HOME"));
    }

    #[test]
    fn bad_requests_are_refused() {
        let bad = ProvisionRequest {
            name: "-x".into(),
            volume: "../etc".into(),
            volume_dir: Some("/srv/../etc".into()),
            store_dir: Some("store".into()),
            gpu_device_ids: vec!["0;rm".into()],
            limits: Limits {
                nano_cpus: 0,
                memory_bytes: 1,
                shm_bytes: 0,
                pids: 0,
            },
            ..request()
        };
        let fields: Vec<String> = bad.validate().into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "name",
                "volume",
                "volume_dir",
                "store_dir",
                "cpus",
                "memory",
                "shm_size",
                "pids",
                "gpu_device_ids"
            ]
        );
        assert!(request().validate().is_empty());
    }
}

//! Cluster jobs in an environment's image. The batch script runs `paddock run-in-image` on the node,
//! which starts the job's container on the node's own Docker engine with what the Docker executor gives a
//! container here: the same hardening, the environment's limits (measured against the node), the GPUs
//! Slurm gave the job, the workspace's own network and volume. The volume and the store are the data
//! directory's, which the nodes share, so the run folder is where the server reads it — in the volume,
//! as hostile input, exactly as for a container job on this server.
//!
//! The node runs nothing until it has checked the image lock: the job's image ID must be on the node. A
//! node that has the environment's tag but another image under it (a stale `docker load`), or no such
//! image at all, fails the job with a message saying which, before any step is trained. What the node
//! says goes to the job's Slurm output, which [`super::Slurm::ended_how`] quotes in the job's status.
//!
//! The server half ([`Containers`], an [`Executor`]) writes what the node needs into a folder of its
//! own `runs/` (the container's spec in `container.json`, the environment's secrets in a `container.env`
//! only the server's user can read, which the node removes once read) and submits the batch job there;
//! the node half ([`run_on_node`]) reads it back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use contracts::ids::WorkspaceId;
use serde::{Deserialize, Serialize};

use super::super::docker::{Docker, UnitContainer};
use super::super::{wrapper_args, Executor, Handle, Served, Service, Stop, Work};
use super::{write_private, Slurm};
use crate::storage::Storage;

/// The container's spec, as the server writes it for the node.
pub const SPEC_FILE: &str = "container.json";
/// The environment's secrets (a JSON list of `KEY=value`), readable by the server's user only and
/// removed by the node once read.
const SECRETS_FILE: &str = "container.env";
/// The most either file may weigh.
const SPEC_LIMIT: u64 = 1 << 20;
/// The exit status of a job whose container could not start (Docker's own for `docker run` failures).
const COULD_NOT_START: i32 = 125;
/// How long the node waits, once asked to stop, for the run to record its command's pid: a TERM the
/// wrapper (the container's PID 1) gets before it has set its trap is ignored.
const PID_WAIT: Duration = Duration::from_secs(10);
/// How long the container has, once the stop is passed on, before it is killed. With [`PID_WAIT`] it
/// stays under Slurm's default `KillWait` (30 s), after which Slurm kills this process and nothing
/// would be left to stop a container that still holds the job's GPUs.
const KILL_AFTER: Duration = Duration::from_secs(15);

/// What the node needs to start the job's container.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerRun {
    pub container: UnitContainer,
    /// The run folder relative to the volume's directory, where the wrapper records the command's
    /// pid.
    pub run_folder: PathBuf,
    /// Whether the job asked Slurm for GPUs that are real (not a test cluster's stand-ins): the node
    /// hands the container the ones Slurm allocated.
    pub gpus: bool,
}

/// The Slurm executor for jobs in an environment's image: a run folder where a container job's is (the
/// Docker executor's), a batch job where a cluster job's is (the Slurm executor's).
pub struct Containers {
    slurm: Arc<Slurm>,
    docker: Arc<Docker>,
}

impl Containers {
    pub fn new(slurm: Arc<Slurm>, docker: Arc<Docker>) -> Containers {
        Containers { slurm, docker }
    }

    /// The folder of the server's own for unit `rel`: the batch job's working directory, its output,
    /// and the files the node reads.
    fn private_dir(&self, rel: &Path) -> PathBuf {
        self.slurm.storage.runs_dir().join(rel)
    }
}

#[async_trait::async_trait]
impl Executor for Containers {
    fn storage(&self) -> &Storage {
        self.docker.storage()
    }

    fn run_root(&self, workspace_id: WorkspaceId) -> beneath::Result<beneath::Dir> {
        self.docker.run_root(workspace_id)
    }

    fn run_root_dir(&self, workspace_id: WorkspaceId) -> PathBuf {
        self.docker.run_root_dir(workspace_id)
    }

    fn run_roots_seen(&self, workspace_id: WorkspaceId) -> Vec<PathBuf> {
        self.docker.run_roots_seen(workspace_id)
    }

    fn store_seen(&self, workspace_id: WorkspaceId) -> String {
        self.docker.store_seen(workspace_id)
    }

    fn gpu_device(&self) -> &'static str {
        self.slurm.gpu_device()
    }

    fn run_folder_is_theirs(&self) -> bool {
        true
    }

    async fn start(&self, work: Work) -> Result<Handle, String> {
        let image = work
            .image
            .clone()
            .ok_or("the job has no environment image")?;
        let inside = Path::new(containers::build::WORKSPACE_DIR).join(&work.rel);
        let cmd = wrapper_args(&inside.to_string_lossy(), "paddock", &work);
        let container = self
            .docker
            .unit_container(work.unit, work.workspace_id, &image, cmd)
            .await?;
        if container.volume_dir.is_none() {
            return Err("on a cluster a job in an environment's image needs the workspace volumes in the data directory, which the nodes share".into());
        }
        super::super::docker::give_to_container_user(&work.folder)?;
        let run = ContainerRun {
            container,
            run_folder: work.rel.clone(),
            gpus: work.gpus > 0 && self.slurm.gpu_device() == "cuda",
        };
        let dir = self.private_dir(&work.rel);
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| format!("making {}: {e}", dir.display()))?;
        let spec_json = serde_json::to_string_pretty(&run).map_err(|e| e.to_string())?;
        let secrets = serde_json::to_string(&image.env).map_err(|e| e.to_string())?;
        // A retry of a job that never started leaves the last attempt's files: both are replaced.
        write_private(&dir.join(SPEC_FILE), &spec_json)
            .await
            .map_err(|e| format!("writing the container's spec: {e}"))?;
        write_private(&dir.join(SECRETS_FILE), &secrets)
            .await
            .map_err(|e| format!("writing the environment's secrets: {e}"))?;
        let folder = dir.to_string_lossy().into_owned();
        let paddock = self.slurm.storage.paddock_binary.to_string_lossy();
        let argv = [paddock.into_owned(), "run-in-image".into(), folder.clone()];
        let submission = self.slurm.run_submission(&work, folder, &argv)?;
        let submitted = self.slurm.cluster.submit(&submission).await;
        match submitted {
            Ok(job) => Ok(self.slurm.handle(job)),
            Err(e) => {
                let _ = tokio::fs::remove_file(dir.join(SECRETS_FILE)).await;
                Err(e.to_string())
            }
        }
    }

    async fn serve(&self, _service: Service) -> Result<Served, String> {
        Err("on a cluster a replica runs natively (the paddock runtime on its nodes), not in an environment's image".into())
    }

    async fn is_running(&self, handle: &Handle) -> Option<bool> {
        self.slurm.is_running(handle).await
    }

    async fn stop(&self, handle: &Handle, how: Stop) {
        self.slurm.stop(handle, how).await
    }

    async fn ended_how(&self, handle: &Handle) -> Option<String> {
        self.slurm.ended_how(handle).await
    }

    async fn clean_up(&self, handle: &Handle) {
        self.slurm.clean_up(handle).await
    }
}

/// `paddock run-in-image FOLDER`, on the node: checks the image lock, starts the container, passes a
/// stop on to it and waits for it to end; returns the exit status for the batch job (the container's,
/// or [`COULD_NOT_START`] with the reason on stderr).
pub async fn run_on_node(folder: &Path) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let node = std::env::var("SLURMD_NODENAME").unwrap_or_else(|_| "this node".into());
    // Listened for before anything starts: a stop that comes while the container is being started is
    // held, and passed on once it runs, rather than ending this process with a container left running.
    let (Ok(term), Ok(int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!(
            "{node} cannot run the job in its environment's image: it cannot listen for signals"
        );
        return COULD_NOT_START;
    };
    match start_on_node(folder).await {
        Ok((docker, run)) => {
            let code = follow(&docker, &run, &node, (term, int)).await;
            if let Err(e) = docker.remove(&run.container.name).await {
                eprintln!(
                    "run-in-image: could not remove container {}: {e}",
                    run.container.name
                );
            }
            code
        }
        Err(message) => {
            eprintln!("{node} cannot run the job in its environment's image: {message}");
            COULD_NOT_START
        }
    }
}

/// Reads the spec, checks the lock and the node's room for the environment, and starts the container.
async fn start_on_node(folder: &Path) -> Result<(containers::Docker, ContainerRun), String> {
    let dir = beneath::Dir::open(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let spec = dir
        .read(Path::new(SPEC_FILE), SPEC_LIMIT)
        .map_err(|e| format!("reading {SPEC_FILE}: {e}"))?;
    let run: ContainerRun =
        serde_json::from_slice(&spec).map_err(|e| format!("reading {SPEC_FILE}: {e}"))?;
    let secrets = match dir.read(Path::new(SECRETS_FILE), SPEC_LIMIT) {
        Ok(bytes) => {
            dir.remove_all(Path::new(SECRETS_FILE))
                .map_err(|e| format!("removing {SECRETS_FILE}: {e}"))?;
            serde_json::from_slice::<Vec<String>>(&bytes)
                .map_err(|e| format!("reading {SECRETS_FILE}: {e}"))?
        }
        Err(e) if e.is_missing() => {
            return Err(format!(
                "{SECRETS_FILE} is gone: this attempt already started once; retry the job"
            ))
        }
        Err(e) => return Err(format!("reading {SECRETS_FILE}: {e}")),
    };
    let docker = containers::Docker::connect()
        .await
        .map_err(|e| format!("no Docker engine answers there ({e})"))?;
    check_lock(&docker, &run.container).await?;
    let gpu_device_ids = match run.gpus {
        true => allocated_gpus()?,
        false => Vec::new(),
    };
    let request = run
        .container
        .request(&docker, gpu_device_ids, secrets)
        .await?;
    docker
        .provision(&request)
        .await
        .map_err(|e| format!("starting its container: {e}"))?;
    Ok((docker, run))
}

/// The lock: the job's image ID is on this node. When it is not, says whether the node has another
/// image under the environment's tag or none at all.
async fn check_lock(docker: &containers::Docker, run: &UnitContainer) -> Result<(), String> {
    match docker.image_info(&run.image_id).await {
        Ok(info) if info.id == run.image_id => return Ok(()),
        Ok(_) => {}
        Err(containers::Error::NotFound { .. }) => {}
        Err(e) => return Err(format!("asking Docker for image {}: {e}", run.image_id)),
    }
    let load = "load the environment's image there (docker save on this server, docker load on the node) and retry the job";
    let tagged = match &run.image_tag {
        Some(tag) => docker.image_info(tag).await.ok().map(|info| (tag, info.id)),
        None => None,
    };
    Err(match tagged {
        Some((tag, other)) => format!(
            "the node's {tag} is {other}, but the job is locked to {} (environment {}): another build of it; {load}",
            run.image_id, run.environment_id
        ),
        None => format!(
            "the node has no image {} (environment {}{}); {load}",
            run.image_id,
            run.environment_id,
            run.image_tag
                .as_deref()
                .map(|t| format!(", {t}"))
                .unwrap_or_default()
        ),
    })
}

/// The GPUs Slurm allocated to the job, by UUID. Slurm lists them in `SLURM_JOB_GPUS` (absolute, unlike
/// a `CUDA_VISIBLE_DEVICES` that cgroup confinement renumbers from 0, which is the fallback) in its own
/// numbering: the device files of gres.conf, `/dev/nvidiaN`, whose N is the driver's minor number — not
/// nvidia-smi's index, which is what Docker would read a number as. The driver says which UUID has which
/// minor number (`/proc/driver/nvidia/gpus/*/information`); a number it does not list is an error rather
/// than a guess that could hand over another job's GPU.
fn allocated_gpus() -> Result<Vec<String>, String> {
    let listed = std::env::var("SLURM_JOB_GPUS")
        .or_else(|_| std::env::var("CUDA_VISIBLE_DEVICES"))
        .map_err(|_| {
            "Slurm gave the job no GPUs (neither SLURM_JOB_GPUS nor CUDA_VISIBLE_DEVICES is set)"
                .to_string()
        })?;
    let by_minor = uuids_by_minor(Path::new(NVIDIA_GPUS_DIR));
    gpus_for(&listed, &by_minor)
}

/// Where the NVIDIA driver describes each GPU it drives.
const NVIDIA_GPUS_DIR: &str = "/proc/driver/nvidia/gpus";

/// `listed` (Slurm's comma-separated numbers, or UUIDs) as UUIDs.
fn gpus_for(
    listed: &str,
    by_minor: &std::collections::HashMap<u32, String>,
) -> Result<Vec<String>, String> {
    listed
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| {
            if id.starts_with("GPU-") {
                return Ok(id.to_string());
            }
            let minor: u32 = id
                .parse()
                .map_err(|_| format!("Slurm named a GPU {id:?}, which is not a number"))?;
            by_minor.get(&minor).cloned().ok_or_else(|| {
                format!(
                    "Slurm gave the job GPU {minor}, but the driver lists no /dev/nvidia{minor} \
                     ({NVIDIA_GPUS_DIR} names {} GPU(s))",
                    by_minor.len()
                )
            })
        })
        .collect()
}

/// Minor number → UUID of every GPU the driver lists under `dir` (one folder per PCI address, each with
/// an `information` file of `Key: value` lines).
fn uuids_by_minor(dir: &Path) -> std::collections::HashMap<u32, String> {
    let mut found = std::collections::HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("information")) else {
            continue;
        };
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.trim_start().strip_prefix(':'))
                .map(|v| v.trim().to_string())
        };
        if let (Some(minor), Some(uuid)) = (field("Device Minor"), field("GPU UUID")) {
            if let Ok(minor) = minor.parse() {
                found.insert(minor, uuid);
            }
        }
    }
    found
}

/// Waits for the container to end, passing a TERM or INT the batch job gets on to the wrapper (once
/// it has recorded its command's pid, or after [`PID_WAIT`]); returns its exit status.
async fn follow(
    docker: &containers::Docker,
    run: &ContainerRun,
    node: &str,
    (mut term, mut int): (tokio::signal::unix::Signal, tokio::signal::unix::Signal),
) -> i32 {
    use containers::lifecycle::ContainerStatus;
    let mut asked_at: Option<tokio::time::Instant> = None;
    let mut passed_on: Option<tokio::time::Instant> = None;
    let mut killed = false;
    loop {
        tokio::select! {
            _ = term.recv() => { asked_at.get_or_insert_with(tokio::time::Instant::now); }
            _ = int.recv() => { asked_at.get_or_insert_with(tokio::time::Instant::now); }
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        if let (Some(at), None) = (asked_at, passed_on) {
            if at.elapsed() >= PID_WAIT || pid_recorded(run) {
                if let Err(e) = docker.signal(&run.container.name, "TERM").await {
                    eprintln!(
                        "run-in-image: could not pass the stop on to {}: {e}",
                        run.container.name
                    );
                }
                passed_on = Some(tokio::time::Instant::now());
            }
        }
        if let (Some(at), false) = (passed_on, killed) {
            if at.elapsed() >= KILL_AFTER {
                eprintln!(
                    "{node}: the job's container did not stop within {} s of being asked; killing it",
                    KILL_AFTER.as_secs()
                );
                let _ = docker.signal(&run.container.name, "KILL").await;
                killed = true;
            }
        }
        match docker.status(&run.container.name).await {
            Ok(ContainerStatus::Exited { code }) => return i32::try_from(code).unwrap_or(1),
            Ok(ContainerStatus::OomKilled) => {
                eprintln!(
                    "{node}: the job's container was killed for going over the environment's memory limit ({})",
                    run.container.environment.memory
                );
                return 137;
            }
            Ok(ContainerStatus::Missing | ContainerStatus::Dead) => {
                eprintln!(
                    "{node}: the job's container {} was removed while it ran",
                    run.container.name
                );
                return 1;
            }
            Ok(_) => {}
            Err(e) if e.is_unreachable() => {
                eprintln!("{node}: the Docker engine stopped answering: {e}");
                return 1;
            }
            Err(_) => {}
        }
    }
}

/// Whether the wrapper has recorded its command's pid in the run folder (read through `beneath`: the
/// volume is the container's to write).
fn pid_recorded(run: &ContainerRun) -> bool {
    let Some(volume) = &run.container.volume_dir else {
        return false;
    };
    beneath::Dir::open(Path::new(volume))
        .and_then(|volume| volume.exists(&run.run_folder.join("trainer.pid")))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver's own description of two GPUs whose minor numbers are not their PCI order: Slurm's
    /// numbers are matched by minor number, UUIDs pass through, and an unknown number is refused.
    #[test]
    fn slurm_gpu_numbers_become_uuids_by_minor_number() {
        let dir = tempfile::tempdir().unwrap();
        for (bus, minor, uuid) in [("0000:3b:00.0", 1, "GPU-b"), ("0000:86:00.0", 0, "GPU-a")] {
            let gpu = dir.path().join(bus);
            std::fs::create_dir(&gpu).unwrap();
            let info = format!(
                "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 150\nGPU UUID: \t {uuid}\nVideo BIOS: \t 92.00.45.00.03\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDevice Minor: \t {minor}\nBus Location: \t {bus}\n"
            );
            std::fs::write(gpu.join("information"), info).unwrap();
        }
        let by_minor = uuids_by_minor(dir.path());
        assert_eq!(gpus_for("1,0", &by_minor).unwrap(), ["GPU-b", "GPU-a"]);
        assert_eq!(gpus_for("GPU-x", &by_minor).unwrap(), ["GPU-x"]);
        let err = gpus_for("0,2", &by_minor).unwrap_err();
        assert!(err.contains("no /dev/nvidia2"), "{err}");
        assert!(gpus_for("x", &by_minor).is_err());
        assert!(uuids_by_minor(&dir.path().join("none")).is_empty());
    }
}

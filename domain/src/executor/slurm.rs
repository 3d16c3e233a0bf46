//! The Slurm executor: a run is a batch job. Its script is the same wrapper every run goes through
//! ([`super::WRAPPER`]), so the run leaves the same files in its run folder (output, capped log,
//! `trainer.pid`, `exit_code`) and the server reads its end there, as for a local run. What Slurm adds is
//! *where*: the cluster picks a node with the GPUs asked for (GRES; Slurm sets `CUDA_VISIBLE_DEVICES`),
//! and the job is named after the unit (`paddock-job-12`) with Paddock's ids in its comment, so a
//! restarted server finds it again by name.
//!
//! The run folders are the server's own `runs/`: the nodes must see the data directory at the same path
//! (a shared file system, as every cluster has for home and project directories). A stop asks the batch
//! script alone (`scancel --batch --signal=TERM`), which passes it to the trainer; a kill cancels the job.
//! A signal Slurm delivers before the script has started is lost (the job already counts as running),
//! so a stop waits until the run has recorded its command's pid; a job still waiting in the queue has
//! nothing to save and is cancelled outright.
//!
//! Replicas (long-lived services) do not run on a cluster yet: [`Executor::serve`] says so.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clusters::slurm::{Cancel, JobState, Placement, Resources, Submission};
use contracts::types::{
    ClusterJobState, ClusterNode, ClusterPartition, ClusterPlacement, ClusterView, ResourceUsage,
};

use super::{wrapper_args, Executor, Handle, Served, Service, Stop, Work};
use crate::storage::Storage;

/// What every unit of this server asks of the cluster besides its GPUs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Partition, account and QoS (`None`: the cluster's defaults).
    pub placement: Placement,
    pub cpus: u32,
    pub memory_mb: u64,
}

pub struct Slurm {
    cluster: clusters::slurm::Slurm,
    storage: Arc<Storage>,
    settings: Settings,
}

/// How long a stop waits for a started job's command to record its pid.
const PID_WAIT: Duration = Duration::from_secs(60);

impl Slurm {
    pub fn new(
        cluster: clusters::slurm::Slurm,
        storage: Arc<Storage>,
        settings: Settings,
    ) -> Slurm {
        Slurm {
            cluster,
            storage,
            settings,
        }
    }

    /// Asks job `job` to stop: TERM once its command runs, which it says by writing `trainer.pid` in its
    /// run folder (a queued job is cancelled). The folder is the job's working directory as Slurm
    /// recorded it, so a server that restarted since the submission asks the same way.
    async fn ask(&self, job: &str) -> clusters::Result<()> {
        let deadline = tokio::time::Instant::now() + PID_WAIT;
        loop {
            let Some(info) = self.cluster.job(job).await? else {
                return Ok(()); // long ended
            };
            match info.state {
                JobState::Pending => return self.cluster.cancel(job, Cancel::Kill).await,
                state if !state.is_alive() => return Ok(()),
                _ => {}
            }
            let runs_dir = self.storage.runs_dir();
            let folder = info.work_dir.as_deref().and_then(|dir| {
                Path::new(dir)
                    .strip_prefix(&runs_dir)
                    .ok()
                    .map(Path::to_path_buf)
            });
            let started = match folder.map(|f| f.join("trainer.pid")) {
                Some(pid) => {
                    let runs = self.storage.clone();
                    crate::storage::in_volume("the run's pid", move || runs.runs()?.exists(&pid))
                        .await
                        .unwrap_or(false)
                }
                None => true,
            };
            if started || tokio::time::Instant::now() >= deadline {
                return self.cluster.cancel(job, Cancel::Term).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The job's Slurm id, for a handle of this executor.
    fn job_of(handle: &Handle) -> Option<&str> {
        match handle {
            Handle::Cluster { job } => Some(job),
            _ => None,
        }
    }

    /// Where the batch job `job` is now; `None` when the scheduler no longer knows it or cannot be
    /// asked (the page then simply says nothing about it).
    pub async fn placement(&self, job: &str) -> Option<ClusterPlacement> {
        let info = self.cluster.job(job).await.ok()??;
        let state = match info.state {
            JobState::Pending => ClusterJobState::Waiting,
            JobState::Running | JobState::Other(_) => ClusterJobState::Running,
            JobState::Ending => ClusterJobState::Ending,
            _ => ClusterJobState::Ended,
        };
        Some(ClusterPlacement {
            state,
            reason: info.reason,
            nodes: info.nodes,
        })
    }

    /// The cluster as its scheduler sees it now (`sinfo`, `scontrol show partition`), named `name`; a
    /// scheduler that cannot be asked is said in `problem`, not as an error: the page that shows it
    /// should say so, not fail.
    pub async fn view(&self, name: &str) -> ClusterView {
        let (nodes, partitions) = tokio::join!(self.cluster.nodes(), self.cluster.partitions());
        let mut view = ClusterView {
            name: name.to_string(),
            executor: "slurm".into(),
            partition: self.settings.placement.partition.clone(),
            partitions: Vec::new(),
            nodes: Vec::new(),
            problem: None,
        };
        let (nodes, partitions) = match (nodes, partitions) {
            (Ok(n), Ok(p)) => (n, p),
            (Err(e), _) | (_, Err(e)) => {
                view.problem = Some(e.to_string());
                return view;
            }
        };
        let usage = |u: &clusters::slurm::Usage| ResourceUsage {
            total: u.total,
            allocated: u.allocated,
        };
        view.nodes = nodes
            .iter()
            .map(|n| ClusterNode {
                name: n.name.clone(),
                state: n.state.clone(),
                gpus: usage(&n.gpus),
                cpus: usage(&n.cpus),
                memory_mb: usage(&n.memory_mb),
                partitions: n.partitions.clone(),
                reason: n.reason.clone(),
            })
            .collect();
        view.partitions = partitions
            .into_iter()
            .map(|p| {
                let gpus = view
                    .nodes
                    .iter()
                    .filter(|n| n.is_up() && n.partitions.contains(&p.name))
                    .fold(ResourceUsage::default(), |sum, n| ResourceUsage {
                        total: sum.total + n.gpus.total,
                        allocated: sum.allocated + n.gpus.allocated,
                    });
                ClusterPartition {
                    name: p.name,
                    default: p.default,
                    state: p.state,
                    nodes: p.nodes,
                    max_time: p.max_time,
                    gpus,
                }
            })
            .collect();
        if view.partition.is_none() {
            view.partition = view
                .partitions
                .iter()
                .find(|p| p.default)
                .map(|p| p.name.clone());
        }
        view
    }
}

/// The batch job's name: `paddock-` and the unit's name parts (`paddock-job-12`).
pub fn job_name(unit: super::Unit) -> String {
    format!("paddock-{}", unit.name_parts().join("-"))
}

#[async_trait::async_trait]
impl Executor for Slurm {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    async fn start(&self, work: Work) -> Result<Handle, String> {
        let folder = self.storage.runs_dir().join(&work.rel);
        let folder = folder.to_string_lossy().into_owned();
        let paddock = self.storage.paddock_binary.to_string_lossy().into_owned();
        // `sh -c WRAPPER sh FOLDER …`, quoted for the batch script's shell.
        let argv = wrapper_args(&folder, &paddock, &work);
        let script = shlex::try_join(argv.iter().map(String::as_str))
            .map_err(|e| format!("the run's command cannot be quoted: {e}"))?;
        let unit_ids = work.unit.name_parts().join(":");
        let submission = Submission {
            name: job_name(work.unit),
            comment: format!("paddock:workspace:{}:{unit_ids}", work.workspace_id),
            placement: self.settings.placement.clone(),
            resources: Resources {
                gpus: work.gpus,
                cpus: self.settings.cpus,
                memory_mb: self.settings.memory_mb,
            },
            time_limit: None,
            term_before_limit: None,
            output: format!("{folder}/slurm.out"),
            workdir: folder,
            script: format!("exec {script}"),
        };
        let job = self
            .cluster
            .submit(&submission)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Handle::Cluster { job })
    }

    async fn serve(&self, _service: Service) -> Result<Served, String> {
        Err("endpoint replicas do not run on a Slurm cluster yet; deploy on this server".into())
    }

    /// Waiting in the queue or running; `None` when the controller cannot be asked. A job the
    /// controller has forgotten ended long ago.
    async fn is_running(&self, handle: &Handle) -> Option<bool> {
        let job = Self::job_of(handle)?;
        match self.cluster.job(job).await {
            Ok(info) => Some(info.is_some_and(|i| i.state.is_alive())),
            Err(e) => {
                tracing::warn!(job, error = %e, "cannot ask Slurm about a job");
                None
            }
        }
    }

    async fn stop(&self, handle: &Handle, how: Stop) {
        let Some(job) = Self::job_of(handle) else {
            return;
        };
        let asked = match how {
            Stop::Kill => Ok(()),
            Stop::Ask | Stop::Within(_) => self.ask(job).await,
        };
        if let Stop::Within(grace) = how {
            let deadline = tokio::time::Instant::now() + grace;
            while self.is_running(handle).await != Some(false)
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let killed = match how {
            Stop::Ask => Ok(()),
            Stop::Within(_) | Stop::Kill => self.cluster.cancel(job, Cancel::Kill).await,
        };
        if let Err(e) = asked.and(killed) {
            tracing::warn!(job, error = %e, "cannot stop a Slurm job");
        }
    }

    /// Nothing stays behind on the cluster once a job ended: its files are in the run folder.
    async fn clean_up(&self, _handle: &Handle) {}
}

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
//! A job in an environment's image is a batch job whose script starts the container on the node (see
//! [`in_image`]): the same Slurm job underneath, a container job's run folder on top.
//!
//! A replica is a batch job too, one that runs `serve-model` until it is cancelled: it binds every
//! address of its node on a port it picks and says which in its output file (in the endpoint's folder
//! under the data directory, which the nodes share); the gateway reaches it at the node's `NodeAddr`.
//! The deployer's watcher, health checks, restarts, rolling changes and parity gate are the same as for
//! a replica on this server: they only see a [`Handle::Cluster`] and a base URL.

pub mod in_image;
mod preflight;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clusters::slurm::{Cancel, JobState, Placement, Resources, Submission};
use contracts::types::{
    ClusterJobState, ClusterNode, ClusterPartition, ClusterPlacement, ClusterView, ResourceUsage,
};

use super::{last_lines, wrapper_args, Executor, Handle, Served, Service, Stop, Work};
use crate::storage::Storage;

/// A cluster's settings: what every unit of this server asks of it besides its GPUs, and where the
/// cluster came from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Partition, account and QoS (`None`: the cluster's defaults).
    pub placement: Placement,
    pub cpus: u32,
    pub memory_mb: u64,
    /// The cluster's GPU GRES are stand-in device files (a test or demo cluster such as
    /// `scripts/slurm.sh` starts): units still ask for them, so the scheduler places and counts them as
    /// GPUs, but they compute on the node's CPU.
    pub gpu_stand_ins: bool,
    /// Registered by an admin from the dashboard (see `admin::clusters`), rather than given in the
    /// server's settings: the view says so, and only such a cluster may be removed.
    pub registered: bool,
}

pub struct Slurm {
    /// What jobs ask for it by (`"cluster": "slurm"`), and what its handles carry.
    name: String,
    cluster: clusters::slurm::Slurm,
    storage: Arc<Storage>,
    settings: Settings,
    /// What the last shared-directory preflight found (see [`preflight`]), and the cluster's default
    /// partition then.
    shared_dir: Mutex<Option<contracts::types::SharedDirCheck>>,
    default_partition: Mutex<Option<String>>,
}

/// How long a stop waits for a started job's command to record its pid.
const PID_WAIT: Duration = Duration::from_secs(60);
/// A job's time limit on the cluster is the server's plus this: the server asks first (a final
/// checkpoint), the cluster's limit ends it should the server be down then.
const LIMIT_BACKSTOP: Duration = Duration::from_secs(10 * 60);
/// How long before the cluster's limit Slurm sends the batch script a TERM (which the wrapper passes
/// to the trainer, which writes its checkpoint).
const TERM_BEFORE_LIMIT: Duration = Duration::from_secs(5 * 60);
/// The most of a replica's output file read for its address: one line is all it prints.
const ADDRESS_FILE_LIMIT: u64 = 4096;

impl Slurm {
    pub fn new(
        name: &str,
        cluster: clusters::slurm::Slurm,
        storage: Arc<Storage>,
        settings: Settings,
    ) -> Slurm {
        Slurm {
            name: name.to_string(),
            cluster,
            storage,
            settings,
            shared_dir: Mutex::new(None),
            default_partition: Mutex::new(None),
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
            // A run in an image has its pid in the workspace's volume; the node waits for it itself
            // (see `in_image`), so its job is asked at once.
            let started = match folder {
                Some(folder) => {
                    let runs = self.storage.clone();
                    crate::storage::in_volume("the run's pid", move || {
                        let runs = runs.runs()?;
                        Ok(runs.exists(&folder.join("trainer.pid"))?
                            || runs.exists(&folder.join(in_image::SPEC_FILE))?)
                    })
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

    /// Waits until replica job `job` says the port it listens on in `out` (its stdout), and returns
    /// its base URL on its node; an error with what went wrong (the job ended, with its log's last
    /// lines; still in the queue when `limit` ran out, with Slurm's reason) otherwise.
    async fn address_of(
        &self,
        job: &str,
        out: &Path,
        log: &Path,
        limit: Duration,
    ) -> Result<String, String> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut waiting_for: Option<String> = None;
        loop {
            if let Some(port) = listening_port(&read_small(out).await) {
                let info = self.cluster.job(job).await.map_err(|e| e.to_string())?;
                let node = info
                    .and_then(|i| i.nodes)
                    .ok_or_else(|| format!("Slurm does not say which node runs job {job}"))?;
                let address = self
                    .cluster
                    .node_address(&node)
                    .await
                    .map_err(|e| e.to_string())?;
                let host = match address.contains(':') {
                    true => format!("[{address}]"),
                    false => address,
                };
                return Ok(format!("http://{host}:{port}"));
            }
            let ended = |how: String| {
                let tail = std::fs::read_to_string(log).unwrap_or_default();
                format!(
                    "its Slurm job {job} {how} before it answered: {}",
                    last_lines(&tail, 5)
                )
            };
            match self.cluster.job(job).await {
                Ok(None) => return Err(ended("ended".into())),
                Ok(Some(info)) if !info.state.is_alive() => {
                    let reason = info.reason.map(|r| format!(", {r}")).unwrap_or_default();
                    return Err(ended(format!("ended ({}{reason})", info.state.word())));
                }
                Ok(Some(info)) => {
                    waiting_for = (info.state == JobState::Pending)
                        .then(|| info.reason.unwrap_or_else(|| "no reason given".into()));
                }
                Err(e) => tracing::warn!(job, error = %e, "cannot ask Slurm about a replica"),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(match waiting_for {
                    Some(reason) => format!(
                        "its Slurm job {job} was still waiting in the cluster's queue after {} s ({reason})",
                        limit.as_secs()
                    ),
                    None => format!("it did not answer within {} s", limit.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// A unit's batch job but its limits, folder and script: named after the unit with Paddock's ids in
    /// its comment (how a restarted server finds it), where it goes and what it takes.
    fn submission(
        &self,
        unit: super::Unit,
        workspace_id: contracts::ids::WorkspaceId,
        placement: &Placement,
        gpus: u32,
        nodes: u32,
    ) -> Submission {
        let unit_ids = unit.name_parts().join(":");
        Submission {
            name: job_name(unit),
            comment: format!("paddock:workspace:{workspace_id}:{unit_ids}"),
            placement: self.placed(placement),
            resources: Resources {
                nodes,
                gpus,
                cpus: self.settings.cpus,
                memory_mb: self.settings.memory_mb,
            },
            time_limit: None,
            term_before_limit: None,
            output: String::new(),
            workdir: String::new(),
            script: String::new(),
        }
    }

    /// The last lines of a run's batch output (`slurm.out` in its working directory), when that is a
    /// folder of this server's `runs/` (a replica's output is its address, not a story).
    async fn output_tail(&self, work_dir: Option<&str>) -> Option<String> {
        let folder = Path::new(work_dir?)
            .strip_prefix(self.storage.runs_dir())
            .ok()?
            .to_path_buf();
        let runs = self.storage.clone();
        let tail = crate::storage::in_volume("the job's Slurm output", move || {
            runs.runs()?
                .read_tail(&folder.join("slurm.out"), ADDRESS_FILE_LIMIT)
        })
        .await
        .ok()?;
        let said = last_lines(&String::from_utf8_lossy(&tail), 3);
        (!said.is_empty()).then_some(said)
    }

    /// A run's batch job: `argv` run in `folder`, which receives its Slurm output, with the run's time
    /// limit and the cluster's backstop to it.
    fn run_submission(
        &self,
        work: &Work,
        folder: String,
        argv: &[String],
    ) -> Result<Submission, String> {
        let command = shlex::try_join(argv.iter().map(String::as_str))
            .map_err(|e| format!("the run's command cannot be quoted: {e}"))?;
        Ok(Submission {
            time_limit: work.time_limit.map(|limit| limit + LIMIT_BACKSTOP),
            term_before_limit: work.time_limit.map(|_| TERM_BEFORE_LIMIT),
            output: format!("{folder}/slurm.out"),
            workdir: folder,
            script: format!("exec {command}"),
            ..self.submission(
                work.unit,
                work.workspace_id,
                &work.placement,
                work.gpus,
                work.nodes,
            )
        })
    }

    /// Where a unit goes: what it asked for, else what this server was configured with.
    fn placed(&self, asked: &Placement) -> Placement {
        let ours = &self.settings.placement;
        Placement {
            partition: asked.partition.clone().or(ours.partition.clone()),
            account: asked.account.clone().or(ours.account.clone()),
            qos: asked.qos.clone().or(ours.qos.clone()),
        }
    }

    /// The job's Slurm id, for a handle of this executor.
    fn job_of(handle: &Handle) -> Option<&str> {
        match handle {
            Handle::Cluster { job, .. } => Some(job),
            _ => None,
        }
    }

    /// The handle of its batch job `job`.
    fn handle(&self, job: String) -> Handle {
        Handle::Cluster {
            cluster: self.name.clone(),
            job,
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

    /// Why the cluster would refuse this server's work charged to `account` and `qos` (`None`: the
    /// server's) in the partition its work goes to, if it would (see
    /// `clusters::slurm::Slurm::refusal`): a cluster that enforces its accounting refuses an account or
    /// QoS it does not know.
    pub async fn refusal(
        &self,
        account: Option<String>,
        qos: Option<String>,
    ) -> clusters::Result<Option<String>> {
        let ours = &self.settings.placement;
        let placement = Placement {
            partition: ours.partition.clone(),
            account: account.or(ours.account.clone()),
            qos: qos.or(ours.qos.clone()),
        };
        self.cluster.refusal(&placement).await
    }

    /// The names of the cluster's partitions, as its scheduler says now.
    /// The partition work asking for `partition` goes to (`None`: this server's, else the cluster's
    /// default) and how many nodes it has, as its scheduler says now; `None` when it has no such one.
    pub async fn partition_size(
        &self,
        partition: Option<&str>,
    ) -> clusters::Result<Option<(String, u32)>> {
        let partitions = self.cluster.partitions().await?;
        let wanted = partition.or(self.settings.placement.partition.as_deref());
        Ok(partitions
            .into_iter()
            .find(|p| wanted.map_or(p.default, |w| p.name == w))
            .map(|p| (p.name, p.total_nodes)))
    }

    pub async fn partition_names(&self) -> clusters::Result<Vec<String>> {
        let partitions = self.cluster.partitions().await?;
        Ok(partitions.into_iter().map(|p| p.name).collect())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster as its scheduler sees it now (`sinfo`, `scontrol show partition`); a scheduler that
    /// cannot be asked is said in `problem`, not as an error: the page that shows it should say so, not
    /// fail.
    pub async fn view(&self) -> ClusterView {
        let (nodes, partitions) = tokio::join!(self.cluster.nodes(), self.cluster.partitions());
        let mut view = ClusterView {
            name: self.name.clone(),
            executor: "slurm".into(),
            partition: self.settings.placement.partition.clone(),
            partitions: Vec::new(),
            nodes: Vec::new(),
            problem: None,
            shared_dir: self.last_shared_dir_check(),
            reached_by: self.cluster.reach().shown(),
            registered: self.settings.registered,
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

/// The port in `serve-model`'s one line of stdout (`listening on http://0.0.0.0:PORT`).
fn listening_port(out: &str) -> Option<u16> {
    let line = out.lines().next()?.trim();
    let address = line.strip_prefix("listening on http://")?;
    address.rsplit_once(':')?.1.parse().ok().filter(|p| *p != 0)
}

/// Writes `text` to a new file at `path` that only this user can read (replacing an old one).
async fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    use tokio::io::AsyncWriteExt;
    match tokio::fs::remove_file(path).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut file = tokio::fs::OpenOptions::from(options).open(path).await?;
    file.write_all(text.as_bytes()).await?;
    file.flush().await
}

/// The start of a file a job writes (empty while it does not exist).
async fn read_small(path: &Path) -> String {
    use tokio::io::AsyncReadExt;
    let Ok(file) = tokio::fs::File::open(path).await else {
        return String::new();
    };
    let mut text = String::new();
    let _ = file
        .take(ADDRESS_FILE_LIMIT)
        .read_to_string(&mut text)
        .await;
    text
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

    fn gpu_device(&self) -> &'static str {
        match self.settings.gpu_stand_ins {
            true => "cpu",
            false => "cuda",
        }
    }

    async fn start(&self, work: Work) -> Result<Handle, String> {
        let folder = self.storage.runs_dir().join(&work.rel);
        let folder = folder.to_string_lossy().into_owned();
        let paddock = self.storage.paddock_binary.to_string_lossy().into_owned();
        // `sh -c WRAPPER sh FOLDER …`, quoted for the batch script's shell.
        let argv = wrapper_args(&folder, &paddock, &work);
        let submission = self.run_submission(&work, folder, &argv)?;
        let job = self
            .cluster
            .submit(&submission)
            .await
            .map_err(|e| e.to_string())?;
        Ok(self.handle(job))
    }

    /// Submits `serve-model` as a batch job with no time limit (a replica serves until it is stopped)
    /// and returns once it answers; a job that did not start in time is cancelled.
    async fn serve(&self, service: Service) -> Result<Served, String> {
        let folder = service
            .log
            .parent()
            .ok_or("the replica's log has no folder")?
            .to_path_buf();
        let stem = service
            .log
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "replica".into());
        let out: PathBuf = folder.join(format!("{stem}.out"));
        let token_file: PathBuf = folder.join(format!("{stem}.token"));
        tokio::fs::create_dir_all(&folder)
            .await
            .map_err(|e| format!("making {}: {e}", folder.display()))?;
        // The token travels in a file only the server's user can read, which the job removes once
        // read: a batch script and a command line are visible to the cluster's other users.
        write_private(&token_file, &service.token)
            .await
            .map_err(|e| format!("writing {}: {e}", token_file.display()))?;
        // A restart must not read the address its previous run wrote.
        match tokio::fs::remove_file(&out).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("removing {}: {e}", out.display()))
            }
            _ => {}
        }
        let model = self
            .storage
            .store_dir(service.workspace_id)
            .join(&service.model);
        let paddock = self.storage.paddock_binary.to_string_lossy().into_owned();
        let mut argv = vec![paddock];
        argv.extend(service.args.iter().cloned());
        argv.push("--model".into());
        argv.push(model.to_string_lossy().into_owned());
        argv.extend(["--bind".to_string(), "0.0.0.0:0".to_string()]);
        let command = shlex::try_join(argv.iter().map(String::as_str))
            .map_err(|e| format!("the replica's command cannot be quoted: {e}"))?;
        let quoted = |path: &Path| {
            shlex::try_quote(&path.to_string_lossy())
                .map(|q| q.into_owned())
                .map_err(|e| format!("{} cannot be quoted: {e}", path.display()))
        };
        let (log, token) = (quoted(&service.log)?, quoted(&token_file)?);
        let submission = Submission {
            time_limit: None,
            term_before_limit: None,
            output: out.to_string_lossy().into_owned(),
            workdir: folder.to_string_lossy().into_owned(),
            script: format!(
                "{env}=$(cat {token}) && rm -f {token} && export {env} && exec {command} 2>>{log}",
                env = super::TOKEN_ENV
            ),
            ..self.submission(
                service.unit,
                service.workspace_id,
                &service.placement,
                service.gpus,
                1,
            )
        };
        let submitted = self.cluster.submit(&submission).await;
        let job = match submitted {
            Ok(job) => job,
            Err(e) => {
                let _ = tokio::fs::remove_file(&token_file).await;
                return Err(e.to_string());
            }
        };
        let answered = self
            .address_of(&job, &out, &service.log, service.start_timeout)
            .await;
        // Gone once the job read it; a job that never started leaves it to be removed here.
        let _ = tokio::fs::remove_file(&token_file).await;
        match answered {
            Ok(base_url) => Ok(Served {
                handle: self.handle(job),
                base_url,
            }),
            Err(message) => {
                if let Err(e) = self.cluster.cancel(&job, Cancel::Kill).await {
                    tracing::warn!(job, error = %e, "cannot cancel a replica that did not start");
                }
                Err(message)
            }
        }
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

    /// Slurm's own end of the job (its state word, the node, and the admin's reason for a node that
    /// went down), unless it completed, which the run folder says.
    async fn ended_how(&self, handle: &Handle) -> Option<String> {
        let job = Self::job_of(handle)?;
        let info = self.cluster.job(job).await.ok()??;
        if info.state.is_alive() || info.state == JobState::Completed {
            return None;
        }
        let on = info.nodes.clone().unwrap_or_default();
        let mut how = format!("Slurm ended job {job} as {}", info.state.word());
        if !on.is_empty() {
            how.push_str(&format!(" on {on}"));
        }
        if let Some(reason) = info.reason.filter(|r| r != "None") {
            how.push_str(&format!(" ({reason})"));
        }
        // Why the admin took the node out, as they wrote it.
        let nodes = match self.cluster.nodes().await {
            Ok(nodes) => nodes,
            Err(e) => {
                tracing::warn!(job, error = %e, "cannot ask Slurm about the job's node");
                Vec::new()
            }
        };
        if let Some(node) = nodes.iter().find(|n| n.name == on) {
            if let Some(why) = &node.reason {
                how.push_str(&format!("; node {on} is {}: {why}", node.state));
            }
        }
        // What the batch job said before it ended (a node that could not start the run says why).
        if let Some(said) = self.output_tail(info.work_dir.as_deref()).await {
            how.push_str(&format!("; it said: {said}"));
        }
        Some(how)
    }

    /// Nothing stays behind on the cluster once a job ended: its files are in its folder.
    async fn clean_up(&self, _handle: &Handle) {}
}

#[cfg(test)]
mod tests {
    use super::listening_port;

    #[test]
    fn the_port_comes_from_serve_models_first_line_only() {
        assert_eq!(
            listening_port("listening on http://0.0.0.0:41234\n"),
            Some(41234)
        );
        assert_eq!(
            listening_port("listening on http://[::]:8080\n"),
            Some(8080)
        );
        for unread in [
            "",
            "listening on http://0.0.0.0:0\n",
            "listening on http://0.0.0.0:99999\n",
            "listening on http://0.0.0.0:80x\n",
            "warming up\nlistening on http://0.0.0.0:8080\n",
            "listening on ftp://0.0.0.0:21\n",
        ] {
            assert_eq!(listening_port(unread), None, "{unread:?}");
        }
    }
}

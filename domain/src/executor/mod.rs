//! The executor seam. Jobs, evaluations and endpoint replicas are each "a `paddock` command run
//! somewhere, followed until it ends, stopped on request and found again after a restart"; this module is
//! the one place that knows *where*. Callers describe the work ([`Work`] for a run that ends, [`Service`]
//! for a replica that answers requests), record the [`Handle`] they get back in their row, and from then on
//! ask the executor the handle names whether it still runs, to stop it, or to clean up after it. A cluster
//! executor (Slurm, then Kubernetes) is one more implementation of [`Executor`] and one more kind of
//! [`Handle`]; the callers do not change.
//!
//! A run that ends follows one file protocol whatever runs it (see [`WRAPPER`]): its stdout to one file,
//! its stderr to a size-capped log, its pid to `trainer.pid` and, last, its exit status to `exit_code`, all
//! in its run folder. The server reads those files, never a pipe, so a run outlives a restart of the
//! server and its end is read back from the folder.
//!
//! # Layout
//! - this file: the [`Executor`] trait, [`Handle`], [`Work`] and [`Service`], the shared wrapper and the
//!   run-folder readers, and [`Executors`], the set a server has.
//! - [`local`]: child processes of the server, each leading its own process group.
//! - [`docker`]: containers from an environment's image, with its limits, the leased GPUs and the
//!   workspace's volume.
//! - [`slurm`]: batch jobs on a Slurm cluster whose nodes share the data directory, natively or in an
//!   environment's image on the node's Docker engine.

pub mod docker;
pub mod local;
pub mod slurm;

use contracts::ids::{EndpointId, EnvironmentId, EvaluationId, JobId, WorkspaceId};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::engine::Engine;
use crate::storage::{in_volume, Storage};
pub use contracts::types::ExecutorKind;

/// Where a started unit runs: what its row records (the `pid` and container columns) to find it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handle {
    /// A process the server started, leading its own process group.
    Process { group: i64 },
    /// A Docker container, by its deterministic name.
    Container { name: String },
    /// A batch job, by the cluster's name and its job id there.
    Cluster { cluster: String, job: String },
}

impl Handle {
    /// From a row's `pid`, container, cluster and cluster job columns; `None` when none is set (not
    /// started yet). A cluster job is only followed on the cluster its row names.
    pub fn of(
        pid: Option<i64>,
        container: Option<&str>,
        cluster: Option<&str>,
        cluster_job: Option<&str>,
    ) -> Option<Handle> {
        match (cluster.zip(cluster_job), container, pid) {
            (Some((cluster, job)), _, _) => Some(Handle::Cluster {
                cluster: cluster.to_string(),
                job: job.to_string(),
            }),
            (None, Some(name), _) => Some(Handle::Container {
                name: name.to_string(),
            }),
            (None, None, Some(group)) => Some(Handle::Process { group }),
            (None, None, None) => None,
        }
    }

    /// The row's `pid` column.
    pub fn pid(&self) -> Option<i64> {
        match self {
            Handle::Process { group } => Some(*group),
            Handle::Container { .. } | Handle::Cluster { .. } => None,
        }
    }

    /// The row's container column.
    pub fn container(&self) -> Option<&str> {
        match self {
            Handle::Container { name } => Some(name),
            Handle::Process { .. } | Handle::Cluster { .. } => None,
        }
    }

    /// The row's cluster job column.
    pub fn cluster_job(&self) -> Option<&str> {
        match self {
            Handle::Cluster { job, .. } => Some(job),
            Handle::Process { .. } | Handle::Container { .. } => None,
        }
    }
}

/// How to stop a unit.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// Ask it to end on its own terms (a trainer finishes its step and writes a checkpoint); its end is
    /// seen later, through its run folder.
    Ask,
    /// Ask, and kill it if it has not ended after the grace period (a replica finishing what it answers).
    Within(Duration),
    /// End it at once (its workspace is being deleted).
    Kill,
}

/// Which unit of work, for names, labels and logs: a cluster job's name and a container's name are made
/// from it, so that a restarted server finds what it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Job(JobId),
    Evaluation(EvaluationId),
    Replica { endpoint: EndpointId, ordinal: i64 },
}

impl Unit {
    /// The parts of its name: `["job", "12"]`, `["endpoint", "7", "0"]`.
    pub fn name_parts(self) -> Vec<String> {
        match self {
            Unit::Job(id) => vec!["job".into(), id.to_string()],
            Unit::Evaluation(id) => vec!["evaluation".into(), id.to_string()],
            Unit::Replica { endpoint, ordinal } => {
                vec!["endpoint".into(), endpoint.to_string(), ordinal.to_string()]
            }
        }
    }

    /// The extra label a container carries (`paddock.job = 12`).
    fn label(self) -> (String, String) {
        match self {
            Unit::Job(id) => ("paddock.job".into(), id.to_string()),
            Unit::Evaluation(id) => ("paddock.evaluation".into(), id.to_string()),
            Unit::Replica { endpoint, .. } => ("paddock.endpoint".into(), endpoint.to_string()),
        }
    }
}

/// An environment's image to run a unit in (the Docker executor needs one; the local one ignores it).
#[derive(Debug, Clone)]
pub struct InImage {
    pub image_id: String,
    pub environment_id: EnvironmentId,
    /// The environment's secrets, given to the container at start (never in the image or a row).
    pub env: Vec<String>,
}

/// A run that ends: `paddock <args>` in its run folder, which the caller has made (beneath the
/// executor's [`Executor::run_root`]) and filled with its inputs.
pub struct Work {
    pub unit: Unit,
    pub workspace_id: WorkspaceId,
    /// The run folder, opened; and its path relative to the run root.
    pub folder: beneath::Dir,
    pub rel: PathBuf,
    /// The `paddock` subcommand and its arguments, as the run sees paths (see [`Executor::store_seen`]).
    pub args: Vec<String>,
    /// The file in the run folder that receives its stdout (`events.jsonl`, `metrics.json`).
    pub stdout: &'static str,
    /// The file in the run folder that receives its stderr, up to `log_limit` bytes.
    pub log: &'static str,
    pub log_limit: u64,
    /// The UUIDs of the GPUs it may see (none: CPU only): the ones leased for it on this server.
    pub devices: Vec<String>,
    /// How many GPUs it asks for: on this server, `devices`; on a cluster, whose scheduler picks them
    /// (on each node).
    pub gpus: u32,
    /// The nodes it spans: more than one only on a cluster (the spec check sees to it).
    pub nodes: u32,
    pub image: Option<InImage>,
    /// The job's time limit, which the server enforces by asking it to stop (a final checkpoint); a
    /// cluster is also told, as a backstop for a server that is down when it runs out.
    pub time_limit: Option<Duration>,
    /// On a cluster: the partition it asked for and the account and QoS its workspace is charged to
    /// (each `None`: the executor's own).
    pub placement: clusters::slurm::Placement,
}

/// A replica: `paddock serve-model <args> --model <dir> --bind <address>`, started and waited for until it
/// answers. The executor chooses the address and how the model's folder is seen.
pub struct Service {
    pub unit: Unit,
    pub workspace_id: WorkspaceId,
    /// The bearer token it must require (`PADDOCK_MODEL_TOKEN`): given to it outside its command line,
    /// which other users of the host or the cluster can read.
    pub token: String,
    pub args: Vec<String>,
    /// The model's folder relative to the workspace's store.
    pub model: String,
    /// The UUIDs of the GPUs it may see here (none: CPU only), leased on this server.
    pub devices: Vec<String>,
    /// How many GPUs it asks a cluster's scheduler for (which picks them).
    pub gpus: u32,
    /// Where a local replica's stderr goes (a container's is in its own log).
    pub log: PathBuf,
    pub image: Option<InImage>,
    /// How long it may take to load and warm up.
    pub start_timeout: Duration,
    /// On a cluster: as [`Work::placement`].
    pub placement: clusters::slurm::Placement,
}

/// The environment variable a replica reads its bearer token from (`serve-model` requires it on every
/// call but `/health`).
pub const TOKEN_ENV: &str = "PADDOCK_MODEL_TOKEN";

/// A started service: where it runs and where it answers.
pub struct Served {
    pub handle: Handle,
    pub base_url: String,
}

/// One way of running units. Every method that talks to the engine is fallible in the same way: an
/// unreachable engine makes [`Executor::is_running`] answer `None` (nothing can be concluded), and a
/// stop or a clean-up that fails is logged and tried again by the caller's next pass.
#[async_trait::async_trait]
pub trait Executor: Send + Sync {
    /// The data directory's layout. By default a run keeps its folder in the server's `runs/`, which
    /// no container can reach, and sees the store at its host path (a cluster's nodes mount the data
    /// directory at the same path).
    fn storage(&self) -> &Storage;

    /// Where its runs keep their folders, opened through `beneath`. A folder a unit can write itself
    /// (in a container, the workspace's volume) is read back as hostile input.
    fn run_root(&self, _workspace_id: WorkspaceId) -> beneath::Result<beneath::Dir> {
        self.storage().runs()
    }

    /// The host path of [`Executor::run_root`].
    fn run_root_dir(&self, _workspace_id: WorkspaceId) -> PathBuf {
        self.storage().runs_dir()
    }

    /// The paths under which a run may report files of its run root (the host path, and where it sees
    /// it if elsewhere).
    fn run_roots_seen(&self, workspace_id: WorkspaceId) -> Vec<PathBuf> {
        vec![self.run_root_dir(workspace_id)]
    }

    /// The workspace's store (datasets, checkpoints) as a unit sees it.
    fn store_seen(&self, workspace_id: WorkspaceId) -> String {
        let store = self.storage().store_dir(workspace_id);
        store.to_string_lossy().into_owned()
    }

    /// The device a unit given GPUs trains or serves on: `cuda`, unless the executor's GPUs are only
    /// stand-ins for scheduling (a test cluster), and then its units compute on the CPU.
    fn gpu_device(&self) -> &'static str {
        "cuda"
    }

    /// Whether the run folder belongs to the team once the run ended (theirs to keep, in their volume)
    /// rather than to the server (whose copy of what matters is in the store).
    fn run_folder_is_theirs(&self) -> bool {
        false
    }

    /// Starts a run; returns once it runs.
    async fn start(&self, work: Work) -> Result<Handle, String>;

    /// Starts a service; returns once it answers.
    async fn serve(&self, service: Service) -> Result<Served, String>;

    /// Whether the unit still runs; `None` when the executor cannot say.
    async fn is_running(&self, handle: &Handle) -> Option<bool>;

    async fn stop(&self, handle: &Handle, how: Stop);

    /// How an ended unit was ended by what ran it, when that was not the unit's own doing (a cluster
    /// that lost its node, ran out its time, killed it for memory), in words for its status message.
    async fn ended_how(&self, _handle: &Handle) -> Option<String> {
        None
    }

    /// Frees what an ended unit leaves behind (a container); its files stay.
    async fn clean_up(&self, handle: &Handle);
}

/// The executors a server has. A handle says which one started it, so following, stopping and cleaning
/// up need no more than the handle. Clusters come and go while the server runs (an admin registers or
/// removes one), so every clone shares one list of them, and a cluster's executor is handed out as an
/// `Arc` that outlives its removal from the list for whoever still holds it.
#[derive(Clone)]
pub struct Executors {
    local: Arc<local::Local>,
    docker: Arc<docker::Docker>,
    /// The clusters this server hands work to, by name.
    clusters: Arc<std::sync::RwLock<Vec<Cluster>>>,
}

/// A Slurm cluster, by the name jobs ask for it by: its executor for units that run natively, and the
/// one for jobs in an environment's image (see `slurm::in_image`), over the same cluster.
#[derive(Clone)]
struct Cluster {
    native: Arc<slurm::Slurm>,
    in_image: Arc<slurm::in_image::Containers>,
}

impl Executors {
    pub fn new(storage: Arc<Storage>, engine: Arc<Engine>, db: sqlx::SqlitePool) -> Executors {
        Executors {
            local: Arc::new(local::Local::new(storage.clone())),
            docker: Arc::new(docker::Docker::new(storage, engine, db)),
            clusters: Arc::default(),
        }
    }

    /// Adds a Slurm cluster, which jobs ask for by its name: its executor, or `None` when there is
    /// one by that name already.
    pub fn add_cluster(&self, slurm: slurm::Slurm) -> Option<Arc<slurm::Slurm>> {
        let mut clusters = self.clusters.write().unwrap_or_else(|e| e.into_inner());
        if clusters.iter().any(|c| c.native.name() == slurm.name()) {
            return None;
        }
        let native = Arc::new(slurm);
        let in_image = slurm::in_image::Containers::new(native.clone(), self.docker.clone());
        clusters.push(Cluster {
            native: native.clone(),
            in_image: Arc::new(in_image),
        });
        Some(native)
    }

    /// Removes the cluster named `name`: no new work goes to it, and what still runs there is no
    /// longer followed. Whether it may be removed is the caller's to decide.
    pub fn remove_cluster(&self, name: &str) {
        let mut clusters = self.clusters.write().unwrap_or_else(|e| e.into_inner());
        clusters.retain(|c| c.native.name() != name);
    }

    /// Every cluster, in the order they were added.
    fn all_clusters(&self) -> Vec<Cluster> {
        let clusters = self.clusters.read().unwrap_or_else(|e| e.into_inner());
        clusters.clone()
    }

    fn cluster_named(&self, name: &str) -> Option<Cluster> {
        let clusters = self.clusters.read().unwrap_or_else(|e| e.into_inner());
        clusters.iter().find(|c| c.native.name() == name).cloned()
    }

    /// The Slurm cluster jobs ask for by `name`, if this server has it.
    pub fn slurm_named(&self, name: &str) -> Option<Arc<slurm::Slurm>> {
        self.cluster_named(name).map(|c| c.native)
    }

    /// What each cluster this server hands work to looks like now, all asked at once (one reached
    /// over SSH that is slow to answer does not hold up the others).
    pub async fn cluster_views(&self) -> Vec<contracts::types::ClusterView> {
        let clusters = self.all_clusters();
        futures_util::future::join_all(clusters.iter().map(|c| c.native.view())).await
    }

    /// Where the job `job` of the cluster named `cluster` is now, if this server has that cluster and
    /// its scheduler still knows the job.
    pub async fn placement(
        &self,
        cluster: &str,
        job: &str,
    ) -> Option<contracts::types::ClusterPlacement> {
        self.slurm_named(cluster)?.placement(job).await
    }

    /// Checks in the background that the nodes of each cluster see the data directory (see
    /// `slurm::preflight`).
    pub fn spawn_shared_dir_checks(&self) {
        for cluster in self.all_clusters() {
            cluster.native.spawn_shared_dir_check();
        }
    }

    /// Checks now that the nodes of the cluster named `name` see the data directory; `None` when this
    /// server has no such cluster.
    pub async fn check_shared_dir(&self, name: &str) -> Option<contracts::types::SharedDirCheck> {
        Some(self.slurm_named(name)?.check_shared_dir().await)
    }

    /// Why work for partition `partition` of the cluster named `name`, asking for `gpus`, cannot run
    /// there, if the last shared-directory check found its nodes blind to the data directory or
    /// without a driver for Paddock's CUDA (`slurm::preflight`).
    pub fn partition_problem(
        &self,
        name: &str,
        partition: Option<&str>,
        gpus: u32,
    ) -> Option<String> {
        self.slurm_named(name)?.partition_problem(partition, gpus)
    }

    /// Refused (at the `nodes` field) when work across `nodes` nodes asks the cluster named `name` for
    /// more nodes than `partition` (`None`: the one its work goes to) has: Slurm would refuse the batch
    /// job only when it is handed over, after the queue.
    pub async fn holds_nodes(
        &self,
        name: &str,
        partition: Option<&str>,
        nodes: u32,
    ) -> Result<(), contracts::error::AppError> {
        use contracts::error::{AppError, ErrorCode};
        let Some(slurm) = self.slurm_named(name).filter(|_| nodes > 1) else {
            return Ok(());
        };
        match slurm.partition_size(partition).await {
            Ok(Some((partition, total))) if total < nodes => Err(AppError::invalid(
                "nodes",
                ErrorCode::ClusterInvalid,
                format!(
                    "the cluster {name:?}'s partition {partition} has {total} node(s); the job asks for {nodes}"
                ),
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(cluster_invalid(format!(
                "the cluster {name:?} cannot say its partitions now: {e}"
            ))),
        }
    }

    /// The partitions of the cluster named `name`: `None` when this server has no such cluster, an
    /// error when its scheduler does not answer.
    pub async fn cluster_partitions(&self, name: &str) -> Option<Result<Vec<String>, String>> {
        let partitions = self.slurm_named(name)?.partition_names().await;
        Some(partitions.map_err(|e| e.to_string()))
    }

    /// The cluster named `name`, to run units of `kind` on now (natively, or in an environment's
    /// image) in `partition` (`None`: the default one): refused when this server has no such cluster,
    /// when the cluster has no such partition (asked of its scheduler now, so a bad choice is refused
    /// before anything is queued), or when the last shared-directory check found the partition's nodes
    /// blind to the data directory or, for work asking for `gpus`, without a driver that runs
    /// Paddock's CUDA.
    pub async fn runs_on(
        &self,
        name: &str,
        partition: Option<&str>,
        kind: ExecutorKind,
        gpus: u32,
    ) -> Result<Arc<dyn Executor>, contracts::error::AppError> {
        let cluster = self.known_cluster(name, kind)?;
        if let Some(partition) = partition {
            let known = match self.cluster_partitions(name).await {
                Some(Ok(known)) => known,
                Some(Err(e)) => {
                    return Err(cluster_invalid(format!(
                        "the cluster {name:?} cannot say its partitions now: {e}"
                    )))
                }
                None => Vec::new(),
            };
            one_of_partitions(name, partition, known)?;
        }
        match self.partition_problem(name, partition, gpus) {
            Some(problem) => Err(cluster_invalid(format!(
                "the cluster {name:?} cannot run it: {problem}"
            ))),
            None => Ok(cluster),
        }
    }

    /// The cluster named `name`, for units of `kind`; refused (at the `cluster` field) when this
    /// server has none by that name.
    pub fn known_cluster(
        &self,
        name: &str,
        kind: ExecutorKind,
    ) -> Result<Arc<dyn Executor>, contracts::error::AppError> {
        self.cluster(name, kind)
            .ok_or_else(|| cluster_invalid(format!("this server has no cluster named {name:?}")))
    }

    /// The cluster named `name`, if this server has it, for units of `kind`: natively, or in an
    /// environment's image.
    pub fn cluster(&self, name: &str, kind: ExecutorKind) -> Option<Arc<dyn Executor>> {
        let cluster = self.cluster_named(name)?;
        Some(match kind {
            ExecutorKind::Docker => cluster.in_image,
            ExecutorKind::Local => cluster.native,
        })
    }

    /// The executor of `kind` on this server.
    pub fn get(&self, kind: ExecutorKind) -> Arc<dyn Executor> {
        match kind {
            ExecutorKind::Local => self.local.clone(),
            ExecutorKind::Docker => self.docker.clone(),
        }
    }

    /// The executor that started `handle`; `None` for a job on a cluster this server does not have
    /// (any more): nothing can be said about it or done to it from here.
    pub fn of(&self, handle: &Handle) -> Option<Arc<dyn Executor>> {
        match handle {
            Handle::Process { .. } => Some(self.local.clone()),
            Handle::Container { .. } => Some(self.docker.clone()),
            Handle::Cluster { cluster, .. } => self.cluster(cluster, ExecutorKind::Local),
        }
    }

    pub async fn is_running(&self, handle: &Handle) -> Option<bool> {
        self.of(handle)?.is_running(handle).await
    }

    pub async fn stop(&self, handle: &Handle, how: Stop) {
        if let Some(executor) = self.of(handle) {
            executor.stop(handle, how).await
        }
    }

    pub async fn clean_up(&self, handle: &Handle) {
        if let Some(executor) = self.of(handle) {
            executor.clean_up(handle).await
        }
    }

    pub async fn ended_how(&self, handle: &Handle) -> Option<String> {
        self.of(handle)?.ended_how(handle).await
    }
}

/// Refuses, at the `partition` field, a partition that is not among those the cluster `name` has.
pub fn one_of_partitions(
    name: &str,
    partition: &str,
    known: Vec<String>,
) -> Result<(), contracts::error::AppError> {
    use contracts::error::{AppError, ErrorCode, FieldProblem, Rule};
    if known.iter().any(|k| k == partition) {
        return Ok(());
    }
    let message = format!(
        "the cluster {name:?} has no partition {partition:?}; it has {}",
        known.join(", ")
    );
    let problem = FieldProblem::new("partition", Rule::OneOf { values: known }, message);
    Err(
        AppError::invalid_fields(ErrorCode::ClusterInvalid, vec![problem])
            .unwrap_or(AppError::Internal),
    )
}

/// A refusal at the `partition` field of work that names no cluster.
pub fn partition_without_cluster() -> contracts::error::AppError {
    use contracts::error::{AppError, ErrorCode};
    AppError::invalid(
        "partition",
        ErrorCode::ClusterInvalid,
        "a partition is a cluster's: choose the cluster too, or leave the partition empty",
    )
}

/// A refusal at the `cluster` field.
fn cluster_invalid(message: String) -> contracts::error::AppError {
    use contracts::error::{AppError, ErrorCode};
    AppError::invalid("cluster", ErrorCode::ClusterInvalid, message)
}

/// PID 1 of every run (or the leader of its process group): `$1` the run folder as the run sees it, `$2`
/// the `paddock` binary, `$3` the byte limit of the log, `$4`/`$5` the stdout and log files, then the
/// command. The command runs in the background so that its pid can be recorded (a stop signals it, not
/// the shell); its stderr is piped into `paddock log-sink` — or, should that binary not know the command,
/// copied as is — and its exit status is written atomically once the log is complete. A TERM sent to the
/// wrapper is passed on to the command; the pipeline runs in the background because a shell runs traps
/// only between commands, and `wait` is one.
pub const WRAPPER: &str = r#"cd "$1" || exit 98
paddock="$2"; limit="$3"; out="$4"; log="$5"; shift 5
trap 'kill -TERM $(cat trainer.pid 2>/dev/null) 2>/dev/null' TERM INT
{ "$paddock" "$@" 2>&1 >"$out" </dev/null &
  echo $! > trainer.pid
  wait $!
  echo $? > exit_code.tmp
} | { "$paddock" log-sink --max-bytes "$limit" "$log" || cat >> "$log"; } &
pipeline=$!
wait $pipeline
while kill -0 $pipeline 2>/dev/null; do wait $pipeline; done
mv exit_code.tmp exit_code"#;

/// The wrapper's arguments after the script: `sh -c WRAPPER sh <these>`.
fn wrapper_args(dir: &str, paddock: &str, work: &Work) -> Vec<String> {
    let mut args = vec![
        "sh".to_string(),
        "-c".to_string(),
        WRAPPER.to_string(),
        "sh".to_string(),
        dir.to_string(),
        paddock.to_string(),
        work.log_limit.to_string(),
        work.stdout.to_string(),
        work.log.to_string(),
    ];
    args.extend(work.args.iter().cloned());
    args
}

/// The most `trainer.pid` and `exit_code` may weigh: a number and a newline.
const SMALL_FILE: u64 = 32;

/// The run's exit status once it has ended; `dir` is relative to `root`, and read without following
/// links (see [`beneath`]).
pub fn exit_code(root: &beneath::Dir, dir: &Path) -> beneath::Result<Option<i64>> {
    match root.read(&dir.join("exit_code"), SMALL_FILE) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).trim().parse().ok()),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Waits (up to a second) for the wrapper to record the command's pid: a run stopped while it was
/// starting is signalled right after it starts, and a TERM the wrapper gets before `trainer.pid` exists
/// could not be passed on.
pub async fn wait_for_pid_file(executor: &dyn Executor, workspace_id: WorkspaceId, dir: &Path) {
    for _ in 0..50 {
        let (root, file) = (executor.run_root(workspace_id), dir.join("trainer.pid"));
        let written = in_volume("the run's pid", move || root?.exists(&file));
        if written.await.unwrap_or(false) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether a service answers its health check: how a replica is known to be ready, and still serving.
pub async fn healthy(client: &reqwest::Client, base_url: &str) -> bool {
    client
        .get(format!("{base_url}/health"))
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

/// The last `n` non-blank lines of a log, joined for a one-line message.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests;

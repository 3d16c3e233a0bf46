//! The shared-directory preflight. Jobs and replicas on the cluster read their inputs from, and write
//! their run folders and checkpoints into, this server's data directory, which the nodes must mount at
//! the same path. A cluster whose nodes do not would take every job and fail each one obscurely (Slurm
//! runs a batch script whose folder is missing in `/tmp` instead); so the server checks, with one small
//! batch job per partition: the job reads a file the server wrote there and writes one back, which the
//! server must then read with the same contents. A partition whose nodes fail it is refused at
//! submission, and the admin page says why.
//!
//! The same job reports the node's NVIDIA driver (the first line of `/proc/driver/nvidia/version`,
//! readable without holding a GPU), so that work asking for GPUs is refused at submission on a partition
//! whose node has no driver, or one too old for Paddock's CUDA runtime, instead of failing on the node
//! once it is placed.

use std::sync::Arc;
use std::time::Duration;

use clusters::slurm::{Cancel, JobState, Placement, Resources, Submission};
use contracts::types::{SharedDirCheck, SharedDirResult};

use super::Slurm;

/// How long the check waits for its jobs (each runs for a moment once placed).
const WAIT: Duration = Duration::from_secs(120);
/// The batch job: the server's token, read from `probe`, written back with the node's name and its
/// NVIDIA driver's version line (nothing where no driver is loaded).
const SCRIPT: &str = r#"cat probe > "seen-$1.tmp" && echo "$SLURMD_NODENAME" >> "seen-$1.tmp" && { head -n 1 /proc/driver/nvidia/version 2>/dev/null; true; } >> "seen-$1.tmp" && mv "seen-$1.tmp" "seen-$1""#;

impl Slurm {
    /// Why work sent to `partition` (`None`: this server's, else the cluster's default) cannot run
    /// there, if the last check found its nodes blind to the data directory or, for work asking for
    /// `gpus`, its node without a driver that runs Paddock's CUDA.
    pub fn partition_problem(&self, partition: Option<&str>, gpus: u32) -> Option<String> {
        let check = self.last_shared_dir_check()?;
        let default = self.default_partition.lock().ok()?.clone();
        let partition = partition
            .map(str::to_string)
            .or(self.settings.placement.partition.clone())
            .or(default)?;
        let result = check
            .partitions
            .iter()
            .find(|p| p.partition == partition && p.checked)?;
        let needs_driver = gpus > 0 && !self.settings.gpu_stand_ins;
        let problem = result.problem.clone().or_else(|| {
            needs_driver
                .then(|| gpu_problem(result, hostcaps::cuda::cuda_runtime))
                .flatten()
        })?;
        Some(format!("partition {partition}: {problem}"))
    }

    /// What the last check found (`None`: none has finished yet).
    pub fn last_shared_dir_check(&self) -> Option<SharedDirCheck> {
        self.shared_dir.lock().ok()?.clone()
    }

    /// Checks in the background, and says in the server's log which partitions fail.
    pub fn spawn_shared_dir_check(self: &Arc<Self>) {
        let slurm = self.clone();
        tokio::spawn(async move {
            let check = slurm.check_shared_dir().await;
            for p in check.partitions.iter().filter(|p| p.problem.is_some()) {
                tracing::warn!(cluster = slurm.name, partition = p.partition, problem = ?p.problem, "the cluster's nodes fail the shared-directory check");
            }
        });
    }

    /// Checks now, on every partition, and keeps the result for the cluster view and submissions.
    pub async fn check_shared_dir(&self) -> SharedDirCheck {
        let dir = self
            .storage
            .data_dir
            .join("preflight")
            .join(hex::encode(rand::random::<[u8; 8]>()));
        let token = hex::encode(rand::random::<[u8; 16]>());
        let partitions = match self.cluster.partitions().await {
            Ok(partitions) => {
                if let Ok(mut default) = self.default_partition.lock() {
                    *default = partitions
                        .iter()
                        .find(|p| p.default)
                        .map(|p| p.name.clone());
                }
                partitions.into_iter().map(|p| Ok(p.name)).collect()
            }
            Err(e) => vec![Err(e.to_string())],
        };
        let results = match prepare(&dir, &token).await {
            Ok(()) => self.run_all(&dir, &token, partitions).await,
            Err(e) => vec![SharedDirResult {
                partition: String::new(),
                node: None,
                checked: true,
                problem: Some(format!("cannot write {}: {e}", dir.display())),
                driver: None,
            }],
        };
        let _ = tokio::fs::remove_dir_all(&dir).await;
        let check = SharedDirCheck {
            dir: self.storage.data_dir.to_string_lossy().into_owned(),
            checked_at: crate::now(),
            partitions: results,
        };
        if let Ok(mut last) = self.shared_dir.lock() {
            *last = Some(check.clone());
        }
        check
    }

    async fn run_all(
        &self,
        dir: &std::path::Path,
        token: &str,
        partitions: Vec<Result<String, String>>,
    ) -> Vec<SharedDirResult> {
        let mut submitted = Vec::new();
        let mut results = Vec::new();
        for partition in partitions {
            let partition = match partition {
                Ok(p) => p,
                Err(problem) => {
                    results.push(SharedDirResult {
                        partition: String::new(),
                        node: None,
                        checked: false,
                        problem: Some(format!("the cluster cannot say its partitions: {problem}")),
                        driver: None,
                    });
                    continue;
                }
            };
            let script = shlex::try_quote(&partition)
                .map(|p| format!("set -- {p}\n{SCRIPT}"))
                .map_err(|e| e.to_string());
            let job = match script {
                Ok(script) => {
                    self.cluster
                        .submit(&self.probe(dir, &partition, script))
                        .await
                }
                Err(e) => Err(clusters::Error::Invalid(e)),
            };
            match job {
                Ok(job) => submitted.push((partition, job)),
                Err(e) => results.push(SharedDirResult {
                    partition,
                    node: None,
                    checked: false,
                    problem: Some(format!("the preflight job was refused: {e}")),
                    driver: None,
                }),
            }
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        for (partition, job) in submitted {
            results.push(self.outcome(dir, token, partition, &job, deadline).await);
        }
        results.sort_by(|a, b| a.partition.cmp(&b.partition));
        results
    }

    /// The batch job that probes `partition`, in `dir`.
    fn probe(&self, dir: &std::path::Path, partition: &str, script: String) -> Submission {
        Submission {
            name: "paddock-preflight".into(),
            comment: "paddock:preflight".into(),
            placement: Placement {
                partition: Some(partition.to_string()),
                ..self.settings.placement.clone()
            },
            resources: Resources {
                nodes: 1,
                gpus: 0,
                cpus: 1,
                memory_mb: 64,
            },
            time_limit: Some(Duration::from_secs(60)),
            term_before_limit: None,
            output: "/dev/null".into(),
            workdir: dir.to_string_lossy().into_owned(),
            script,
        }
    }

    /// Waits for `job` to end (cancelling it at `deadline`) and reads what it wrote back.
    async fn outcome(
        &self,
        dir: &std::path::Path,
        token: &str,
        partition: String,
        job: &str,
        deadline: tokio::time::Instant,
    ) -> SharedDirResult {
        let mut last = None;
        while tokio::time::Instant::now() < deadline {
            match self.cluster.job(job).await {
                Ok(Some(info)) if info.state.is_alive() => last = Some(info),
                Ok(info) => {
                    last = info.or(last);
                    break;
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let node = last.as_ref().and_then(|i| i.nodes.clone());
        if last.as_ref().is_some_and(|i| i.state.is_alive()) {
            let _ = self.cluster.cancel(job, Cancel::Kill).await;
            let waiting = last.as_ref().is_some_and(|i| i.state == JobState::Pending);
            let reason = last.and_then(|i| i.reason).unwrap_or_default();
            let problem = match waiting {
                true => format!(
                    "its preflight job waited in the queue for {} s ({reason})",
                    WAIT.as_secs()
                ),
                // Placed, and still not done: the directory hangs (a stalled network mount).
                false => format!("its preflight job did not end within {} s", WAIT.as_secs()),
            };
            return SharedDirResult {
                partition,
                node,
                checked: !waiting,
                problem: Some(problem),
                driver: None,
            };
        }
        let seen = tokio::fs::read_to_string(dir.join(format!("seen-{partition}")))
            .await
            .ok();
        let driver = seen.as_deref().and_then(driver_of);
        let state = last.as_ref().map(|i| &i.state);
        let (checked, problem) =
            verdict(seen, token, state, node.as_deref(), &self.storage.data_dir);
        SharedDirResult {
            partition,
            node,
            checked,
            problem,
            driver,
        }
    }
}

/// The node's NVIDIA driver version in what the preflight job wrote back (its third line, if any).
fn driver_of(seen: &str) -> Option<String> {
    let line = seen.lines().nth(2)?;
    hostcaps::cuda::driver_version(line).map(|v| v.to_string())
}

/// Why work asking for GPUs cannot use them on the node that `result` checked: no NVIDIA driver, or
/// one that cannot run Paddock's CUDA runtime (`runtime` is asked only when there is a driver, since
/// reading it loads libtorch's CUDA library into this process).
fn gpu_problem(
    result: &SharedDirResult,
    runtime: impl FnOnce() -> Option<&'static hostcaps::cuda::CudaRuntime>,
) -> Option<String> {
    let node = result.node.as_deref().unwrap_or("its node");
    let Some(driver) = &result.driver else {
        return Some(format!(
            "{node} has no NVIDIA driver loaded, so work asking for GPUs cannot use them there"
        ));
    };
    let driver = driver.parse::<hostcaps::cuda::Version>().ok()?;
    let Some(runtime) = runtime() else {
        return Some(format!(
            "this server's libtorch has no CUDA runtime, so it cannot run work on {node}'s GPUs"
        ));
    };
    runtime
        .refuses(&driver, None)
        .map(|why| format!("on {node}, {why}"))
}

/// What an ended preflight job says of the directory: whether the check was done, and what is wrong.
/// `seen` is the file the job wrote back (`None`: none), `state` how Slurm says the job ended. A job
/// that did not get to run its script to the end (its node lost, cancelled by someone, preempted) says
/// nothing about the directory: the check is left undone, and work is not refused for it.
fn verdict(
    seen: Option<String>,
    token: &str,
    state: Option<&JobState>,
    node: Option<&str>,
    data_dir: &std::path::Path,
) -> (bool, Option<String>) {
    let node = node.unwrap_or("its node");
    let cut_short = state.filter(|s| !matches!(s, JobState::Completed | JobState::Failed));
    match (seen, cut_short) {
        (Some(text), _) if text.lines().next() == Some(token) => (true, None),
        (Some(_), _) => (
            true,
            Some("the file a node wrote back is not the one this server wrote".to_string()),
        ),
        (None, Some(state)) => (
            false,
            Some(format!(
                "its preflight job ended as {} on {node} before it could check",
                state.word()
            )),
        ),
        (None, None) => (
            true,
            Some(format!(
                "a job on {node} could not read and write {}: its nodes do not see this server's data directory at the same path",
                data_dir.display()
            )),
        ),
    }
}

/// Makes the check's folder and writes the server's token in it.
async fn prepare(dir: &std::path::Path, token: &str) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    tokio::fs::write(dir.join("probe"), format!("{token}\n")).await
}

#[cfg(test)]
mod tests {
    use super::{driver_of, gpu_problem, verdict, JobState};
    use contracts::types::SharedDirResult;
    use hostcaps::cuda::CudaRuntime;
    use std::path::Path;
    use std::sync::LazyLock;

    #[test]
    fn the_nodes_driver_is_read_from_what_its_job_wrote_back() {
        let proprietary = "t0k3n\nnode1\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n";
        assert_eq!(driver_of(proprietary).as_deref(), Some("550.54.15"));
        let open = "t0k3n\nnode1\nNVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16)\n";
        assert_eq!(driver_of(open).as_deref(), Some("580.65.06"));
        for none in [
            "t0k3n\nnode1\n",
            "t0k3n\n",
            "",
            "t0k3n\nnode1\ncat: no such file\n",
        ] {
            assert_eq!(driver_of(none), None, "{none:?}");
        }
    }

    #[test]
    fn work_asking_for_gpus_needs_a_driver_that_runs_the_runtime() {
        static CUDA_13: LazyLock<CudaRuntime> = LazyLock::new(|| CudaRuntime {
            version: "13.0".parse().unwrap(),
            architectures: vec!["7.5".parse().unwrap(), "12.0".parse().unwrap()],
        });
        let result = |driver: Option<&str>| SharedDirResult {
            partition: "gpu".into(),
            node: Some("node7".into()),
            checked: true,
            problem: None,
            driver: driver.map(str::to_string),
        };
        let runtime = || Some(&*CUDA_13);
        let none = gpu_problem(&result(None), || {
            panic!("no driver: the runtime is not read")
        });
        assert!(none.unwrap().contains("node7 has no NVIDIA driver"));
        let old = gpu_problem(&result(Some("550.54.15")), runtime).unwrap();
        assert!(
            old.contains("on node7") && old.contains("550.54.15") && old.contains("580.65.06"),
            "{old}"
        );
        assert_eq!(gpu_problem(&result(Some("580.95.05")), runtime), None);
        let without = gpu_problem(&result(Some("580.95.05")), || None).unwrap();
        assert!(without.contains("no CUDA runtime"), "{without}");
    }

    #[test]
    fn only_a_job_that_ran_its_script_judges_the_directory() {
        let dir = Path::new("/data");
        let seen = |text: &str| Some(text.to_string());
        let ok = verdict(
            seen("t0k3n\nnode1\n"),
            "t0k3n",
            Some(&JobState::Completed),
            Some("node1"),
            dir,
        );
        assert_eq!(ok, (true, None));
        let (checked, problem) = verdict(
            seen("other\nnode1\n"),
            "t0k3n",
            Some(&JobState::Completed),
            None,
            dir,
        );
        assert!(checked && problem.unwrap().contains("not the one"));
        // The script ran and failed (the folder missing on the node): the directory is to blame.
        for state in [Some(&JobState::Failed), Some(&JobState::Completed), None] {
            let (checked, problem) = verdict(None, "t0k3n", state, Some("node1"), dir);
            assert!(checked, "{state:?}");
            assert!(problem
                .unwrap()
                .contains("do not see this server's data directory"));
        }
        // The node was lost, or someone cancelled it: nothing is known, nothing is refused.
        for state in [
            JobState::NodeFailed,
            JobState::Cancelled,
            JobState::Preempted,
        ] {
            let (checked, problem) = verdict(None, "t0k3n", Some(&state), Some("node1"), dir);
            assert!(!checked, "{state:?}");
            let problem = problem.unwrap();
            assert!(
                problem.contains(state.word()) && problem.contains("node1"),
                "{problem}"
            );
        }
    }
}

//! The shared-directory preflight. Jobs and replicas on the cluster read their inputs from, and write
//! their run folders and checkpoints into, this server's data directory, which the nodes must mount at
//! the same path. A cluster whose nodes do not would take every job and fail each one obscurely (Slurm
//! runs a batch script whose folder is missing in `/tmp` instead); so the server checks, with one small
//! batch job per partition: the job reads a file the server wrote there and writes one back, which the
//! server must then read with the same contents. A partition whose nodes fail it is refused at
//! submission, and the admin page says why.

use std::sync::Arc;
use std::time::Duration;

use clusters::slurm::{Cancel, JobState, Placement, Resources, Submission};
use contracts::types::{SharedDirCheck, SharedDirResult};

use super::Slurm;

/// How long the check waits for its jobs (each runs for a moment once placed).
const WAIT: Duration = Duration::from_secs(120);
/// The batch job: the server's token, read from `probe`, written back with the node's name.
const SCRIPT: &str = r#"cat probe > "seen-$1.tmp" && echo "$SLURMD_NODENAME" >> "seen-$1.tmp" && mv "seen-$1.tmp" "seen-$1""#;

impl Slurm {
    /// Why work sent to `partition` (`None`: this server's, else the cluster's default) cannot run
    /// there, if the last check found its nodes blind to the data directory.
    pub fn shared_dir_problem(&self, partition: Option<&str>) -> Option<String> {
        let check = self.last_shared_dir_check()?;
        let default = self.default_partition.lock().ok()?.clone();
        let partition = partition
            .map(str::to_string)
            .or(self.settings.placement.partition.clone())
            .or(default)?;
        let problem = check.problem_of(&partition)?;
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
            };
        }
        let seen = tokio::fs::read_to_string(dir.join(format!("seen-{partition}"))).await;
        let state = last.as_ref().map(|i| &i.state);
        let (checked, problem) = verdict(
            seen.ok(),
            token,
            state,
            node.as_deref(),
            &self.storage.data_dir,
        );
        SharedDirResult {
            partition,
            node,
            checked,
            problem,
        }
    }
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
    use super::{verdict, JobState};
    use std::path::Path;

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

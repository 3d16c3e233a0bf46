//! Against the real two-node cluster `scripts/slurm.sh` starts (node1, node2; 2 CPUs, 4000 MB and two
//! GPUs as GRES each): GPUs handed out per node and a job that does not fit waiting for them, a job found
//! again by its name, a TERM that reaches the batch script (where Paddock's wrapper passes it to the
//! trainer), a kill, the server's environment kept out of jobs, and the nodes and partitions the cluster
//! view shows. One test at a time: they share the cluster's GPUs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clusters::reach::Reach;
use clusters::slurm::{Cancel, JobInfo, JobState, Placement, Resources, Slurm, Submission};

static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The test cluster, or `None` (with a line on stderr) when PADDOCK_TEST_SLURM=skip and none answers.
async fn cluster() -> Option<Slurm> {
    let conf = std::env::var_os("PADDOCK_TEST_SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/slurm/slurm.conf")
        });
    let slurm = Slurm::new(Reach::Local {
        slurm_conf: Some(conf),
    });
    match slurm.ping().await {
        Ok(()) => Some(slurm),
        Err(e) if std::env::var("PADDOCK_TEST_SLURM").as_deref() == Ok("skip") => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPING Slurm test: {e} (PADDOCK_TEST_SLURM=skip)");
            None
        }
        Err(e) => panic!(
            "the Slurm tests need the test cluster: {e}. Start it with scripts/slurm.sh, or set PADDOCK_TEST_SLURM=skip."
        ),
    }
}

/// A submission of `script` in `dir` under a name unique to this run.
fn job(dir: &Path, name: &str, gpus: u32, script: &str) -> Submission {
    Submission {
        name: format!("paddock-test-{}-{name}", std::process::id()),
        comment: format!("paddock:test:{name}"),
        resources: Resources {
            nodes: 1,
            gpus,
            cpus: 1,
            memory_mb: 100,
        },
        workdir: dir.display().to_string(),
        output: dir.join(format!("{name}.out")).display().to_string(),
        script: script.to_string(),
        ..Default::default()
    }
}

/// Waits (up to a minute) until `until` holds for the job's state.
async fn wait(slurm: &Slurm, id: &str, until: impl Fn(&JobInfo) -> bool) -> JobInfo {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = slurm
            .job(id)
            .await
            .unwrap()
            .expect("the controller knows the job");
        if until(&info) {
            return info;
        }
        assert!(Instant::now() < deadline, "job {id} stayed {info:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (up to a minute) for a job's script to write `ready` in its folder.
async fn ready(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("ready").exists() {
        assert!(Instant::now() < deadline, "the script never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

#[tokio::test]
async fn gpus_are_handed_out_per_node_and_a_job_that_does_not_fit_waits() {
    let _one = CLUSTER.lock().await;
    let Some(slurm) = cluster().await else { return };
    let dir = tempfile::tempdir().unwrap();
    // Each job holds its GPUs until the file `go` appears, so all three are placed before any ends.
    let script =
        "echo \"$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES\"; while [ ! -e go ]; do sleep 0.2; done";
    let one = slurm
        .submit(&job(dir.path(), "one", 1, script))
        .await
        .unwrap();
    let two = slurm
        .submit(&job(dir.path(), "two", 2, script))
        .await
        .unwrap();
    let a = wait(&slurm, &one, |j| j.state == JobState::Running).await;
    let b = wait(&slurm, &two, |j| j.state == JobState::Running).await;
    assert_ne!(
        a.nodes, b.nodes,
        "one GPU left on the first node cannot take two"
    );
    // Three GPUs of four are taken, no node has two free: the third waits, and says why.
    let three = slurm
        .submit(&job(dir.path(), "three", 2, script))
        .await
        .unwrap();
    let waiting = wait(&slurm, &three, |j| j.reason.is_some()).await;
    assert_eq!(waiting.state, JobState::Pending, "{waiting:?}");
    assert_eq!(waiting.reason.as_deref(), Some("Resources"));
    let nodes = slurm.nodes().await.unwrap();
    assert_eq!(
        nodes.iter().map(|n| n.gpus.total).sum::<u64>(),
        4,
        "{nodes:?}"
    );
    assert_eq!(
        nodes.iter().map(|n| n.gpus.allocated).sum::<u64>(),
        3,
        "{nodes:?}"
    );

    std::fs::write(dir.path().join("go"), "").unwrap();
    for id in [&one, &two, &three] {
        let done = wait(&slurm, id, |j| !j.state.is_alive()).await;
        assert_eq!((done.state, done.exit_code), (JobState::Completed, Some(0)));
    }
    let seen: Vec<String> = ["one", "two", "three"]
        .iter()
        .map(|n| read(dir.path(), &format!("{n}.out")).trim().to_string())
        .collect();
    // Slurm names the node and numbers the GPUs it gave (the first one of a node is 0).
    assert!(seen[0].ends_with(" 0"), "{seen:?}");
    assert!(seen[1].ends_with(" 0,1"), "{seen:?}");
    assert!(seen[2].ends_with(" 0,1"), "{seen:?}");
    assert!(seen.iter().all(|s| s.starts_with("node")), "{seen:?}");
}

#[tokio::test]
async fn a_job_is_found_by_name_and_a_term_reaches_its_script() {
    let _one = CLUSTER.lock().await;
    let Some(slurm) = cluster().await else { return };
    let dir = tempfile::tempdir().unwrap();
    // As Paddock's wrapper does: trap TERM, pass it on (here: note it), end with the command's status;
    // and say when it is ready for it (the wrapper writes `trainer.pid`): a signal Slurm delivers before
    // the batch script has started is lost, while the job already counts as running.
    let script =
        "trap 'echo term > got; exit 3' TERM\ntouch ready\nwhile :; do sleep 0.2 & wait $!; done";
    let submission = job(dir.path(), "graceful", 0, script);
    let id = slurm.submit(&submission).await.unwrap();
    ready(dir.path()).await;
    let found = slurm.find(&submission.name).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].id, id);
    assert_eq!(found[0].comment.as_deref(), Some("paddock:test:graceful"));

    slurm.cancel(&id, Cancel::Term).await.unwrap();
    let ended = wait(&slurm, &id, |j| !j.state.is_alive()).await;
    assert_eq!(read(dir.path(), "got").trim(), "term");
    assert_eq!((ended.state, ended.exit_code), (JobState::Failed, Some(3)));
    // Cancelling what has ended is not an error.
    slurm.cancel(&id, Cancel::Kill).await.unwrap();

    let stubborn = slurm
        .submit(&job(
            dir.path(),
            "stubborn",
            0,
            "trap '' TERM\nwhile :; do sleep 0.2; done",
        ))
        .await
        .unwrap();
    wait(&slurm, &stubborn, |j| j.state == JobState::Running).await;
    slurm.cancel(&stubborn, Cancel::Kill).await.unwrap();
    let killed = wait(&slurm, &stubborn, |j| !j.state.is_alive()).await;
    assert_eq!(killed.state, JobState::Cancelled);
    assert_eq!(slurm.job("999999999").await.unwrap(), None);
}

#[tokio::test]
async fn the_servers_environment_stays_out_of_jobs() {
    let _one = CLUSTER.lock().await;
    let Some(slurm) = cluster().await else { return };
    let dir = tempfile::tempdir().unwrap();
    // What `sbatch` inherits from the process that runs it (the server, with its secrets).
    std::env::set_var("PADDOCK_TEST_SERVER_SECRET", "s3cret");
    let id = slurm
        .submit(&job(dir.path(), "env", 0, "env > env.txt"))
        .await
        .unwrap();
    let done = wait(&slurm, &id, |j| !j.state.is_alive()).await;
    assert_eq!(done.state, JobState::Completed);
    let env = read(dir.path(), "env.txt");
    assert!(env.contains("SLURM_JOB_ID="), "{env}");
    assert!(!env.contains("s3cret"), "{env}");
}

#[tokio::test]
async fn nodes_and_partitions_are_listed() {
    let _one = CLUSTER.lock().await;
    let Some(slurm) = cluster().await else { return };
    let nodes = slurm.nodes().await.unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node1", "node2"]);
    for n in &nodes {
        let totals = (n.gpus.total, n.cpus.total, n.memory_mb.total);
        assert_eq!(totals, (2, 2, 4000), "{n:?}");
        assert_eq!(slurm.node_address(&n.name).await.unwrap(), "127.0.0.1");
    }
    assert_eq!(nodes[0].partitions, ["gpu"]);
    assert_eq!(
        nodes[1].partitions,
        ["gpu", "short"],
        "a node in two partitions is one node"
    );
    assert!(slurm.node_address("node9").await.is_err(), "no such node");
    assert!(slurm.node_address("node1 node2").await.is_err(), "one word");
    let partitions = slurm.partitions().await.unwrap();
    let shown: Vec<_> = partitions
        .iter()
        .map(|p| {
            let words = [&p.name, &p.state, &p.nodes, &p.max_time];
            (words.map(String::as_str), p.total_nodes, p.default)
        })
        .collect();
    assert_eq!(
        shown,
        [
            (["gpu", "UP", "node[1-2]", "UNLIMITED"], 2, true),
            (["short", "UP", "node2", "01:00:00"], 1, false)
        ]
    );
}

/// The login node `scripts/slurm.sh` starts: root@127.0.0.1:2222 with the key and known hosts under
/// target/slurm/ssh.
fn login_node(known_hosts: &Path) -> Reach {
    let ssh = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/slurm/ssh");
    Reach::Ssh {
        destination: "root@127.0.0.1".into(),
        port: 2222,
        identity: ssh.join("id_ed25519"),
        known_hosts: known_hosts.to_path_buf(),
    }
}

#[tokio::test]
async fn over_ssh_the_same_commands_work_and_an_unknown_host_is_refused() {
    let _one = CLUSTER.lock().await;
    let Some(_) = cluster().await else { return };
    let known = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/slurm/ssh/known_hosts");
    let slurm = Slurm::new(login_node(&known));
    slurm.ping().await.unwrap();
    // Words the remote shell would otherwise read: a space, a quote, `$(…)`, `;`.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("it's $(touch pwned); here");
    std::fs::create_dir(&dir).unwrap();
    let id = slurm
        .submit(&job(&dir, "remote", 1, "echo \"$SLURM_JOB_ID\" > id.txt"))
        .await
        .unwrap();
    let done = wait(&slurm, &id, |j| !j.state.is_alive()).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(read(&dir, "id.txt").trim(), id);
    assert!(!Path::new("pwned").exists() && !dir.join("pwned").exists());

    // A login node whose host key is not the one on record is refused before anything runs.
    let unknown = root.path().join("known_hosts");
    std::fs::write(&unknown, "").unwrap();
    let stranger = Slurm::new(login_node(&unknown));
    let err = stranger.ping().await.unwrap_err();
    assert!(
        matches!(&err, clusters::Error::Failed { stderr, .. } if stderr.contains("Host key verification failed")),
        "{err}"
    );
}

/// The test cluster enforces its accounting: an account or QoS it does not know is refused, as a
/// submission would be, and one it has is taken; nothing is queued either way.
#[tokio::test]
async fn the_cluster_says_whether_it_would_take_an_account_and_qos() {
    let Some(slurm) = cluster().await else {
        return;
    };
    let _one = CLUSTER.lock().await;
    let at = |account: &str, qos: &str| Placement {
        partition: Some("short".into()),
        account: Some(account.into()),
        qos: Some(qos.into()),
    };
    assert_eq!(slurm.refusal(&at("team-a", "high")).await.unwrap(), None);
    let refused = slurm.refusal(&at("no-such-team", "normal")).await.unwrap();
    assert!(
        refused
            .as_deref()
            .unwrap_or_default()
            .contains("Invalid account"),
        "{refused:?}"
    );
    let refused = slurm.refusal(&at("team-a", "no-such-qos")).await.unwrap();
    assert!(
        refused
            .as_deref()
            .unwrap_or_default()
            .to_lowercase()
            .contains("qos"),
        "{refused:?}"
    );
    assert!(
        slurm.refusal(&at("team a", "normal")).await.is_err(),
        "not one word"
    );
}

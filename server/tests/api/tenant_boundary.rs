//! The workspace volume is written by the team's containers, so the server keeps nothing it trusts in
//! it: datasets, models and registered checkpoints live in the server's store (mounted read-only at
//! `/paddock` in containers) and local runs in server-owned run folders. These tests plant what a shell
//! in an environment container could (the volume is a bind mount of the directory they write in) and
//! show it reaches nothing; and, as a second wall, plant the same links and FIFOs in the server's own
//! tree (what a bug or another host process could leave there) and show every route refuses them with
//! a reason, reads, writes and removes nothing outside, and keeps answering.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{
    eventually, owner_with_sample, poll, with_docker, workspace_with_sample, Server, User,
    NO_DOCKER,
};
use crate::jobs::{finished, submit, wait_for};

fn volume(server: &Server, ws: i64) -> PathBuf {
    server
        .dir
        .path()
        .join(format!("data/volumes/w{ws}/workspace"))
}

fn store(server: &Server, ws: i64) -> PathBuf {
    server.dir.path().join(format!("data/store/w{ws}"))
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// GETs `path` as `user`: the status and the raw body (a file, or an error's JSON).
async fn get(user: &User, path: &str) -> (StatusCode, Vec<u8>) {
    let res = user.client.get(user.url(path)).send().await.unwrap();
    let status = res.status();
    (status, res.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn a_dataset_replaced_by_a_link_or_fifo_is_refused_not_served() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let url = format!("/api/v1/workspaces/{ws}/datasets/{ds}/file");
    // Where the dataset lay before the store: a link planted there in the volume changes nothing.
    let old_place = volume(&server, ws).join(format!("datasets/{ds}"));
    std::fs::create_dir_all(&old_place).unwrap();
    symlink(server.db_path(), old_place.join("snownlp_sample.tsv")).unwrap();
    let (status, body) = get(&owner, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).starts_with("text\tlabel"));

    // The same plants in the store itself, which no container can write.
    let file = store(&server, ws).join(format!("datasets/{ds}/snownlp_sample.tsv"));

    // The file, then its folder, swapped for a link to the server's database.
    std::fs::remove_file(&file).unwrap();
    symlink(server.db_path(), &file).unwrap();
    let (status, body) = get(&owner, &url).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::CONFLICT, "{text}");
    assert!(!text.contains("SQLite format"), "no byte of the database");
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["code"], "volume_file_refused", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{answer}"
    );
    let folder = file.parent().unwrap().to_path_buf();
    std::fs::rename(&folder, folder.with_extension("old")).unwrap();
    symlink(server.dir.path().join("data"), &folder).unwrap();
    let (status, _) = get(&owner, &url).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // A FIFO in its place: refused at once, and the server keeps answering.
    std::fs::remove_file(&folder).unwrap();
    std::fs::rename(folder.with_extension("old"), &folder).unwrap();
    std::fs::remove_file(&file).unwrap();
    mkfifo(&file);
    let started = Instant::now();
    let (status, _) = get(&owner, &url).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "refused before the deadline, not by it"
    );
    let (status, _) = get(&owner, "/healthz").await;
    assert_eq!(status, StatusCode::OK);

    // Deleting the dataset removes its folder; a link inside it goes, what it pointed to stays.
    let outside = server.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), "k").unwrap();
    symlink(&outside, folder.join("link")).unwrap();
    let (status, _) = owner
        .delete(&format!("/api/v1/workspaces/{ws}/datasets/{ds}"))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(!folder.exists());
    assert!(outside.join("keep").is_file());
}

#[tokio::test]
async fn a_job_directory_made_in_advance_as_a_link_is_not_written_through() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let spec = |name: &str| {
        json!({
            "name": name, "dataset_id": ds, "preset": "tiny", "epochs": 1, "batch_size": 16,
            "max_seq_len": 32, "learning_rate": 0.002, "max_steps": 2, "eval_every_steps": 1, "keep_best": 1,
        })
    };
    let outside = server.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();

    // What a team member can plant: the next job's (job 1's) folder in the volume, a link to a folder
    // outside. A local run does not use the volume, so the job runs and the link is left untouched.
    let jobs = volume(&server, ws).join("jobs");
    std::fs::create_dir_all(&jobs).unwrap();
    symlink(&outside, jobs.join("1")).unwrap();
    let id = submit(&owner, ws, spec("planted-in-volume")).await;
    assert_eq!(id, 1);
    let last = finished(&owner, ws, id).await;
    assert_eq!(last["summary"]["status"], "succeeded", "{last}");
    assert!(server.local_run(id).join("events.jsonl").is_file());

    // The same link in the server's own run folders (nothing a container reaches; a host process or
    // a bug): refused by name, not written through.
    std::fs::create_dir_all(server.local_run(2).parent().unwrap()).unwrap();
    symlink(&outside, server.local_run(2)).unwrap();
    let id = submit(&owner, ws, spec("planted-in-runs")).await;
    assert_eq!(id, 2);
    let last = finished(&owner, ws, id).await;
    assert_eq!(last["summary"]["status"], "failed", "{last}");
    let message = last["summary"]["status_message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("symbolic link"), "{message}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing was written through either link"
    );
}

/// A run folder whose events file is replaced by a link is refused on every poll; the server's log says
/// so at most ten times a minute (then how many it dropped), in a file kept under its size limit.
#[tokio::test]
async fn a_refusal_repeated_every_poll_is_logged_a_few_times_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("paddock.log");
    let log_arg = log.to_str().unwrap();
    let args = [
        NO_DOCKER,
        &["--log-file", log_arg, "--log-max-bytes", "200000"],
    ]
    .concat();
    let (server, owner, ws, ds) = owner_with_sample(&args).await;
    let spec = json!({
        "name": "linked", "dataset_id": ds, "preset": "tiny", "batch_size": 16, "max_seq_len": 32,
        "learning_rate": 0.002, "max_steps": 100000, "eval_every_steps": 100000, "keep_best": 1,
    });
    let id = submit(&owner, ws, spec).await;
    let events = server.local_run(id).join("events.jsonl");
    crate::common::eventually(
        "the run writes events",
        Duration::from_secs(120),
        async || events.is_file(),
    )
    .await;
    std::fs::remove_file(&events).unwrap();
    symlink("/etc/hostname", &events).unwrap();
    // Fifteen polls or more.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let text = std::fs::read_to_string(&log).unwrap();
    let refusals = text.matches("refused a file in a workspace volume").count();
    assert!((1..=10).contains(&refusals), "{refusals} lines:\n{text}");
    let (_, job) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/jobs/{id}/cancel"))
        .await;
    assert!(job["summary"]["status"].is_string(), "{job}");
}

/// Every process on the host, but the server, whose command line or working directory is in this
/// test's directory: what the server started for it.
fn processes_of(server: &Server) -> Vec<String> {
    let marker = server.dir.path().to_string_lossy().into_owned();
    let own = server.pid();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own)
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            // A zombie has neither; it runs nothing.
            (cmdline.contains(&marker) || cwd.starts_with(&marker))
                .then(|| format!("{pid}: {cmdline} (in {})", cwd.display()))
        })
        .collect()
}

#[tokio::test]
async fn deleting_a_workspace_mid_job_with_a_ready_endpoint_leaves_nothing_even_after_a_crash() {
    let mut server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, first_job, checkpoints) = crate::endpoints::trained(&owner, 10).await;
    let store = server.dir.path().join(format!("data/store/w{ws}"));
    assert!(store.join(format!("checkpoints/{first_job}")).is_dir());
    assert!(server.local_run(first_job).is_dir());
    let spec = json!({ "name": "live", "checkpoint_id": checkpoints[0] });
    let (_, ep) = crate::endpoints::deploy(&owner, ws, spec).await;
    owner
        .wait_for(&ep, "ready", |d| d["summary"]["status"] == "ready")
        .await;
    let ds: i64 = server
        .count(&format!(
            "SELECT id FROM datasets WHERE workspace_id = {ws}"
        ))
        .await;
    let long = submit(
        &owner,
        ws,
        json!({ "name": "long", "dataset_id": ds, "preset": "tiny", "max_seq_len": 32,
                "batch_size": 8, "epochs": 1000, "max_steps": 100000, "eval_every_steps": 100000 }),
    )
    .await;
    wait_for(&owner, ws, long, "running", |j| {
        j["summary"]["step"].as_i64().unwrap_or(0) >= 1
    })
    .await;
    assert!(
        processes_of(&server).len() >= 2,
        "a trainer and a replica run: {:?}",
        processes_of(&server)
    );

    let workspace = format!("/api/v1/workspaces/{ws}");
    assert_eq!(owner.delete(&workspace).await.0, StatusCode::NO_CONTENT);
    // Gone for its members at once.
    let (status, _) = owner.get(&format!("{workspace}/jobs")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Killed half-way: the next start finishes the deletion.
    server.crash_and_restart();

    let workspace_row = format!("SELECT COUNT(*) FROM workspaces WHERE id = {ws}");
    eventually("the deletion", Duration::from_secs(90), async || {
        server.count(&workspace_row).await == 0
    })
    .await;
    assert_eq!(
        processes_of(&server),
        Vec::<String>::new(),
        "no process is left"
    );
    let data = server.dir.path().join("data");
    assert!(
        !data.join(format!("volumes/w{ws}")).exists(),
        "the volume is removed"
    );
    assert!(
        !data.join(format!("store/w{ws}")).exists(),
        "the store (datasets, checkpoints) is removed"
    );
    for job in [first_job, long] {
        assert!(
            !data.join(format!("logs/jobs/{job}")).exists(),
            "job {job}'s logs are removed"
        );
        assert!(
            !server.local_run(job).exists(),
            "job {job}'s run folder is removed"
        );
    }
    for (what, sql) in [
        (
            "jobs",
            format!("SELECT COUNT(*) FROM jobs WHERE workspace_id = {ws}"),
        ),
        (
            "datasets",
            format!("SELECT COUNT(*) FROM datasets WHERE workspace_id = {ws}"),
        ),
        (
            "endpoints",
            format!("SELECT COUNT(*) FROM endpoints WHERE workspace_id = {ws}"),
        ),
        (
            "replicas",
            "SELECT COUNT(*) FROM endpoint_replicas".to_string(),
        ),
        ("keys", "SELECT COUNT(*) FROM endpoint_keys".to_string()),
        ("leases", "SELECT COUNT(*) FROM gpu_leases".to_string()),
        (
            "members",
            format!("SELECT COUNT(*) FROM members WHERE workspace_id = {ws}"),
        ),
    ] {
        assert_eq!(server.count(&sql).await, 0, "{what} are left");
    }
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE action IN ('workspace.delete', 'workspace.purge')")
            .await,
        2
    );

    // Nothing can be inherited: the next workspace and job get new ids.
    let (next_ws, next_ds) = workspace_with_sample(&owner).await;
    assert!(next_ws > ws, "workspace id {next_ws} reused");
    let next_job = submit(
        &owner,
        next_ws,
        json!({ "name": "next", "dataset_id": next_ds, "preset": "tiny", "max_steps": 1 }),
    )
    .await;
    assert!(next_job > long, "job id {next_job} reused");
}

#[tokio::test]
async fn a_deleted_write_ahead_log_stops_the_server_without_losing_acknowledged_writes() {
    let mut server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let create = async |name: &str| {
        owner
            .post("/api/v1/workspaces", json!({ "name": name }))
            .await
            .0
    };
    assert_eq!(create("before").await, StatusCode::CREATED);
    // What an `sqlite3` session closing from outside does to the live log.
    let mut wal = server.db_path().into_os_string();
    wal.push("-wal");
    std::fs::remove_file(&wal).unwrap();
    // Written after the log was gone, before the server noticed. SQLite may answer it (a connection that
    // still holds the old log) or fail it (a connection opened since finds an empty new log where the
    // shared index promises frames: "disk I/O error"); either way only an acknowledged write counts.
    let after = create("after").await;
    assert!(
        [StatusCode::CREATED, StatusCode::INTERNAL_SERVER_ERROR].contains(&after),
        "{after}"
    );
    let status = server
        .wait_for_exit(Duration::from_secs(10))
        .expect("the server stops once its log is gone");
    assert!(!status.success());
    let log = std::fs::read_to_string(server.dir.path().join("server.log")).unwrap();
    assert!(log.contains("was deleted or replaced"), "{log}");

    server.crash_and_restart();
    let (status, list) = owner.get("/api/v1/workspaces").await;
    assert_eq!(status, StatusCode::OK);
    let mut names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    names.sort();
    let acknowledged: &[&str] = if after == StatusCode::CREATED {
        &["after", "before"]
    } else {
        &["before"]
    };
    assert_eq!(
        names, acknowledged,
        "no acknowledged write was lost, none refused was kept"
    );
}

#[tokio::test]
async fn caps_on_uploads_and_replicas_name_their_value_and_admins_change_them() {
    use tokio::io::AsyncWriteExt;
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let settings = |body: Value| owner.patch("/api/v1/admin/settings", body);
    let (status, body) = settings(json!({ "max_uploads_per_user": 0 })).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("max_uploads_per_user")
        )
    );
    let (status, body) = settings(json!({ "max_uploads_per_user": 1, "max_replicas": 1 })).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // One upload in progress (its body never finishes) holds the owner's only place.
    let (ws, _, checkpoints) = crate::endpoints::trained(&owner, 5).await;
    let secret = owner.token("uploader").await;
    let authority = server.base().trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&authority).await.unwrap();
    slow.write_all(
        format!(
            "POST /api/v1/workspaces/{ws}/datasets/upload?name=slow&filename=slow.csv HTTP/1.1\r\n\
             Host: {authority}\r\nAuthorization: Bearer {secret}\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\ntext,label\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Its handler holds the place once its file is being received into tmp/.
    let tmp = server.dir.path().join("data/tmp");
    let receiving = async || {
        std::fs::read_dir(&tmp)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("upload-"))
            })
            .unwrap_or(false)
    };
    eventually("the slow upload", Duration::from_secs(10), receiving).await;
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let upload = async || {
        // A new name each time: an attempt that got in before the slow one must not conflict by name.
        let n = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let query = format!("name=second-{n}&filename=second.csv");
        let body = "text,label\n很好,pos\n很差,neg\n".as_bytes().to_vec();
        crate::datasets::upload(&owner, ws, &query, body).await
    };
    let (status, refused) = upload().await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["code"], "limit_reached", "{refused}");
    assert_eq!(refused["field"], "limit", "{refused}");
    // The rule travels too, so that the dashboard says the whole refusal in its reader's language.
    assert_eq!(
        refused["problems"][0]["rule"],
        json!({ "kind": "cap_reached", "cap": "uploads", "max": 1, "used": null }),
        "{refused}"
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 1"),
        "{refused}"
    );
    // The connection gone, its place comes back.
    drop(slow);
    let back = poll(Duration::from_secs(10), async || {
        let (status, body) = upload().await;
        if body["code"] != "limit_reached" {
            Ok((status, body))
        } else {
            Err(body)
        }
    })
    .await;
    let (status, body) = back.unwrap_or_else(|body| panic!("the place never came back: {body}"));
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Replicas per workspace: two asked, one allowed; nothing is created.
    let (status, body) = owner
        .post(
            &format!("/api/v1/workspaces/{ws}/endpoints"),
            json!({ "name": "wide", "checkpoint_id": checkpoints[0], "replicas": 2 }),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("limit_reached")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("replicas"),
        "{body}"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM endpoints").await, 0);
}

/// The attacks planted from where a team member really has a shell: inside their environment's
/// container (through the API's `exec`), which sees the volume at `/workspace` and the workspace's part
/// of the store, read-only, at `/paddock`. Links point at the host's files as the server would see them
/// (the attacker can guess the data directory).
#[tokio::test]
async fn plants_from_a_shell_inside_a_real_container_reach_nothing() {
    let Some((server, _cleanup)) = with_docker().await else {
        return;
    };
    let owner = server.signup("owner").await;
    let (ws, job, checkpoints) = crate::endpoints::trained(&owner, 5).await;
    let (shell, _) = crate::environments::running(&owner, ws, "attacker").await;
    let run = async |script: String| crate::environments::exec(&owner, &shell, &script).await;
    let db = server.db_path().display().to_string();
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let (_, datasets) = owner
        .get(&format!("/api/v1/workspaces/{ws}/datasets"))
        .await;
    let ds = datasets[0]["id"].as_i64().unwrap();
    let inside = datasets[0]["container_path"].as_str().unwrap().to_string();
    let dataset_url = format!("/api/v1/workspaces/{ws}/datasets/{ds}/file");
    let no_secret_in = |what: &str, body: &[u8]| {
        let text = String::from_utf8_lossy(body);
        assert!(
            !text.contains("SQLite format"),
            "{what}: bytes of the database"
        );
        if hostname.trim().len() > 3 {
            assert!(
                !text.contains(hostname.trim()),
                "{what}: the host's /etc/hostname"
            );
        }
    };

    // The store is there to read, at the path the API gives, and nothing in it can be changed: not
    // the file, not its folder, not the tree (a read-only mount, whatever the user's uid).
    let (folder, file) = inside.rsplit_once('/').unwrap();
    let out = run(format!("head -c 10 '{inside}'")).await;
    assert!(out.starts_with("text\tlabel"), "{out:?}");
    for attempt in [
        format!("echo x > '{inside}'"),
        format!("rm -f '{inside}'"),
        format!("ln -sf '{db}' '{folder}/{file}.link'"),
        format!("mv '{folder}' '{folder}.old'"),
        "touch /paddock/new-file".to_string(),
        "mkdir /paddock/jobs".to_string(),
    ] {
        let out = run(format!("({attempt}) 2>&1 && echo CHANGED")).await;
        assert!(!out.contains("CHANGED"), "{attempt}: {out:?}");
        assert!(
            out.to_lowercase().contains("read-only"),
            "{attempt} fails as a read-only file system: {out:?}"
        );
    }

    // The volume belongs to the container's user. Links to the database, to a host file and a FIFO
    // where datasets and runs lay before the store change nothing the server serves.
    let out = run(format!(
        "mkdir -p /workspace/datasets/{ds} /workspace/jobs/{job}/output/checkpoints && \
         ln -sf '{db}' /workspace/datasets/{ds}/{file} && \
         ln -sf /etc/hostname /workspace/jobs/{job}/output/checkpoints/model.safetensors && \
         mkfifo /workspace/jobs/{job}/events.jsonl && echo planted"
    ))
    .await;
    assert!(out.contains("planted"), "{out:?}");
    let (status, body) = get(&owner, &dataset_url).await;
    no_secret_in("dataset", &body);
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).starts_with("text\tlabel"));
    let (status, body) = get(
        &owner,
        &format!(
            "/api/v1/workspaces/{ws}/checkpoints/{}/download",
            checkpoints[0]
        ),
    )
    .await;
    no_secret_in("checkpoint archive", &body);
    assert_eq!(status, StatusCode::OK, "the registered copy is served");
    assert!(
        body.windows(b"model.safetensors".len())
            .any(|w| w == b"model.safetensors"),
        "the archive holds the weights"
    );
    // An evaluation reads the store's copies of the checkpoint and the dataset; an upload lands in the
    // store beside the planted links, not through them.
    let evaluations = format!(
        "/api/v1/workspaces/{ws}/checkpoints/{}/evaluations",
        checkpoints[0]
    );
    let (status, started) = owner.post(&evaluations, json!({ "dataset_id": ds })).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let evaluation = format!("{evaluations}/{}", started["id"].as_i64().unwrap());
    let result = crate::evaluations::until_over(&owner, &evaluation).await;
    assert_eq!(result["status"], "succeeded", "{result}");
    let (_, sample) = get(&owner, &dataset_url).await;
    let uploaded = crate::evaluations::upload(&owner, ws, "after-plants", sample).await;
    assert!(server
        .in_store(
            ws,
            &format!("/paddock/datasets/{uploaded}/after-plants.tsv")
        )
        .is_file());
    let (status, _) = get(&owner, "/healthz").await;
    assert_eq!(status, StatusCode::OK);

    // A job directory's pid file forged to name the server itself: cancel never signals it.
    run(format!(
        "mkdir -p /workspace/jobs/{job} && echo {} > /workspace/jobs/{job}/trainer.pid 2>/dev/null; true",
        server.pid()
    ))
    .await;
    let (status, _) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/jobs/{job}/cancel"))
        .await;
    assert!(status.is_success() || status.is_client_error());
    let (status, _) = get(&owner, "/healthz").await;
    assert_eq!(status, StatusCode::OK, "the server was not signalled");
}

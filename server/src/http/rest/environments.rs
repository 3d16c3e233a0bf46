//! `/api/v1/workspaces/{id}/environments/...` and `/api/v1/docker`: thin handlers over
//! `domain::environments`, plus the two streaming endpoints — the build log over SSE (one-way, resumable by
//! byte offset) and the terminal over a WebSocket (two-way: keystrokes and resizes in, output out).

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{SinkExt, Stream, StreamExt};
use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use utoipa_axum::router::OpenApiRouter;

use super::paths::{EnvironmentPath, VersionPath, WorkspacePath};
use crate::http::caller::Caller;
use crate::http::csrf;
use crate::http::limits::{ApiJson, ApiPath as Path, ApiQuery as Query};
use contracts::error::ErrorBody;
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;
use domain::auth::bearer_token;
use domain::environments::{self, builds, lifecycle};
use domain::Actor;
use domain::{audit, caps, AppState};

/// The routes of this module, each at the path its `#[utoipa::path]` declares.
pub fn routes() -> OpenApiRouter<AppState> {
    routes_of![
        docker_status; list, create; get, update, delete; build; up; down; restart; stats; exec;
        build_log; terminal
    ]
}

/// How often the log stream looks for new build output.
const LOG_POLL: Duration = Duration::from_millis(400);
/// Terminal activity is written to the database at most this often (for idle auto-stop).
const TOUCH_EVERY: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildBody {
    /// Build even when an image with the same build hash exists.
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecBody {
    /// The command and its arguments, run without a shell: `["python", "-V"]`.
    pub cmd: Vec<String>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// Byte offset to continue from (the `id` of the last event received).
    pub offset: Option<usize>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TerminalQuery {
    pub rows: Option<u16>,
    pub cols: Option<u16>,
}

/// The container engine: availability, host size, GPUs and the base-image catalog. Any signed-in user.
#[utoipa::path(get, path = "/api/v1/docker", tag = "environments", security(("session" = []), ("token" = [])),
    responses((status = 200, body = DockerStatus), (status = 401, body = ErrorBody)))]
pub async fn docker_status(Caller { state, .. }: Caller) -> Result<Json<DockerStatus>, AppError> {
    Ok(Json(state.engine.status(&state.db).await?))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/environments", tag = "environments",
    security(("session" = []), ("token" = [])), params(WorkspacePath),
    responses((status = 200, body = Vec<EnvironmentSummary>), (status = 404, body = ErrorBody)))]
pub async fn list(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
) -> Result<Json<Vec<EnvironmentSummary>>, AppError> {
    Ok(Json(environments::list(&state.db, &actor, id).await?))
}

/// Creates an environment from a spec and starts building its image (editors and owners). Every
/// check runs first; a bad spec creates nothing (422 naming the field).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments", tag = "environments",
    security(("session" = []), ("token" = [])), params(WorkspacePath),
    request_body = EnvironmentSpec,
    responses((status = 201, body = EnvironmentDetail), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "name taken", body = ErrorBody),
              (status = 422, description = "invalid spec, unknown image, preflight refused", body = ErrorBody),
              (status = 503, description = "Docker unavailable", body = ErrorBody)))]
pub async fn create(
    Caller { state, actor }: Caller,
    Path(WorkspacePath { id }): Path<WorkspacePath>,
    ApiJson(spec): ApiJson<EnvironmentSpec>,
) -> Result<(StatusCode, Json<EnvironmentDetail>), AppError> {
    Ok((
        StatusCode::CREATED,
        Json(environments::create(&state.db, &state.engine, &actor, id, spec).await?),
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/environments/{env_id}", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 200, body = EnvironmentDetail), (status = 404, body = ErrorBody)))]
pub async fn get(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<Json<EnvironmentDetail>, AppError> {
    Ok(Json(
        environments::get(&state.db, &actor, id, env_id).await?,
    ))
}

/// Replaces the spec: a new version when it differs (and a build), nothing when identical.
#[utoipa::path(put, path = "/api/v1/workspaces/{id}/environments/{env_id}", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    request_body = EnvironmentSpec,
    responses((status = 200, body = EnvironmentDetail), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "name taken", body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn update(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
    ApiJson(spec): ApiJson<EnvironmentSpec>,
) -> Result<Json<EnvironmentDetail>, AppError> {
    Ok(Json(
        environments::update(&state.db, &state.engine, &actor, id, env_id, spec).await?,
    ))
}

/// Deletes the environment and its container; the workspace volume stays.
#[utoipa::path(delete, path = "/api/v1/workspaces/{id}/environments/{env_id}", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 204, description = "done"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "`docker_conflict`: Docker refused to remove the container", body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn delete(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<StatusCode, AppError> {
    environments::delete(&state.db, &state.engine, &actor, id, env_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Builds the current version again.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments/{env_id}/build", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    request_body = BuildBody,
    responses((status = 202, body = EnvironmentDetail), (status = 409, description = "already building", body = ErrorBody),
              (status = 503, description = "`docker_unavailable` or `docker_error`: Docker is not there or failed", body = ErrorBody)))]
pub async fn build(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
    ApiJson(body): ApiJson<BuildBody>,
) -> Result<(StatusCode, Json<EnvironmentDetail>), AppError> {
    let detail =
        environments::rebuild(&state.db, &state.engine, &actor, id, env_id, body.force).await?;
    Ok((StatusCode::ACCEPTED, Json(detail)))
}

/// Provisions the environment's container (create + start) from the current version's image.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments/{env_id}/up", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 200, body = EnvironmentDetail), (status = 403, body = ErrorBody),
              (status = 409, description = "`not_built`, `build_in_progress`, `gpus_busy`, or `environment_starting`: another start of it is under way", body = ErrorBody),
              (status = 422, description = "`preflight_failed`: the host cannot give what the spec asks for", body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn up(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<Json<EnvironmentDetail>, AppError> {
    Ok(Json(
        lifecycle::up(&state.db, &state.engine, &actor, id, env_id).await?,
    ))
}

/// Stops and removes the container (files under /workspace stay).
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments/{env_id}/down", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 200, body = EnvironmentDetail), (status = 403, body = ErrorBody),
              (status = 409, description = "`docker_conflict`: Docker refused to stop the container", body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn down(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<Json<EnvironmentDetail>, AppError> {
    Ok(Json(
        lifecycle::down(&state.db, &state.engine, &actor, id, env_id).await?,
    ))
}

#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments/{env_id}/restart", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 200, body = EnvironmentDetail), (status = 409, description = "not running", body = ErrorBody),
              (status = 503, description = "`docker_unavailable` or `docker_error`: Docker is not there or failed", body = ErrorBody)))]
pub async fn restart(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<Json<EnvironmentDetail>, AppError> {
    Ok(Json(
        lifecycle::restart(&state.db, &state.engine, &actor, id, env_id).await?,
    ))
}

#[utoipa::path(get, path = "/api/v1/workspaces/{id}/environments/{env_id}/stats", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    responses((status = 200, body = EnvironmentStats), (status = 409, description = "not running", body = ErrorBody),
              (status = 503, description = "`docker_unavailable` or `docker_error`: Docker is not there or failed", body = ErrorBody)))]
pub async fn stats(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
) -> Result<Json<EnvironmentStats>, AppError> {
    Ok(Json(
        lifecycle::stats(&state.db, &state.engine, &actor, id, env_id).await?,
    ))
}

/// Runs a command (no shell) in the running environment as its non-root user; editors and owners.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/environments/{env_id}/exec", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath),
    request_body = ExecBody,
    responses((status = 200, body = ExecResult), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 503, description = "`docker_unavailable` or `docker_error`: Docker is not there or failed", body = ErrorBody)))]
pub async fn exec(
    Caller { state, actor }: Caller,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
    ApiJson(body): ApiJson<ExecBody>,
) -> Result<Json<ExecResult>, AppError> {
    Ok(Json(
        lifecycle::exec(&state.db, &state.engine, &actor, id, env_id, &body.cmd).await?,
    ))
}

/// The build log of a version as Server-Sent Events: `log` events carry new output (their `id` is the
/// byte offset to resume from), one `end` event carries the final `{status}`; then the stream closes.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/environments/{env_id}/versions/{version}/log", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(VersionPath, LogQuery),
    responses((status = 200, content_type = "text/event-stream", description = "log events"), (status = 404, body = ErrorBody)))]
pub async fn build_log(
    Caller { state, actor }: Caller,
    headers: HeaderMap,
    Path(VersionPath {
        id,
        env_id,
        version,
    }): Path<VersionPath>,
    Query(q): Query<LogQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let version_id = environments::version_for_log(&state.db, &actor, id, env_id, version).await?;
    let permit = state
        .open
        .take(&state.db, caps::Kind::Stream, actor.user_id)
        .await?;
    // EventSource reconnects with the last id it saw.
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let offset = resume.or(q.offset).unwrap_or(0);
    let db = state.db.clone();
    let stream = futures_util::stream::unfold((offset, false), move |(offset, done)| {
        let db = db.clone();
        async move {
            if done {
                return None;
            }
            let mut first = true;
            loop {
                if !first {
                    tokio::time::sleep(LOG_POLL).await;
                }
                first = false;
                let (text, status) = match builds::log_since(&db, version_id, offset).await {
                    Ok(found) => found,
                    Err(_) => {
                        return Some((
                            Ok(Event::default()
                                .event("end")
                                .data("{\"status\":\"unknown\"}")),
                            (offset, true),
                        ))
                    }
                };
                if !text.is_empty() {
                    let next = offset + text.len();
                    let event = Event::default()
                        .event("log")
                        .id(next.to_string())
                        .data(text.trim_end_matches('\n'));
                    return Some((Ok(event), (next, false)));
                }
                if BuildStatus::parse(&status).is_some_and(|s| !s.is_active()) {
                    let end = Event::default()
                        .event("end")
                        .data(serde_json::json!({ "status": status }).to_string());
                    return Some((Ok(end), (offset, true)));
                }
            }
        }
    });
    Ok(Sse::new(caps::holding(stream, permit)).keep_alive(KeepAlive::default()))
}

/// A shell in the running environment over a WebSocket; editors and owners. Client → server: text
/// frames `{"input": "ls\r"}` or `{"resize": [rows, cols]}`. Server → client: binary frames of terminal
/// output, and a last text frame `{"exit": code}` when the shell ends.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/environments/{env_id}/terminal", tag = "environments",
    security(("session" = []), ("token" = [])),
    params(EnvironmentPath,
           TerminalQuery),
    responses((status = 101, description = "WebSocket"),
              (status = 400, description = "`invalid_body`: not a WebSocket handshake", body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 503, description = "`docker_unavailable` or `docker_error`: Docker is not there or failed", body = ErrorBody)))]
pub async fn terminal(
    Caller { state, actor }: Caller,
    headers: HeaderMap,
    Path(EnvironmentPath { id, env_id }): Path<EnvironmentPath>,
    Query(q): Query<TerminalQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, AppError> {
    // axum refuses a request that is no handshake in plain text; the API answers in its own shape.
    let upgrade = upgrade.map_err(|r| AppError::Malformed {
        message: format!("not a WebSocket handshake: {}", r.body_text()),
    })?;
    // A WebSocket handshake is a GET that browsers send cross-site with cookies: check where it comes from
    // (token-authenticated clients cannot be forged by a browser).
    if bearer_token(&http_parts(&headers))?.is_none() {
        csrf::check(&headers, &state.security.allowed_origins).map_err(|why| {
            AppError::denied(
                ErrorCode::CsrfRejected,
                format!("cross-site terminal refused: {why}"),
            )
        })?;
    }
    // A shell changes everything it can reach, though its handshake is a GET.
    if actor.read_only {
        return Err(AppError::denied(
            ErrorCode::TokenReadOnly,
            "a read-only API token cannot open a terminal",
        ));
    }
    let name = lifecycle::terminal_container(&state.db, &actor, id, env_id).await?;
    let permit = state
        .open
        .take(&state.db, caps::Kind::Stream, actor.user_id)
        .await?;
    let docker = state.engine.docker().await?;
    let rows = q.rows.unwrap_or(24).clamp(2, 500);
    let cols = q.cols.unwrap_or(80).clamp(2, 1000);
    let terminal = docker
        .open_terminal(&name, None, rows, cols)
        .await
        .map_err(|e| state.engine.error("opening a terminal", e))?;
    {
        let mut conn = state.db.acquire().await?;
        lifecycle::touch(&mut conn, env_id).await?;
        audit::record(
            &mut conn,
            audit::Entry::by(
                &actor,
                Some(id),
                "environment.terminal",
                "environment",
                &name,
            )
            .detail(serde_json::json!({ "environment_id": env_id })),
        )
        .await?;
    }
    let db = state.db.clone();
    Ok(upgrade
        .on_upgrade(move |socket| async move {
            bridge(socket, terminal, db, actor, id, env_id).await;
            drop(permit);
        })
        .into_response())
}

fn http_parts(headers: &HeaderMap) -> axum::http::request::Parts {
    let mut request = axum::http::Request::new(());
    *request.headers_mut() = headers.clone();
    request.into_parts().0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientMessage {
    input: Option<String>,
    resize: Option<(u16, u16)>,
}

/// How often an open terminal checks that its user may still have it.
const ACCESS_RECHECK: Duration = Duration::from_secs(2);

/// Resolves once the actor may no longer use the terminal: removed from the workspace or made a
/// viewer, account disabled, its session ended by a password reset or its token revoked or expired,
/// or the environment's container gone. A shell is the most powerful thing Paddock hands out, so
/// access is not judged once at the handshake but for as long as it is open.
async fn access_lost(
    db: &sqlx::SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) {
    loop {
        tokio::time::sleep(ACCESS_RECHECK).await;
        if !still_allowed(db, actor, workspace_id, env_id).await {
            tracing::info!(
                user = actor.username,
                %workspace_id,
                %env_id,
                "closing a terminal whose user lost access"
            );
            return;
        }
    }
}

/// One check of [`access_lost`]. A busy database is no reason to cut a shell; only a refusal is.
async fn still_allowed(
    db: &sqlx::SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> bool {
    let disabled: Result<Option<bool>, sqlx::Error> =
        sqlx::query_scalar("SELECT disabled FROM users WHERE id = ?")
            .bind(actor.user_id)
            .fetch_optional(db)
            .await;
    match disabled {
        Ok(Some(false)) => {}
        Ok(_) => return false,
        Err(_) => return true,
    }
    if let Ok(false) = actor.credential.still_valid(db, actor.user_id).await {
        return false;
    }
    !matches!(
        lifecycle::terminal_container(db, actor, workspace_id, env_id).await,
        Err(e) if e != AppError::Internal
    )
}

async fn bridge(
    socket: WebSocket,
    terminal: containers::exec::Terminal,
    db: sqlx::SqlitePool,
    actor: Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) {
    let containers::exec::Terminal {
        mut output,
        mut input,
        control,
    } = terminal;
    let (mut to_browser, mut from_browser) = socket.split();
    let pump_out = async {
        while let Some(chunk) = output.next().await {
            match chunk {
                Ok(bytes) => {
                    if to_browser.send(Message::Binary(bytes)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "terminal output ended");
                    break;
                }
            }
        }
        let code = control.exit_code().await.ok().flatten();
        let _ = to_browser
            .send(Message::Text(
                serde_json::json!({ "exit": code }).to_string().into(),
            ))
            .await;
        let _ = to_browser.close().await;
    };
    let pump_in = async {
        let mut last_touch = tokio::time::Instant::now();
        while let Some(Ok(message)) = from_browser.next().await {
            let text = match message {
                Message::Text(text) => text.to_string(),
                Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Message::Close(_) => break,
                _ => continue,
            };
            let Ok(parsed) = serde_json::from_str::<ClientMessage>(&text) else {
                tracing::debug!("ignoring a malformed terminal message");
                continue;
            };
            if let Some(data) = parsed.input {
                if input.write_all(data.as_bytes()).await.is_err() {
                    break;
                }
                let _ = input.flush().await;
                if last_touch.elapsed() >= TOUCH_EVERY {
                    last_touch = tokio::time::Instant::now();
                    if let Ok(mut conn) = db.acquire().await {
                        let _ = lifecycle::touch(&mut conn, env_id).await;
                    }
                }
            }
            if let Some((rows, cols)) = parsed.resize {
                let _ = control
                    .resize(rows.clamp(2, 500), cols.clamp(2, 1000))
                    .await;
            }
        }
        // The browser left: end the shell so it does not linger in the container.
        let _ = input.write_all(b"\x04").await;
        let _ = input.shutdown().await;
    };
    tokio::select! {
        () = pump_out => {}
        () = pump_in => {}
        // Dropping both halves closes the socket; dropping the exec's input ends the shell (EOF).
        () = access_lost(&db, &actor, workspace_id, env_id) => {}
    }
}

//! An environment's container: up (provision from the current version's image, with GPUs leased from
//! Paddock's inventory), down (stop and remove: only the workspace volume persists, so GPUs are never held
//! by a stopped environment and the next `up` gets fresh devices), restart, stats, exec and the
//! container a terminal attaches to. Editors and owners act; viewers may read stats.
//!
//! State is written around each Docker call — `provisioning` before, `running`/`failed` after — and
//! GPU leases are taken in the same transaction as `provisioning`, so a crash between the two leaves a
//! state that reconcile can repair.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use containers::lifecycle::{Limits, ProvisionRequest};
use containers::{labels, Docker};
use sqlx::SqlitePool;

use super::spec::to_env_spec;
use super::status::{self, Container, Reason};
use super::{env_row, record_event, visible, with_current, EnvRow};
use crate::access;
use crate::audit;
use crate::auth::Actor;
use crate::db::write_tx;
use crate::engine::Engine;
use crate::gpus::{self, Holder};
use crate::storage::workspace_folder;
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;

/// Seconds `down` and `restart` give the main process before killing it.
const STOP_TIMEOUT_SECS: i32 = 10;
/// Longest command line `exec` accepts (arguments × length), so a request cannot make Docker store megabytes.
const MAX_EXEC_ARGS: usize = 256;
const MAX_EXEC_ARG_BYTES: usize = 8192;

/// The deterministic container name of an environment.
pub fn container_name(engine: &Engine, env_id: EnvironmentId) -> String {
    labels::container_name(&engine.instance, &["env", &env_id.to_string()])
}

/// The Docker volume of a workspace's named volume: per installation and workspace, so two workspaces
/// naming their volume alike never see each other's files.
pub fn volume_name(engine: &Engine, workspace_id: WorkspaceId, volume: &str) -> String {
    labels::volume_name(&engine.instance, &format!("w{workspace_id}-{volume}"))
}

/// The workspace's own Docker network: its environments, job containers and replicas share it, and
/// no other workspace's containers can reach them.
pub fn network_name(engine: &Engine, workspace_id: WorkspaceId) -> String {
    labels::network_name(&engine.instance, &format!("w{workspace_id}"))
}

/// The host directory backing a workspace volume, created and handed to the container's user (uid
/// 1000 owns `/workspace`); `None` when volumes live in Docker's storage.
pub fn volume_dir(
    engine: &Engine,
    workspace_id: WorkspaceId,
    volume: &str,
) -> Result<Option<String>, AppError> {
    let Some(root) = &engine.config.volumes_dir else {
        return Ok(None);
    };
    let dir = root.join(workspace_folder(workspace_id)).join(volume);
    prepare_volume_dir(&dir).map_err(|e| {
        contracts::error::internal(
            "creating the workspace volume",
            format!("{}: {e}", dir.display()),
        )
    })?;
    Ok(Some(dir.to_string_lossy().into_owned()))
}

/// The workspace's store on the host (datasets, models, registered checkpoints; written only by the
/// server), made if missing, for a read-only bind at `/paddock`; `None` when the engine binds none.
pub fn store_dir(engine: &Engine, workspace_id: WorkspaceId) -> Result<Option<String>, AppError> {
    let Some(root) = &engine.config.stores_dir else {
        return Ok(None);
    };
    let dir = root.join(workspace_folder(workspace_id));
    std::fs::create_dir_all(&dir).map_err(|e| {
        contracts::error::internal(
            "creating the workspace store",
            format!("{}: {e}", dir.display()),
        )
    })?;
    Ok(Some(dir.to_string_lossy().into_owned()))
}

fn prepare_volume_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let (uid, gid) = (containers::build::users::UID, containers::build::users::GID);
    if std::os::unix::fs::chown(dir, Some(uid), Some(gid)).is_err() {
        // Not root: let the container's user write anyway.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
    }
    Ok(())
}

/// Provisions (or re-provisions) the environment's container from its current version.
pub async fn up(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvironmentDetail, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Editor).await?;
    let (env, version) = with_current(&mut conn, workspace_id, env_id).await?;
    drop(conn);
    let docker = engine.docker().await?;
    let image_id = match (version.build_status, &version.image_id) {
        (BuildStatus::Built, Some(id)) => id.clone(),
        (status, _) if status.is_active() => {
            return Err(AppError::conflict(
                "version",
                ErrorCode::BuildInProgress,
                "the image is still being built; try again when it is done",
            ))
        }
        _ => {
            return Err(AppError::conflict(
                "version",
                ErrorCode::NotBuilt,
                "the image of the current version failed to build; fix the spec or rebuild",
            ))
        }
    };
    if let Err(e) = docker.image_info(&image_id).await {
        return Err(match e {
            containers::Error::NotFound { .. } => AppError::conflict(
                "version",
                ErrorCode::NotBuilt,
                format!("the image {image_id} of this version is gone from Docker; rebuild the environment"),
            ),
            other => engine.error("inspecting the image", other),
        });
    }
    let mut spec = version.spec()?;
    // Given to the container, never to the image.
    spec.secret_env = super::secrets::load(&mut *db.acquire().await?, env_id).await?;
    let env_spec = to_env_spec(&spec, Path::new("/unused"));
    let host = docker
        .host_limits()
        .await
        .map_err(|e| engine.error("reading the Docker host's size", e))?;
    let resources = env_spec
        .resources(&host)
        .map_err(|e| engine.error("checking limits", e))?;
    let image_env = docker
        .image_info(&image_id)
        .await
        .map(|i| i.env)
        .unwrap_or_default();
    let needs = containers::catalog::ImageRequirements::for_image(&env_spec.base_image, &image_env);
    let host_gpus = engine.detected(spec.runtime).await;
    containers::preflight::check(&env_spec, &needs, &host_gpus)
        .map_err(|e| engine.error("preflight", e))?;

    let name = container_name(engine, env_id);
    let devices = {
        let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
        crate::caps::environment_may_start(&mut tx, workspace_id, env_id).await?;
        let devices = gpus::lease(
            &mut tx,
            &host_gpus.gpus,
            Holder::Environment(env_id),
            &spec.gpus,
            spec.shared_gpus,
        )
        .await?;
        let container = Container::named(&name);
        if !status::set(
            &mut tx,
            env_id,
            EnvStatus::Provisioning,
            Reason::UpRequested,
            container,
        )
        .await?
        {
            return Err(status::starting());
        }
        let entry = env.entry(actor, "environment.up");
        let detail = serde_json::json!({ "environment_id": env_id, "version": version.version, "gpus": gpus::indices(&devices) });
        audit::record(&mut tx, entry.detail(detail)).await?;
        tx.commit().await?;
        devices
    };

    let provisioned = provision(
        &docker,
        engine,
        &env,
        &name,
        &image_id,
        version.version,
        &spec,
        resources,
        &devices,
    )
    .await;
    let mut tx = write_tx(db).await?;
    match provisioned {
        Ok(id) => {
            let container = Container::named(&name);
            status::set(
                &mut tx,
                env_id,
                EnvStatus::Running,
                Reason::Provisioned,
                container,
            )
            .await?;
            sqlx::query(
                "UPDATE environments SET container_id = ?, last_active_at = ? WHERE id = ?",
            )
            .bind(&id)
            .bind(crate::now())
            .bind(env_id)
            .execute(&mut *tx)
            .await?;
            let gpus_text = if devices.is_empty() {
                String::new()
            } else {
                format!(" on GPU {:?}", gpus::indices(&devices))
            };
            record_event(
                &mut tx,
                env_id,
                "up",
                &format!(
                    "started version {} by {}{gpus_text}",
                    version.version, actor.username
                ),
            )
            .await?;
        }
        Err(e) => {
            let message = e.to_string();
            gpus::release(&mut tx, Holder::Environment(env_id)).await?;
            let container = Container::gone(&message);
            status::set(
                &mut tx,
                env_id,
                EnvStatus::Failed,
                Reason::ProvisionFailed,
                container,
            )
            .await?;
            record_event(&mut tx, env_id, "provision_failed", &message).await?;
            tx.commit().await?;
            return Err(e);
        }
    }
    tx.commit().await?;
    super::get(db, actor, workspace_id, env_id).await
}

#[allow(clippy::too_many_arguments)]
async fn provision(
    docker: &Docker,
    engine: &Engine,
    env: &EnvRow,
    name: &str,
    image_id: &str,
    version: i64,
    spec: &EnvironmentSpec,
    resources: containers::spec::Resources,
    devices: &[gpus::Placed],
) -> Result<String, AppError> {
    // A container from an older version (or with other GPUs) is replaced, not reused.
    match docker.inspect(name).await {
        Ok(existing) => {
            let same_version = existing.labels.get("paddock.version").map(String::as_str)
                == Some(&version.to_string());
            if existing.image != image_id || !same_version || !existing.status.is_running() {
                docker
                    .remove(name)
                    .await
                    .map_err(|e| engine.error("replacing the old container", e))?;
            }
        }
        Err(containers::Error::NotFound { .. }) => {}
        Err(e) => return Err(engine.error("inspecting the container", e)),
    }
    let request = ProvisionRequest {
        name: name.to_string(),
        image: image_id.to_string(),
        workspace: env.workspace_id.to_string(),
        environment: env.id.to_string(),
        instance: engine.instance.clone(),
        extra_labels: BTreeMap::from([("paddock.version".to_string(), version.to_string())]),
        limits: Limits::from_resources(&resources),
        gpu_device_ids: gpus::uuids(devices),
        volume: volume_name(engine, env.workspace_id, spec.workspace_volume.trim()),
        volume_dir: volume_dir(engine, env.workspace_id, spec.workspace_volume.trim())?,
        store_dir: store_dir(engine, env.workspace_id)?,
        cmd: None,
        env: super::secrets::container_env(&spec.secret_env),
        network: Some(network_name(engine, env.workspace_id)),
    };
    let provisioned = docker
        .provision(&request)
        .await
        .map_err(|e| engine.error("provisioning", e))?;
    Ok(provisioned.id)
}

/// Stops and removes the container; the workspace volume keeps its files. Idempotent.
pub async fn down(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvironmentDetail, AppError> {
    let env = visible(db, actor, workspace_id, env_id, Role::Editor).await?;
    stop_container(
        db,
        engine,
        &env,
        Reason::Stopped,
        &format!("stopped by {}", actor.username),
    )
    .await?;
    let mut conn = db.acquire().await?;
    audit::record(&mut conn, env.entry(actor, "environment.down")).await?;
    drop(conn);
    super::get(db, actor, workspace_id, env_id).await
}

/// Stops and removes an environment's container and records why (`reason`: a person, or the idle
/// timer); shared by `down` and idle auto-stop.
pub(crate) async fn stop_container(
    db: &SqlitePool,
    engine: &Engine,
    env: &EnvRow,
    reason: Reason,
    message: &str,
) -> Result<(), AppError> {
    // `stopped` with no container name first: the watcher then ignores the `die` and `destroy` events.
    let mut tx = write_tx(db).await?;
    status::set(
        &mut tx,
        env.id,
        EnvStatus::Stopped,
        reason,
        Container::default(),
    )
    .await?;
    tx.commit().await?;
    if let Some(name) = &env.container_name {
        let docker = engine.docker().await?;
        docker
            .stop(name, STOP_TIMEOUT_SECS)
            .await
            .map_err(|e| engine.error("stopping", e))?;
        docker
            .remove(name)
            .await
            .map_err(|e| engine.error("removing the container", e))?;
    }
    let mut conn = db.acquire().await?;
    gpus::release(&mut conn, Holder::Environment(env.id)).await?;
    let event = match reason {
        Reason::Idle => "idle_stop",
        _ => "down",
    };
    record_event(&mut conn, env.id, event, message).await?;
    Ok(())
}

/// Restarts the main process (the container and its GPUs stay).
pub async fn restart(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvironmentDetail, AppError> {
    let env = visible(db, actor, workspace_id, env_id, Role::Editor).await?;
    let name = running_container(&env)?;
    let docker = engine.docker().await?;
    docker
        .restart(&name, STOP_TIMEOUT_SECS)
        .await
        .map_err(|e| engine.error("restarting", e))?;
    let mut tx = write_tx(db).await?;
    let container = Container::named(&name);
    status::set(
        &mut tx,
        env_id,
        EnvStatus::Running,
        Reason::Restarted,
        container,
    )
    .await?;
    touch(&mut tx, env_id).await?;
    record_event(
        &mut tx,
        env_id,
        "restart",
        &format!("restarted by {}", actor.username),
    )
    .await?;
    audit::record(&mut tx, env.entry(actor, "environment.restart")).await?;
    tx.commit().await?;
    super::get(db, actor, workspace_id, env_id).await
}

/// CPU and memory use now. Any member.
pub async fn stats(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvironmentStats, AppError> {
    let env = visible(db, actor, workspace_id, env_id, Role::Viewer).await?;
    let name = running_container(&env)?;
    let stats = engine
        .docker()
        .await?
        .stats(&name)
        .await
        .map_err(|e| engine.error("reading stats", e))?;
    Ok(EnvironmentStats {
        cpu_percent: stats.cpu_percent,
        memory_bytes: stats.memory_bytes,
        memory_limit_bytes: stats.memory_limit_bytes,
        pids: stats.pids,
    })
}

/// Runs a command in the running environment as its non-root user and returns its output.
pub async fn exec(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
    cmd: &[String],
) -> Result<ExecResult, AppError> {
    if cmd.is_empty() || cmd[0].trim().is_empty() {
        return Err(AppError::invalid(
            "cmd",
            ErrorCode::CmdInvalid,
            "give the command as a non-empty list, like [\"ls\", \"-l\"]",
        ));
    }
    if cmd.len() > MAX_EXEC_ARGS
        || cmd
            .iter()
            .any(|a| a.len() > MAX_EXEC_ARG_BYTES || a.contains('\0'))
    {
        return Err(AppError::invalid(
            "cmd",
            ErrorCode::CmdInvalid,
            format!("at most {MAX_EXEC_ARGS} arguments of at most {MAX_EXEC_ARG_BYTES} bytes each, without NUL characters"),
        ));
    }
    let name = terminal_container(db, actor, workspace_id, env_id).await?;
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let output = engine
        .docker()
        .await?
        .exec(&name, &args)
        .await
        .map_err(|e| engine.error("running the command", e))?;
    let mut conn = db.acquire().await?;
    touch(&mut conn, env_id).await?;
    let env = env_row(&mut conn, workspace_id, env_id).await?;
    let entry = env.entry(actor, "environment.exec");
    let detail =
        serde_json::json!({ "environment_id": env_id, "cmd": cmd, "exit_code": output.exit_code });
    audit::record(&mut conn, entry.detail(detail)).await?;
    Ok(ExecResult {
        exit_code: output.exit_code,
        stdout: output.stdout,
        stderr: output.stderr,
        truncated: output.truncated,
    })
}

/// The running container a terminal or exec may attach to: editors and owners only (a shell can change
/// everything the environment can reach), the environment must be running.
pub async fn terminal_container(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<String, AppError> {
    running_container(&visible(db, actor, workspace_id, env_id, Role::Editor).await?)
}

/// Notes activity (terminal input, exec) so idle auto-stop leaves the environment alone.
pub async fn touch(
    conn: &mut sqlx::SqliteConnection,
    env_id: EnvironmentId,
) -> Result<(), AppError> {
    sqlx::query("UPDATE environments SET last_active_at = ? WHERE id = ?")
        .bind(crate::now())
        .bind(env_id)
        .execute(conn)
        .await?;
    Ok(())
}

fn running_container(env: &EnvRow) -> Result<String, AppError> {
    match (&env.container_name, env.status) {
        (Some(name), EnvStatus::Running) => Ok(name.clone()),
        _ => Err(AppError::conflict(
            "status",
            ErrorCode::NotRunning,
            "the environment is not running; start it first",
        )),
    }
}

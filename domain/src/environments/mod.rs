//! Environments: a workspace's versioned container specs, the images built from them and the one
//! container each runs. Viewers read; editors and owners create, change, provision and open terminals;
//! non-members get 404 (all through `access::authorize`). Every change is audited.
//!
//! The database is the truth: an environment's state (`status`, its container name, its GPU leases) is
//! written before and after each Docker call, builds and containers are found again after a restart
//! (`reconcile`), and Docker calls are idempotent, so any step can be retried.
//!
//! # Layout
//! - this file: list, read, create, change (a new version when the spec hash differs) and delete.
//! - [`spec`]: the form ↔ `containers::EnvSpec`, its hash, and every check before anything is created
//!   (rules, host size, image availability, GPU preflight).
//! - [`builds`]: image builds in the background with their log in the database.
//! - [`lifecycle`]: up (provision), down, restart, stats, exec, and the terminal's container.
//! - [`reconcile`]: Docker events → status, periodic reconcile, idle auto-stop, build recovery.
//! - [`status`]: the environment's state machine, which every change of its status goes through.

pub mod builds;
pub mod lifecycle;
pub mod reconcile;
pub mod secrets;
pub mod spec;
pub mod status;

use contracts::ids::{EnvironmentId, UserId, WorkspaceId};
use std::sync::Arc;

use sqlx::{SqliteConnection, SqlitePool};

use super::access::{self, authorize};
use super::audit::{self, Entry};
use super::auth::Actor;
use super::engine::Engine;
use super::gpus::{self, Holder};
use contracts::error::{AppError, ErrorCode};
use contracts::types::*;
use {crate::db::taken, contracts::error::internal};

/// How many events the detail page shows.
const EVENTS_SHOWN: i64 = 50;

pub(crate) struct EnvRow {
    id: EnvironmentId,
    workspace_id: WorkspaceId,
    name: String,
    current_version: i64,
    status: EnvStatus,
    exit_code: Option<i64>,
    status_message: Option<String>,
    container_name: Option<String>,
    last_active_at: Option<String>,
    updated_at: String,
}

// `env_rows!("WHERE …", args…)`: environments (see `db::row_query!`).
crate::db::row_query!(
    $ env_rows,
    EnvRow,
    r#"SELECT id AS "id!: contracts::ids::EnvironmentId", workspace_id AS "workspace_id: contracts::ids::WorkspaceId", name, current_version, status AS "status: contracts::types::EnvStatus",
        exit_code, status_message, container_name, last_active_at, updated_at
      FROM environments"#
);

pub(crate) struct VersionRow {
    id: i64,
    version: i64,
    spec_json: String,
    spec_hash: String,
    build_status: BuildStatus,
    build_hash: Option<String>,
    image_id: Option<String>,
    previous_image_id: Option<String>,
    image_tag: Option<String>,
    dockerfile: Option<String>,
    build_error: Option<String>,
    created_by: Option<String>,
    created_at: String,
    build_started_at: Option<String>,
    build_finished_at: Option<String>,
}

// `version_rows!("WHERE …", args…)`: environment versions, with their author's name (see
// `db::row_query!`).
crate::db::row_query!(
    $ version_rows,
    VersionRow,
    r#"SELECT v.id AS "id!", v.version, v.spec_json, v.spec_hash,
        v.build_status AS "build_status: contracts::types::BuildStatus", v.build_hash, v.image_id,
        v.previous_image_id, v.image_tag, v.dockerfile, v.build_error, u.username AS "created_by?",
        v.created_at, v.build_started_at, v.build_finished_at
      FROM environment_versions v LEFT JOIN users u ON u.id = v.created_by"#
);

impl VersionRow {
    pub(crate) fn spec(&self) -> Result<EnvironmentSpec, AppError> {
        serde_json::from_str(&self.spec_json).map_err(|e| internal("stored environment spec", e))
    }

    fn into_version(self) -> Result<EnvironmentVersion, AppError> {
        Ok(EnvironmentVersion {
            version: self.version,
            spec: self.spec()?,
            build_status: self.build_status,
            spec_hash: self.spec_hash,
            build_hash: self.build_hash,
            image_id: self.image_id,
            previous_image_id: self.previous_image_id,
            image_tag: self.image_tag,
            dockerfile: self.dockerfile,
            build_error: self.build_error,
            created_by: self.created_by,
            created_at: self.created_at,
            build_started_at: self.build_started_at,
            build_finished_at: self.build_finished_at,
        })
    }
}

impl EnvRow {
    /// `actor`'s `action` on this environment, for the audit log; the detail names it by id unless
    /// the caller gives one (which names it too).
    fn entry<'a>(&'a self, actor: &'a Actor, action: &'a str) -> Entry<'a> {
        Entry::in_workspace(actor, self.workspace_id, action, &self.name)
            .detail(serde_json::json!({ "environment_id": self.id }))
    }
}

fn summary(env: &EnvRow, version: &VersionRow) -> Result<EnvironmentSummary, AppError> {
    let spec = version.spec()?;
    Ok(EnvironmentSummary {
        id: env.id,
        workspace_id: env.workspace_id,
        name: env.name.clone(),
        status: env.status,
        exit_code: env.exit_code,
        current_version: env.current_version,
        build_status: version.build_status,
        image_id: version.image_id.clone(),
        base_image: spec.base_image,
        cpus: spec.cpus,
        memory: spec.memory,
        gpus: spec.gpus,
        updated_at: env.updated_at.clone(),
    })
}

/// The environment `env_id` of `workspace_id` (NotFound when it belongs to another workspace).
pub(crate) async fn env_row(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvRow, AppError> {
    env_rows!("WHERE id = ? AND workspace_id = ?", env_id, workspace_id)
        .fetch_optional(conn)
        .await?
        .ok_or(AppError::NotFound)
}

/// Environment `env_id`, once `actor` is found to hold at least `need` in its workspace. The
/// connection goes back at once: what follows talks to Docker or builds first.
pub(crate) async fn visible(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
    need: Role,
) -> Result<EnvRow, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, need).await?;
    env_row(&mut conn, workspace_id, env_id).await
}

/// Environment `env_id` of the workspace with its current version.
pub(crate) async fn with_current(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<(EnvRow, VersionRow), AppError> {
    let env = env_row(conn, workspace_id, env_id).await?;
    let version = version_row(conn, env_id, env.current_version).await?;
    Ok((env, version))
}

pub(crate) async fn version_row(
    conn: &mut SqliteConnection,
    env_id: EnvironmentId,
    version: i64,
) -> Result<VersionRow, AppError> {
    version_rows!(
        "WHERE v.environment_id = ? AND v.version = ?",
        env_id,
        version
    )
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)
}

/// Records something that happened to an environment's container (shown on its page).
pub(crate) async fn record_event(
    conn: &mut SqliteConnection,
    env_id: EnvironmentId,
    kind: &str,
    message: &str,
) -> Result<(), AppError> {
    let at = super::now();
    sqlx::query!(
        "INSERT INTO environment_events (environment_id, kind, message, at) VALUES (?, ?, ?, ?)",
        env_id,
        kind,
        message,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The workspace's environments, by name. Any member.
pub async fn list(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
) -> Result<Vec<EnvironmentSummary>, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let envs = env_rows!("WHERE workspace_id = ? ORDER BY name", workspace_id)
        .fetch_all(&mut *conn)
        .await?;
    let mut out = Vec::with_capacity(envs.len());
    for env in envs {
        let version = version_row(&mut conn, env.id, env.current_version).await?;
        out.push(summary(&env, &version)?);
    }
    Ok(out)
}

/// One environment with its versions and recent events. Any member.
pub async fn get(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<EnvironmentDetail, AppError> {
    let mut conn = db.acquire().await?;
    let role = authorize(&mut conn, actor, workspace_id, Role::Viewer).await?;
    let env = env_row(&mut conn, workspace_id, env_id).await?;
    let rows = version_rows!("WHERE v.environment_id = ? ORDER BY v.version DESC", env_id)
        .fetch_all(&mut *conn)
        .await?;
    let current = rows
        .iter()
        .find(|v| v.version == env.current_version)
        .ok_or_else(|| {
            internal(
                "environment",
                format!(
                    "environment {env_id} has no version {}",
                    env.current_version
                ),
            )
        })?;
    let summary = summary(&env, current)?;
    let mut spec = current.spec()?;
    spec.secret_env = secrets::redacted(&secrets::load(&mut conn, env_id).await?);
    let versions = rows
        .into_iter()
        .map(VersionRow::into_version)
        .collect::<Result<Vec<_>, _>>()?;
    let events = sqlx::query_as::<_, (i64, String, String, String)>(
        "SELECT id, kind, message, at FROM environment_events WHERE environment_id = ? ORDER BY id DESC LIMIT ?",
    )
    .bind(env_id)
    .bind(EVENTS_SHOWN)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|(id, kind, message, at)| EnvironmentEvent { id, kind, message, at })
    .collect();
    Ok(EnvironmentDetail {
        summary,
        spec,
        versions,
        status_message: env.status_message,
        gpu_indices: gpus::indices(&gpus::leased(&mut conn, Holder::Environment(env_id)).await?),
        container_name: env.container_name,
        last_active_at: env.last_active_at,
        events,
        can_edit: role.can_edit(),
    })
}

/// Creates an environment (version 1) and starts building its image. Editors and owners. Every check
/// (`spec::check`) runs before anything is written, so a bad spec creates nothing.
pub async fn create(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    input: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    access::connect(db, actor, workspace_id, Role::Editor).await?;
    let mirror = crate::admin::registry_mirror(db).await?;
    let checked = spec::check(engine, &input, mirror.as_ref()).await?;
    let secret_env = secrets::merge(&Default::default(), &input.secret_env)?;
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let now = super::now();
    let name = input.name.trim().to_string();
    let env_id = sqlx::query_scalar!(
        r#"INSERT INTO environments (workspace_id, name, current_version, created_by, created_at, updated_at)
         VALUES (?, ?, 1, ?, ?, ?) RETURNING id AS "id!: EnvironmentId""#,
        workspace_id,
        name,
        actor.user_id,
        now,
        now,
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(name_taken)?;
    let version_id = insert_version(&mut tx, env_id, 1, &checked, actor.user_id).await?;
    secrets::store(&mut tx, env_id, &secret_env).await?;
    let entry = Entry::in_workspace(actor, workspace_id, "environment.create", &name);
    let detail = serde_json::json!({ "environment_id": env_id, "spec_hash": checked.spec_hash });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    builds::spawn(db.clone(), engine.clone(), version_id, false);
    get(db, actor, workspace_id, env_id).await
}

/// Changes an environment: a spec whose hash differs from the current version's becomes a new version
/// (and is built); an identical one changes nothing. Editors and owners.
pub async fn update(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
    input: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    visible(db, actor, workspace_id, env_id, Role::Editor).await?;
    let mirror = crate::admin::registry_mirror(db).await?;
    let checked = spec::check(engine, &input, mirror.as_ref()).await?;
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    let (env, current) = with_current(&mut tx, workspace_id, env_id).await?;
    let stored_secrets = secrets::load(&mut tx, env_id).await?;
    let secret_env = secrets::merge(&stored_secrets, &input.secret_env)?;
    if secret_env != stored_secrets {
        // Names only: the audit log is read by every member.
        secrets::store(&mut tx, env_id, &secret_env).await?;
        let names: Vec<_> = secret_env.keys().collect();
        let entry = env.entry(actor, "environment.secrets");
        let detail = serde_json::json!({ "environment_id": env_id, "names": names });
        audit::record(&mut tx, entry.detail(detail)).await?;
    }
    if current.spec_hash == checked.spec_hash {
        tx.commit().await?;
        return get(db, actor, workspace_id, env_id).await;
    }
    let latest: i64 = sqlx::query_scalar(
        "SELECT MAX(version) FROM environment_versions WHERE environment_id = ?",
    )
    .bind(env_id)
    .fetch_one(&mut *tx)
    .await?;
    let version = latest + 1;
    let version_id = insert_version(&mut tx, env_id, version, &checked, actor.user_id).await?;
    let name = input.name.trim().to_string();
    sqlx::query(
        "UPDATE environments SET name = ?, current_version = ?, updated_at = ? WHERE id = ?",
    )
    .bind(&name)
    .bind(version)
    .bind(super::now())
    .bind(env_id)
    .execute(&mut *tx)
    .await
    .map_err(name_taken)?;
    // Under the name it has from now on.
    let entry = Entry {
        resource: &name,
        ..env.entry(actor, "environment.update")
    };
    let detail = serde_json::json!({
        "environment_id": env_id, "version": version, "spec_hash": checked.spec_hash,
        "previous_spec_hash": current.spec_hash,
    });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    builds::spawn(db.clone(), engine.clone(), version_id, false);
    get(db, actor, workspace_id, env_id).await
}

/// Deletes an environment and its container (the workspace volume and cached images stay). Editors
/// and owners. While Docker is unavailable an environment that still has a container cannot be deleted:
/// that would leave a container nobody can see.
pub async fn delete(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<(), AppError> {
    let env = visible(db, actor, workspace_id, env_id, Role::Editor).await?;
    if let Some(container) = &env.container_name {
        let docker = engine.docker().await?;
        docker
            .remove(container)
            .await
            .map_err(|e| engine.error("removing the container", e))?;
    }
    let mut tx = access::begin(db, actor, workspace_id, Role::Editor).await?;
    gpus::release(&mut tx, Holder::Environment(env_id)).await?;
    let deleted = sqlx::query("DELETE FROM environments WHERE id = ? AND workspace_id = ?")
        .bind(env_id)
        .bind(workspace_id)
        .execute(&mut *tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Err(AppError::NotFound);
    }
    audit::record(&mut tx, env.entry(actor, "environment.delete")).await?;
    tx.commit().await?;
    Ok(())
}

/// Builds the current version's image again (`force`: even when an image with its build hash exists,
/// which shows whether the build still gives the same image ID). Editors and owners.
pub async fn rebuild(
    db: &SqlitePool,
    engine: &Arc<Engine>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
    force: bool,
) -> Result<EnvironmentDetail, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Editor).await?;
    let (env, version) = with_current(&mut conn, workspace_id, env_id).await?;
    engine.docker().await?;
    builds::requeue(db, version.id).await?;
    let entry = env.entry(actor, "environment.build");
    let detail =
        serde_json::json!({ "environment_id": env_id, "version": version.version, "force": force });
    audit::record(&mut conn, entry.detail(detail)).await?;
    drop(conn);
    builds::spawn(db.clone(), engine.clone(), version.id, force);
    get(db, actor, workspace_id, env_id).await
}

/// The database id of a version whose build log a member may read.
pub async fn version_for_log(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
    version: i64,
) -> Result<i64, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    env_row(&mut conn, workspace_id, env_id).await?;
    Ok(version_row(&mut conn, env_id, version).await?.id)
}

async fn insert_version(
    conn: &mut SqliteConnection,
    env_id: EnvironmentId,
    version: i64,
    checked: &spec::Checked,
    user_id: UserId,
) -> Result<i64, AppError> {
    let now = super::now();
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO environment_versions (environment_id, version, spec_json, spec_hash, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id AS "id!""#,
        env_id,
        version,
        checked.spec_json,
        checked.spec_hash,
        user_id,
        now,
    )
    .fetch_one(conn)
    .await?)
}

/// An environment name already in use in the workspace.
fn name_taken(e: sqlx::Error) -> AppError {
    taken(
        "name",
        ErrorCode::EnvironmentNameTaken,
        "an environment with this name already exists in the workspace",
    )(e)
}

#[cfg(test)]
mod tests;

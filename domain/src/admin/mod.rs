//! Instance administration, for instance admins only: the sign-up switch, whether pickled model
//! weights may be uploaded, the Docker Hub mirror base images come from, and enabling or disabling
//! accounts. Disabling an account ends its sessions and makes its tokens useless at once (both are
//! checked against the account on every request). Also the workspaces' GPU quotas and what their work
//! is charged to on each cluster; registering and removing clusters is [`clusters`].

pub mod clusters;

use contracts::ids::{UserId, WorkspaceId};
use sqlx::SqlitePool;

use super::audit::{self, Entry};
use super::auth::Actor;
use super::db::write_tx;
use containers::mirror::Mirror;
use contracts::error::{internal, AppError, ErrorCode, FieldProblem, Rule};
use contracts::identity::PasswordSignIn;
use contracts::types::{
    ClusterAccount, ExecutorKind, InstanceSettings, SettingsChange, UserAccount, MAX_CAP,
};

fn require_admin(actor: &Actor) -> Result<(), AppError> {
    if actor.is_admin {
        Ok(())
    } else {
        Err(AppError::Forbidden)
    }
}

pub async fn settings(db: &SqlitePool, actor: &Actor) -> Result<InstanceSettings, AppError> {
    require_admin(actor)?;
    read_settings(db).await
}

/// The settings, for the domain's own checks (no actor needed to obey them).
pub(crate) async fn read_settings(
    db: impl sqlx::SqliteExecutor<'_>,
) -> Result<InstanceSettings, AppError> {
    let row: (bool, bool, i64, i64, i64, i64, Option<String>, String) = sqlx::query_as(
        "SELECT signup_enabled, allow_pickled_weights, max_running_environments, max_replicas,
                max_uploads_per_user, max_streams_per_user, registry_mirror, password_sign_in
         FROM instance_settings WHERE id = 1",
    )
    .fetch_one(db)
    .await?;
    let cap = |n: i64| u32::try_from(n).unwrap_or(0);
    Ok(InstanceSettings {
        signup_enabled: row.0,
        allow_pickled_weights: row.1,
        max_running_environments: cap(row.2),
        max_replicas: cap(row.3),
        max_uploads_per_user: cap(row.4),
        max_streams_per_user: cap(row.5),
        registry_mirror: row.6,
        password_sign_in: PasswordSignIn::parse(&row.7).unwrap_or_default(),
    })
}

/// The Docker Hub mirror base images are pulled from, when an admin set one.
pub(crate) async fn registry_mirror(
    db: impl sqlx::SqliteExecutor<'_>,
) -> Result<Option<Mirror>, AppError> {
    // Stored only once parsed (see `update_settings`), so a failure here is a damaged database.
    read_settings(db)
        .await?
        .registry_mirror
        .map(|m| Mirror::parse(&m).map_err(|e| internal("stored registry mirror", e)))
        .transpose()
}

/// An admin's mirror text: empty removes it, otherwise it must be a registry address the instance allows
/// (`allowed`, the operator's list; empty: any) where a registry answers ([`answers_as_a_registry`]).
async fn mirror_setting(text: &str, allowed: &[String]) -> Result<Option<String>, AppError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let invalid = |why| AppError::invalid("registry_mirror", ErrorCode::RegistryMirrorInvalid, why);
    let mirror = Mirror::parse(text).map_err(invalid)?;
    if !allowed.is_empty() && !allowed.iter().any(|a| a == mirror.host()) {
        return Err(invalid(format!(
            "{} is not one of the registries this server may use as a mirror ({}; --registry-mirror-host)",
            mirror.host(),
            allowed.join(", ")
        )));
    }
    if !answers_as_a_registry(&mirror).await {
        return Err(invalid(format!(
            "no registry answers at {}: GET /v2/ must answer as the Docker registry API does \
             (200 or 401 with Docker-Distribution-Api-Version: registry/2.0)",
            mirror.host()
        )));
    }
    Ok(Some(mirror.to_string()))
}

/// How long a mirror has to answer `/v2/` when an admin sets it.
const MIRROR_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether `GET /v2/` at the mirror (HTTPS, else HTTP as Docker does for local registries) answers as
/// a registry: 200 or 401 with the `Docker-Distribution-Api-Version: registry/2.0` header. Builds then
/// send the mirror only registry requests; a mirror set to a service that is not a registry (an
/// internal admin page, a metadata endpoint) is refused here. What it answered is never quoted.
async fn answers_as_a_registry(mirror: &Mirror) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(MIRROR_PROBE_TIMEOUT)
        .build()
    else {
        return false;
    };
    for scheme in ["https", "http"] {
        let url = format!("{scheme}://{}/v2/", mirror.host());
        let Ok(answer) = client.get(&url).send().await else {
            continue;
        };
        let api = answer
            .headers()
            .get("docker-distribution-api-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if matches!(answer.status().as_u16(), 200 | 401) && api.starts_with("registry/2.") {
            return true;
        }
    }
    false
}

/// Sets the settings the change names, each audited; a cap outside 1–[`MAX_CAP`] is refused at its
/// field and nothing changes.
pub async fn update_settings(
    db: &SqlitePool,
    actor: &Actor,
    change: SettingsChange,
    allowed_mirrors: &[String],
) -> Result<InstanceSettings, AppError> {
    require_admin(actor)?;
    let caps = [
        ("max_running_environments", change.max_running_environments),
        ("max_replicas", change.max_replicas),
        ("max_uploads_per_user", change.max_uploads_per_user),
        ("max_streams_per_user", change.max_streams_per_user),
    ];
    for (field, value) in caps {
        if value.is_some_and(|n| !(1..=MAX_CAP).contains(&n)) {
            return Err(AppError::invalid(
                field,
                ErrorCode::CapInvalid,
                format!("{field} must be between 1 and {MAX_CAP}"),
            ));
        }
    }
    let flags = [
        ("signup_enabled", "settings.signup", change.signup_enabled),
        (
            "allow_pickled_weights",
            "settings.pickled_weights",
            change.allow_pickled_weights,
        ),
    ];
    let fields = flags
        .into_iter()
        .map(|(column, action, v)| (column, action, v.map(i64::from)))
        .chain(
            caps.into_iter()
                .map(|(column, v)| (column, "settings.cap", v.map(i64::from))),
        );
    let mirror = match change.registry_mirror.as_deref() {
        Some(text) => Some(mirror_setting(text, allowed_mirrors).await?),
        None => None,
    };
    let mut tx = write_tx(db).await?;
    if let Some(mirror) = mirror {
        sqlx::query("UPDATE instance_settings SET registry_mirror = ? WHERE id = 1")
            .bind(&mirror)
            .execute(&mut *tx)
            .await?;
        let entry = Entry::by(
            actor,
            None,
            "settings.registry_mirror",
            "instance",
            "registry_mirror",
        );
        audit::record(
            &mut tx,
            entry.detail(serde_json::json!({ "value": mirror })),
        )
        .await?;
    }
    if let Some(who) = change.password_sign_in {
        sqlx::query("UPDATE instance_settings SET password_sign_in = ? WHERE id = 1")
            .bind(who.as_str())
            .execute(&mut *tx)
            .await?;
        let entry = Entry::by(
            actor,
            None,
            "settings.password_sign_in",
            "instance",
            "password_sign_in",
        );
        audit::record(
            &mut tx,
            entry.detail(serde_json::json!({ "value": who.as_str() })),
        )
        .await?;
    }
    for (column, action, value) in fields {
        let Some(value) = value else { continue };
        // `column` is one of the names above, never input.
        sqlx::query(&format!(
            "UPDATE instance_settings SET {column} = ? WHERE id = 1"
        ))
        .bind(value)
        .execute(&mut *tx)
        .await?;
        let entry = Entry::by(actor, None, action, "instance", column);
        let detail = serde_json::json!({ "value": value });
        audit::record(&mut tx, entry.detail(detail)).await?;
    }
    tx.commit().await?;
    read_settings(db).await
}

#[derive(sqlx::FromRow)]
struct Row {
    id: UserId,
    username: String,
    is_admin: bool,
    disabled: bool,
    created_at: String,
}

impl From<Row> for UserAccount {
    fn from(r: Row) -> Self {
        UserAccount {
            id: r.id,
            username: r.username,
            is_admin: r.is_admin,
            disabled: r.disabled,
            created_at: r.created_at,
        }
    }
}

const SELECT: &str = "SELECT id, username, is_admin, disabled, created_at FROM users";

pub async fn list_users(db: &SqlitePool, actor: &Actor) -> Result<Vec<UserAccount>, AppError> {
    require_admin(actor)?;
    Ok(
        sqlx::query_as::<_, Row>(&format!("{SELECT} ORDER BY username"))
            .fetch_all(db)
            .await?
            .into_iter()
            .map(UserAccount::from)
            .collect(),
    )
}

/// Admins cannot disable themselves: that would lock the last admin out of the instance.
pub async fn set_user_disabled(
    db: &SqlitePool,
    actor: &Actor,
    user_id: UserId,
    disabled: bool,
) -> Result<UserAccount, AppError> {
    require_admin(actor)?;
    if user_id == actor.user_id && disabled {
        return Err(AppError::denied(
            ErrorCode::CannotDisableSelf,
            "you cannot disable your own account",
        ));
    }
    let mut tx = write_tx(db).await?;
    let row = sqlx::query_as::<_, Row>(
        "UPDATE users SET disabled = ?1, session_epoch = session_epoch + (?1 != disabled) WHERE id = ?2
         RETURNING id, username, is_admin, disabled, created_at",
    )
    .bind(disabled)
    .bind(user_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(AppError::NotFound)?;
    let action = if disabled {
        "user.disable"
    } else {
        "user.enable"
    };
    let entry = Entry::by(actor, None, action, "user", &row.username);
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(row.into())
}

/// Sets (or with `None` removes) a workspace's GPU quota: the most GPUs its jobs and environments may
/// hold at once. Instance admins only — they share out the machine; owners cannot raise their own.
pub async fn set_gpu_quota(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    max_gpus: Option<u32>,
) -> Result<Option<u32>, AppError> {
    require_admin(actor)?;
    if max_gpus.is_some_and(|n| n > contracts::types::MAX_GPU_QUOTA) {
        return Err(AppError::invalid(
            "max_gpus",
            ErrorCode::QuotaInvalid,
            format!(
                "max_gpus must be at most {} (or null for no quota)",
                contracts::types::MAX_GPU_QUOTA
            ),
        ));
    }
    let mut tx = write_tx(db).await?;
    let name = workspace_name(&mut tx, workspace_id).await?;
    match max_gpus {
        Some(n) => {
            sqlx::query(
                "INSERT INTO workspace_quotas (workspace_id, max_gpus) VALUES (?, ?)
                 ON CONFLICT (workspace_id) DO UPDATE SET max_gpus = excluded.max_gpus",
            )
            .bind(workspace_id)
            .bind(n)
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM workspace_quotas WHERE workspace_id = ?")
                .bind(workspace_id)
                .execute(&mut *tx)
                .await?;
        }
    }
    let entry = Entry::in_workspace(actor, workspace_id, "workspace.gpu_quota", &name);
    let detail = serde_json::json!({ "max_gpus": max_gpus });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(max_gpus)
}

/// Every workspace with its GPU quota and the GPUs it holds now (as the quota counts them), by name.
/// Instance admins only.
pub async fn gpu_quotas(
    db: &SqlitePool,
    actor: &Actor,
) -> Result<Vec<contracts::types::WorkspaceGpuQuota>, AppError> {
    require_admin(actor)?;
    let query = format!(
        "SELECT w.id, w.name, q.max_gpus,
                (SELECT COALESCE(SUM(h.gpus), 0) FROM ({}) h WHERE h.workspace_id = w.id)
         FROM workspaces w LEFT JOIN workspace_quotas q ON q.workspace_id = w.id
         ORDER BY w.name, w.id",
        crate::gpus::held_by_workspace()
    );
    let rows: Vec<(WorkspaceId, String, Option<u32>, u32)> =
        sqlx::query_as(&query).fetch_all(db).await?;
    Ok(rows
        .into_iter()
        .map(
            |(workspace_id, workspace, max_gpus, gpus_held)| contracts::types::WorkspaceGpuQuota {
                workspace_id,
                workspace,
                max_gpus,
                gpus_held,
            },
        )
        .collect())
}

/// Sets what workspace `workspace_id`'s work is charged to on cluster `cluster` (its Slurm account and
/// QoS; both `None` removes the mapping). Instance admins only, like the GPU quota: they map teams onto
/// the cluster's accounting, which the cluster enforces where it runs `slurmdbd`.
pub async fn set_cluster_account(
    db: &SqlitePool,
    executors: &crate::executor::Executors,
    actor: &Actor,
    workspace_id: WorkspaceId,
    cluster: &str,
    account: ClusterAccount,
) -> Result<ClusterAccount, AppError> {
    require_admin(actor)?;
    executors.known_cluster(cluster, ExecutorKind::Local)?;
    for (field, value) in [("account", &account.account), ("qos", &account.qos)] {
        if value.as_deref().is_some_and(|v| !slurm_name(v)) {
            let message = format!("{field} must be 1–64 letters, digits, '_', '-' or '.'");
            let problem = FieldProblem::new(field, Rule::SchedulerName, message);
            return Err(
                AppError::invalid_fields(ErrorCode::ClusterAccountInvalid, vec![problem])
                    .unwrap_or(AppError::Internal),
            );
        }
    }
    if account != ClusterAccount::default() {
        if let Some(slurm) = executors.slurm_named(cluster) {
            let refusal = slurm.refusal(account.account.clone(), account.qos.clone());
            refused_by_cluster(cluster, refusal.await, ErrorCode::ClusterAccountInvalid)?;
        }
    }
    let mut tx = write_tx(db).await?;
    let name = workspace_name(&mut tx, workspace_id).await?;
    if account == ClusterAccount::default() {
        sqlx::query(
            "DELETE FROM workspace_cluster_accounts WHERE workspace_id = ? AND cluster = ?",
        )
        .bind(workspace_id)
        .bind(cluster)
        .execute(&mut *tx)
        .await?;
    } else {
        sqlx::query(
            "INSERT INTO workspace_cluster_accounts (workspace_id, cluster, account, qos) VALUES (?, ?, ?, ?)
             ON CONFLICT (workspace_id, cluster) DO UPDATE SET account = excluded.account, qos = excluded.qos",
        )
        .bind(workspace_id)
        .bind(cluster)
        .bind(&account.account)
        .bind(&account.qos)
        .execute(&mut *tx)
        .await?;
    }
    let entry = Entry::in_workspace(actor, workspace_id, "workspace.cluster_account", &name);
    let detail =
        serde_json::json!({ "cluster": cluster, "account": account.account, "qos": account.qos });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(account)
}

/// Every workspace and what its work is charged to on cluster `cluster` (the server's defaults where
/// no mapping says otherwise: `None`s), by workspace name. Instance admins.
pub async fn list_cluster_accounts(
    db: &SqlitePool,
    executors: &crate::executor::Executors,
    actor: &Actor,
    cluster: &str,
) -> Result<Vec<contracts::types::WorkspaceClusterAccount>, AppError> {
    require_admin(actor)?;
    executors.known_cluster(cluster, ExecutorKind::Local)?;
    let rows: Vec<(WorkspaceId, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT w.id, w.name, a.account, a.qos FROM workspaces w
         LEFT JOIN workspace_cluster_accounts a ON a.workspace_id = w.id AND a.cluster = ?
         ORDER BY w.name, w.id",
    )
    .bind(cluster)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(workspace_id, workspace, account, qos)| contracts::types::WorkspaceClusterAccount {
                workspace_id,
                workspace,
                charged_to: ClusterAccount { account, qos },
            },
        )
        .collect())
}

/// Checks now that the nodes of cluster `cluster` see this server's data directory (a batch job on each
/// partition; see `executor::slurm::preflight`). Instance admins: it submits work to the cluster.
pub async fn check_cluster(
    executors: &crate::executor::Executors,
    actor: &Actor,
    cluster: &str,
) -> Result<contracts::types::SharedDirCheck, AppError> {
    require_admin(actor)?;
    executors
        .check_shared_dir(cluster)
        .await
        .ok_or(AppError::NotFound)
}

/// What workspace `workspace_id`'s work is charged to on cluster `cluster` (see
/// [`set_cluster_account`]).
async fn cluster_account(
    db: &SqlitePool,
    workspace_id: WorkspaceId,
    cluster: &str,
) -> Result<ClusterAccount, AppError> {
    let row: Option<(Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT account, qos FROM workspace_cluster_accounts WHERE workspace_id = ? AND cluster = ?",
    )
    .bind(workspace_id)
    .bind(cluster)
    .fetch_optional(db)
    .await?;
    Ok(row
        .map(|(account, qos)| ClusterAccount { account, qos })
        .unwrap_or_default())
}

/// Workspace `workspace_id`'s name, for the audit log; not found when there is no such workspace.
async fn workspace_name(
    conn: &mut sqlx::SqliteConnection,
    workspace_id: WorkspaceId,
) -> Result<String, AppError> {
    sqlx::query_scalar("SELECT name FROM workspaces WHERE id = ?")
        .bind(workspace_id)
        .fetch_optional(conn)
        .await?
        .ok_or(AppError::NotFound)
}

/// Where a unit of workspace `workspace_id` goes on cluster `cluster`: `partition` (`None`: the
/// executor's), charged to the account and QoS the workspace is mapped to there.
pub(crate) async fn cluster_placement(
    db: &SqlitePool,
    workspace_id: WorkspaceId,
    cluster: &str,
    partition: Option<String>,
) -> Result<::clusters::slurm::Placement, AppError> {
    let ClusterAccount { account, qos } = cluster_account(db, workspace_id, cluster).await?;
    Ok(::clusters::slurm::Placement {
        partition,
        account,
        qos,
    })
}

/// The cluster's answer to whether it would take work charged to an account and QoS (see
/// `executor::slurm::Slurm::refusal`) as a refusal at the field it is about, with `code`; one that could
/// not be asked is refused too, since nothing says the cluster would take it.
fn refused_by_cluster(
    cluster: &str,
    answer: ::clusters::Result<Option<String>>,
    code: ErrorCode,
) -> Result<(), AppError> {
    match answer {
        Ok(None) => Ok(()),
        Ok(Some(reason)) => {
            let field = if reason.to_lowercase().contains("qos") {
                "qos"
            } else {
                "account"
            };
            let message = format!("the cluster {cluster:?} refuses it: {reason}");
            let problem = FieldProblem::said(field, message);
            Err(AppError::invalid_fields(code, vec![problem]).unwrap_or(AppError::Internal))
        }
        Err(e) => Err(AppError::invalid(
            "cluster",
            ErrorCode::ClusterUnreachable,
            format!("the cluster {cluster:?} cannot say whether it takes this account now: {e}"),
        )),
    }
}

/// A Slurm account or QoS name: what `sbatch` takes as one word.
fn slurm_name(value: &str) -> bool {
    (1..=64).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::people;

    #[tokio::test]
    async fn only_admins_administer() {
        let (_dir, db, [admin, user]) = people(["root", "user"]).await;
        assert!(admin.is_admin, "first account is admin");
        assert_eq!(settings(&db, &user).await.unwrap_err(), AppError::Forbidden);
        assert_eq!(
            list_users(&db, &user).await.unwrap_err(),
            AppError::Forbidden
        );
        let off = SettingsChange {
            signup_enabled: Some(false),
            ..Default::default()
        };
        assert_eq!(
            update_settings(&db, &user, off.clone(), &[])
                .await
                .unwrap_err(),
            AppError::Forbidden
        );
        let changed = update_settings(&db, &admin, off, &[]).await.unwrap();
        assert!(!changed.signup_enabled && !changed.allow_pickled_weights);
        let allowed = SettingsChange {
            allow_pickled_weights: Some(true),
            ..Default::default()
        };
        let changed = update_settings(&db, &admin, allowed, &[]).await.unwrap();
        assert!(
            !changed.signup_enabled && changed.allow_pickled_weights,
            "an unnamed setting is kept"
        );
        assert_eq!(settings(&db, &admin).await.unwrap(), changed);
        let zero = SettingsChange {
            max_replicas: Some(0),
            signup_enabled: Some(true),
            ..Default::default()
        };
        let e = update_settings(&db, &admin, zero, &[]).await.unwrap_err();
        assert_eq!(e.code(), "cap_invalid");
        assert_eq!(
            settings(&db, &admin).await.unwrap(),
            changed,
            "nothing changed"
        );
        let late = crate::accounts::Attempt {
            username: "late",
            password: "long enough pw",
            ip: None,
        };
        let e = crate::accounts::sign_up(&db, &Default::default(), late)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "signup_disabled");
        assert!(
            set_user_disabled(&db, &admin, user.user_id, true)
                .await
                .unwrap()
                .disabled
        );
        assert_eq!(
            set_user_disabled(&db, &admin, admin.user_id, true)
                .await
                .unwrap_err()
                .code(),
            "cannot_disable_self"
        );
        assert_eq!(
            set_user_disabled(&db, &admin, UserId::new(999), true)
                .await
                .unwrap_err(),
            AppError::NotFound
        );
        assert_eq!(list_users(&db, &admin).await.unwrap().len(), 2);
    }
}

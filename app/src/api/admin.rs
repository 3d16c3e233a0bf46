//! Instance administration: settings and accounts. The domain refuses callers who are not admins.

use contracts::ids::UserId;
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::ids::WorkspaceId;
use contracts::types::{
    ClusterAccount, InstanceSettings, SharedDirCheck, UserAccount, WorkspaceClusterAccount,
    WorkspaceGpuQuota,
};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, contracts::types::SettingsChange, domain::admin};

// `name`: the default struct name would collide with `types::InstanceSettings`.
#[server(name = GetInstanceSettings, prefix = "/rpc", endpoint = "instance_settings")]
pub async fn instance_settings() -> Result<InstanceSettings, AppError> {
    as_caller(|s, a| async move { admin::settings(&s.db, &a).await }).await
}

#[server(prefix = "/rpc", endpoint = "set_signup_enabled")]
pub async fn set_signup_enabled(enabled: bool) -> Result<InstanceSettings, AppError> {
    change_settings(|change| change.signup_enabled = Some(enabled)).await
}

#[server(prefix = "/rpc", endpoint = "set_allow_pickled_weights")]
pub async fn set_allow_pickled_weights(allowed: bool) -> Result<InstanceSettings, AppError> {
    change_settings(|change| change.allow_pickled_weights = Some(allowed)).await
}

/// `admins_only`: only instance admins without a company identity may sign in with a password.
#[server(prefix = "/rpc", endpoint = "set_password_sign_in")]
pub async fn set_password_sign_in(admins_only: bool) -> Result<InstanceSettings, AppError> {
    use contracts::identity::PasswordSignIn;
    let who = if admins_only {
        PasswordSignIn::Admins
    } else {
        PasswordSignIn::Everyone
    };
    change_settings(|change| change.password_sign_in = Some(who)).await
}

/// `mirror` empty removes the mirror.
#[server(prefix = "/rpc", endpoint = "set_registry_mirror")]
pub async fn set_registry_mirror(mirror: String) -> Result<InstanceSettings, AppError> {
    change_settings(|change| change.registry_mirror = Some(mirror)).await
}

/// The four caps at once, as the admin page's form sends them (text, checked here and in the domain:
/// each refusal names its field).
#[server(prefix = "/rpc", endpoint = "set_caps")]
pub async fn set_caps(
    max_running_environments: String,
    max_replicas: String,
    max_uploads_per_user: String,
    max_streams_per_user: String,
) -> Result<InstanceSettings, AppError> {
    let number = |field: &str, text: &str| -> Result<u32, AppError> {
        text.trim().parse().map_err(|_| {
            AppError::invalid(
                field,
                contracts::error::ErrorCode::CapInvalid,
                format!(
                    "{field} must be a whole number between 1 and {}",
                    contracts::types::MAX_CAP
                ),
            )
        })
    };
    let caps = [
        number("max_running_environments", &max_running_environments)?,
        number("max_replicas", &max_replicas)?,
        number("max_uploads_per_user", &max_uploads_per_user)?,
        number("max_streams_per_user", &max_streams_per_user)?,
    ];
    change_settings(|change| {
        change.max_running_environments = Some(caps[0]);
        change.max_replicas = Some(caps[1]);
        change.max_uploads_per_user = Some(caps[2]);
        change.max_streams_per_user = Some(caps[3]);
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "list_gpu_quotas")]
pub async fn list_gpu_quotas() -> Result<Vec<WorkspaceGpuQuota>, AppError> {
    as_caller(|s, a| async move { admin::gpu_quotas(&s.db, &a).await }).await
}

/// `max_gpus` empty removes the workspace's quota.
#[server(prefix = "/rpc", endpoint = "set_gpu_quota")]
pub async fn set_gpu_quota(
    workspace_id: WorkspaceId,
    max_gpus: String,
) -> Result<Option<u32>, AppError> {
    let max_gpus = match max_gpus.trim() {
        "" => None,
        text => Some(text.parse::<u32>().map_err(|_| {
            AppError::invalid(
                "max_gpus",
                contracts::error::ErrorCode::QuotaInvalid,
                format!(
                    "max_gpus must be a whole number up to {}, or empty for no quota",
                    contracts::types::MAX_GPU_QUOTA
                ),
            )
        })?),
    };
    as_caller(|s, a| async move { admin::set_gpu_quota(&s.db, &a, workspace_id, max_gpus).await })
        .await
}

/// Changes the one setting `set` names, leaving the others as they are.
#[cfg(feature = "ssr")]
async fn change_settings(
    set: impl FnOnce(&mut SettingsChange),
) -> Result<InstanceSettings, AppError> {
    let mut change = SettingsChange::default();
    set(&mut change);
    as_caller(|s, a| async move {
        admin::update_settings(&s.db, &a, change, &s.security.registry_mirror_hosts).await
    })
    .await
}

#[server(prefix = "/rpc", endpoint = "list_users")]
pub async fn list_users() -> Result<Vec<UserAccount>, AppError> {
    as_caller(|s, a| async move { admin::list_users(&s.db, &a).await }).await
}

#[server(prefix = "/rpc", endpoint = "set_user_disabled")]
pub async fn set_user_disabled(user_id: UserId, disabled: bool) -> Result<UserAccount, AppError> {
    as_caller(|s, a| async move { admin::set_user_disabled(&s.db, &a, user_id, disabled).await })
        .await
}

#[server(prefix = "/rpc", endpoint = "list_cluster_accounts")]
pub async fn list_cluster_accounts(
    cluster: String,
) -> Result<Vec<WorkspaceClusterAccount>, AppError> {
    as_caller(|s, a| async move {
        admin::list_cluster_accounts(&s.db, &s.jobs.executors, &a, &cluster).await
    })
    .await
}

/// Empty `account` or `qos` is none: both empty removes the mapping.
#[server(prefix = "/rpc", endpoint = "set_cluster_account")]
pub async fn set_cluster_account(
    workspace_id: WorkspaceId,
    cluster: String,
    account: String,
    qos: String,
) -> Result<ClusterAccount, AppError> {
    let given = |v: String| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let account = ClusterAccount {
        account: given(account),
        qos: given(qos),
    };
    as_caller(|s, a| async move {
        admin::set_cluster_account(
            &s.db,
            &s.jobs.executors,
            &a,
            workspace_id,
            &cluster,
            account,
        )
        .await
    })
    .await
}

/// Runs the shared-directory preflight on `cluster` now (a batch job per partition).
#[server(prefix = "/rpc", endpoint = "check_cluster")]
pub async fn check_cluster(cluster: String) -> Result<SharedDirCheck, AppError> {
    as_caller(|s, a| async move { admin::check_cluster(&s.jobs.executors, &a, &cluster).await })
        .await
}

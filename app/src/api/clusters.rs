//! Clusters an instance admin registers and removes from the admin page (see `domain::admin::clusters`).
// A server function takes one argument per field of the form it answers (`ActionForm` sends them
// flat), and the registration form has twelve.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{ClusterSshKey, ClusterView};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::admin};

/// Registers a cluster from the admin page's form: `reach` is `local` (with `slurm_conf`, empty: the
/// host's) or `ssh` (with `destination`, `port` and `known_hosts`); numbers that do not parse are
/// refused at their field. The domain trims the words and takes an empty one as none.
#[server(prefix = "/rpc", endpoint = "register_cluster")]
pub async fn register_cluster(
    name: String,
    reach: String,
    slurm_conf: String,
    destination: String,
    port: String,
    known_hosts: String,
    partition: String,
    account: String,
    qos: String,
    cpus: String,
    memory_mb: String,
    gpu_stand_ins: Option<String>,
) -> Result<ClusterView, AppError> {
    use contracts::error::ErrorCode;
    use contracts::types::{ClusterReach, ClusterRegistration};
    fn number<N: std::str::FromStr>(field: &str, text: &str) -> Result<N, AppError> {
        text.trim().parse().map_err(|_| {
            AppError::invalid(
                field,
                ErrorCode::ClusterSettingsInvalid,
                format!("{field} must be a whole number"),
            )
        })
    }
    let reach = match reach.as_str() {
        "ssh" => ClusterReach::Ssh {
            destination,
            port: number("reach.port", &port)?,
            known_hosts,
        },
        _ => ClusterReach::Local {
            slurm_conf: Some(slurm_conf),
        },
    };
    let registration = ClusterRegistration {
        name,
        reach,
        partition: Some(partition),
        account: Some(account),
        qos: Some(qos),
        cpus: number("cpus", &cpus)?,
        memory_mb: number("memory_mb", &memory_mb)?,
        gpu_stand_ins: gpu_stand_ins.is_some(),
    };
    as_caller(|s, a| async move {
        let executors = &s.jobs.executors;
        admin::clusters::register(&s.db, &s.storage, executors, &a, registration).await
    })
    .await
}

/// Removes a registered cluster with nothing of this server still running there.
#[server(prefix = "/rpc", endpoint = "remove_cluster")]
pub async fn remove_cluster(cluster: String) -> Result<(), AppError> {
    as_caller(|s, a| async move {
        admin::clusters::remove(&s.db, &s.storage, &s.jobs.executors, &a, &cluster).await
    })
    .await
}

/// The public key this server signs in to login nodes with.
// `name`: the default struct name would collide with `types::ClusterSshKey`.
#[server(name = GetClusterSshKey, prefix = "/rpc", endpoint = "cluster_ssh_key")]
pub async fn cluster_ssh_key() -> Result<ClusterSshKey, AppError> {
    as_caller(|s, a| async move { admin::clusters::ssh_key(&s.storage, &a).await }).await
}

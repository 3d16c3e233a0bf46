//! Clusters an instance admin registers from the dashboard, beside the one a server may be given in
//! its settings. A registration is checked all the way before anything is kept: its fields, then the
//! cluster itself (its controller answers through the tools as reached, and the default partition is
//! one it has). Only then is it recorded, its files written and its executor added, so a refused
//! registration leaves nothing behind. The shared-directory check follows in the background, as at
//! every start; work for a partition whose nodes fail it is refused at submission.
//!
//! Over SSH the server signs in with a key of its own ([`ssh_key`]), made once in its data directory:
//! the private half never leaves the server, and the admin adds the public half to the login node. The
//! login node's host keys are given with the registration and are the only ones trusted.
//!
//! A cluster is removed only when nothing recorded may still run there (a job, an evaluation, a
//! replica), since the server follows work by the cluster's name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::clusters::reach::Reach;
use base64::Engine as _;
use contracts::error::{internal, AppError, ErrorCode, FieldProblem, Rule};
use contracts::types::{ClusterReach, ClusterRegistration, ClusterSshKey, ClusterView};
use sqlx::SqlitePool;

use super::{refused_by_cluster, require_admin, slurm_name};
use crate::audit::{self, Entry};
use crate::auth::Actor;
use crate::db::write_tx;
use crate::executor::{slurm, Executors};
use crate::storage::Storage;

/// The longest cluster name: it ends up in job names, paths and the dashboard.
const NAME_MAX: usize = 32;
/// The most CPUs and memory a unit may be set to ask for: beyond any node.
const CPUS_MAX: i64 = 4096;
const MEMORY_MB_MAX: i64 = 64 * 1024 * 1024;
/// The longest `known_hosts` text taken: a login node has a few keys.
const KNOWN_HOSTS_MAX: usize = 64 * 1024;

/// The folder of the server's cluster files: its SSH key, and one folder per registered cluster with
/// the host keys it trusts there.
fn clusters_dir(storage: &Storage) -> PathBuf {
    storage.data_dir.join("clusters")
}

fn key_path(storage: &Storage) -> PathBuf {
    clusters_dir(storage).join("id_ed25519")
}

/// Registers the cluster `reg` describes, once it answered; its view.
pub async fn register(
    db: &SqlitePool,
    storage: &Arc<Storage>,
    executors: &Executors,
    actor: &Actor,
    reg: ClusterRegistration,
) -> Result<ClusterView, AppError> {
    require_admin(actor)?;
    let reg = checked(reg)?;
    if executors.slurm_named(&reg.name).is_some() {
        return Err(name_taken(&reg.name));
    }
    // The host keys are written where the cluster's files will be only once it answered; until then in
    // a folder of this attempt alone, removed whatever the outcome.
    let attempt =
        clusters_dir(storage).join(format!(".new-{}", hex::encode(rand::random::<[u8; 8]>())));
    let outcome = match prepare(storage, &reg.reach, &attempt).await {
        Ok(()) => connect(db, storage, executors, actor, &reg, &attempt).await,
        Err(e) => Err(e),
    };
    let _ = tokio::fs::remove_dir_all(&attempt).await;
    let slurm = outcome?;
    let view = slurm.view().await;
    slurm.spawn_shared_dir_check();
    tracing::info!(
        cluster = reg.name,
        reached_by = view.reached_by,
        "cluster registered"
    );
    Ok(view)
}

/// Asks the cluster whether it answers (with its files in `attempt`), has the default partition and
/// takes the account; then records it, moves its files into place and adds it to the executors. The
/// executor, once added.
async fn connect(
    db: &SqlitePool,
    storage: &Arc<Storage>,
    executors: &Executors,
    actor: &Actor,
    reg: &ClusterRegistration,
    attempt: &Path,
) -> Result<Arc<slurm::Slurm>, AppError> {
    let reach = reach(storage, &reg.reach, attempt);
    let cluster = ::clusters::slurm::Slurm::new(reach.clone());
    let unreachable = |e: ::clusters::Error| {
        AppError::invalid(
            "reach",
            ErrorCode::ClusterUnreachable,
            format!("the cluster at {} does not answer: {e}", reach.shown()),
        )
    };
    cluster.ping().await.map_err(unreachable)?;
    if let Some(partition) = &reg.partition {
        let known = cluster.partitions().await.map_err(unreachable)?;
        let known = known.into_iter().map(|p| p.name).collect();
        crate::executor::one_of_partitions(&reg.name, partition, known)?;
    }
    if reg.account.is_some() || reg.qos.is_some() {
        let placement = ::clusters::slurm::Placement {
            partition: reg.partition.clone(),
            account: reg.account.clone(),
            qos: reg.qos.clone(),
        };
        let answer = cluster.refusal(&placement).await;
        refused_by_cluster(&reg.name, answer, ErrorCode::ClusterSettingsInvalid)?;
    }

    let folder = clusters_dir(storage).join(&reg.name);
    let mut tx = write_tx(db).await?;
    let reach_json = serde_json::to_string(&reg.reach).map_err(|_| AppError::Internal)?;
    let inserted = sqlx::query(
        "INSERT INTO clusters (name, executor, reach, partition, account, qos, cpus, memory_mb, gpu_stand_ins, created_by, created_at)
         VALUES (?, 'slurm', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&reg.name)
    .bind(&reach_json)
    .bind(&reg.partition)
    .bind(&reg.account)
    .bind(&reg.qos)
    .bind(i64::from(reg.cpus))
    .bind(reg.memory_mb as i64)
    .bind(reg.gpu_stand_ins)
    .bind(actor.user_id)
    .bind(crate::now())
    .execute(&mut *tx)
    .await;
    if let Err(e) = inserted {
        return Err(match e {
            sqlx::Error::Database(d) if d.is_unique_violation() => name_taken(&reg.name),
            e => e.into(),
        });
    }
    let detail = serde_json::json!({ "reach": reg.reach, "partition": reg.partition });
    let entry = Entry::by(actor, None, "cluster.register", "cluster", &reg.name);
    audit::record(&mut tx, entry.detail(detail)).await?;
    // A folder left by a cluster of this name that was removed while the server could not tidy up.
    let _ = tokio::fs::remove_dir_all(&folder).await;
    if tokio::fs::try_exists(attempt).await.unwrap_or(false) {
        tokio::fs::rename(attempt, &folder)
            .await
            .map_err(|e| internal("moving the cluster's host keys into place", e))?;
    }
    let slurm = executor(storage, reg, &folder);
    let Some(added) = executors.add_cluster(slurm) else {
        let _ = tokio::fs::remove_dir_all(&folder).await;
        return Err(name_taken(&reg.name));
    };
    if let Err(e) = tx.commit().await {
        executors.remove_cluster(&reg.name);
        let _ = tokio::fs::remove_dir_all(&folder).await;
        return Err(e.into());
    }
    Ok(added)
}

fn name_taken(name: &str) -> AppError {
    AppError::conflict(
        "name",
        ErrorCode::ClusterNameTaken,
        format!("this server already has a cluster named {name:?}"),
    )
}

/// The executor of a registered cluster whose files are in `folder`.
fn executor(storage: &Arc<Storage>, reg: &ClusterRegistration, folder: &Path) -> slurm::Slurm {
    let settings = slurm::Settings {
        placement: ::clusters::slurm::Placement {
            partition: reg.partition.clone(),
            account: reg.account.clone(),
            qos: reg.qos.clone(),
        },
        cpus: reg.cpus,
        memory_mb: reg.memory_mb,
        gpu_stand_ins: reg.gpu_stand_ins,
        registered: true,
    };
    let cluster = ::clusters::slurm::Slurm::new(reach(storage, &reg.reach, folder));
    slurm::Slurm::new(&reg.name, cluster, storage.clone(), settings)
}

/// How the server reaches the tools `reach` describes, with the cluster's files in `folder`: over SSH
/// with the server's own key, trusting the host keys in `folder/known_hosts`.
fn reach(storage: &Storage, reach: &ClusterReach, folder: &Path) -> Reach {
    match reach {
        ClusterReach::Local { slurm_conf } => Reach::Local {
            slurm_conf: slurm_conf.as_ref().map(PathBuf::from),
        },
        ClusterReach::Ssh {
            destination, port, ..
        } => Reach::Ssh {
            destination: destination.clone(),
            port: *port,
            identity: key_path(storage),
            known_hosts: folder.join("known_hosts"),
        },
    }
}

/// Writes the files [`reach`] needs into `folder`: over SSH, the host keys (and the server's key is
/// made if it has none yet).
async fn prepare(storage: &Storage, reach: &ClusterReach, folder: &Path) -> Result<(), AppError> {
    if let ClusterReach::Ssh { known_hosts, .. } = reach {
        ensure_key(storage).await?;
        write_private(folder, "known_hosts", known_hosts).await?;
    }
    Ok(())
}

/// Writes `text` to `folder/name`, the folder and the file readable by the server alone.
async fn write_private(folder: &Path, name: &str, text: &str) -> Result<(), AppError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let (folder, name, text) = (folder.to_path_buf(), name.to_string(), text.to_string());
    let written = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&folder)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(folder.join(name))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
    })
    .await
    .map_err(|_| AppError::Internal)?;
    written.map_err(|e| internal("writing a cluster's host keys", e))
}

/// The server's SSH key, made on first use (`ssh-keygen`, ed25519, no passphrase: the server signs in
/// unattended); its path.
async fn ensure_key(storage: &Storage) -> Result<PathBuf, AppError> {
    let path = key_path(storage);
    if tokio::fs::try_exists(&path).await.unwrap_or(false) {
        return Ok(path);
    }
    // Made aside and linked into place, so two first uses at once keep one key.
    let aside =
        clusters_dir(storage).join(format!(".key-{}", hex::encode(rand::random::<[u8; 8]>())));
    write_private(&aside, ".keep", "").await?;
    let host = hostname();
    let made = tokio::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C"])
        .arg(format!("paddock@{host}"))
        .arg("-f")
        .arg(aside.join("id_ed25519"))
        .stdin(std::process::Stdio::null())
        .output()
        .await;
    let linked = match made {
        Ok(out) if out.status.success() => {
            let link = |from: &str, to: PathBuf| std::fs::hard_link(aside.join(from), to);
            let public = path.with_extension("pub");
            match link("id_ed25519.pub", public).and_then(|_| link("id_ed25519", path.clone())) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(internal("keeping the server's SSH key", e)),
            }
        }
        Ok(out) => Err(AppError::unavailable(ErrorCode::ClusterUnreachable, format!(
            "ssh-keygen could not make the server's SSH key: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(e) => Err(AppError::unavailable(ErrorCode::ClusterUnreachable, format!(
            "ssh-keygen, which makes the server's SSH key, cannot be run: {e} (install openssh-client)"
        ))),
    };
    let _ = tokio::fs::remove_dir_all(&aside).await;
    linked.map(|()| path)
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "server".into())
}

/// The public half of the server's SSH key (made on first use), for the admin to add to a login node.
pub async fn ssh_key(storage: &Storage, actor: &Actor) -> Result<ClusterSshKey, AppError> {
    require_admin(actor)?;
    let path = ensure_key(storage).await?.with_extension("pub");
    let public_key = tokio::fs::read_to_string(&path)
        .await
        .map_err(|e| internal("reading the server's SSH key", e))?;
    Ok(ClusterSshKey {
        public_key: public_key.trim().to_string(),
    })
}

/// Removes the registered cluster `name`, once nothing recorded may still run there.
pub async fn remove(
    db: &SqlitePool,
    storage: &Arc<Storage>,
    executors: &Executors,
    actor: &Actor,
    name: &str,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let mut tx = write_tx(db).await?;
    let registered: Option<(String,)> = sqlx::query_as("SELECT name FROM clusters WHERE name = ?")
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
    if registered.is_none() {
        return Err(match executors.slurm_named(name) {
            Some(_) => AppError::conflict(
                "cluster",
                ErrorCode::ClusterFromSettings,
                format!("the cluster {name:?} is in the server's settings (--slurm-conf or --slurm-ssh): it goes when they do"),
            ),
            None => AppError::NotFound,
        });
    }
    let (jobs, evaluations, replicas): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM jobs WHERE cluster = ?1 AND finished_at IS NULL),
                (SELECT COUNT(*) FROM evaluations WHERE cluster = ?1 AND status IN ('queued', 'running')),
                (SELECT COUNT(*) FROM endpoints e WHERE e.cluster = ?1 AND (e.status IN ('starting', 'ready')
                   OR EXISTS (SELECT 1 FROM endpoint_replicas r WHERE r.endpoint_id = e.id AND r.cluster_job IS NOT NULL)))",
    )
    .bind(name)
    .fetch_one(&mut *tx)
    .await?;
    if jobs + evaluations + replicas > 0 {
        return Err(AppError::conflict(
            "cluster",
            ErrorCode::ClusterInUse,
            format!("the cluster {name:?} still has work of this server: {jobs} job(s), {evaluations} evaluation(s) and {replicas} endpoint(s) not yet ended; cancel or undeploy them first"),
        ));
    }
    for table in [
        "clusters WHERE name",
        "workspace_cluster_accounts WHERE cluster",
    ] {
        sqlx::query(&format!("DELETE FROM {table} = ?"))
            .bind(name)
            .execute(&mut *tx)
            .await?;
    }
    audit::record(
        &mut tx,
        Entry::by(actor, None, "cluster.remove", "cluster", name),
    )
    .await?;
    tx.commit().await?;
    executors.remove_cluster(name);
    let _ = tokio::fs::remove_dir_all(clusters_dir(storage).join(name)).await;
    tracing::info!(cluster = name, "cluster removed");
    Ok(())
}

/// Adds the registered clusters to `executors` at start, without asking them anything (one that does
/// not answer says so on the admin page, and work for it waits or is refused as for any cluster). One
/// whose name the server's settings already give is left out, with a warning.
pub async fn load(
    db: &SqlitePool,
    storage: &Arc<Storage>,
    executors: &Executors,
) -> Result<(), AppError> {
    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        i64,
        i64,
        bool,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT name, reach, partition, account, qos, cpus, memory_mb, gpu_stand_ins FROM clusters ORDER BY created_at, name",
    )
    .fetch_all(db)
    .await?;
    for (name, reach, partition, account, qos, cpus, memory_mb, gpu_stand_ins) in rows {
        let Ok(reach) = serde_json::from_str::<ClusterReach>(&reach) else {
            tracing::warn!(
                cluster = name,
                "the recorded cluster's reach does not parse; left out"
            );
            continue;
        };
        let reg = ClusterRegistration {
            name: name.clone(),
            reach,
            partition,
            account,
            qos,
            cpus: u32::try_from(cpus).unwrap_or(1),
            memory_mb: u64::try_from(memory_mb).unwrap_or(1),
            gpu_stand_ins,
        };
        let folder = clusters_dir(storage).join(&name);
        if executors
            .add_cluster(executor(storage, &reg, &folder))
            .is_none()
        {
            tracing::warn!(
                cluster = name,
                "a registered cluster has the name of the one in the server's settings; the settings' is used"
            );
        }
    }
    Ok(())
}

/// `reg` with its words trimmed and empty ones dropped, when every field follows its rule; every
/// broken rule otherwise, at its field.
fn checked(mut reg: ClusterRegistration) -> Result<ClusterRegistration, AppError> {
    let mut problems = Vec::new();
    reg.name = reg.name.trim().to_string();
    if !cluster_name(&reg.name) {
        let message =
            format!("a cluster's name is 1–{NAME_MAX} of a-z, 0-9 and '-', starting with a letter");
        problems.push(FieldProblem::new("name", Rule::ClusterName, message));
    }
    for (field, value) in [
        ("partition", &mut reg.partition),
        ("account", &mut reg.account),
        ("qos", &mut reg.qos),
    ] {
        *value = value
            .take()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty());
        if value.as_deref().is_some_and(|v| !slurm_name(v)) {
            let message = format!("{field} must be 1–64 letters, digits, '_', '-' or '.'");
            problems.push(FieldProblem::new(field, Rule::SchedulerName, message));
        }
    }
    let between = |field: &str, value: i64, max: i64, problems: &mut Vec<FieldProblem>| {
        if !(1..=max).contains(&value) {
            let rule = Rule::Between { min: 1, max };
            problems.push(FieldProblem::new(
                field,
                rule,
                format!("{field} must be 1–{max}"),
            ));
        }
    };
    between("cpus", i64::from(reg.cpus), CPUS_MAX, &mut problems);
    let memory = i64::try_from(reg.memory_mb).unwrap_or(i64::MAX);
    between("memory_mb", memory, MEMORY_MB_MAX, &mut problems);
    match &mut reg.reach {
        ClusterReach::Local { slurm_conf } => {
            *slurm_conf = slurm_conf
                .take()
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty());
            if let Some(conf) = slurm_conf.as_deref() {
                if let Err(why) = slurm_conf_file(conf) {
                    let problem = FieldProblem::new("reach.slurm_conf", Rule::ReadableFile, why);
                    problems.push(problem);
                }
            }
        }
        ClusterReach::Ssh {
            destination,
            port,
            known_hosts,
        } => {
            *destination = destination.trim().to_string();
            if !ssh_destination(destination) {
                problems.push(FieldProblem::new(
                    "reach.destination",
                    Rule::SshDestination,
                    "the login node is user@host: a user name and a host name or address, nothing else",
                ));
            }
            between("reach.port", i64::from(*port), 65535, &mut problems);
            if let Err((line, why)) = known_host_lines(known_hosts) {
                let rule = Rule::KnownHosts { line };
                problems.push(FieldProblem::new("reach.known_hosts", rule, why));
            }
        }
    }
    match AppError::invalid_fields(ErrorCode::ClusterSettingsInvalid, problems) {
        Some(refused) => Err(refused),
        None => Ok(reg),
    }
}

/// A cluster's name: 1–32 of a-z, 0-9 and `-`, starting with a letter (it becomes part of folder
/// names and is what people type in a job's spec).
fn cluster_name(name: &str) -> bool {
    name.len() <= NAME_MAX
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The most a `slurm.conf` may weigh (real ones are a few kilobytes; nodes listed one per line, tens).
const SLURM_CONF_MAX_BYTES: u64 = 4 << 20;

/// A `slurm.conf` path: absolute, a regular file every user may read (Slurm requires that of its
/// configuration, which its daemons and every user's tools read; a file only the server's user may read,
/// such as `/etc/shadow`, is none), and text that sets `ClusterName` or the controller, as every
/// `slurm.conf` does. Refusals say which of these failed and never quote the file.
fn slurm_conf_file(conf: &str) -> Result<(), String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let path = Path::new(conf);
    if !path.is_absolute() {
        return Err(format!("{conf:?} is not an absolute path"));
    }
    // Non-blocking: a FIFO at the path is refused below instead of waiting for a writer.
    let file = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().read(true),
        libc::O_NONBLOCK,
    )
    .open(path)
    .map_err(|e| format!("{conf} cannot be read here: {}", e.kind()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{conf} cannot be read here: {}", e.kind()))?;
    if !meta.is_file() {
        return Err(format!("{conf} is not a file"));
    }
    if meta.permissions().mode() & 0o004 == 0 {
        return Err(format!(
            "{conf} is not readable by every user, as Slurm needs its slurm.conf to be (chmod 644)"
        ));
    }
    let mut text = String::new();
    let read = file
        .take(SLURM_CONF_MAX_BYTES + 1)
        .read_to_string(&mut text);
    let sets = |key: &str| {
        text.lines().any(|line| {
            line.trim_start()
                .split_once('=')
                .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(key))
        })
    };
    let looks_like_slurm = read.is_ok()
        && (text.len() as u64) <= SLURM_CONF_MAX_BYTES
        && ["ClusterName", "SlurmctldHost", "ControlMachine"]
            .iter()
            .any(|k| sets(k));
    if !looks_like_slurm {
        return Err(format!(
            "{conf} is not a slurm.conf: no ClusterName= or SlurmctldHost= line in at most 4 MiB of text"
        ));
    }
    Ok(())
}

/// `user@host`, both parts plain words: nothing `ssh` would read as an option or a second argument.
fn ssh_destination(destination: &str) -> bool {
    let Some((user, host)) = destination.split_once('@') else {
        return false;
    };
    let user_ok = !user.is_empty()
        && user.len() <= 32
        && user.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.starts_with(|c: char| c.is_ascii_alphanumeric())
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c));
    user_ok && host_ok
}

/// Checks `known_hosts` text as `ssh-keyscan` prints it: each line that is not blank or a comment is
/// `[marker] hosts key-type base64-key [comment]`; at least one key. Says the first bad line (`None`:
/// no line is, there is no key).
fn known_host_lines(text: &str) -> Result<(), (Option<u64>, String)> {
    if text.len() > KNOWN_HOSTS_MAX {
        // Counted in bytes: the limit may fall inside a character.
        let line = 1 + text.as_bytes()[..KNOWN_HOSTS_MAX]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        return Err((
            Some(line),
            format!("at most {KNOWN_HOSTS_MAX} bytes of host keys"),
        ));
    }
    let mut keys = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace().peekable();
        if words.peek().is_some_and(|w| w.starts_with('@')) {
            words.next();
        }
        let (hosts, kind, key) = (words.next(), words.next(), words.next());
        let known_kind = kind.is_some_and(|k| {
            k.starts_with("ssh-") || k.starts_with("ecdsa-sha2-") || k.starts_with("sk-")
        });
        let decodes =
            key.is_some_and(|k| base64::engine::general_purpose::STANDARD.decode(k).is_ok());
        if hosts.is_none() || !known_kind || !decodes {
            let line = n as u64 + 1;
            return Err((
                Some(line),
                format!("line {line}: not a host key (hosts, a key type such as ssh-ed25519, the key in base64), as ssh-keyscan prints it"),
            ));
        }
        keys += 1;
    }
    if keys == 0 {
        let message = "no host key: paste the login node's keys as ssh-keyscan prints them";
        return Err((None, message.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_is_refused_at_every_field_it_gets_wrong() {
        let reg = ClusterRegistration {
            name: "Lab 1".into(),
            reach: ClusterReach::Ssh {
                destination: "-oProxyCommand=x@host".into(),
                port: 0,
                known_hosts: "[127.0.0.1]:22 ssh-ed25519 AAAA\nlogin ssh-ed25519 not-base64!"
                    .into(),
            },
            partition: Some("gpu part".into()),
            account: Some("  ".into()),
            qos: None,
            cpus: 0,
            memory_mb: 100,
            gpu_stand_ins: false,
        };
        let AppError::Invalid { problems, .. } = checked(reg).unwrap_err() else {
            panic!("invalid")
        };
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "name",
                "partition",
                "cpus",
                "reach.destination",
                "reach.port",
                "reach.known_hosts"
            ]
        );
        assert_eq!(problems[5].rule, Some(Rule::KnownHosts { line: Some(2) }));
    }

    #[test]
    fn host_keys_past_the_limit_are_refused_at_their_line_even_inside_a_character() {
        // 3-byte characters, so the limit falls inside one.
        let text = format!(
            "ab ssh-ed25519 AAAA\n{}",
            "键".repeat(KNOWN_HOSTS_MAX / 3 + 1)
        );
        assert!(!text.is_char_boundary(KNOWN_HOSTS_MAX));
        let (line, _) = known_host_lines(&text).unwrap_err();
        assert_eq!(line, Some(2));
    }

    #[test]
    fn a_good_registration_is_trimmed() {
        let reg = ClusterRegistration {
            name: " lab-2 ".into(),
            reach: ClusterReach::Ssh {
                destination: " ops@login.example.org ".into(),
                port: 2222,
                known_hosts: "# ssh-keyscan\n[login.example.org]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKE=\n".into(),
            },
            partition: Some(" gpu ".into()),
            account: Some("".into()),
            qos: None,
            cpus: 4,
            memory_mb: 16000,
            gpu_stand_ins: false,
        };
        let reg = checked(reg).unwrap();
        assert_eq!(reg.name, "lab-2");
        assert_eq!((reg.partition.as_deref(), reg.account), (Some("gpu"), None));
        let ClusterReach::Ssh { destination, .. } = reg.reach else {
            panic!("ssh")
        };
        assert_eq!(destination, "ops@login.example.org");
    }

    #[test]
    fn a_local_slurm_conf_must_be_an_absolute_path_to_a_file() {
        assert!(slurm_conf_file("slurm.conf").is_err());
        assert!(slurm_conf_file("/").unwrap_err().contains("not a file"));
        assert!(slurm_conf_file("/nonexistent/slurm.conf").is_err());
        let dir = tempfile::tempdir().unwrap();
        let conf = |name: &str, text: &str, mode: u32| {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path.to_str().unwrap().to_string()
        };
        let good = conf(
            "slurm.conf",
            "# comment\nClusterName=c1\nSlurmctldHost=ctl\n",
            0o644,
        );
        assert!(slurm_conf_file(&good).is_ok());
        let secret = "root:$6$SECRET-HASH:19000:0:99999:7:::\n";
        let shadow = conf("shadow", secret, 0o640);
        let err = slurm_conf_file(&shadow).unwrap_err();
        assert!(
            err.contains("not readable by every user") && !err.contains("SECRET"),
            "{err}"
        );
        let readable = conf("passwd", secret, 0o644);
        let err = slurm_conf_file(&readable).unwrap_err();
        assert!(
            err.contains("not a slurm.conf") && !err.contains("SECRET"),
            "{err}"
        );
    }
}

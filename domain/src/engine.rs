//! The container engine as the app sees it: a Docker connection that may be missing, this installation's
//! instance label, the host's GPUs and the settings of the background loops. Docker is optional by design:
//! when no daemon answers, [`Engine::docker`] returns `docker_unavailable` (HTTP 503), the dashboard says
//! so and disables environment actions, and everything else keeps working. A missing daemon is retried on
//! the next use and by the reconcile loop, so starting `dockerd` later needs no restart of Paddock.

use std::path::PathBuf;
use std::time::Duration;

use containers::preflight::{Detected, GpuInfo};
use containers::Docker;
use sqlx::SqlitePool;
use tokio::sync::RwLock;

use futures_util::StreamExt;

use super::audit::{self, Entry};
use super::auth::Actor;
use super::image_archives;
use contracts::error::{AppError, ErrorCode, FieldProblem};
use contracts::types::{CatalogImage, DockerStatus, GpuSummary, RuntimeNeeds};

/// What to do with a container that carries this installation's labels but belongs to no environment
/// in the database (its row was deleted while the server was down, or the database was restored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanPolicy {
    /// Remove it (the default: nothing runs that nobody can see or stop).
    Remove,
    /// Leave it alone and log it.
    Keep,
    /// Give a running container back to its environment when that environment exists and has no
    /// container on record; otherwise keep it.
    Adopt,
}

impl std::str::FromStr for OrphanPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "remove" => Ok(OrphanPolicy::Remove),
            "keep" => Ok(OrphanPolicy::Keep),
            "adopt" => Ok(OrphanPolicy::Adopt),
            other => Err(format!(
                "{other:?} is not an orphan policy; use remove, keep or adopt"
            )),
        }
    }
}

/// Settings of the environment machinery, from the server's configuration.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Docker endpoint (`unix:///…`, `tcp://…`); `None` uses `DOCKER_HOST` or the local socket.
    pub docker_host: Option<String>,
    /// Stop running environments without terminal or exec activity for this long; `None` never does.
    pub idle_stop: Option<Duration>,
    /// How often the database is reconciled with Docker (and idle environments are stopped).
    pub reconcile_every: Duration,
    pub orphans: OrphanPolicy,
    /// The binary the runtime layer copies into images: the running `paddock` unless configured.
    pub runtime_binary: Option<PathBuf>,
    /// Host directory under which workspace volumes keep their files (`<data-dir>/volumes`), so that
    /// datasets and checkpoints are plain files for Paddock and `/workspace` for containers. `None`
    /// leaves them in Docker's own storage (when Docker runs on another machine).
    pub volumes_dir: Option<PathBuf>,
    /// Host directory of the workspaces' stores (`<data-dir>/store`, see `storage`), bound read-only
    /// into their containers at `/paddock`. `None`: not bound.
    pub stores_dir: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            docker_host: None,
            idle_stop: Some(Duration::from_secs(2 * 3600)),
            reconcile_every: Duration::from_secs(30),
            orphans: OrphanPolicy::Remove,
            runtime_binary: None,
            volumes_dir: None,
            stores_dir: None,
        }
    }
}

pub struct Engine {
    pub config: EngineConfig,
    /// This installation's `paddock.instance` label (from the database, see the migration).
    pub instance: String,
    /// The connection, or why there is none. Replaced on reconnect; readers clone the handle.
    docker: RwLock<Result<Docker, String>>,
    /// The host's GPUs as `nvidia-smi` last reported them, and why any was left out; empty without GPUs.
    gpus: RwLock<Detected>,
    /// When a reconnect was last tried from a request: without Docker every page that asks would
    /// otherwise wait for a connection attempt.
    last_attempt: std::sync::Mutex<Option<std::time::Instant>>,
}

/// Requests retry a missing Docker at most this often; the reconcile loop retries on its own tick.
const RECONNECT_EVERY: Duration = Duration::from_secs(5);

/// Whether going from `before` to `after` is news for the log: Docker came or went, or the reason it is
/// unavailable is a different one (the socket appeared but refuses us, say).
fn state_changed<T, U>(before: &Result<T, String>, after: &Result<U, String>) -> bool {
    match (before, after) {
        (Ok(_), Ok(_)) => false,
        (Err(a), Err(b)) => a != b,
        _ => true,
    }
}

impl Engine {
    /// Reads (or creates) the instance label and tries Docker once; never fails for a missing daemon.
    pub async fn start(db: &SqlitePool, config: EngineConfig) -> Result<Engine, AppError> {
        let instance = instance_label(db).await?;
        let engine = Engine {
            config,
            instance,
            docker: RwLock::new(Err("not connected yet".into())),
            gpus: RwLock::new(Detected::default()),
            last_attempt: std::sync::Mutex::new(None),
        };
        engine.reconnect().await;
        engine.refresh_gpus().await;
        super::gpus::adopt_index_leases(db, &engine.detected(false).await.gpus).await?;
        Ok(engine)
    }

    /// Connects anew; keeps the reason when that fails. Returns whether Docker is available. Requests and
    /// the reconcile loop retry every few seconds while Docker is down, so the log speaks only when the
    /// state changes (see [`state_changed`]), not at every retry.
    pub async fn reconnect(&self) -> bool {
        let result = match &self.config.docker_host {
            Some(host) => Docker::connect_to(host).await,
            None => Docker::connect().await,
        }
        .map_err(|e| e.to_string());
        let available = result.is_ok();
        let mut state = self.docker.write().await;
        let changed = state_changed(&state, &result);
        match &result {
            Ok(_) if changed => tracing::info!(instance = %self.instance, "Docker is available"),
            Err(e) if changed => {
                tracing::warn!(error = %e, "Docker is unavailable; environment actions are disabled")
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "Docker is still unavailable"),
        }
        *state = result;
        available
    }

    /// The Docker handle, or `docker_unavailable`. A missing connection is retried once here, so the
    /// first action after `dockerd` comes up works without waiting for the reconcile loop.
    pub async fn docker(&self) -> Result<Docker, AppError> {
        if let Ok(docker) = &*self.docker.read().await {
            return Ok(docker.clone());
        }
        let retry = {
            let mut last = self.last_attempt.lock().unwrap_or_else(|p| p.into_inner());
            let due = last.is_none_or(|at| at.elapsed() >= RECONNECT_EVERY);
            if due {
                *last = Some(std::time::Instant::now());
            }
            due
        };
        if retry {
            self.reconnect().await;
        }
        match &*self.docker.read().await {
            Ok(docker) => Ok(docker.clone()),
            Err(why) => Err(unavailable(why)),
        }
    }

    /// Pings the current connection (reconnecting when it is gone); for the periodic loop.
    pub async fn check(&self) -> bool {
        let current = self.docker.read().await.clone();
        match current {
            Ok(docker) => match docker.ping().await {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "Docker stopped answering");
                    *self.docker.write().await = Err(e.to_string());
                    false
                }
            },
            Err(_) => self.reconnect().await,
        }
    }

    /// Asks `nvidia-smi` again (at start and on every reconcile tick: a GPU can be lost, a driver
    /// reloaded). A host without it simply has no GPUs. What changed is logged, once.
    pub async fn refresh_gpus(&self) {
        let found = match containers::preflight::gpus::detect().await {
            Ok(found) => found,
            Err(why) => Detected {
                gpus: Vec::new(),
                left_out: vec![why],
            },
        };
        let mut current = self.gpus.write().await;
        if *current == found {
            return;
        }
        let usable: Vec<String> = found
            .gpus
            .iter()
            .map(|g| format!("{} {} {}", g.index, g.name, g.uuid))
            .collect();
        tracing::info!(gpus = ?usable, "GPUs detected");
        let before = current.clone().for_runtime(hostcaps::cuda::cuda_runtime);
        let after = found.clone().for_runtime(hostcaps::cuda::cuda_runtime);
        for why in after
            .left_out
            .iter()
            .filter(|w| !before.left_out.contains(w))
        {
            tracing::warn!(reason = %why, "a GPU is left out");
        }
        *current = found;
    }

    /// Replaces the host's GPUs, for tests of preflight and the inventory on machines without GPUs.
    #[cfg(test)]
    pub(crate) async fn set_gpus(&self, gpus: Detected) {
        *self.gpus.write().await = gpus;
    }

    /// The GPUs Paddock's own runtime can run on: where jobs and endpoint replicas go.
    pub async fn gpus(&self) -> Vec<GpuInfo> {
        self.detected(true).await.gpus
    }

    /// The host's GPUs for work that carries Paddock's runtime (`runtime`: jobs, replicas, environments
    /// with the runtime layer) or not (an environment of its own image alone), and why each other GPU
    /// is left out.
    pub async fn detected(&self, runtime: bool) -> Detected {
        let found = self.gpus.read().await.clone();
        if runtime {
            found.for_runtime(hostcaps::cuda::cuda_runtime)
        } else {
            found
        }
    }

    /// Turns a Docker error into what the caller should see; logs the internal ones.
    pub fn error(&self, context: &str, err: containers::Error) -> AppError {
        map_error(context, err)
    }

    /// What the dashboard shows about the engine: availability, host size, GPUs (with holders) and the
    /// catalog of base images.
    pub async fn status(&self, db: &SqlitePool) -> Result<DockerStatus, AppError> {
        let catalog = containers::catalog::CATALOG
            .iter()
            .map(|b| CatalogImage {
                reference: b.reference.to_string(),
                description: b.description.to_string(),
                cuda: b.cuda.map(str::to_string),
                min_driver: b.min_driver().map(|v| v.to_string()),
                description_zh: b.description_zh.to_string(),
                local: b.local,
                present: false,
                has_apt: b.family.has_apt(),
            })
            .collect();
        let leases = super::gpus::holders(db).await?;
        let detected = self.detected(false).await;
        let any_gpu = !detected.gpus.is_empty();
        let for_runtime = self.detected(true).await;
        let gpus = detected
            .gpus
            .into_iter()
            .map(|g| {
                let (holders, shared) = leases.get(&g.uuid).copied().unwrap_or((0, false));
                GpuSummary {
                    runtime_usable: for_runtime.gpus.iter().any(|r| r.uuid == g.uuid),
                    index: g.index,
                    uuid: g.uuid,
                    name: g.name,
                    driver_version: g.driver_version.to_string(),
                    compute_capability: g.compute_capability.map(|c| c.to_string()),
                    memory_mib: g.memory_mib,
                    holders,
                    shared,
                }
            })
            .collect();
        let mut status = DockerStatus {
            available: false,
            message: None,
            server_version: None,
            host_cpus: None,
            host_memory_bytes: None,
            gpus,
            // Said where there are GPUs to judge by it (reading it loads libtorch's CUDA library).
            runtime: any_gpu
                .then(hostcaps::cuda::cuda_runtime)
                .flatten()
                .map(|r| RuntimeNeeds {
                    cuda: r.version.to_string(),
                    min_driver: r.min_driver().map(|d| d.to_string()),
                    min_compute_capability: r.min_compute_capability().map(ToString::to_string),
                }),
            gpus_left_out: for_runtime.left_out,
            catalog,
        };
        match self.docker().await {
            Ok(docker) => {
                status.available = true;
                if let Ok(version) = docker.api().version().await {
                    status.server_version = version.version;
                }
                if let Ok(limits) = docker.host_limits().await {
                    status.host_cpus = Some(limits.cpus);
                    status.host_memory_bytes = Some(limits.memory_bytes);
                }
                for image in &mut status.catalog {
                    image.present = docker.image_info(&image.reference).await.is_ok();
                }
            }
            Err(e) => status.message = Some(e.to_string()),
        }
        Ok(status)
    }

    /// Loads a `docker save` archive streamed from an admin's upload: how an image reaches a server
    /// that no registry reaches. At most [`MAX_IMAGE_ARCHIVE_BYTES`], and within
    /// [`image_archives::Caps::DEFAULT`]: every chunk also goes to [`image_archives::inspect`] on a
    /// blocking thread, and the body's end reaches Docker only once the whole archive was found within
    /// the caps. A refusal cuts the request, and Docker drops what it had. What Docker loaded, by
    /// reference.
    pub async fn load_images<S, E>(
        &self,
        db: &SqlitePool,
        actor: &Actor,
        archive: S,
    ) -> Result<Vec<String>, AppError>
    where
        S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        if !actor.is_admin {
            return Err(AppError::Forbidden);
        }
        let docker = self.docker().await?;
        let (chunks, inspected) = tokio::sync::mpsc::channel(16);
        let refusal = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
        let inspector = {
            let refusal = refusal.clone();
            tokio::task::spawn_blocking(move || {
                let reader = image_archives::ChunkReader::new(inspected);
                let verdict = image_archives::inspect(reader, &image_archives::Caps::DEFAULT);
                match &verdict {
                    Ok(summary) => tracing::info!(?summary, "image archive within its caps"),
                    Err(why) => {
                        let _ = refusal.set(why.clone());
                    }
                }
                verdict.is_ok()
            })
        };
        let cut = |why: &str| std::io::Error::other(why.to_string());
        let gate = Gate {
            archive: Box::pin(archive),
            chunks: Some(chunks),
            inspector: Some(inspector),
            sent: 0,
        };
        let body = futures_util::stream::unfold(gate, move |mut gate| async move {
            let chunks = gate.chunks.as_ref()?;
            let item = match gate.archive.next().await {
                Some(Ok(chunk)) => {
                    gate.sent += chunk.len() as u64;
                    if gate.sent > MAX_IMAGE_ARCHIVE_BYTES {
                        Err(cut("the archive is larger than the server takes"))
                    } else if chunks.send(chunk.clone()).await.is_err() {
                        Err(cut("the archive is over a cap"))
                    } else {
                        return Some((Ok(chunk), gate));
                    }
                }
                Some(Err(e)) => Err(cut(&e.to_string())),
                None => {
                    gate.chunks = None;
                    let inspector = gate.inspector.take()?;
                    if inspector.await.unwrap_or(false) {
                        return None;
                    }
                    Err(cut("the archive is over a cap"))
                }
            };
            gate.chunks = None;
            Some((item, gate))
        });
        let loaded = docker.load_images(body).await;
        if let Some(why) = refusal.get() {
            return Err(archive_over_cap(why));
        }
        let loaded = match loaded {
            Ok(loaded) if !loaded.is_empty() => loaded,
            Ok(_) => return Err(archive_invalid("Docker found no image in it")),
            Err(containers::Error::DockerUnreachable(why)) => return Err(unavailable(&why)),
            Err(e) => {
                let incident = crate::incident("loading an image archive", e);
                return Err(archive_invalid(&format!(
                    "Docker could not load it (incident {incident} in the server log)"
                )));
            }
        };
        let mut conn = db.acquire().await?;
        let names = loaded.join(", ");
        audit::record(
            &mut conn,
            Entry::by(actor, None, "image.load", "image", &names),
        )
        .await?;
        Ok(loaded)
    }
}

/// The largest image archive an admin may upload: CUDA images with a framework run to 10–20 GB.
pub const MAX_IMAGE_ARCHIVE_BYTES: u64 = 64 << 30;

fn archive_invalid(why: &str) -> AppError {
    AppError::invalid(
        "file",
        ErrorCode::ImageArchiveInvalid,
        format!("this is not an image archive as `docker save` writes it: {why}"),
    )
}

fn archive_over_cap(why: &str) -> AppError {
    AppError::invalid(
        "file",
        ErrorCode::ImageArchiveInvalid,
        format!("this image archive is refused before Docker unpacks it: {why}"),
    )
}

/// An upload on its way to Docker, its chunks shown to the inspector first ([`Engine::load_images`]).
struct Gate<S> {
    archive: std::pin::Pin<Box<S>>,
    /// `None` once the stream has ended, in any way.
    chunks: Option<tokio::sync::mpsc::Sender<bytes::Bytes>>,
    inspector: Option<tokio::task::JoinHandle<bool>>,
    sent: u64,
}

fn unavailable(why: &str) -> AppError {
    AppError::unavailable(
        ErrorCode::DockerUnavailable,
        format!("Docker is not available on this server, so environments cannot be built or started ({why})"),
    )
}

/// The one conversion from the containers crate's error to [`AppError`].
pub fn map_error(context: &str, err: containers::Error) -> AppError {
    use containers::Error as E;
    match err {
        E::DockerUnreachable(why) => unavailable(&why),
        E::InvalidSpec(errors) => spec_invalid(&errors),
        E::NotFound { kind, name } => AppError::Invalid {
            field: None,
            code: ErrorCode::DockerNotFound,
            message: format!("{kind} not found: {name}"),
            problems: Vec::new(),
        },
        E::Conflict(message) => AppError::Conflict {
            field: None,
            code: ErrorCode::DockerConflict,
            message,
            problems: Vec::new(),
        },
        E::Preflight(problems) => AppError::Invalid {
            field: Some("gpus".into()),
            code: ErrorCode::PreflightFailed,
            message: problems.join(" "),
            problems: Vec::new(),
        },
        // The registry's words (a mirror's error page) stay in the log.
        E::PullFailed { image, message } => AppError::invalid(
            "base_image",
            ErrorCode::ImageUnavailable,
            format!(
                "{image} is not on this machine and could not be pulled (incident {} in the server log)",
                crate::incident("pulling a base image", message)
            ),
        ),
        E::BuildFailed { message, .. } => AppError::Invalid {
            field: None,
            code: ErrorCode::BuildFailed,
            message,
            problems: Vec::new(),
        },
        // The engine's own words (paths on the host, daemon internals) go to the log, not to every
        // member of a workspace; the answer names what failed and the incident to look up.
        other @ (E::Host { .. } | E::Docker { .. }) => {
            let incident = crate::incident(context, other);
            AppError::unavailable(
                ErrorCode::DockerError,
                format!(
                    "Docker could not complete this ({context}); the server's log has the details under incident {incident}"
                ),
            )
        }
    }
}

/// Every broken rule of a spec in one error, one problem per field (the form shows each under its
/// field; the message lists them all for API users: "memory: …; gpus: …").
pub fn spec_invalid(errors: &[containers::FieldError]) -> AppError {
    let problems = errors
        .iter()
        .map(|e| FieldProblem::said(&e.field, &e.message))
        .collect();
    AppError::invalid_fields(ErrorCode::SpecInvalid, problems).unwrap_or(AppError::Invalid {
        field: None,
        code: ErrorCode::SpecInvalid,
        message: "the environment spec is not valid".into(),
        problems: Vec::new(),
    })
}

/// The instance label, created on first use. A short random hex string keeps container names readable.
async fn instance_label(db: &SqlitePool) -> Result<String, AppError> {
    if let Some(existing) =
        sqlx::query_scalar::<_, String>("SELECT instance FROM instance_identity WHERE id = 1")
            .fetch_optional(db)
            .await?
    {
        return Ok(existing);
    }
    let fresh = hex::encode(rand::random::<[u8; 4]>());
    sqlx::query("INSERT OR IGNORE INTO instance_identity (id, instance) VALUES (1, ?)")
        .bind(&fresh)
        .execute(db)
        .await?;
    Ok(
        sqlx::query_scalar("SELECT instance FROM instance_identity WHERE id = 1")
            .fetch_one(db)
            .await?,
    )
}

#[cfg(test)]
mod tests {
    use super::{map_error, state_changed};

    #[test]
    fn engine_failures_reach_clients_without_the_engines_own_words() {
        let err = map_error(
            "starting the container",
            containers::Error::Host {
                context: "reading /var/lib/paddock/secret-path".into(),
                message: "permission denied".into(),
            },
        );
        let text = err.to_string();
        assert_eq!(err.code(), "docker_error");
        assert!(
            text.contains("starting the container") && text.contains("incident "),
            "{text}"
        );
        assert!(
            !text.contains("secret-path") && !text.contains("permission denied"),
            "{text}"
        );
    }

    #[test]
    fn the_log_hears_of_changes_not_of_retries() {
        let up: Result<(), String> = Ok(());
        let down = |why: &str| -> Result<(), String> { Err(why.into()) };
        assert!(!state_changed(&down("no socket"), &down("no socket")));
        assert!(!state_changed(&up, &up));
        assert!(state_changed(
            &down("not connected yet"),
            &down("no socket")
        ));
        assert!(state_changed(&down("no socket"), &up));
        assert!(state_changed(&up, &down("no socket")));
        assert!(state_changed(
            &down("no socket"),
            &down("permission denied")
        ));
    }
}

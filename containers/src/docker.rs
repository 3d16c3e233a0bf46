//! The connection to the Docker daemon. [`Docker::connect`] refuses to hand out a client until the daemon
//! has answered a ping within [`PING_TIMEOUT`], so the app learns at start-up (and on every reconnect) whether
//! environments are available, instead of discovering it in the middle of a user's request. The API version is
//! negotiated down to the daemon's, because Debian's engine (20.10, API 1.41) is older than bollard's default.

use std::time::Duration;

use crate::error::{Error, Result};

/// How long a ping may take before Docker counts as unreachable. Short, because the dashboard asks on load
/// and a local socket answers in milliseconds when the daemon is healthy.
pub const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// Per-request timeout (until response headers) for ordinary API calls. Streams (builds, events, exec)
/// keep flowing after the headers, so this bounds only a hung daemon, not long work.
const REQUEST_TIMEOUT_SECS: u64 = 120;

/// A cloneable handle to a daemon that answered a ping. Methods live in the module of their concern
/// (`build`, `lifecycle`, `exec`, …); [`Docker::api`] exposes bollard for anything not wrapped here.
#[derive(Clone, Debug)]
pub struct Docker {
    api: bollard::Docker,
}

impl Docker {
    /// Connects to the local daemon (`DOCKER_HOST` if set, else `/var/run/docker.sock`), negotiates the API
    /// version and pings it. Fails with [`Error::DockerUnreachable`] when nothing answers.
    pub async fn connect() -> Result<Self> {
        let api = bollard::Docker::connect_with_local_defaults()
            .map_err(|e| Error::DockerUnreachable(e.to_string()))?;
        Self::from_api(api).await
    }

    /// Connects to an explicit endpoint (`unix:///path`, `tcp://host:port`, `http://…`).
    pub async fn connect_to(host: &str) -> Result<Self> {
        let api = if let Some(path) = host.strip_prefix("unix://") {
            bollard::Docker::connect_with_unix(
                path,
                REQUEST_TIMEOUT_SECS,
                bollard::API_DEFAULT_VERSION,
            )
        } else {
            bollard::Docker::connect_with_http(
                host,
                REQUEST_TIMEOUT_SECS,
                bollard::API_DEFAULT_VERSION,
            )
        }
        .map_err(|e| Error::DockerUnreachable(format!("{host}: {e}")))?;
        Self::from_api(api).await
    }

    async fn from_api(api: bollard::Docker) -> Result<Self> {
        let api = api.with_timeout(Duration::from_secs(REQUEST_TIMEOUT_SECS));
        let api = match tokio::time::timeout(PING_TIMEOUT, api.negotiate_version()).await {
            Ok(Ok(api)) => api,
            Ok(Err(e)) => return Err(Error::DockerUnreachable(e.to_string())),
            Err(_) => {
                return Err(Error::DockerUnreachable(format!(
                    "no answer within {PING_TIMEOUT:?}"
                )))
            }
        };
        let docker = Docker { api };
        docker.ping().await?;
        Ok(docker)
    }

    /// Pings the daemon with [`PING_TIMEOUT`]; the app calls this to refresh its "Docker available" flag.
    pub async fn ping(&self) -> Result<()> {
        match tokio::time::timeout(PING_TIMEOUT, self.api.ping()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Error::DockerUnreachable(e.to_string())),
            Err(_) => Err(Error::DockerUnreachable(format!(
                "no answer within {PING_TIMEOUT:?}"
            ))),
        }
    }

    /// The underlying bollard client, for calls this crate does not wrap.
    pub fn api(&self) -> &bollard::Docker {
        &self.api
    }

    /// CPU count and memory of the Docker host, the limits a spec is validated against
    /// ([`crate::spec::EnvSpec::validate_against`]).
    pub async fn host_limits(&self) -> Result<crate::spec::HostLimits> {
        let info = self
            .api
            .info()
            .await
            .map_err(|e| Error::docker("reading daemon info", "daemon", "info", e))?;
        Ok(crate::spec::HostLimits {
            cpus: info.ncpu.unwrap_or(1).max(1) as f64,
            memory_bytes: info.mem_total.unwrap_or(0).max(0) as u64,
        })
    }
}

//! [`AppState`]: what every request handler and server function needs, cloned cheaply per request.
//! The server's router hands it to REST handlers as state and to server functions as Leptos context.

use std::sync::Arc;

use sqlx::SqlitePool;

use super::endpoints::replicas::Deployer;
use super::engine::Engine;
use super::jobs::Jobs;
use super::storage::Storage;
use super::throttle::Throttle;

/// Security-relevant settings taken from the server's configuration.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// Mark session cookies `Secure`; on when the server is reached over HTTPS (behind a proxy).
    pub secure_cookies: bool,
    /// Extra origins (`https://paddock.example.com`) allowed to make cookie-authenticated mutations,
    /// for set-ups where a proxy rewrites the `Host` header.
    pub allowed_origins: Vec<String>,
    /// Host names (lower case, no port) the server answers to; checked by the server's `http::csrf::check_host`.
    pub allowed_hosts: Vec<String>,
    /// Also answer to any IP-address `Host` (the server listens on every address, and an address
    /// cannot be rebound by DNS the way a name can).
    pub any_ip_host: bool,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Sign-up attempts per client address per hour; 0: no limit.
    pub sign_ups_per_hour: usize,
    /// A bearer token that may read `/metrics` (for a Prometheus scraper); admins' sessions may too.
    pub metrics_token: Option<String>,
    /// The registries (`host[:port]`, lower case) an admin may set as the mirror; empty: any registry.
    pub registry_mirror_hosts: Vec<String>,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            secure_cookies: false,
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            any_ip_host: false,
            max_body_bytes: 1024 * 1024,
            sign_ups_per_hour: super::throttle::DEFAULT_SIGN_UPS_PER_HOUR,
            metrics_token: None,
            registry_mirror_hosts: Vec::new(),
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    /// The one shared pool; SQLite is the source of truth for everything.
    pub db: SqlitePool,
    pub security: Arc<SecurityConfig>,
    /// Budgets of failed sign-ins and sign-ups; in memory because they only matter for minutes.
    pub throttle: Arc<Throttle>,
    /// Docker (possibly absent), the instance label and the GPU inventory's host side.
    pub engine: Arc<Engine>,
    /// The data directory's layout and the trainer command line.
    pub storage: Arc<Storage>,
    /// The job machinery: the scheduler's wake-up and the executors' settings.
    pub jobs: Arc<Jobs>,
    /// Endpoints' replicas and the gateway in front of them.
    pub deployer: Arc<Deployer>,
    /// Each user's open uploads and live streams, against their caps.
    pub open: Arc<super::caps::Open>,
    /// The forms' precision default, measured at first use.
    pub precision: Arc<super::precision::Advisor>,
}

impl AppState {
    pub fn new(
        db: SqlitePool,
        security: SecurityConfig,
        engine: Arc<Engine>,
        storage: Arc<Storage>,
        jobs: Arc<Jobs>,
        deployer: Arc<Deployer>,
    ) -> Self {
        AppState {
            db,
            throttle: Arc::new(Throttle::new(security.sign_ups_per_hour)),
            security: Arc::new(security),
            engine,
            storage,
            jobs,
            deployer,
            open: Arc::default(),
            precision: Arc::default(),
        }
    }
}

//! [`AppState`]: what every request handler and server function needs, cloned cheaply per request.
//! The router hands it to REST handlers as axum state and to server functions as Leptos context.

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use sqlx::SqlitePool;

use super::endpoints::replicas::Deployer;
use super::engine::Engine;
use super::jobs::Jobs;
use super::storage::Storage;
use super::throttle::SignInThrottle;

/// Security-relevant settings taken from the server's configuration.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// Mark session cookies `Secure`; on when the server is reached over HTTPS (behind a proxy).
    pub secure_cookies: bool,
    /// Extra origins (`https://paddock.example.com`) allowed to make cookie-authenticated mutations,
    /// for set-ups where a proxy rewrites the `Host` header.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            secure_cookies: false,
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    /// The one shared pool; SQLite is the source of truth for everything.
    pub db: SqlitePool,
    pub leptos_options: LeptosOptions,
    pub security: Arc<SecurityConfig>,
    /// Failed sign-in counters; in memory because they only matter for minutes.
    pub throttle: Arc<SignInThrottle>,
    /// Docker (possibly absent), the instance label and the GPU inventory's host side.
    pub engine: Arc<Engine>,
    /// The data directory's layout and the trainer command line.
    pub storage: Arc<Storage>,
    /// The job machinery: the scheduler's wake-up and the executors' settings.
    pub jobs: Arc<Jobs>,
    /// Endpoints' replicas and the gateway in front of them.
    pub deployer: Arc<Deployer>,
}

impl AppState {
    pub fn new(
        db: SqlitePool,
        leptos_options: LeptosOptions,
        security: SecurityConfig,
        engine: Arc<Engine>,
        storage: Arc<Storage>,
        jobs: Arc<Jobs>,
        deployer: Arc<Deployer>,
    ) -> Self {
        AppState {
            db,
            leptos_options,
            security: Arc::new(security),
            throttle: Arc::new(SignInThrottle::default()),
            engine,
            storage,
            jobs,
            deployer,
        }
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

//! Command-line configuration. Each server setting is a flag and a `PADDOCK_*` environment variable;
//! `paddock <command> --help` lists them with their defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "paddock",
    version,
    about = "Paddock: a self-hosted MLOps platform for Chinese NLP teams",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the web server: dashboard, REST API (/api/v1), /healthz and /metrics.
    Serve(ServeConfig),
    /// Apply database migrations and exit (`serve` also applies them at start).
    Migrate(DatabaseConfig),
    /// Print the version and exit.
    Version,
    /// Headless administration: create accounts and reset passwords without the web UI.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Train or fine-tune a text classifier from a job.toml; JSON-lines events on stdout.
    Train(trainer::cli::TrainArgs),
    /// Accuracy, macro-F1 and per-class metrics of a model on a labelled data file.
    Eval(trainer::cli::EvalArgs),
    /// Classify texts with a checkpoint (`--json`: one object per input, in input order).
    Predict(trainer::cli::PredictArgs),
    /// Validate a data file and print its report as JSON (problems with line numbers, statistics).
    Validate(trainer::cli::ValidateArgs),
}

/// Where state lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// Directory for all of Paddock's state (the database and, later, datasets and models).
    #[arg(long, env = "PADDOCK_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// SQLite database URL [default: sqlite://<data-dir>/paddock.db]. The file and its directory are
    /// created if missing.
    #[arg(long, env = "PADDOCK_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl DatabaseConfig {
    pub fn url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| app::ssr::db::default_url(&self.data_dir))
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    #[command(flatten)]
    pub db: DatabaseConfig,
    /// Address to listen on; port 0 picks a free port. Once listening, the server prints exactly one
    /// line to stdout: `listening on http://ADDR:PORT`.
    #[arg(long, env = "PADDOCK_BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,
    /// Directory with the built site (`cargo leptos build` writes `pkg/paddock.{js,wasm,css}` there).
    #[arg(long, env = "PADDOCK_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Mark session cookies `Secure` (turn on when users reach Paddock over HTTPS).
    #[arg(long, env = "PADDOCK_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Origins, besides the request's own `Host`, allowed to make cookie-authenticated changes
    /// (for a proxy that rewrites `Host`), e.g. `https://paddock.example.com`. Comma-separated in the
    /// environment variable.
    #[arg(long = "allowed-origin", env = "PADDOCK_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body in bytes; larger ones get 413.
    #[arg(long, env = "PADDOCK_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an account (also when sign-up is disabled). The first account is always an admin.
    CreateUser(CreateUserArgs),
    /// Set a new password; ends the account's sessions and revokes its API tokens.
    ResetPassword(ResetPasswordArgs),
}

#[derive(Debug, Args)]
pub struct CreateUserArgs {
    #[command(flatten)]
    pub db: DatabaseConfig,
    /// 3–32 characters of a-z, 0-9, `_`, `.`, `-`.
    #[arg(long)]
    pub username: String,
    #[command(flatten)]
    pub password: PasswordArgs,
    /// Make the account an instance admin.
    #[arg(long)]
    pub admin: bool,
}

#[derive(Debug, Args)]
pub struct ResetPasswordArgs {
    #[command(flatten)]
    pub db: DatabaseConfig,
    #[arg(long)]
    pub username: String,
    #[command(flatten)]
    pub password: PasswordArgs,
}

/// Where the password comes from. Prefer `--password-stdin`: arguments are visible in `ps`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct PasswordArgs {
    /// Read the password from the first line of standard input.
    #[arg(long)]
    pub password_stdin: bool,
    /// The password (10–128 characters).
    #[arg(long, env = "PADDOCK_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

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
    Serve(Box<ServeConfig>),
    /// Apply database migrations and exit (`serve` also applies them at start).
    Migrate(DatabaseConfig),
    /// Print the version and exit.
    Version,
    /// Environments from a shell: list, show, create, up, down, rm, exec (through the REST API).
    Env(crate::environments::EnvArgs),
    /// Fine-tuning jobs from a shell: submit, list, show, logs (-f), cancel (through the REST API).
    Job(crate::jobs::JobArgs),
    /// Checkpoints from a shell: list, download, eval (on a workspace dataset).
    Ckpt(crate::jobs::CkptArgs),
    /// Sweeps from a shell: create (--wait), list, show, pause, resume, extend, cancel.
    Sweep(crate::sweeps::SweepArgs),
    /// Endpoints from a shell: list, show, autoscale, autoscale-off, canary start|promote|pause|resume|roll-back.
    Endpoint(crate::endpoints::EndpointArgs),
    /// Pretrained models from a shell: list, upload (a Hugging Face or PaddleNLP directory, or a .tar).
    Model(crate::pretrained::ModelArgs),
    /// Headless administration: create accounts and reset passwords without the web UI.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Serve one checkpoint over HTTP (POST /predict) with dynamic batching: an endpoint's replica.
    ServeModel(crate::model_server::ServeModelArgs),
    /// Train or fine-tune a text classifier from a job.toml; JSON-lines events on stdout.
    Train(trainer::cli::TrainArgs),
    /// Run `train` as several ranks on this machine (data parallelism, one GPU each or a share of the
    /// cores); the run's events on stdout, every rank's stderr marked with its rank.
    Launch(trainer::cli::LaunchArgs),
    /// Masked-LM pretraining (whole-word masking) on an unlabelled corpus; JSON-lines events on stdout.
    Pretrain(trainer::cli::PretrainArgs),
    /// Accuracy, macro-F1 and per-class metrics of a model on a labelled data file.
    Eval(trainer::cli::EvalArgs),
    /// Classify texts with a checkpoint (`--json`: one object per input, in input order).
    Predict(trainer::cli::PredictArgs),
    /// Validate a data file and print its report as JSON (problems with line numbers, statistics).
    Validate(trainer::cli::ValidateArgs),
    /// Convert a PaddleNLP ERNIE directory into a checkpoint Paddock trains from and serves, checked
    /// against Paddle's computation on sample texts.
    ImportPaddle(trainer::cli::ImportPaddleArgs),
    /// Write a checkpoint as a PaddleNLP ERNIE directory, checked the same way.
    ExportPaddle(trainer::cli::ExportPaddleArgs),
    /// Time one layer of a model's shape in fp32 and bf16: whether bf16 pays on this machine, as a
    /// run's `auto` precision measures it.
    ProbePrecision(trainer::cli::ProbePrecisionArgs),
    /// Copy stdin to a file up to a size limit, then drop the rest (a job's raw train.log).
    #[command(hide = true)]
    LogSink(crate::log_sink::LogSinkArgs),
    /// On a cluster node: run a job in its environment's image, from the folder the server prepared
    /// (the batch script of a cluster job in an environment).
    #[command(hide = true)]
    RunInImage {
        /// The server's folder for the job, with its container's spec.
        folder: PathBuf,
    },
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

impl ServeConfig {
    /// The security settings, given the address the server is listening on.
    pub fn security(&self, listening: SocketAddr) -> domain::SecurityConfig {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(String::from)
            .collect();
        let ip = listening.ip();
        if !ip.is_unspecified() {
            hosts.push(match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            });
        }
        let mut origins = self.allowed_origins.clone();
        let mut secure = self.secure_cookies;
        if let Some(url) = &self.public_url {
            if let Some(host) = url.host_str() {
                hosts.push(host.to_ascii_lowercase());
            }
            origins.push(url.origin().ascii_serialization());
            secure |= url.scheme() == "https";
        }
        hosts.extend(
            self.allowed_hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty()),
        );
        domain::SecurityConfig {
            secure_cookies: secure,
            allowed_origins: origins,
            allowed_hosts: hosts,
            any_ip_host: ip.is_unspecified(),
            max_body_bytes: self.max_body_bytes,
            sign_ups_per_hour: self.signups_per_hour,
            metrics_token: self.metrics_token.clone().filter(|t| !t.is_empty()),
            registry_mirror_hosts: self
                .registry_mirror_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }
}

impl DatabaseConfig {
    pub fn url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| domain::db::default_url(&self.data_dir))
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
    /// Directory with the built site (`scripts/site.sh` writes `pkg/paddock.{js,wasm,css}` there).
    #[arg(long, env = "PADDOCK_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// The address users reach Paddock at (`https://paddock.example.com`), when it is not the bind
    /// address: its host is answered to, its origin may make changes, and an `https` URL turns on
    /// `Secure` cookies and HSTS.
    #[arg(long, env = "PADDOCK_PUBLIC_URL")]
    pub public_url: Option<reqwest::Url>,
    /// Further host names the server answers to (requests naming any other `Host` are refused, which
    /// stops DNS rebinding). Localhost, the bind address and the public URL's host are always
    /// answered; so is any IP address when binding to all of them. Comma-separated in the variable.
    #[arg(
        long = "allowed-host",
        env = "PADDOCK_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Registries (`host` or `host:port`) an admin may set as the Docker Hub mirror; none named: any
    /// that answers as a registry. Comma-separated in the variable.
    #[arg(
        long = "registry-mirror-host",
        env = "PADDOCK_REGISTRY_MIRROR_HOSTS",
        value_delimiter = ','
    )]
    pub registry_mirror_hosts: Vec<String>,
    /// Mark session cookies `Secure` (implied by an `https` public URL).
    #[arg(long, env = "PADDOCK_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Origins, besides the request's own `Host`, allowed to make cookie-authenticated changes
    /// (for a proxy that rewrites `Host`), e.g. `https://paddock.example.com`. Comma-separated in the
    /// environment variable.
    #[arg(
        long = "allowed-origin",
        env = "PADDOCK_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Sign-up attempts allowed per client address per hour; 0: no limit.
    #[arg(long, env = "PADDOCK_SIGNUPS_PER_HOUR", default_value_t = domain::throttle::DEFAULT_SIGN_UPS_PER_HOUR)]
    pub signups_per_hour: usize,
    /// A bearer token that may read `/metrics` (give it to the Prometheus scraper); without it only
    /// signed-in admins may.
    #[arg(long, env = "PADDOCK_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Largest accepted request body in bytes; larger ones get 413.
    #[arg(long, env = "PADDOCK_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Largest dataset upload in bytes (uploads are streamed to disk, not held in memory).
    #[arg(long, env = "PADDOCK_MAX_UPLOAD_BYTES", default_value_t = 1 << 30)]
    pub max_upload_bytes: u64,
    /// CPU-only jobs that run at the same time (each uses the threads below).
    #[arg(long, env = "PADDOCK_CPU_JOB_SLOTS", default_value_t = 1)]
    pub cpu_job_slots: usize,
    /// libtorch threads per CPU job; 0 uses every core.
    #[arg(long, env = "PADDOCK_CPU_JOB_THREADS", default_value_t = 0)]
    pub cpu_job_threads: usize,
    /// Bytes of a job's raw stderr kept in its `train.log` (the rest is dropped there; the job's log in
    /// the database and its rotated files under <data-dir>/logs/jobs/ are separate).
    #[arg(long, env = "PADDOCK_TRAIN_LOG_MAX_BYTES", default_value_t = domain::jobs::DEFAULT_TRAIN_LOG_MAX_BYTES)]
    pub train_log_max_bytes: u64,
    /// Memory, in MiB, a check or conversion of a team's upload (`validate`, `import-paddle`,
    /// `export-paddle`, a model's trial `predict`) may use besides four times the upload's size.
    #[arg(long, env = "PADDOCK_CHILD_MEMORY_MIB", default_value_t = domain::children::DEFAULT_MEMORY_MIB)]
    pub child_memory_mib: u64,
    /// Seconds such a check may take besides one per MiB of the upload; its CPU time is this on every
    /// core.
    #[arg(long, env = "PADDOCK_CHILD_DEADLINE_SECS", default_value_t = domain::children::DEFAULT_DEADLINE_SECS)]
    pub child_deadline_secs: u64,
    /// Memory, in MiB, of each local run (`train`, `eval`, `serve-model`); 0: three quarters of this
    /// host's memory.
    #[arg(long, env = "PADDOCK_RUN_MEMORY_MIB", default_value_t = 0)]
    pub run_memory_mib: u64,
    /// Log to this file instead of stderr, rotated at `--log-max-bytes` (the full one becomes
    /// `<file>.1`).
    #[arg(long, env = "PADDOCK_LOG_FILE")]
    pub log_file: Option<PathBuf>,
    /// Bytes of the log file before it is rotated.
    #[arg(long, env = "PADDOCK_LOG_MAX_BYTES", default_value_t = crate::logging::DEFAULT_MAX_BYTES)]
    pub log_max_bytes: u64,
    /// The key secret variables are sealed with in the database [default: <data-dir>/secrets.key, made
    /// at the first start]. Keep it apart from the database's backups; `paddock admin
    /// rotate-secrets-key` replaces it.
    #[arg(long, env = "PADDOCK_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,
    /// Seconds a cancelled (or timed-out) job has to stop on its own, finishing its step and writing a
    /// checkpoint, before it is killed whole.
    #[arg(long, env = "PADDOCK_STOP_GRACE_SECS", default_value_t = domain::jobs::DEFAULT_STOP_GRACE_SECS)]
    pub stop_grace_secs: u64,
    #[command(flatten)]
    pub environments: EnvironmentsConfig,
    #[command(flatten)]
    pub cluster: ClusterConfig,
}

/// A Slurm cluster jobs may run on (`"cluster": "slurm"` in a job's spec). Paddock reaches its
/// command-line tools either on this host (Paddock on a login node: `--slurm-conf`) or over SSH on a
/// login node (`--slurm-ssh`); either way the data directory must be on a file system the nodes mount at
/// the same path.
#[derive(Debug, Clone, Args)]
pub struct ClusterConfig {
    /// The cluster's `slurm.conf` (its tools' `SLURM_CONF`), for tools on this host. Without it or
    /// `--slurm-ssh` no cluster is offered.
    #[arg(long, env = "PADDOCK_SLURM_CONF", conflicts_with = "slurm_ssh")]
    pub slurm_conf: Option<PathBuf>,
    /// A login node whose Slurm tools Paddock runs over SSH, as `user@host`: key-based only
    /// (`--slurm-ssh-key`), its host key checked against `--slurm-ssh-known-hosts` (an unknown or
    /// changed key is refused, never accepted on first use).
    #[arg(
        long,
        env = "PADDOCK_SLURM_SSH",
        requires_all = ["slurm_ssh_key", "slurm_ssh_known_hosts"]
    )]
    pub slurm_ssh: Option<String>,
    /// The login node's SSH port.
    #[arg(long, env = "PADDOCK_SLURM_SSH_PORT", default_value_t = 22)]
    pub slurm_ssh_port: u16,
    /// The private key Paddock signs in to the login node with (no password, no agent).
    #[arg(long, env = "PADDOCK_SLURM_SSH_KEY")]
    pub slurm_ssh_key: Option<PathBuf>,
    /// The `known_hosts` file that holds the login node's host key.
    #[arg(long, env = "PADDOCK_SLURM_SSH_KNOWN_HOSTS")]
    pub slurm_ssh_known_hosts: Option<PathBuf>,
    /// The partition jobs are submitted to [default: the cluster's].
    #[arg(long, env = "PADDOCK_SLURM_PARTITION")]
    pub slurm_partition: Option<String>,
    /// The Slurm account jobs are charged to [default: the user's].
    #[arg(long, env = "PADDOCK_SLURM_ACCOUNT")]
    pub slurm_account: Option<String>,
    /// The quality of service jobs ask for [default: the account's].
    #[arg(long, env = "PADDOCK_SLURM_QOS")]
    pub slurm_qos: Option<String>,
    /// CPUs each job asks for.
    #[arg(long, env = "PADDOCK_SLURM_CPUS", default_value_t = 2)]
    pub slurm_cpus: u32,
    /// Memory each job asks for, in MB.
    #[arg(long, env = "PADDOCK_SLURM_MEMORY_MB", default_value_t = 4000)]
    pub slurm_memory_mb: u64,
    /// The cluster's GPUs are stand-ins (GRES on placeholder device files, as on the test cluster
    /// `scripts/slurm.sh` starts): jobs and replicas still ask for them, so Slurm places and counts them
    /// as GPUs, but they compute on the node's CPU. Never for a real cluster.
    #[arg(long, env = "PADDOCK_SLURM_GPU_STAND_INS")]
    pub slurm_gpu_stand_ins: bool,
}

impl ClusterConfig {
    /// The name jobs ask for the cluster by.
    pub const NAME: &'static str = "slurm";

    /// How the cluster's tools are reached; `None` when no cluster is configured.
    fn reach(&self) -> Option<clusters::reach::Reach> {
        use clusters::reach::Reach;
        match (&self.slurm_conf, &self.slurm_ssh) {
            (Some(conf), _) => Some(Reach::Local {
                slurm_conf: Some(conf.clone()),
            }),
            (None, Some(destination)) => Some(Reach::Ssh {
                destination: destination.clone(),
                port: self.slurm_ssh_port,
                // clap requires both with --slurm-ssh.
                identity: self.slurm_ssh_key.clone().unwrap_or_default(),
                known_hosts: self.slurm_ssh_known_hosts.clone().unwrap_or_default(),
            }),
            (None, None) => None,
        }
    }

    /// The cluster and what each unit asks of it, once its controller answered (checked before the
    /// server touches its data directory, so bad settings leave nothing behind); `None` when no cluster
    /// is configured.
    pub async fn connect(
        &self,
    ) -> anyhow::Result<Option<(clusters::slurm::Slurm, domain::executor::slurm::Settings)>> {
        let Some(reach) = self.reach() else {
            return Ok(None);
        };
        let shown = reach.shown();
        let cluster = clusters::slurm::Slurm::new(reach);
        cluster
            .ping()
            .await
            .map_err(|e| anyhow::anyhow!("the Slurm cluster at {shown}: {e}"))?;
        let settings = domain::executor::slurm::Settings {
            placement: clusters::slurm::Placement {
                partition: self.slurm_partition.clone(),
                account: self.slurm_account.clone(),
                qos: self.slurm_qos.clone(),
            },
            cpus: self.slurm_cpus,
            memory_mb: self.slurm_memory_mb,
            gpu_stand_ins: self.slurm_gpu_stand_ins,
            registered: false,
        };
        Ok(Some((cluster, settings)))
    }
}

/// Environments: where Docker is and how Paddock looks after the containers it runs.
#[derive(Debug, Clone, Args)]
pub struct EnvironmentsConfig {
    /// Docker endpoint (`unix:///var/run/docker.sock`, `tcp://host:2375`) [default: `DOCKER_HOST`, else
    /// the local socket]. Without a reachable daemon Paddock runs with environments disabled.
    #[arg(long, env = "PADDOCK_DOCKER_HOST")]
    pub docker_host: Option<String>,
    /// Stop running environments after this many minutes without terminal or exec activity; 0 never.
    #[arg(long, env = "PADDOCK_ENV_IDLE_STOP_MINUTES", default_value_t = 120)]
    pub env_idle_stop_minutes: u64,
    /// Seconds between reconciles of the database with Docker (and GPU detection, idle checks).
    #[arg(long, env = "PADDOCK_RECONCILE_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub reconcile_seconds: u64,
    /// What to do with this installation's containers that belong to no environment: remove, keep, or
    /// adopt (a running container goes back to its environment when that environment has none on record).
    #[arg(long, env = "PADDOCK_ORPHANS", default_value = "remove")]
    pub orphans: domain::engine::OrphanPolicy,
    /// The binary copied into images by the runtime layer [default: this `paddock`].
    #[arg(long, env = "PADDOCK_RUNTIME_BINARY")]
    pub runtime_binary: Option<PathBuf>,
}

impl EnvironmentsConfig {
    /// The engine's settings (the server adds where workspace volumes live).
    pub fn engine(&self) -> domain::engine::EngineConfig {
        use std::time::Duration;
        domain::engine::EngineConfig {
            docker_host: self.docker_host.clone(),
            idle_stop: (self.env_idle_stop_minutes > 0)
                .then(|| Duration::from_secs(self.env_idle_stop_minutes * 60)),
            reconcile_every: Duration::from_secs(self.reconcile_seconds),
            orphans: self.orphans,
            runtime_binary: self.runtime_binary.clone(),
            volumes_dir: None,
            stores_dir: None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an account (also when sign-up is disabled). The first account is always an admin.
    CreateUser(CreateUserArgs),
    /// Set a new password; ends the account's sessions and revokes its API tokens.
    ResetPassword(AccountArgs),
    /// Replace the key secret variables are sealed with, sealing every one again (a running server
    /// follows); run it again to finish one that was cut short.
    RotateSecretsKey(RotateKeyArgs),
}

#[derive(Debug, Args)]
pub struct RotateKeyArgs {
    #[command(flatten)]
    pub db: DatabaseConfig,
    /// The key file the server uses [default: <data-dir>/secrets.key].
    #[arg(long, env = "PADDOCK_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,
}

/// The database, an account and its new password: what both admin commands take.
#[derive(Debug, Args)]
pub struct AccountArgs {
    #[command(flatten)]
    pub db: DatabaseConfig,
    /// 3–32 characters of a-z, 0-9, `_`, `.`, `-`.
    #[arg(long)]
    pub username: String,
    #[command(flatten)]
    pub password: PasswordArgs,
}

#[derive(Debug, Args)]
pub struct CreateUserArgs {
    #[command(flatten)]
    pub account: AccountArgs,
    /// Make the account an instance admin.
    #[arg(long)]
    pub admin: bool,
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

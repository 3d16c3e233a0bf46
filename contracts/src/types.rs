//! Data shapes shared by the server and the browser: what server functions and the REST API return.
//! Kept free of server-only types so they compile to wasm.

use crate::ids::{
    CheckpointId, DatasetId, EndpointId, EnvironmentId, EvaluationId, JobId, KeyId, PretrainedId,
    TokenId, UserId, WorkspaceId,
};
use serde::{Deserialize, Serialize};

/// A member's role in a workspace. Ordered: a higher role can do everything a lower one can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Editor,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "editor" => Some(Role::Editor),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }

    /// Editors and owners may create and change resources; viewers only read.
    pub fn can_edit(self) -> bool {
        self >= Role::Editor
    }
}

/// The signed-in account, as the UI needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Me {
    pub id: UserId,
    pub username: String,
    pub is_admin: bool,
}

/// A workspace seen by one of its members (the role is the caller's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceSummary {
    pub id: WorkspaceId,
    pub name: String,
    pub role: Role,
    pub member_count: i64,
    /// RFC 3339.
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Member {
    pub user_id: UserId,
    pub username: String,
    pub role: Role,
    /// RFC 3339.
    pub added_at: String,
}

/// One line of a workspace's audit log: who did what to which resource, when, from where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub id: i64,
    /// The acting user's name; `None` when the account has since been deleted.
    pub actor: Option<String>,
    /// A dotted verb such as `workspace.create`, `member.add`, `member.remove`.
    pub action: String,
    /// The kind of resource acted on (`workspace`, `member`, ...).
    pub resource_type: String,
    /// The resource's human-readable identifier (a username, a workspace name, ...).
    pub resource: String,
    /// Free-form JSON with details (old and new values).
    pub detail: Option<String>,
    pub ip: Option<String>,
    /// RFC 3339.
    pub at: String,
}

/// A personal API token as listed: the secret itself is never shown again after creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiToken {
    pub id: TokenId,
    pub name: String,
    /// The first characters of the token, enough to recognise it.
    pub prefix: String,
    pub scope: TokenScope,
    pub created_at: String,
    pub last_used_at: Option<String>,
    /// After this instant the token is refused; `None`: never.
    pub expires_at: Option<String>,
}

/// What a personal API token may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TokenScope {
    /// Only read (`GET`): for dashboards and scripts that must not change anything.
    Read,
    /// Everything its owner may do.
    #[default]
    Write,
}

impl TokenScope {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Write => "write",
        }
    }

    pub fn parse(s: &str) -> Option<TokenScope> {
        match s {
            "read" => Some(TokenScope::Read),
            "write" => Some(TokenScope::Write),
            _ => None,
        }
    }
}

/// Days a new token lives unless the request says otherwise.
pub const DEFAULT_TOKEN_DAYS: u32 = 90;
/// The longest a token may live: ten years (`0` asks for no expiry at all).
pub const MAX_TOKEN_DAYS: u32 = 3650;

/// A new token: its name, scope, and how many days it lives (`0`: never expires).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// What the token is for (1–64 characters).
    pub name: String,
    #[serde(default)]
    pub scope: TokenScope,
    /// 1–3650 days, or 0 for a token that never expires [default: 90].
    #[serde(default = "default_token_days")]
    pub expires_in_days: u32,
}

fn default_token_days() -> u32 {
    DEFAULT_TOKEN_DAYS
}

/// Returned once, when a token is created: `secret` is what goes after `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewApiToken {
    pub token: ApiToken,
    pub secret: String,
}

/// An account as an instance admin sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserAccount {
    pub id: UserId,
    pub username: String,
    pub is_admin: bool,
    pub disabled: bool,
    pub created_at: String,
}

/// Instance-wide settings an admin can change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceSettings {
    pub signup_enabled: bool,
    /// Whether uploaded models may carry weights only as a pickled `pytorch_model.bin`.
    pub allow_pickled_weights: bool,
    /// Environments of one workspace that may run (or be starting) at once.
    pub max_running_environments: u32,
    /// Endpoint replicas one workspace may ask for in all.
    pub max_replicas: u32,
    /// Uploads (datasets, models) one user may have in progress at once.
    pub max_uploads_per_user: u32,
    /// Live streams (log and metric streams, terminals) one user may have open at once.
    pub max_streams_per_user: u32,
    /// Where missing Docker Hub base images are pulled from (`host[:port][/path]`); none: Docker Hub.
    #[serde(default)]
    pub registry_mirror: Option<String>,
    /// Who may sign in with a password (company sign-in beside it).
    #[serde(default)]
    pub password_sign_in: crate::identity::PasswordSignIn,
}

/// The largest value a cap may be set to.
pub const MAX_CAP: u32 = 10_000;

/// A change to [`InstanceSettings`]: the fields given are set, the others kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SettingsChange {
    #[serde(default)]
    pub signup_enabled: Option<bool>,
    #[serde(default)]
    pub allow_pickled_weights: Option<bool>,
    /// 1–10000 each.
    #[serde(default)]
    pub max_running_environments: Option<u32>,
    #[serde(default)]
    pub max_replicas: Option<u32>,
    #[serde(default)]
    pub max_uploads_per_user: Option<u32>,
    #[serde(default)]
    pub max_streams_per_user: Option<u32>,
    /// `host[:port][/path]` of a Docker Hub mirror; an empty text removes it.
    #[serde(default)]
    pub registry_mirror: Option<String>,
    /// `admins`: only instance admins without a company identity (the break-glass account) may sign
    /// in with a password; `everyone`: anyone with one.
    #[serde(default)]
    pub password_sign_in: Option<crate::identity::PasswordSignIn>,
}

// ---- environments ---------------------------------------------------------------------------------

/// What a user asks an environment to be: the form, the REST body and the stored document. It mirrors
/// `containers::EnvSpec` field for field (same JSON), except that the Paddock runtime layer is a yes/no
/// here — the server knows where its own binary is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EnvironmentSpec {
    /// 1–64 characters: letters, digits, `.`, `_`, `-` and spaces; unique in the workspace.
    pub name: String,
    /// Base image reference (`paddock/base:busybox`, `debian:bookworm-slim`, `nvidia/cuda:12.4.1-runtime-ubuntu22.04`).
    pub base_image: String,
    /// Copy Paddock's runtime (its binary plus libtorch) into the image, so jobs and model servers run inside.
    #[serde(default)]
    pub runtime: bool,
    /// Extra OS packages (apt; Debian and Ubuntu bases only): `name` or `name=version`.
    #[serde(default)]
    pub os_packages: Vec<String>,
    /// CPU limit in cores; fractions allowed.
    pub cpus: f64,
    /// Memory limit, like `512m` or `8g`.
    pub memory: String,
    /// Size of `/dev/shm`, like `1g`.
    #[serde(default = "default_shm_size")]
    pub shm_size: String,
    #[serde(default)]
    pub gpus: GpuSpec,
    /// Whether the GPUs may also be given to other environments at the same time.
    #[serde(default)]
    pub shared_gpus: bool,
    /// Environment variables baked into the image.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Secret variables, given to the container when it starts and never put in the image. They
    /// are write-only: the server answers every name with an empty value, and an empty value sent
    /// back keeps the stored one.
    #[serde(default)]
    pub secret_env: std::collections::BTreeMap<String, String>,
    #[serde(default = "default_working_dir")]
    pub working_dir: String,
    /// The workspace's persistent volume mounted at `/workspace` (letters, digits, `_`, `.`, `-`);
    /// environments of one workspace naming the same volume share its files.
    #[serde(default = "default_workspace_volume")]
    pub workspace_volume: String,
}

fn default_shm_size() -> String {
    "64m".into()
}
fn default_working_dir() -> String {
    "/workspace".into()
}
fn default_workspace_volume() -> String {
    "workspace".into()
}

impl Default for EnvironmentSpec {
    fn default() -> Self {
        EnvironmentSpec {
            name: String::new(),
            base_image: "paddock/base:busybox".into(),
            runtime: false,
            os_packages: Vec::new(),
            cpus: 1.0,
            memory: "1g".into(),
            shm_size: default_shm_size(),
            gpus: GpuSpec::None,
            shared_gpus: false,
            env: Default::default(),
            secret_env: Default::default(),
            working_dir: default_working_dir(),
            workspace_volume: default_workspace_volume(),
        }
    }
}

/// GPUs an environment asks for: `"none"`, `{"count": 2}` or `{"devices": [0, 3]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum GpuSpec {
    #[default]
    None,
    Count(u32),
    Devices(Vec<u32>),
}

impl GpuSpec {
    pub fn count(&self) -> usize {
        match self {
            GpuSpec::None => 0,
            GpuSpec::Count(n) => *n as usize,
            GpuSpec::Devices(d) => d.len(),
        }
    }
}

/// Where an environment's container is, as Paddock last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum EnvStatus {
    /// No container (never started, or stopped and removed on purpose).
    Stopped,
    Provisioning,
    Running,
    /// The main process ended; `exit_code` says how.
    Exited,
    /// Killed for using more memory than the limit.
    OomKilled,
    /// The container disappeared behind Paddock's back.
    Missing,
    /// The last action failed; `status_message` says why.
    Failed,
}

impl EnvStatus {
    pub const ALL: [EnvStatus; 7] = [
        EnvStatus::Stopped,
        EnvStatus::Provisioning,
        EnvStatus::Running,
        EnvStatus::Exited,
        EnvStatus::OomKilled,
        EnvStatus::Missing,
        EnvStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EnvStatus::Stopped => "stopped",
            EnvStatus::Provisioning => "provisioning",
            EnvStatus::Running => "running",
            EnvStatus::Exited => "exited",
            EnvStatus::OomKilled => "oom_killed",
            EnvStatus::Missing => "missing",
            EnvStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<EnvStatus> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// The image build of one environment version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    Queued,
    Building,
    Built,
    Failed,
}

impl BuildStatus {
    pub const ALL: [BuildStatus; 4] = [
        BuildStatus::Queued,
        BuildStatus::Building,
        BuildStatus::Built,
        BuildStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BuildStatus::Queued => "queued",
            BuildStatus::Building => "building",
            BuildStatus::Built => "built",
            BuildStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<BuildStatus> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Queued or building: the log may still grow.
    pub fn is_active(self) -> bool {
        matches!(self, BuildStatus::Queued | BuildStatus::Building)
    }
}

/// One row of the environment list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentSummary {
    pub id: EnvironmentId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub status: EnvStatus,
    pub exit_code: Option<i64>,
    pub current_version: i64,
    pub build_status: BuildStatus,
    /// The lock of the current version: `sha256:…` once built.
    pub image_id: Option<String>,
    pub base_image: String,
    pub cpus: f64,
    pub memory: String,
    pub gpus: GpuSpec,
    /// RFC 3339.
    pub updated_at: String,
}

/// One version of an environment's spec and the image built from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentVersion {
    pub version: i64,
    pub spec: EnvironmentSpec,
    /// SHA-256 of the canonical spec: the version's identity.
    pub spec_hash: String,
    pub build_status: BuildStatus,
    /// SHA-256 of what goes into the image (base image ID, runtime files, packages, variables).
    pub build_hash: Option<String>,
    /// The lock: the image ID this version runs.
    pub image_id: Option<String>,
    /// The image ID before the last rebuild, when the rebuild changed it.
    pub previous_image_id: Option<String>,
    pub image_tag: Option<String>,
    pub dockerfile: Option<String>,
    pub build_error: Option<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub build_started_at: Option<String>,
    pub build_finished_at: Option<String>,
}

/// Something that happened to an environment's container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentEvent {
    pub id: i64,
    /// `start`, `die`, `oom`, `stop`, `missing`, `adopted`, `idle_stop`, `provision_failed`, ...
    pub kind: String,
    pub message: String,
    pub at: String,
}

/// An environment with its versions, container and recent events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentDetail {
    pub summary: EnvironmentSummary,
    /// The current version's spec.
    pub spec: EnvironmentSpec,
    /// Newest first.
    pub versions: Vec<EnvironmentVersion>,
    pub status_message: Option<String>,
    pub container_name: Option<String>,
    /// Host GPU indices the running container holds.
    pub gpu_indices: Vec<u32>,
    pub last_active_at: Option<String>,
    /// Newest first, at most 50.
    pub events: Vec<EnvironmentEvent>,
    /// The caller may provision, change and open a terminal (editor or owner).
    pub can_edit: bool,
}

/// One-shot CPU and memory use of a running environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentStats {
    /// Percent of one CPU (200 = two CPUs busy).
    pub cpu_percent: f64,
    pub memory_bytes: u64,
    pub memory_limit_bytes: u64,
    pub pids: Option<u64>,
}

/// The result of a command run in an environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExecResult {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
    /// The output was longer than the server keeps and was cut.
    pub truncated: bool,
}

/// A base image Paddock knows, with the CUDA version it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CatalogImage {
    pub reference: String,
    pub description: String,
    /// The same in Chinese.
    pub description_zh: String,
    pub cuda: Option<String>,
    /// The oldest NVIDIA driver its CUDA runs on.
    pub min_driver: Option<String>,
    /// Made on this machine without a registry.
    pub local: bool,
    /// In Docker on this machine now: usable without a registry.
    pub present: bool,
    /// Whether it can take extra OS packages.
    pub has_apt: bool,
}

/// A GPU of the host, and who holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuSummary {
    /// nvidia-smi's index, as people name GPUs; placement is by [`GpuSummary::uuid`].
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub driver_version: String,
    /// Unknown on drivers before R510.
    pub compute_capability: Option<String>,
    /// Unknown where the driver answers `[N/A]`.
    pub memory_mib: Option<u64>,
    /// How many environments or jobs hold it now.
    pub holders: u32,
    pub shared: bool,
    /// Whether Paddock's own runtime runs on it (jobs, endpoints, environments with the runtime
    /// layer); if not, `DockerStatus::gpus_left_out` says why.
    pub runtime_usable: bool,
}

/// What Paddock's CUDA runtime needs: its CUDA version, the oldest driver and GPU it runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuntimeNeeds {
    pub cuda: String,
    pub min_driver: Option<String>,
    pub min_compute_capability: Option<String>,
}

/// What the dashboard needs to know about the container engine before offering environment actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DockerStatus {
    pub available: bool,
    /// Why not, when it is not.
    pub message: Option<String>,
    pub server_version: Option<String>,
    pub host_cpus: Option<f64>,
    pub host_memory_bytes: Option<u64>,
    pub gpus: Vec<GpuSummary>,
    /// What Paddock's own CUDA runtime needs of a host (jobs, endpoints and environments with the
    /// runtime layer run it), read from the libraries it loaded; `None` for a build without CUDA.
    pub runtime: Option<RuntimeNeeds>,
    /// The host's GPUs Paddock cannot use, each with why (a driver too old for its CUDA runtime, MIG on,
    /// a lost GPU), in nvidia-smi's and the runtime's words. A GPU only the runtime cannot use is still
    /// in `gpus`, for environments without the runtime layer.
    pub gpus_left_out: Vec<String>,
    pub catalog: Vec<CatalogImage>,
}

// ---- datasets -------------------------------------------------------------------------------------

/// A dataset as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetSummary {
    pub id: DatasetId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub file_name: String,
    /// `csv`, `tsv` or `jsonl`.
    pub format: String,
    /// Where jobs find it inside a container: `/workspace/datasets/<id>/<file>`.
    pub container_path: String,
    pub bytes: u64,
    pub sha256: String,
    pub rows: u64,
    /// What its rows are for: a job trains its data's task.
    #[serde(default)]
    pub task: crate::task::Task,
    pub text_column: String,
    /// The second text's column, for a task of pairs (matching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_column: Option<String>,
    pub label_column: String,
    /// Names given to the label column's values at upload (`"0"` → `"负面"`); empty: the values are
    /// the names. Rows are read with them, so the distribution, models and endpoints use the names.
    #[serde(default)]
    pub label_names: std::collections::BTreeMap<String, String>,
    /// Rows per label (by name where one was given).
    pub label_distribution: std::collections::BTreeMap<String, u64>,
    pub created_by: Option<String>,
    pub created_at: String,
}

/// A dataset with its validation report and first rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetDetail {
    pub summary: DatasetSummary,
    /// The trainer's validation report.
    pub report: crate::data::ValidationReport,
    pub preview: DatasetPreview,
    pub can_edit: bool,
}

/// The first rows of a dataset, as text cells.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DatasetPreview {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

// ---- jobs -----------------------------------------------------------------------------------------

/// A fine-tuning job as the user asks for it: the form, the REST body and (rendered to the trainer's
/// `job.toml`) a reproducible spec. Defaults are sensible for a small CPU run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub name: String,
    /// What the model learns to do with the data: `classification` (the default) or another task.
    #[serde(default)]
    pub task: crate::task::Task,
    /// Training data.
    pub dataset_id: DatasetId,
    /// Dev data; without it `dev_ratio` of the training rows are held out (stratified, by seed).
    #[serde(default)]
    pub dev_dataset_id: Option<DatasetId>,
    /// Run in this environment's image (Docker executor); `None` runs a local process.
    #[serde(default)]
    pub environment_id: Option<EnvironmentId>,
    /// Run on this cluster (by the name the server knows it by) instead of on this server: the
    /// cluster's scheduler places it and picks its GPUs. `None`: on this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// On a cluster: the partition (queue) it goes to, one the cluster has. `None`: the one the server
    /// was configured with, else the cluster's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Model shape from scratch: `base`, `medium`, `mini`, `micro`, `nano`, or `tiny` for tests.
    #[serde(default = "default_preset")]
    pub preset: String,
    /// Start from this earlier checkpoint's weights instead of from scratch.
    #[serde(default)]
    pub base_checkpoint_id: Option<CheckpointId>,
    /// Or from this uploaded Hugging Face model directory (a [`PretrainedModel`]).
    #[serde(default)]
    pub pretrained_model_id: Option<PretrainedId>,
    #[serde(default = "default_epochs")]
    pub epochs: u32,
    #[serde(default = "default_batch_size")]
    pub batch_size: u32,
    #[serde(default = "default_lr")]
    pub learning_rate: f64,
    #[serde(default = "default_warmup")]
    pub warmup_ratio: f64,
    #[serde(default = "default_max_seq_len")]
    pub max_seq_len: u32,
    #[serde(default = "default_one")]
    pub grad_accum_steps: u32,
    /// Stop after this many optimizer steps (for short runs).
    #[serde(default)]
    pub max_steps: Option<u32>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// `fp32` (the default), `bf16` (a GPU from Ampere on, or a CPU with native bfloat16), `fp16` (GPUs
    /// only), or `auto`: the run times one layer of its model in fp32 and bf16 at start and keeps bf16
    /// only where it is faster (`contracts::precision`).
    #[serde(default = "default_precision")]
    pub precision: String,
    /// Evaluate on the dev set every N steps (and at each epoch's end).
    #[serde(default = "default_eval_every")]
    pub eval_every_steps: u32,
    #[serde(default)]
    pub gpus: u32,
    /// Processes that train the run together (data parallelism), each on its share of every batch:
    /// one per GPU asked for (the default, and the only choice with GPUs), or on the CPU as many as
    /// asked, sharing the server's cores. The run and its results are the same whatever the number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// On a cluster: the nodes (machines) the run spans, each with `gpus` GPUs and `ranks` ranks, one
    /// run whose ranks all train together. `None`: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Higher runs first.
    #[serde(default)]
    pub priority: i32,
    /// Checkpoints kept by dev metric (plus the latest).
    #[serde(default = "default_keep_best")]
    pub keep_best: u32,
    /// Stop gracefully, with a checkpoint, after this many minutes.
    #[serde(default)]
    pub time_limit_minutes: Option<u32>,
}

fn default_preset() -> String {
    "nano".into()
}
fn default_epochs() -> u32 {
    3
}
fn default_batch_size() -> u32 {
    32
}
fn default_lr() -> f64 {
    5e-4
}
fn default_warmup() -> f64 {
    0.06
}
fn default_max_seq_len() -> u32 {
    128
}
fn default_one() -> u32 {
    1
}
fn default_seed() -> u64 {
    42
}
fn default_precision() -> String {
    "fp32".into()
}
fn default_eval_every() -> u32 {
    200
}
fn default_keep_best() -> u32 {
    2
}

impl JobSpec {
    /// The defaults for a job on `dataset_id`.
    pub fn new(name: &str, dataset_id: DatasetId) -> JobSpec {
        serde_json::from_value(serde_json::json!({ "name": name, "dataset_id": dataset_id }))
            .expect("every other field has a default")
    }

    /// How many processes train it: as asked, else one per GPU, else one.
    pub fn ranks(&self) -> u32 {
        self.ranks.unwrap_or(self.gpus.max(1))
    }

    /// How many machines it spans: as asked, else one.
    pub fn nodes(&self) -> u32 {
        self.nodes.unwrap_or(1)
    }

    /// The GPUs it holds in all, on every node: what the workspace's quota counts.
    pub fn gpus_in_all(&self) -> u32 {
        self.gpus.saturating_mul(self.nodes())
    }
}

/// What runs a job: a child process of the server, or a container from its environment's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    Local,
    Docker,
}

impl ExecutorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Docker => "docker",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Queued,
    Starting,
    Running,
    /// Asked to stop; the trainer finishes its step and writes a checkpoint.
    Cancelling,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub const ALL: [JobStatus; 7] = [
        JobStatus::Queued,
        JobStatus::Starting,
        JobStatus::Running,
        JobStatus::Cancelling,
        JobStatus::Succeeded,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Starting => "starting",
            JobStatus::Running => "running",
            JobStatus::Cancelling => "cancelling",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Over: it will not change any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled
        )
    }

    /// The job's state machine: whether a job in this status may move to `to`. A queued job is placed
    /// (starting) or cancelled; a starting one runs, goes back to the queue (the server restarted before
    /// it ran), fails to start, or is asked to stop; a running one ends or is asked to stop; a stopping
    /// one ends (even as succeeded, when its last step finished before the signal). Final is final.
    pub fn can_become(self, to: JobStatus) -> bool {
        use JobStatus::*;
        match self {
            Queued => matches!(to, Starting | Cancelled),
            Starting => matches!(to, Running | Queued | Cancelling | Failed | Cancelled),
            Running => matches!(to, Cancelling | Succeeded | Failed | Cancelled),
            Cancelling => matches!(to, Succeeded | Failed | Cancelled),
            Succeeded | Failed | Cancelled => false,
        }
    }
}

/// Why a job's status last changed: a stable word, what the code decides on. The message beside it is
/// for people, in the words of whoever ended the job; pages word the reason in their own language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum JobReason {
    /// The scheduler placed it (queued → starting).
    Scheduled,
    /// Its process or container runs (starting → running).
    Launched,
    /// The server restarted before it ran (starting → queued).
    Requeued,
    /// It could not be started.
    StartFailed,
    /// A person asked it to stop, or cancelled it before it ran.
    CancelRequested,
    /// It reached its time limit: asked to stop with a checkpoint, and it ends as failed.
    TimeLimit,
    /// The trainer finished its epochs.
    Completed,
    /// The trainer stopped early: the dev metric stopped improving.
    EarlyStopped,
    /// Its sweep stopped it at a rung: its objective there was not among the best (it stops as a
    /// cancelled job does, with a checkpoint, and ends as succeeded).
    Pruned,
    /// The trainer reported a failure.
    TrainerFailed,
    /// Stopped by a signal nobody in Paddock sent.
    Signal,
    /// The process ended without saying how, or disappeared.
    Exited,
    /// Its workspace was deleted.
    WorkspaceDeleted,
    /// The server stopped it to move its data directory to a new layout.
    Interrupted,
}

impl JobReason {
    /// The stored word (`cancel_requested`).
    pub fn as_str(self) -> &'static str {
        match self {
            JobReason::Scheduled => "scheduled",
            JobReason::Launched => "launched",
            JobReason::Requeued => "requeued",
            JobReason::StartFailed => "start_failed",
            JobReason::CancelRequested => "cancel_requested",
            JobReason::TimeLimit => "time_limit",
            JobReason::Completed => "completed",
            JobReason::EarlyStopped => "early_stopped",
            JobReason::Pruned => "pruned",
            JobReason::TrainerFailed => "trainer_failed",
            JobReason::Signal => "signal",
            JobReason::Exited => "exited",
            JobReason::WorkspaceDeleted => "workspace_deleted",
            JobReason::Interrupted => "interrupted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobSummary {
    pub id: JobId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub status: JobStatus,
    /// Why the status last changed; none for a job that has not moved since it was queued.
    #[serde(default)]
    pub status_reason: Option<JobReason>,
    pub status_message: Option<String>,
    pub exit_code: Option<i64>,
    pub executor: ExecutorKind,
    /// The cluster it runs on (`None`: this server) and, once submitted, its job id there.
    pub cluster: Option<String>,
    pub cluster_job: Option<String>,
    pub priority: i32,
    pub gpus: u32,
    pub gpu_indices: Vec<u32>,
    pub step: i64,
    pub total_steps: Option<i64>,
    pub epoch: Option<f64>,
    /// Position in the workspace's queue (1 = next), while queued.
    pub queue_position: Option<i64>,
    /// The sweep it is a trial of, and its number there (1, 2, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<crate::ids::SweepId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// What it learns, on which data, from which weights: the runs table's columns.
    #[serde(default)]
    pub task: crate::task::Task,
    #[serde(default)]
    pub dataset_id: Option<DatasetId>,
    #[serde(default)]
    pub dataset_name: Option<String>,
    #[serde(default)]
    pub start: Option<crate::runs::StartingModel>,
    /// Its best dev score so far (none before its first evaluation).
    #[serde(default)]
    pub best: Option<crate::runs::BestScore>,
    /// Seconds it ran (until now while it runs); none before it started.
    #[serde(default)]
    pub duration_secs: Option<f64>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

/// A job with its spec, the exact job.toml it runs, and its checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobDetail {
    pub summary: JobSummary,
    pub spec: JobSpec,
    pub config_toml: String,
    pub retry_of: Option<JobId>,
    pub checkpoints: Vec<CheckpointInfo>,
    pub can_edit: bool,
    /// Lineage: the earlier checkpoint whose weights the job started from (`spec.base_checkpoint_id`).
    #[serde(default)]
    pub base_model: Option<BaseModel>,
    /// Lineage: the uploaded model the job started from (`spec.pretrained_model_id`).
    #[serde(default)]
    pub pretrained_model: Option<PretrainedModel>,
    /// What the run trains in and why (measured at its start for `auto`); `None` until it started.
    #[serde(default)]
    pub precision_choice: Option<crate::precision::PrecisionChoice>,
}

/// A job's starting weights: an earlier checkpoint and the job that wrote it (`None`s once that job
/// and its checkpoints were deleted; the id stays in the spec).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BaseModel {
    pub checkpoint_id: CheckpointId,
    pub job_id: Option<JobId>,
    pub job_name: Option<String>,
    pub step: Option<i64>,
}

/// One point of a job's charts: a `step` (loss, lr, samples_per_s, ...) or an `eval` (accuracy,
/// macro_f1, loss, ...), as the trainer reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetricPoint {
    pub id: i64,
    /// `step` or `eval`.
    pub kind: String,
    pub step: i64,
    pub epoch: Option<f64>,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: serde_json::Value,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogLine {
    pub id: i64,
    /// The line as written: the trainer's own words, or a note's English (for clients, the search and
    /// the log file on the server).
    pub line: String,
    pub at: String,
    /// Set when Paddock wrote the line, so a page can word it in its reader's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<LogNote>,
}

/// What Paddock itself says in a job's log: a fact and its values, worded by whoever shows it
/// ([`LogNote::english`] for the stored line). Values that come from elsewhere (the trainer's message,
/// the cluster's account of an end, a refusal's reason) travel as they were said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogNote {
    /// The job reached its time limit and is asked to stop with a checkpoint.
    TimeLimit { minutes: i64 },
    /// Asked to stop, the run had not ended within the grace, so it is killed.
    Killed { grace_secs: u64 },
    /// A line of the event stream that is not an event.
    NotAnEvent { why: String, line: String },
    /// The database keeps this many lines a job; the rest are in the log file on the server.
    LinesBeyond,
    /// `train.log` reached the size the server keeps (written by `paddock log-sink`).
    TrainLogFull { max_bytes: u64 },
    /// The job's files in its volume were refused (a link, a file too large), so progress stops showing.
    FilesRefused { reason: String },
    /// A checkpoint the trainer wrote could not be recorded.
    CheckpointNotRecorded { step: u64, why: String },
    /// The trainer's error event.
    TrainerError { message: String },
    /// The trainer said it was stopped, by no one here: its cluster is asked why.
    StoppedByCluster,
    /// The run ended without the trainer saying how: `code` is its exit status where known, `how` what
    /// ran it says of the end (a cluster's account), where it says anything.
    Ended {
        code: Option<i64>,
        how: Option<String>,
    },
}

const TRAIN_LOG_FULL: (&str, &str) = (
    "train.log reached its limit of ",
    " bytes; the trainer's further output is not kept here",
);

impl LogNote {
    /// The line as stored, in English, marked as Paddock's.
    pub fn english(&self) -> String {
        format!("[paddock] {}", self.words())
    }

    /// The note's English words (a job's status message where the note is how it ended).
    pub fn words(&self) -> String {
        match self {
            LogNote::TimeLimit { minutes } => {
                format!("time limit of {minutes} min reached; stopping with a checkpoint")
            }
            LogNote::Killed { grace_secs } => {
                format!("the run did not stop within {grace_secs} s of being asked to; killing it")
            }
            LogNote::NotAnEvent { why, line } => format!("not an event ({why}): {line}"),
            LogNote::LinesBeyond => {
                "log lines beyond this are only in the job's log file on the server".to_string()
            }
            LogNote::TrainLogFull { max_bytes } => {
                format!("{}{max_bytes}{}", TRAIN_LOG_FULL.0, TRAIN_LOG_FULL.1)
            }
            LogNote::FilesRefused { reason } => reason.clone(),
            LogNote::CheckpointNotRecorded { step, why } => {
                format!("checkpoint at step {step} not recorded: {why}")
            }
            LogNote::TrainerError { message } => format!("error: {message}"),
            LogNote::StoppedByCluster => {
                "the trainer was stopped by its cluster; asking the cluster why".to_string()
            }
            LogNote::Ended { code, how } => match (code, how) {
                (Some(code), None) => {
                    format!("the trainer exited with code {code} before finishing; see the log")
                }
                (Some(code), Some(how)) => {
                    format!("the job did not finish: {how} (the trainer exited with code {code})")
                }
                (None, Some(how)) => format!("the job did not finish: {how}"),
                (None, None) => {
                    "the job's process disappeared (the machine restarted?) before finishing"
                        .to_string()
                }
            },
        }
    }

    /// The note a line of `train.log` is, if it is one: only `paddock log-sink` writes notes there.
    /// A trainer that prints the same words gets them worded too, which tells no one anything new.
    pub fn in_train_log(line: &str) -> Option<LogNote> {
        let bytes = line
            .strip_prefix("[paddock] ")?
            .strip_prefix(TRAIN_LOG_FULL.0)?
            .strip_suffix(TRAIN_LOG_FULL.1)?;
        Some(LogNote::TrainLogFull {
            max_bytes: bytes.parse().ok()?,
        })
    }
}

/// A checkpoint a job wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckpointInfo {
    pub id: CheckpointId,
    pub job_id: JobId,
    pub step: i64,
    pub epoch: Option<f64>,
    /// The dev set's metrics when it was written (the trainer's `checkpoint` event).
    pub metrics: Option<crate::metrics::Metrics>,
    /// Inside a container: `/workspace/jobs/<job>/output/...`.
    pub container_path: String,
    pub bytes: u64,
    pub sha256: String,
    /// The job's best checkpoint by its metric: of those that were the best so far when written, the
    /// newest (one per job).
    pub best: bool,
    /// Set when its dev metrics show it learned nothing useful: the dashboard then calls it that
    /// instead of "best", and deploying it asks first.
    pub degenerate: Option<crate::metrics::Degenerate>,
    pub created_at: String,
    /// When retention removed its files (the record stays).
    pub deleted_at: Option<String>,
}

/// What a checkpoint's badge says, in this order: files removed, learned nothing, ranked first, kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointState {
    Deleted,
    Degenerate,
    Best,
    Kept,
}

impl CheckpointState {
    /// Its name in `data-state` attributes and in the CLI's listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deleted => "deleted",
            Self::Degenerate => "degenerate",
            Self::Best => "best",
            Self::Kept => "kept",
        }
    }
}

impl CheckpointInfo {
    /// A degenerate checkpoint is never called best, even when its job ranked it first.
    pub fn state(&self) -> CheckpointState {
        if self.deleted_at.is_some() {
            CheckpointState::Deleted
        } else if self.degenerate.is_some() {
            CheckpointState::Degenerate
        } else if self.best {
            CheckpointState::Best
        } else {
            CheckpointState::Kept
        }
    }
}

/// A Hugging Face model directory uploaded to the workspace to fine-tune from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PretrainedModel {
    pub id: PretrainedId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    /// The uploaded archive's name and sha256.
    pub file_name: String,
    pub sha256: String,
    /// Inside a container: `/workspace/models/<id>`.
    pub container_path: String,
    /// The unpacked directory's size.
    pub bytes: u64,
    /// From its config.json: `model_type`, `num_hidden_layers`, `hidden_size`, `vocab_size`, ...
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub config: serde_json::Value,
    /// Set when the upload was a PaddleNLP directory, converted on arrival: what was mapped and how
    /// closely the converted model answers as the original.
    pub paddle_import: Option<PaddleImport>,
    pub created_by: Option<String>,
    pub created_at: String,
}

// ---- clusters -------------------------------------------------------------------------------------

/// A cluster this server hands work to, as its scheduler sees it now: what the job form offers and the
/// admin page shows. Read live, never stored: the cluster's state is its scheduler's to keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterView {
    /// What a job's spec names it by (`"cluster": "slurm"`).
    pub name: String,
    /// The scheduler: `slurm`.
    pub executor: String,
    /// Where this server's jobs go: the partition it was configured with, else the cluster's default.
    pub partition: Option<String>,
    pub partitions: Vec<ClusterPartition>,
    pub nodes: Vec<ClusterNode>,
    /// Why the scheduler could not be asked (its tools failed or did not answer); the lists are then
    /// empty.
    pub problem: Option<String>,
    /// Whether the cluster's nodes see this server's data directory, as the last preflight found
    /// (`None`: not checked yet).
    #[serde(default)]
    pub shared_dir: Option<SharedDirCheck>,
    /// How its tools are reached, in words (`slurm.conf /etc/slurm/slurm.conf`, `ssh ops@login -p 22`).
    #[serde(default)]
    pub reached_by: String,
    /// Registered by an admin (and removable from the dashboard), rather than given in the server's
    /// settings.
    #[serde(default)]
    pub registered: bool,
}

/// A cluster an instance admin registers: its name (what jobs ask for it by), how its tools are
/// reached, and what each unit of this server asks of it besides GPUs. The nodes must mount this
/// server's data directory at the same path (the shared directory); a check job on each partition
/// proves they do once it is registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClusterRegistration {
    /// 1–32 of a-z, 0-9 and `-`, starting with a letter.
    pub name: String,
    pub reach: ClusterReach,
    /// Where its work goes unless it picks a partition [default: the cluster's default partition].
    #[serde(default)]
    pub partition: Option<String>,
    /// The Slurm account work is charged to unless its workspace has its own.
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub qos: Option<String>,
    /// CPUs each job, evaluation or replica asks for.
    #[serde(default = "default_cluster_cpus")]
    pub cpus: u32,
    /// Memory each asks for, in MB.
    #[serde(default = "default_cluster_memory_mb")]
    pub memory_mb: u64,
    /// The cluster's GPUs are stand-ins (a test cluster's GRES on placeholder devices): they are
    /// scheduled as GPUs but units compute on the CPU. Never for a real cluster.
    #[serde(default)]
    pub gpu_stand_ins: bool,
}

fn default_cluster_cpus() -> u32 {
    2
}

fn default_cluster_memory_mb() -> u64 {
    4000
}

/// How Paddock reaches a cluster's command-line tools (`sbatch`, `squeue`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClusterReach {
    /// The tools on this server's host (Paddock on a login node), reading `slurm_conf` [default: the
    /// host's `/etc/slurm/slurm.conf`]: an absolute path to a file.
    Local {
        #[serde(default)]
        slurm_conf: Option<String>,
    },
    /// The tools on a login node over SSH, as `user@host`, with this server's own key (see
    /// `GET /api/v1/admin/ssh-key`: add it to the user's `authorized_keys` there). The login
    /// node's host key must be among `known_hosts` (lines as `ssh-keyscan` prints them): an unknown or
    /// changed key is refused.
    Ssh {
        destination: String,
        #[serde(default = "default_ssh_port")]
        port: u16,
        known_hosts: String,
    },
}

fn default_ssh_port() -> u16 {
    22
}

/// The public half of the key this server signs in to clusters' login nodes with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterSshKey {
    /// One `authorized_keys` line (`ssh-ed25519 AAAA… paddock@host`).
    pub public_key: String,
}

/// The shared-directory preflight: a small batch job on each partition reads a file this server wrote
/// in its data directory and writes one back, which the server must then read. Jobs and replicas on
/// the cluster depend on it: their run folders, inputs and checkpoints are all there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedDirCheck {
    /// The directory checked: this server's data directory, as the nodes must see it.
    pub dir: String,
    pub checked_at: String,
    pub partitions: Vec<SharedDirResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedDirResult {
    pub partition: String,
    /// The node its job ran on, if it ran.
    pub node: Option<String>,
    /// Whether the directory was judged: false when the check's job could not run (it waited in the
    /// queue too long, `sbatch` refused it), which says nothing about the directory.
    pub checked: bool,
    /// What went wrong (`None`: the node read the server's file and the server read the node's).
    pub problem: Option<String>,
    /// The NVIDIA driver loaded on that node (`550.54.15`; `None`: none, or the check did not run).
    /// Work asking for GPUs is refused on a partition whose node has none, or one too old for
    /// Paddock's CUDA runtime.
    #[serde(default)]
    pub driver: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterPartition {
    pub name: String,
    /// The cluster's default partition.
    pub default: bool,
    /// `UP`, `DOWN`, `DRAIN`, `INACTIVE`.
    pub state: String,
    /// Its nodes, as Slurm writes them (`node[1-2]`).
    pub nodes: String,
    /// `UNLIMITED` or `[days-]hours:minutes:seconds`.
    pub max_time: String,
    /// The GPUs of its nodes that are up, and how many are allocated.
    pub gpus: ResourceUsage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterNode {
    pub name: String,
    /// `idle`, `mixed`, `allocated`, `drained`, `down`, … as Slurm says it.
    pub state: String,
    pub gpus: ResourceUsage,
    pub cpus: ResourceUsage,
    pub memory_mb: ResourceUsage,
    pub partitions: Vec<String>,
    /// Why it is drained or down, as the cluster's admin wrote it.
    pub reason: Option<String>,
}

impl ClusterNode {
    /// Whether the scheduler can place work on it now: not down, drained, failing or unresponsive
    /// (Slurm's `*` suffix), in any part of a compound state such as `idle+drain`.
    pub fn is_up(&self) -> bool {
        let state = self.state.to_ascii_lowercase();
        if state.ends_with('*') {
            return false;
        }
        let base = state.trim_end_matches(['~', '#', '!', '%', '$', '@', '^', '-']);
        let unable = [
            "down",
            "drain",
            "fail",
            "inval",
            "unknown",
            "not_responding",
            "future",
        ];
        !base
            .split('+')
            .any(|part| unable.iter().any(|u| part.starts_with(u)))
    }
}

/// What a workspace's work is charged to on a cluster: its Slurm account and quality of service, set
/// by an instance admin. `None`: the server's default, else the cluster's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClusterAccount {
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub qos: Option<String>,
}

/// One workspace and what its work is charged to on a cluster (see [`ClusterAccount`]): the admin
/// page's table of mappings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceClusterAccount {
    pub workspace_id: WorkspaceId,
    pub workspace: String,
    #[serde(flatten)]
    pub charged_to: ClusterAccount,
}

/// One workspace's GPU quota (the most GPUs its jobs, environments and replicas may hold at once, here
/// and on clusters alike; `None`: no quota) and the GPUs it holds now: the admin page's table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceGpuQuota {
    pub workspace_id: WorkspaceId,
    pub workspace: String,
    pub max_gpus: Option<u32>,
    pub gpus_held: u32,
}

/// The largest GPU quota a workspace may be given.
pub const MAX_GPU_QUOTA: u32 = 1024;

/// Where a job handed to a cluster is now, as the cluster's scheduler says (read live).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClusterPlacement {
    pub state: ClusterJobState,
    /// Why it waits, or why it ended, in the scheduler's words (`Resources`, `Priority`,
    /// `QOSMaxGRESPerUser`, …).
    pub reason: Option<String>,
    /// The nodes it runs (or ran) on, as the scheduler writes them (`node[1-2]`).
    pub nodes: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ClusterJobState {
    /// In the cluster's queue: no node has been given to it yet.
    Waiting,
    Running,
    /// Its processes are being stopped.
    Ending,
    Ended,
}

/// How much of a resource there is and how much is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResourceUsage {
    pub total: u64,
    pub allocated: u64,
}

impl ResourceUsage {
    pub fn free(&self) -> u64 {
        self.total.saturating_sub(self.allocated)
    }
}

#[cfg(test)]
mod cluster_tests {
    use super::*;

    #[test]
    fn a_node_is_up_unless_slurm_says_it_cannot_take_work() {
        let node = |state: &str| ClusterNode {
            name: "node1".into(),
            state: state.into(),
            gpus: ResourceUsage {
                total: 2,
                allocated: 1,
            },
            cpus: ResourceUsage::default(),
            memory_mb: ResourceUsage::default(),
            partitions: vec!["debug".into()],
            reason: None,
        };
        for up in [
            "idle",
            "mixed",
            "allocated",
            "completing",
            "idle~",
            "mixed-",
        ] {
            assert!(node(up).is_up(), "{up}");
        }
        for down in [
            "down",
            "idle*",
            "drained",
            "draining",
            "mixed+drain",
            "fail",
            "not_responding",
            "inval",
        ] {
            assert!(!node(down).is_up(), "{down}");
        }
        assert_eq!(node("idle").gpus.free(), 1);
        assert_eq!(
            ResourceUsage {
                total: 1,
                allocated: 3
            }
            .free(),
            0
        );
    }
}

/// The layout a checkpoint is downloaded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum CheckpointFormat {
    /// As Paddock keeps it: `config.json`, `model.safetensors`, the tokenizer files.
    #[default]
    #[serde(rename = "hf")]
    HuggingFace,
    /// A PaddleNLP ERNIE directory (`model_state.pdparams`) that `from_pretrained` loads, made on request
    /// and checked against PaddleNLP's computation first.
    #[serde(rename = "paddlenlp")]
    PaddleNlp,
}

/// A PaddleNLP ERNIE directory converted into the Hugging Face layout (`paddock import-paddle`, or an
/// upload on the Models page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaddleImport {
    /// `ErnieForSequenceClassification`, `ErnieForTokenClassification`, or `ErnieModel` (a bare encoder:
    /// fine-tuning adds a classifier).
    pub architecture: String,
    /// What the classifier does (`None` for a bare encoder): a token classifier extracts entities; a
    /// sequence classifier classifies, or matches pairs when a Paddock export said so.
    #[serde(default)]
    pub task: Option<crate::task::Task>,
    /// Arrays of the file the model does not use: a PaddleNLP token classifier's pooler.
    #[serde(default)]
    pub unused: Vec<String>,
    /// The classifier's labels (empty for a bare encoder).
    pub labels: Vec<String>,
    /// The element types the weights were saved in (`float32`, `float16`, `bfloat16`); Paddock keeps
    /// float32.
    pub saved_as: Vec<String>,
    pub hidden_act: String,
    pub use_task_id: bool,
    pub tensors: Vec<MappedTensor>,
    pub parity: ParityReport,
}

/// One array of `model_state.pdparams` and where it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MappedTensor {
    pub paddle: String,
    pub hugging_face: String,
    /// The shape in the Hugging Face layout.
    pub shape: Vec<usize>,
    /// A Linear weight, stored `[in, out]` by Paddle, so transposed.
    pub transposed: bool,
}

/// Paddock's model on converted weights against PaddleNLP's computation on the originals, on sample
/// texts: a conversion is kept only when `max_abs_diff <= tolerance`. Named apart in the OpenAPI document:
/// an endpoint's parity gate has a `ParityReport` of its own (`serving::ParityReport`), and two schemas of
/// one name leave one of them describing the other's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = PaddleParityReport))]
pub struct ParityReport {
    pub compared: ParityOutput,
    pub tolerance: f64,
    /// The largest absolute difference over every sample.
    pub max_abs_diff: f64,
    pub samples: Vec<ParitySample>,
}

impl ParityReport {
    pub fn passed(&self) -> bool {
        self.max_abs_diff <= self.tolerance
    }
}

/// What the parity check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ParityOutput {
    /// A classifier's logits.
    Logits,
    /// A bare encoder's pooled output.
    Pooled,
}

impl ParityOutput {
    /// The serialised name, for command-line output.
    pub fn as_str(self) -> &'static str {
        match self {
            ParityOutput::Logits => "logits",
            ParityOutput::Pooled => "pooled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParitySample {
    pub text: String,
    pub pair: Option<String>,
    /// Tokens fed, special tokens included.
    pub tokens: usize,
    pub max_abs_diff: f64,
}

// ---- evaluations ----------------------------------------------------------------------------------

/// What `POST …/checkpoints/{id}/evaluations` asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EvaluationRequest {
    /// A dataset of the same workspace whose labels the checkpoint knows.
    pub dataset_id: DatasetId,
    /// Run on this cluster (by the name the server knows it by) instead of on this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum EvaluationStatus {
    /// Waiting for the evaluator (one runs at a time).
    Queued,
    Running,
    Succeeded,
    Failed,
}

impl EvaluationStatus {
    pub const ALL: [EvaluationStatus; 4] = [
        EvaluationStatus::Queued,
        EvaluationStatus::Running,
        EvaluationStatus::Succeeded,
        EvaluationStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EvaluationStatus::Queued => "queued",
            EvaluationStatus::Running => "running",
            EvaluationStatus::Succeeded => "succeeded",
            EvaluationStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<EvaluationStatus> {
        EvaluationStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        matches!(self, EvaluationStatus::Succeeded | EvaluationStatus::Failed)
    }

    /// The evaluation's state machine: a queued one runs or fails (its inputs went, it could not start);
    /// a running one ends. Final is final.
    pub fn can_become(self, to: EvaluationStatus) -> bool {
        use EvaluationStatus::*;
        match self {
            Queued => matches!(to, Running | Failed),
            Running => matches!(to, Succeeded | Failed),
            Succeeded | Failed => false,
        }
    }
}

/// One class's scores in an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClassScore {
    pub label: String,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Rows of this class in the dataset.
    pub support: u64,
}

impl ClassScore {
    /// The dataset has rows of this class and the model got none of them: a label it cannot
    /// produce when it matters.
    pub fn never_right(&self) -> bool {
        self.support > 0 && self.recall == 0.0
    }
}

/// A checkpoint measured on a dataset by `paddock eval`: the numbers once it succeeded, the reason
/// when it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvaluationInfo {
    pub id: EvaluationId,
    pub workspace_id: WorkspaceId,
    pub checkpoint_id: CheckpointId,
    /// The checkpoint's job and step, for lineage.
    pub job_id: JobId,
    pub checkpoint_step: i64,
    /// `None` once the dataset was deleted; its name and hash stay.
    pub dataset_id: Option<DatasetId>,
    pub dataset_name: String,
    pub dataset_sha256: String,
    pub status: EvaluationStatus,
    pub status_message: Option<String>,
    pub rows: Option<u64>,
    pub accuracy: Option<f64>,
    pub macro_f1: Option<f64>,
    /// Mean cross-entropy over the rows.
    pub loss: Option<f64>,
    /// The checkpoint's labels in id order (the confusion matrix's rows and columns).
    pub labels: Vec<String>,
    pub per_class: Vec<ClassScore>,
    /// `confusion[gold][predicted]`, in label-id order.
    pub confusion: Vec<Vec<u64>>,
    /// An entity model's scores over exact spans, its headline (its `labels` are the entity types and
    /// a last `O`, "no entity"); absent for the tasks that label a whole row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<crate::metrics::EntityScores>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The cluster it runs on (`None`: this server) and, once submitted, its job id there.
    #[serde(default)]
    pub cluster: Option<String>,
    #[serde(default)]
    pub cluster_job: Option<String>,
}

// ---- endpoints ------------------------------------------------------------------------------------

/// What a deployment asks for: the form and the REST body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    pub name: String,
    /// In `/v1/endpoints/<slug>/predict`: 3–40 of a-z, 0-9, `-`; derived from the name when empty.
    #[serde(default)]
    pub slug: Option<String>,
    pub checkpoint_id: CheckpointId,
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// Most padded tokens in one forward pass.
    #[serde(default = "default_batch_tokens")]
    pub max_batch_tokens: u32,
    /// Longest a request waits for others to share its forward pass.
    #[serde(default = "default_max_wait_ms")]
    pub max_wait_ms: u32,
    /// `cpu` or `cuda`.
    #[serde(default = "default_device")]
    pub device: String,
    /// Numeric precision of the replicas: `fp32` (the default), `bf16` (CUDA, or a CPU with native
    /// bfloat16), `fp16` (CUDA), or `auto`: each replica times one layer of the model in fp32 and bf16
    /// at start and serves bf16 only where it is faster.
    #[serde(default = "default_precision")]
    pub precision: String,
    /// Run the replicas on this cluster (by the name the server knows it by), each a long-lived batch
    /// job on a node the scheduler picks, instead of on this server. `None`: on this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// On a cluster: the partition (queue) its replicas go to, one the cluster has. `None`: the one
    /// the server was configured with, else the cluster's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Let the endpoint size itself between a floor and a ceiling of replicas (`replicas` is then where
    /// it starts, moved into that range). `None`: always `replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscale: Option<crate::scaling::Autoscale>,
}

fn default_replicas() -> u32 {
    1
}
fn default_batch_tokens() -> u32 {
    8192
}
fn default_max_wait_ms() -> u32 {
    5
}
fn default_device() -> String {
    "cpu".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum EndpointStatus {
    Starting,
    Ready,
    Failed,
    Stopped,
}

impl EndpointStatus {
    pub const ALL: [EndpointStatus; 4] = [
        EndpointStatus::Starting,
        EndpointStatus::Ready,
        EndpointStatus::Failed,
        EndpointStatus::Stopped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EndpointStatus::Starting => "starting",
            EndpointStatus::Ready => "ready",
            EndpointStatus::Failed => "failed",
            EndpointStatus::Stopped => "stopped",
        }
    }

    pub fn parse(s: &str) -> Option<EndpointStatus> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointSummary {
    pub id: EndpointId,
    pub workspace_id: WorkspaceId,
    pub slug: String,
    pub name: String,
    pub checkpoint_id: CheckpointId,
    /// The job that wrote the checkpoint (lineage).
    pub job_id: JobId,
    pub replicas: u32,
    pub ready_replicas: u32,
    pub status: EndpointStatus,
    /// What went wrong last, in the words of the part that failed (a replica's exit, the parity gate).
    pub status_message: Option<String>,
    /// The change of a ready endpoint under way, typed so each page says it in its own language.
    pub change: Option<ChangeUnderWay>,
    /// The cluster its replicas run on (`None`: this server).
    #[serde(default)]
    pub cluster: Option<String>,
    /// How it sizes itself, when it does.
    #[serde(default)]
    pub autoscale: Option<crate::scaling::Autoscale>,
    /// Its last cold start: from the call that found it at zero replicas to its first ready replica.
    #[serde(default)]
    pub cold_start_ms: Option<u64>,
    pub created_at: String,
}

/// A change of a ready endpoint that its replicas are being moved to (new replicas first, then the old
/// ones drained), stored while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChangeUnderWay {
    /// Another checkpoint, on this many replicas.
    Rollout {
        checkpoint_id: CheckpointId,
        replicas: u32,
    },
    /// The same checkpoint on more or fewer replicas.
    Scale { from: u32, to: u32 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointReplica {
    pub ordinal: u32,
    pub status: EndpointStatus,
    pub restarts: u32,
    pub last_error: Option<String>,
    pub started_at: Option<String>,
    /// On a cluster: its batch job's id there.
    #[serde(default)]
    pub cluster_job: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointKey {
    pub id: KeyId,
    pub name: String,
    /// The first characters of the key, enough to recognise it.
    pub prefix: String,
    pub rate_limit_per_minute: u32,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// Returned once, when a key is created: `secret` goes after `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewEndpointKey {
    pub key: EndpointKey,
    pub secret: String,
}

/// Traffic over the last minute (and totals since the server started).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointMetrics {
    pub qps: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub requests_total: u64,
    pub errors_total: u64,
    pub rate_limited_total: u64,
    /// Forward-pass sizes seen (rows per pass) → how many requests were served in passes of that size.
    /// The sizes are JSON object keys, so strings of digits (`{"4": 12}`), as the document says.
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, u64>))]
    pub batch_rows: std::collections::BTreeMap<u32, u64>,
}

/// A change to a running endpoint: scale to `replicas`, or roll out `checkpoint_id` (new replicas start
/// and pass the parity gate before traffic moves; the old ones drain, so no request fails).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EndpointChange {
    #[serde(default)]
    pub replicas: Option<u32>,
    #[serde(default)]
    pub checkpoint_id: Option<CheckpointId>,
}

/// One label's probability in a playground answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LabelProbability {
    pub label: String,
    pub probability: f64,
}

/// The playground's answer for one input: what the model said of it, and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlaygroundPrediction {
    pub text: String,
    /// The second text, for a matching model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_pair: Option<String>,
    #[serde(flatten)]
    pub answer: PlaygroundAnswer,
    /// Gateway to replica and back, as the caller saw it.
    pub latency_ms: f64,
}

/// What a model said of a playground input: the predicted label and every label's probability, highest
/// first; or, for an entity model, the entities found in the text (character offsets into `text`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum PlaygroundAnswer {
    Label {
        label: String,
        probabilities: Vec<LabelProbability>,
    },
    Entities {
        entities: Vec<crate::serving::Entity>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndpointDetail {
    pub summary: EndpointSummary,
    /// What its model does, and so what a request gives it: texts, or pairs for matching.
    #[serde(default)]
    pub task: crate::task::Task,
    pub spec: EndpointSpec,
    pub replicas: Vec<EndpointReplica>,
    pub keys: Vec<EndpointKey>,
    pub parity_report: Option<crate::serving::ParityReport>,
    pub metrics: EndpointMetrics,
    /// What it did by itself and what people changed in how it runs, newest first (the last 50).
    #[serde(default)]
    pub history: Vec<crate::scaling::HistoryEntry>,
    /// The canary under way, if any.
    #[serde(default)]
    pub canary: Option<crate::scaling::Canary>,
    /// Both versions' live figures over the canary's current step, side by side (and what fails the
    /// rule now, if anything).
    #[serde(default)]
    pub canary_figures: Option<crate::scaling::CanaryFigures>,
    /// `/v1/endpoints/<slug>/predict` on this server.
    pub predict_path: String,
    pub can_edit: bool,
}

// ---- buttons ----------------------------------------------------------------------------------------

/// What an environment's lifecycle buttons ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentVerb {
    Up,
    Down,
    Restart,
}

/// What a job's buttons ask for; `Resume` retries from the job's latest checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobVerb {
    Cancel,
    Retry,
    Resume,
    Delete,
}

/// What an endpoint's buttons ask for; `Deploy` deploys a stopped or failed endpoint again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointVerb {
    Undeploy,
    Deploy,
    Delete,
}

#[cfg(test)]
mod log_note_tests {
    use super::*;

    #[test]
    fn the_log_sinks_note_is_recognised_in_train_log_and_nothing_else_is() {
        let note = LogNote::TrainLogFull { max_bytes: 1500 };
        assert_eq!(LogNote::in_train_log(&note.english()), Some(note));
        for line in [
            "train.log reached its limit of 1500 bytes; the trainer's further output is not kept here",
            "[paddock] train.log reached its limit of many bytes; the trainer's further output is not kept here",
            "[paddock] train.log reached its limit of 1500 bytes",
            "step 3 loss 0.5",
        ] {
            assert_eq!(LogNote::in_train_log(line), None, "{line}");
        }
    }

    #[test]
    fn a_line_without_a_note_reads_as_before_and_a_note_travels_with_its_values() {
        let old: LogLine = serde_json::from_str(r#"{"id":1,"line":"x","at":"t"}"#).unwrap();
        assert_eq!(old.note, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("note"));
        let ended = LogNote::Ended {
            code: Some(137),
            how: Some("node1 failed".into()),
        };
        let json = serde_json::to_string(&ended).unwrap();
        assert_eq!(serde_json::from_str::<LogNote>(&json).unwrap(), ended);
        assert_eq!(
            ended.english(),
            "[paddock] the job did not finish: node1 failed (the trainer exited with code 137)"
        );
    }
}

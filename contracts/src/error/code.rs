//! [`ErrorCode`]: the stable identifiers of errors, one enum so that a code is declared once, the UI's
//! translation of them is an exhaustive `match` (a new code without a Chinese and an English text does
//! not compile), and the OpenAPI document lists every value a client may see.

use serde::{Deserialize, Serialize};

/// Declares the codes and their wire names once; `ALL` and `as_str` follow from the list.
macro_rules! codes {
    ($($variant:ident = $wire:literal,)*) => {
        /// A stable, translatable identifier of what went wrong (`password_too_short`, `not_found`, …):
        /// what clients branch on, and the key of the UI's messages. The English `message` beside it is
        /// for people reading API answers.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        // The variants' snake-case names are their wire names (a test holds them equal); utoipa reads
        // the container's `rename_all`, where a per-variant rename passed through a macro is lost.
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            /// Every code, for tests that must cover them all.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire name (`"password_too_short"`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)*
                }
            }
        }
    };
}

codes! {
    AccountDisabled = "account_disabled",
    AccountNotProvisioned = "account_not_provisioned",
    AlreadyMember = "already_member",
    BodyTooLarge = "body_too_large",
    BuildFailed = "build_failed",
    BuildInProgress = "build_in_progress",
    CannotDisableSelf = "cannot_disable_self",
    CapInvalid = "cap_invalid",
    CheckpointConfigInvalid = "checkpoint_config_invalid",
    CheckpointDeleted = "checkpoint_deleted",
    CheckpointNotFound = "checkpoint_not_found",
    ClusterAccountInvalid = "cluster_account_invalid",
    ClusterFromSettings = "cluster_from_settings",
    ClusterInUse = "cluster_in_use",
    ClusterInvalid = "cluster_invalid",
    ClusterNameTaken = "cluster_name_taken",
    ClusterSettingsInvalid = "cluster_settings_invalid",
    ClusterUnreachable = "cluster_unreachable",
    CmdInvalid = "cmd_invalid",
    CsrfRejected = "csrf_rejected",
    DatasetColumnInvalid = "dataset_column_invalid",
    DatasetEncodingInvalid = "dataset_encoding_invalid",
    DatasetFormatInvalid = "dataset_format_invalid",
    DatasetInUse = "dataset_in_use",
    DatasetInvalid = "dataset_invalid",
    DatasetNameInvalid = "dataset_name_invalid",
    DatasetNameTaken = "dataset_name_taken",
    DatasetNotFound = "dataset_not_found",
    DockerConflict = "docker_conflict",
    DockerError = "docker_error",
    DockerNotFound = "docker_not_found",
    DockerUnavailable = "docker_unavailable",
    EndpointBusy = "endpoint_busy",
    EndpointChanging = "endpoint_changing",
    EndpointRunning = "endpoint_running",
    EndpointScalesItself = "endpoint_scales_itself",
    EndpointSpecInvalid = "endpoint_spec_invalid",
    EndpointStarting = "endpoint_starting",
    EndpointTimeout = "endpoint_timeout",
    EndpointUnavailable = "endpoint_unavailable",
    EndpointUnchanged = "endpoint_unchanged",
    EndpointWaking = "endpoint_waking",
    EnvironmentNameTaken = "environment_name_taken",
    EnvironmentNotFound = "environment_not_found",
    EnvironmentStarting = "environment_starting",
    EnvironmentWithoutRuntime = "environment_without_runtime",
    FileMissing = "file_missing",
    Forbidden = "forbidden",
    GpuQuotaExceeded = "gpu_quota_exceeded",
    GpusBusy = "gpus_busy",
    GroupMappingInvalid = "group_mapping_invalid",
    HostNotAllowed = "host_not_allowed",
    IdTokenInvalid = "id_token_invalid",
    IdentityProviderInvalid = "identity_provider_invalid",
    IdentityProviderNameTaken = "identity_provider_name_taken",
    IdentityProviderUnavailable = "identity_provider_unavailable",
    ImageArchiveInvalid = "image_archive_invalid",
    ImageUnavailable = "image_unavailable",
    Internal = "internal",
    InvalidBody = "invalid_body",
    InvalidCredentials = "invalid_credentials",
    JobNotFinished = "job_not_finished",
    JobServed = "job_served",
    JobSpecInvalid = "job_spec_invalid",
    KeyMissing = "key_missing",
    KeyNameInvalid = "key_name_invalid",
    KeyRateInvalid = "key_rate_invalid",
    KeyRefused = "key_refused",
    LabelNamesInvalid = "label_names_invalid",
    LabelsMismatch = "labels_mismatch",
    LastOwner = "last_owner",
    LimitReached = "limit_reached",
    NoCheckpoint = "no_checkpoint",
    NotBuilt = "not_built",
    NotFound = "not_found",
    NotRunning = "not_running",
    PaddleExportRefused = "paddle_export_refused",
    PasswordRequired = "password_required",
    PasswordSignInDisabled = "password_sign_in_disabled",
    PasswordTooLong = "password_too_long",
    PasswordTooShort = "password_too_short",
    PickledWeightsRefused = "pickled_weights_refused",
    PlaygroundInputsInvalid = "playground_inputs_invalid",
    PreflightFailed = "preflight_failed",
    PretrainedFormatInvalid = "pretrained_format_invalid",
    PretrainedInvalid = "pretrained_invalid",
    PretrainedModelInUse = "pretrained_model_in_use",
    PretrainedModelNotFound = "pretrained_model_not_found",
    PretrainedNameInvalid = "pretrained_name_invalid",
    PretrainedNameTaken = "pretrained_name_taken",
    QuotaInvalid = "quota_invalid",
    RegistryMirrorInvalid = "registry_mirror_invalid",
    RoleInvalid = "role_invalid",
    RunsQueryInvalid = "runs_query_invalid",
    SignInExpired = "sign_in_expired",
    SignupDisabled = "signup_disabled",
    SlugInvalid = "slug_invalid",
    SlugTaken = "slug_taken",
    SpecInvalid = "spec_invalid",
    SweepSpecInvalid = "sweep_spec_invalid",
    SweepStatusConflict = "sweep_status_conflict",
    TokenExpiryInvalid = "token_expiry_invalid",
    TokenNameInvalid = "token_name_invalid",
    TokenReadOnly = "token_read_only",
    TooManyRequests = "too_many_requests",
    Transport = "transport",
    Unauthenticated = "unauthenticated",
    UserNotFound = "user_not_found",
    UsernameInvalid = "username_invalid",
    UsernameTaken = "username_taken",
    VolumeFileMissing = "volume_file_missing",
    VolumeFileRefused = "volume_file_refused",
    VolumeTimeout = "volume_timeout",
    WorkspaceNameInvalid = "workspace_name_invalid",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with a wire name, as clients and tests see codes.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_wire_name() {
        for &code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn wire_names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
        }
    }
}

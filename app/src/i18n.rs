//! Translations: the module `make i18n` generates from `locales/*.json` (Simplified Chinese is the
//! default, English the alternative; `build.rs` refuses a module its locale files no longer match), plus the one place where an [`AppError`] becomes a sentence in
//! the user's language.

#![allow(missing_docs)]
// The generated code nests a module named like this one, and locale keys named `new` become methods.
#![allow(clippy::module_inception, clippy::new_ret_no_self)]

include!("i18n/generated.rs");

pub use i18n::*;

use contracts::data::{Issue, IssueDetail, IssueKind};
use contracts::error::{AppError, Cap, ErrorCode, FieldProblem, Rule};

/// The message for `err` in `locale`: an exhaustive match on its [`ErrorCode`], so a code without a
/// Chinese and an English text does not compile. Codes whose server message carries the detail a user
/// acts on (which field and why, which limit and its value, which line of a file) get a translated lead
/// followed by that detail.
pub fn error_text(locale: Locale, err: &AppError) -> String {
    let problems = err.problems();
    // Field by field, each problem in this language: a named rule is a sentence of its own, a message
    // keeps the field it is about in front.
    let detail = problems
        .iter()
        .map(|p| match p.rule {
            Some(_) => problem_text(locale, p),
            None => format!("{}: {}", p.field, p.message),
        })
        .collect::<Vec<_>>()
        .join(" ");
    match (message(locale, err.code()), detail.is_empty()) {
        (Message::Whole(text), true) => text.to_string(),
        (Message::Whole(text), false) => format!("{text} {detail}"),
        (Message::Lead(lead), true) => format!("{lead}{err}"),
        (Message::Lead(lead), false) => format!("{lead}{detail}"),
    }
}

/// One broken rule in `locale`: its named rule worded here, or the server's sentence when the rule has
/// no name (an environment spec's detailed checks).
pub fn problem_text(locale: Locale, problem: &FieldProblem) -> String {
    let Some(rule) = &problem.rule else {
        return problem.message.clone();
    };
    match rule {
        Rule::Name => td_string!(locale, rules.name).to_string(),
        Rule::SchedulerName => td_string!(locale, rules.scheduler_name).to_string(),
        Rule::ClusterName => td_string!(locale, rules.cluster_name).to_string(),
        Rule::ReadableFile => td_string!(locale, rules.readable_file).to_string(),
        Rule::SshDestination => td_string!(locale, rules.ssh_destination).to_string(),
        Rule::KnownHosts { line: Some(line) } => {
            td_string!(locale, rules.known_hosts_line, line = *line).to_string()
        }
        Rule::KnownHosts { line: None } => td_string!(locale, rules.known_hosts_none).to_string(),
        Rule::Between { min, max } => {
            td_string!(locale, rules.between, min = *min, max = *max).to_string()
        }
        Rule::AtLeast { min } => td_string!(locale, rules.at_least, min = *min).to_string(),
        Rule::AtLeastOrEmpty { min } => {
            td_string!(locale, rules.at_least_or_empty, min = *min).to_string()
        }
        Rule::AtMost { max } => td_string!(locale, rules.at_most, max = *max).to_string(),
        Rule::Interval {
            min,
            min_included,
            max,
            max_included,
        } => {
            let (min, max) = (*min, *max);
            match (min_included, max_included) {
                (false, true) => td_string!(locale, rules.above_at_most, min = min, max = max),
                (true, false) => td_string!(locale, rules.at_least_below, min = min, max = max),
                (false, false) => td_string!(locale, rules.above_below, min = min, max = max),
                (true, true) => td_string!(locale, rules.at_least_at_most, min = min, max = max),
            }
            .to_string()
        }
        Rule::OneOf { values } => {
            td_string!(locale, rules.one_of, values = values.join(", ")).to_string()
        }
        Rule::Above { min } => td_string!(locale, rules.above, min = *min).to_string(),
        Rule::NotEmpty => td_string!(locale, rules.not_empty).to_string(),
        Rule::GridNeedsValues => td_string!(locale, rules.grid_needs_values).to_string(),
        Rule::Fp16NeedsGpu => td_string!(locale, rules.fp16_needs_gpu).to_string(),
        Rule::Bf16NeedsCpuSupport => td_string!(locale, rules.bf16_needs_cpu_support).to_string(),
        Rule::Bf16NeedsAmpere { ampere } => {
            td_string!(locale, rules.bf16_needs_ampere, ampere = *ampere).to_string()
        }
        Rule::MoreGpusThanHost { host } => {
            td_string!(locale, rules.more_gpus_than_host, host = *host).to_string()
        }
        Rule::MoreGpusThanUsable { host, left_out } => td_string!(
            locale,
            rules.more_gpus_than_usable,
            host = *host,
            left_out = left_out.join("; ")
        )
        .to_string(),
        Rule::MoreGpusThanQuota { quota } => {
            td_string!(locale, rules.more_gpus_than_quota, quota = *quota).to_string()
        }
        Rule::RanksPerGpu { gpus } => {
            td_string!(locale, rules.ranks_per_gpu, gpus = *gpus).to_string()
        }
        Rule::NodesNeedCluster => td_string!(locale, rules.nodes_need_cluster).to_string(),
        Rule::NodesNotInImage => td_string!(locale, rules.nodes_not_in_image).to_string(),
        Rule::DataForTask { data } => {
            td_string!(locale, rules.data_for_task, task = task_name(locale, *data)).to_string()
        }
        Rule::NotWith { other } => {
            td_string!(locale, rules.not_with, other = other.clone()).to_string()
        }
        Rule::Data { issue } => issue_located(locale, issue),
        Rule::AndMore { more } => {
            td_string!(locale, data_issues.and_more, more = *more).to_string()
        }
        Rule::MemoryLimit { mib } => td_string!(locale, rules.memory_limit, mib = *mib).to_string(),
        Rule::CpuLimit { secs } => td_string!(locale, rules.cpu_limit, secs = *secs).to_string(),
        Rule::TimeLimit { secs } => td_string!(locale, rules.time_limit, secs = *secs).to_string(),
        Rule::Crashed { incident } => {
            td_string!(locale, rules.crashed, incident = incident.clone()).to_string()
        }
        Rule::CapReached { cap, max, used } => {
            let max = *max;
            match cap {
                Cap::RunningEnvironments => td_string!(locale, rules.cap_environments, max = max),
                Cap::Replicas => {
                    td_string!(
                        locale,
                        rules.cap_replicas,
                        max = max,
                        used = used.unwrap_or(0)
                    )
                }
                Cap::Uploads => td_string!(locale, rules.cap_uploads, max = max),
                Cap::Streams => td_string!(locale, rules.cap_streams, max = max),
            }
            .to_string()
        }
    }
}

/// A task's name in `locale`.
pub fn task_name(locale: Locale, task: contracts::task::Task) -> String {
    use contracts::task::Task;
    match task {
        Task::Classification => td_string!(locale, tasks.classification).to_string(),
        Task::Matching => td_string!(locale, tasks.matching).to_string(),
        Task::Ner => td_string!(locale, tasks.ner).to_string(),
    }
}

/// A data file's problem in `locale` with its place in front (`第 7 行，label：缺少标签。`).
pub fn issue_located(locale: Locale, issue: &Issue) -> String {
    let what = issue_text(locale, issue);
    match (issue.line, issue.field.clone()) {
        (Some(line), Some(field)) => td_string!(
            locale,
            data_issues.at_line_field,
            line = line,
            field = field,
            what = what
        )
        .to_string(),
        (Some(line), None) => {
            td_string!(locale, data_issues.at_line, line = line, what = what).to_string()
        }
        (None, Some(field)) => {
            td_string!(locale, data_issues.at_field, field = field, what = what).to_string()
        }
        (None, None) => what,
    }
}

/// What a data file's problem is, in `locale`: worded from its kind and detail, never from the English
/// message (a report stored before details existed gets its kind's general sentence).
pub fn issue_text(locale: Locale, issue: &Issue) -> String {
    use IssueDetail as D;
    use IssueKind as K;
    match (&issue.detail, issue.kind) {
        (Some(D::Utf16), _) => td_string!(locale, data_issues.utf16).to_string(),
        (Some(D::LooksGb18030), _) => td_string!(locale, data_issues.looks_gb18030).to_string(),
        (Some(D::BadByte { byte, offset }), _) => {
            let byte = format!("{byte:02X}");
            td_string!(locale, data_issues.bad_byte, byte = byte, offset = *offset).to_string()
        }
        (Some(D::ConvertedFromGb18030), _) => td_string!(locale, data_issues.converted).to_string(),
        (Some(D::HeaderColumns { columns }), _) => {
            let columns = columns.join(", ");
            td_string!(locale, data_issues.header_columns, columns = columns).to_string()
        }
        (Some(D::FieldCount { expected, found }), _) => {
            let (expected, found) = (*expected, *found);
            td_string!(
                locale,
                data_issues.field_count,
                expected = expected,
                found = found
            )
            .to_string()
        }
        (Some(D::NotJson), _) => td_string!(locale, data_issues.not_json).to_string(),
        (Some(D::NotObject), _) => td_string!(locale, data_issues.not_object).to_string(),
        (
            Some(D::WrongType {
                integer_allowed: false,
            }),
            _,
        ) => td_string!(locale, data_issues.wrong_type).to_string(),
        (
            Some(D::WrongType {
                integer_allowed: true,
            }),
            _,
        ) => td_string!(locale, data_issues.wrong_type_or_integer).to_string(),
        (Some(D::DuplicateOf { line }), _) => {
            td_string!(locale, data_issues.duplicate_of, line = *line).to_string()
        }
        (Some(D::ConflictsWith { line, there, here }), _) => {
            let (there, here) = (there.clone(), here.clone());
            td_string!(
                locale,
                data_issues.conflicting_with,
                line = *line,
                there = there,
                here = here
            )
            .to_string()
        }
        (Some(D::UnknownLabel { label, known }), _) => {
            let (label, known) = (label.clone(), known.join(", "));
            td_string!(
                locale,
                data_issues.unknown_label_named,
                label = label,
                known = known
            )
            .to_string()
        }
        (Some(D::OnlyLabel { label }), _) => {
            let label = label.clone();
            td_string!(locale, data_issues.single_label_named, label = label).to_string()
        }
        (Some(D::OverLength { rows, limit }), _) => {
            let (rows, limit) = (*rows, *limit);
            td_string!(locale, data_issues.over_length, rows = rows, limit = limit).to_string()
        }
        (None, K::Encoding) => td_string!(locale, data_issues.encoding).to_string(),
        (None, K::EmptyFile) => td_string!(locale, data_issues.empty_file).to_string(),
        (None, K::UnknownFormat) => td_string!(locale, data_issues.unknown_format).to_string(),
        (None, K::MissingColumn) => td_string!(locale, data_issues.missing_column).to_string(),
        (None, K::Malformed) => td_string!(locale, data_issues.malformed).to_string(),
        (None, K::EmptyText) => td_string!(locale, data_issues.empty_text).to_string(),
        (None, K::MissingLabel) => td_string!(locale, data_issues.missing_label).to_string(),
        (None, K::UnknownLabel) => td_string!(locale, data_issues.unknown_label).to_string(),
        (None, K::Duplicate) => td_string!(locale, data_issues.duplicate).to_string(),
        (None, K::ConflictingDuplicate) => td_string!(locale, data_issues.conflicting).to_string(),
        (None, K::Truncated) => td_string!(locale, data_issues.truncated).to_string(),
        (None, K::SingleLabel) => td_string!(locale, data_issues.single_label).to_string(),
        (None, K::UnopenedEntity) => td_string!(locale, data_issues.unopened_entity).to_string(),
    }
}

/// What a form shows under `field` for `err`: each broken rule at that field in the user's language
/// (beneath-field problems, `env.HOME`, keep their field's name in front), or, for an error that names
/// only a field, its translation; `None` when the error is not about this field.
pub fn field_text(locale: Locale, err: &AppError, field: &str) -> Option<String> {
    if err.has_problems() {
        let texts: Vec<String> = err
            .problems_at(field)
            .map(|p| {
                let text = problem_text(locale, p);
                if p.field == field {
                    text
                } else {
                    format!("{}: {text}", p.field)
                }
            })
            .collect();
        return (!texts.is_empty()).then(|| texts.join(" "));
    }
    (err.field() == Some(field)).then(|| error_text(locale, err))
}

enum Message {
    /// The whole message.
    Whole(&'static str),
    /// A lead, followed by the server's detail.
    Lead(&'static str),
}

fn message(locale: Locale, code: ErrorCode) -> Message {
    use ErrorCode as C;
    use Message::{Lead, Whole};
    match code {
        C::AccountDisabled => Whole(td_string!(locale, errors.account_disabled)),
        C::AlreadyMember => Whole(td_string!(locale, errors.already_member)),
        C::BodyTooLarge => Whole(td_string!(locale, errors.body_too_large)),
        C::BuildFailed => Lead(td_string!(locale, errors.build_failed)),
        C::BuildInProgress => Whole(td_string!(locale, errors.build_in_progress)),
        C::CannotDisableSelf => Whole(td_string!(locale, errors.cannot_disable_self)),
        C::ClusterAccountInvalid => Lead(td_string!(locale, errors.cluster_account_invalid)),
        C::ClusterFromSettings => Whole(td_string!(locale, errors.cluster_from_settings)),
        C::ClusterInUse => Lead(td_string!(locale, errors.cluster_in_use)),
        C::ClusterInvalid => Whole(td_string!(locale, errors.cluster_invalid)),
        C::ClusterNameTaken => Whole(td_string!(locale, errors.cluster_name_taken)),
        C::ClusterSettingsInvalid => Lead(td_string!(locale, errors.cluster_settings_invalid)),
        C::ClusterUnreachable => Lead(td_string!(locale, errors.cluster_unreachable)),
        C::CapInvalid => Whole(td_string!(locale, errors.cap_invalid)),
        C::CheckpointConfigInvalid => Lead(td_string!(locale, errors.checkpoint_config_invalid)),
        C::CheckpointDeleted => Whole(td_string!(locale, errors.checkpoint_deleted)),
        C::CheckpointNotFound => Whole(td_string!(locale, errors.checkpoint_not_found)),
        C::CmdInvalid => Whole(td_string!(locale, errors.cmd_invalid)),
        C::CsrfRejected => Whole(td_string!(locale, errors.csrf_rejected)),
        C::DatasetColumnInvalid => Whole(td_string!(locale, errors.dataset_column_invalid)),
        C::DatasetEncodingInvalid => Whole(td_string!(locale, errors.dataset_encoding_invalid)),
        C::DatasetFormatInvalid => Whole(td_string!(locale, errors.dataset_format_invalid)),
        C::DatasetInUse => Whole(td_string!(locale, errors.dataset_in_use)),
        C::DatasetInvalid => Lead(td_string!(locale, errors.dataset_invalid)),
        C::DatasetNameInvalid => Whole(td_string!(locale, errors.dataset_name_invalid)),
        C::DatasetNameTaken => Whole(td_string!(locale, errors.dataset_name_taken)),
        C::DatasetNotFound => Whole(td_string!(locale, errors.dataset_not_found)),
        C::DockerConflict => Lead(td_string!(locale, errors.docker_conflict)),
        C::DockerError => Lead(td_string!(locale, errors.docker_error)),
        C::DockerNotFound => Lead(td_string!(locale, errors.docker_not_found)),
        C::DockerUnavailable => Whole(td_string!(locale, errors.docker_unavailable)),
        C::EndpointBusy => Whole(td_string!(locale, errors.endpoint_busy)),
        C::EndpointChanging => Whole(td_string!(locale, errors.endpoint_changing)),
        C::EndpointRunning => Whole(td_string!(locale, errors.endpoint_running)),
        C::EndpointScalesItself => Whole(td_string!(locale, errors.endpoint_scales_itself)),
        C::EndpointSpecInvalid => Lead(td_string!(locale, errors.endpoint_spec_invalid)),
        C::EndpointStarting => Whole(td_string!(locale, errors.endpoint_starting)),
        C::EndpointTimeout => Whole(td_string!(locale, errors.endpoint_timeout)),
        C::EndpointUnavailable => Whole(td_string!(locale, errors.endpoint_unavailable)),
        C::EndpointUnchanged => Whole(td_string!(locale, errors.endpoint_unchanged)),
        C::EndpointWaking => Whole(td_string!(locale, errors.endpoint_waking)),
        C::EnvironmentNameTaken => Whole(td_string!(locale, errors.environment_name_taken)),
        C::EnvironmentNotFound => Whole(td_string!(locale, errors.environment_not_found)),
        C::EnvironmentStarting => Whole(td_string!(locale, errors.environment_starting)),
        C::EnvironmentWithoutRuntime => {
            Whole(td_string!(locale, errors.environment_without_runtime))
        }
        C::FileMissing => Whole(td_string!(locale, errors.file_missing)),
        C::Forbidden => Whole(td_string!(locale, errors.forbidden)),
        C::GpuQuotaExceeded => Whole(td_string!(locale, errors.gpu_quota_exceeded)),
        C::GpusBusy => Whole(td_string!(locale, errors.gpus_busy)),
        C::HostNotAllowed => Whole(td_string!(locale, errors.host_not_allowed)),
        C::ImageArchiveInvalid => Whole(td_string!(locale, errors.image_archive_invalid)),
        C::ImageUnavailable => Lead(td_string!(locale, errors.image_unavailable)),
        C::Internal => Whole(td_string!(locale, errors.internal)),
        C::InvalidBody => Whole(td_string!(locale, errors.invalid_body)),
        C::InvalidCredentials => Whole(td_string!(locale, errors.invalid_credentials)),
        C::JobNotFinished => Whole(td_string!(locale, errors.job_not_finished)),
        C::JobServed => Whole(td_string!(locale, errors.job_served)),
        C::JobSpecInvalid => Lead(td_string!(locale, errors.job_spec_invalid)),
        C::KeyMissing => Whole(td_string!(locale, errors.key_missing)),
        C::KeyNameInvalid => Whole(td_string!(locale, errors.key_name_invalid)),
        C::KeyRateInvalid => Whole(td_string!(locale, errors.key_rate_invalid)),
        C::KeyRefused => Whole(td_string!(locale, errors.key_refused)),
        C::LabelNamesInvalid => Lead(td_string!(locale, errors.label_names_invalid)),
        C::LabelsMismatch => Lead(td_string!(locale, errors.labels_mismatch)),
        C::LastOwner => Whole(td_string!(locale, errors.last_owner)),
        C::LimitReached => Lead(td_string!(locale, errors.limit_reached)),
        C::NoCheckpoint => Whole(td_string!(locale, errors.no_checkpoint)),
        C::NotBuilt => Whole(td_string!(locale, errors.not_built)),
        C::NotFound => Whole(td_string!(locale, errors.not_found)),
        C::NotRunning => Whole(td_string!(locale, errors.not_running)),
        C::PasswordTooLong => Whole(td_string!(locale, errors.password_too_long)),
        C::PasswordTooShort => Whole(td_string!(locale, errors.password_too_short)),
        C::PaddleExportRefused => Lead(td_string!(locale, errors.paddle_export_refused)),
        C::PickledWeightsRefused => Whole(td_string!(locale, errors.pickled_weights_refused)),
        C::PlaygroundInputsInvalid => Whole(td_string!(locale, errors.playground_inputs_invalid)),
        C::PreflightFailed => Lead(td_string!(locale, errors.preflight_failed)),
        C::PretrainedFormatInvalid => Whole(td_string!(locale, errors.pretrained_format_invalid)),
        C::PretrainedInvalid => Lead(td_string!(locale, errors.pretrained_invalid)),
        C::PretrainedModelInUse => Whole(td_string!(locale, errors.pretrained_model_in_use)),
        C::PretrainedModelNotFound => Whole(td_string!(locale, errors.pretrained_model_not_found)),
        C::PretrainedNameInvalid => Whole(td_string!(locale, errors.pretrained_name_invalid)),
        C::PretrainedNameTaken => Whole(td_string!(locale, errors.pretrained_name_taken)),
        C::QuotaInvalid => Whole(td_string!(locale, errors.quota_invalid)),
        C::RegistryMirrorInvalid => Whole(td_string!(locale, errors.registry_mirror_invalid)),
        C::RoleInvalid => Whole(td_string!(locale, errors.role_invalid)),
        C::RunsQueryInvalid => Lead(td_string!(locale, errors.runs_query_invalid)),
        C::AccountNotProvisioned => Whole(td_string!(locale, errors.account_not_provisioned)),
        C::GroupMappingInvalid => Whole(td_string!(locale, errors.group_mapping_invalid)),
        C::IdTokenInvalid => Whole(td_string!(locale, errors.id_token_invalid)),
        C::IdentityProviderInvalid => Whole(td_string!(locale, errors.identity_provider_invalid)),
        C::IdentityProviderNameTaken => {
            Whole(td_string!(locale, errors.identity_provider_name_taken))
        }
        C::IdentityProviderUnavailable => {
            Whole(td_string!(locale, errors.identity_provider_unavailable))
        }
        C::PasswordRequired => Whole(td_string!(locale, errors.password_required)),
        C::PasswordSignInDisabled => Whole(td_string!(locale, errors.password_sign_in_disabled)),
        C::SignInExpired => Whole(td_string!(locale, errors.sign_in_expired)),
        C::SignupDisabled => Whole(td_string!(locale, errors.signup_disabled)),
        C::SlugInvalid => Whole(td_string!(locale, errors.slug_invalid)),
        C::SlugTaken => Whole(td_string!(locale, errors.slug_taken)),
        C::SpecInvalid => Lead(td_string!(locale, errors.spec_invalid)),
        C::SweepSpecInvalid => Lead(td_string!(locale, errors.sweep_spec_invalid)),
        C::SweepStatusConflict => Whole(td_string!(locale, errors.sweep_status_conflict)),
        C::TokenExpiryInvalid => Whole(td_string!(locale, errors.token_expiry_invalid)),
        C::TokenNameInvalid => Whole(td_string!(locale, errors.token_name_invalid)),
        C::TokenReadOnly => Whole(td_string!(locale, errors.token_read_only)),
        C::TooManyRequests => Whole(td_string!(locale, errors.too_many_requests)),
        C::Transport => Whole(td_string!(locale, errors.transport)),
        C::Unauthenticated => Whole(td_string!(locale, errors.unauthenticated)),
        C::UserNotFound => Whole(td_string!(locale, errors.user_not_found)),
        C::UsernameInvalid => Whole(td_string!(locale, errors.username_invalid)),
        C::UsernameTaken => Whole(td_string!(locale, errors.username_taken)),
        C::VolumeFileMissing => Lead(td_string!(locale, errors.volume_file_missing)),
        C::VolumeFileRefused => Lead(td_string!(locale, errors.volume_file_refused)),
        C::VolumeTimeout => Whole(td_string!(locale, errors.volume_timeout)),
        C::WorkspaceNameInvalid => Whole(td_string!(locale, errors.workspace_name_invalid)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_code(code: ErrorCode) -> AppError {
        AppError::Invalid {
            field: None,
            code,
            message: "SERVER MESSAGE".into(),
            problems: Vec::new(),
        }
    }

    /// The match above is exhaustive; this checks that each text exists in both locale files (a key
    /// missing in one falls back to the other) and says something beyond the server's words.
    #[test]
    fn every_code_is_translated_in_both_languages() {
        for &code in ErrorCode::ALL {
            let zh = error_text(Locale::zh, &with_code(code));
            let en = error_text(Locale::en, &with_code(code));
            for (language, text) in [("Chinese", &zh), ("English", &en)] {
                let own = text.strip_suffix("SERVER MESSAGE").unwrap_or(text);
                assert!(!own.trim().is_empty(), "{code} has no {language} text");
            }
            assert_ne!(zh, en, "{code}: the Chinese text is the English one");
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{code}: the Chinese text has no Chinese: {zh}"
            );
        }
    }

    /// Each named rule is a sentence in both languages (the match in `problem_text` is exhaustive; this
    /// checks the words behind it), with its values in it; a problem without a rule keeps its message.
    #[test]
    fn every_rule_is_worded_in_both_languages_with_its_values() {
        let rules = [
            Rule::Name,
            Rule::Between { min: 1, max: 4096 },
            Rule::AtLeast { min: 7 },
            Rule::AtLeastOrEmpty { min: 7 },
            Rule::AtMost { max: 64 },
            Rule::Interval {
                min: 0.0,
                min_included: false,
                max: 1.0,
                max_included: true,
            },
            Rule::Interval {
                min: 0.0,
                min_included: true,
                max: 1.0,
                max_included: false,
            },
            Rule::Interval {
                min: 0.0,
                min_included: false,
                max: 1.0,
                max_included: false,
            },
            Rule::Interval {
                min: 0.0,
                min_included: true,
                max: 1.0,
                max_included: true,
            },
            Rule::OneOf {
                values: vec!["fp32".into(), "bf16".into()],
            },
            Rule::Above { min: 0.5 },
            Rule::NotEmpty,
            Rule::GridNeedsValues,
            Rule::Fp16NeedsGpu,
            Rule::Bf16NeedsCpuSupport,
            Rule::Bf16NeedsAmpere { ampere: 1 },
            Rule::MoreGpusThanHost { host: 3 },
            Rule::MoreGpusThanUsable {
                host: 0,
                left_out: vec!["GPU 0 (V100): compute capability 7.0 is below 7.5".into()],
            },
            Rule::MoreGpusThanQuota { quota: 2 },
            Rule::RanksPerGpu { gpus: 4 },
            Rule::NodesNeedCluster,
            Rule::NodesNotInImage,
            Rule::DataForTask {
                data: contracts::task::Task::Matching,
            },
            Rule::NotWith {
                other: "base_checkpoint_id".into(),
            },
            Rule::MemoryLimit { mib: 4096 },
            Rule::CpuLimit { secs: 64 },
            Rule::TimeLimit { secs: 3 },
            Rule::Crashed {
                incident: "0badcafe".into(),
            },
        ];
        let mut seen = std::collections::HashSet::new();
        for rule in rules {
            let problem = FieldProblem::new("x", rule.clone(), "SERVER MESSAGE");
            let (zh, en) = (
                problem_text(Locale::zh, &problem),
                problem_text(Locale::en, &problem),
            );
            assert!(!zh.contains("SERVER") && !en.contains("SERVER"), "{rule:?}");
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{rule:?}: {zh}"
            );
            assert!(
                seen.insert(en.clone()),
                "{rule:?} says what another says: {en}"
            );
            for value in [
                "4096",
                "64",
                "3",
                "fp32, bf16",
                "base_checkpoint_id",
                "0badcafe",
            ] {
                if en.contains(value) {
                    assert!(zh.contains(value), "{rule:?}: {zh} lacks {value}");
                }
            }
        }
        let said = FieldProblem::said("memory", "\"lots\" is not a size");
        assert_eq!(problem_text(Locale::zh, &said), "\"lots\" is not a size");
        let err = AppError::invalid_fields(ErrorCode::JobSpecInvalid, vec![said]).unwrap();
        assert_eq!(
            field_text(Locale::en, &err, "memory").as_deref(),
            Some("\"lots\" is not a size")
        );
        assert!(error_text(Locale::zh, &err).ends_with("memory: \"lots\" is not a size"));
    }

    /// Each data problem a validator reports is worded in Chinese from its kind and detail, with its
    /// figures and names, and never by quoting the English message.
    #[test]
    fn every_data_issue_is_worded_in_both_languages_with_its_figures() {
        use IssueDetail as D;
        use IssueKind as K;
        let details = [
            (K::Encoding, Some(D::Utf16), vec![]),
            (K::Encoding, Some(D::LooksGb18030), vec![]),
            (
                K::Encoding,
                Some(D::BadByte {
                    byte: 0xFF,
                    offset: 12,
                }),
                vec!["0xFF", "12"],
            ),
            (K::Encoding, Some(D::ConvertedFromGb18030), vec![]),
            (
                K::MissingColumn,
                Some(D::HeaderColumns {
                    columns: vec!["txt".into(), "lbl".into()],
                }),
                vec!["txt, lbl"],
            ),
            (
                K::Malformed,
                Some(D::FieldCount {
                    expected: 2,
                    found: 3,
                }),
                vec!["2", "3"],
            ),
            (K::Malformed, Some(D::NotJson), vec![]),
            (K::Malformed, Some(D::NotObject), vec![]),
            (
                K::Malformed,
                Some(D::WrongType {
                    integer_allowed: false,
                }),
                vec![],
            ),
            (
                K::Malformed,
                Some(D::WrongType {
                    integer_allowed: true,
                }),
                vec![],
            ),
            (K::Duplicate, Some(D::DuplicateOf { line: 42 }), vec!["42"]),
            (
                K::ConflictingDuplicate,
                Some(D::ConflictsWith {
                    line: 42,
                    there: "好评".into(),
                    here: "差评".into(),
                }),
                vec!["42", "好评", "差评"],
            ),
            (
                K::UnknownLabel,
                Some(D::UnknownLabel {
                    label: "neutral".into(),
                    known: vec!["neg".into(), "pos".into()],
                }),
                vec!["neutral", "neg, pos"],
            ),
            (
                K::SingleLabel,
                Some(D::OnlyLabel {
                    label: "pos".into(),
                }),
                vec!["pos"],
            ),
            (
                K::Truncated,
                Some(D::OverLength {
                    rows: 17,
                    limit: 128,
                }),
                vec!["17", "128"],
            ),
        ];
        let plain = [
            K::Encoding,
            K::EmptyFile,
            K::UnknownFormat,
            K::MissingColumn,
            K::Malformed,
            K::EmptyText,
            K::MissingLabel,
            K::UnknownLabel,
            K::Duplicate,
            K::ConflictingDuplicate,
            K::Truncated,
            K::SingleLabel,
            K::UnopenedEntity,
        ]
        .map(|kind| (kind, None, vec![]));
        let mut seen = std::collections::HashSet::new();
        for (kind, detail, figures) in details.into_iter().chain(plain) {
            let issue = Issue {
                detail,
                ..Issue::error(kind, None, None, "SERVER MESSAGE".into())
            };
            let (zh, en) = (
                issue_text(Locale::zh, &issue),
                issue_text(Locale::en, &issue),
            );
            assert!(
                !zh.contains("SERVER") && !en.contains("SERVER"),
                "{issue:?}"
            );
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{issue:?}: {zh}"
            );
            assert!(
                seen.insert(en.clone()),
                "{issue:?} says what another says: {en}"
            );
            for figure in figures {
                assert!(
                    zh.contains(figure) && en.contains(figure),
                    "{issue:?} lacks {figure}: {zh} / {en}"
                );
            }
        }
        let issue = Issue::in_cell(K::MissingLabel, 7, "label", "missing label");
        assert_eq!(
            issue_located(Locale::zh, &issue),
            "第 7 行，label：缺少标签。"
        );
        assert_eq!(
            issue_located(Locale::en, &issue),
            "line 7, label: Missing label."
        );
        let refused = FieldProblem::new(
            "file",
            Rule::Data {
                issue: Box::new(issue),
            },
            "line 7, label: missing label",
        );
        assert_eq!(
            problem_text(Locale::zh, &refused),
            "第 7 行，label：缺少标签。"
        );
        let more = FieldProblem::new("file", Rule::AndMore { more: 9 }, "… and 9 more");
        assert_eq!(problem_text(Locale::zh, &more), "……另有 9 个问题。");
    }

    #[test]
    fn codes_of_unit_variants_are_translated_too() {
        assert_eq!(
            error_text(Locale::zh, &AppError::Forbidden),
            "你没有执行此操作的权限。"
        );
        assert_eq!(error_text(Locale::en, &AppError::NotFound), "Not found.");
    }

    #[test]
    fn spec_errors_keep_the_servers_detail() {
        let err = AppError::invalid(
            "memory",
            ErrorCode::SpecInvalid,
            "memory: \"lots\" is not a size",
        );
        assert_eq!(
            error_text(Locale::zh, &err),
            "配置有误：memory: \"lots\" is not a size"
        );
    }

    /// A cap's refusal reads whole in the reader's language, with its value (issue 33: the Chinese
    /// page had an English tail), and the REST body carries the rule for the upload's XHR too.
    #[test]
    fn cap_refusals_read_whole_in_the_users_language_with_the_value() {
        let err = AppError::conflict_with(
            ErrorCode::LimitReached,
            FieldProblem::new(
                "limit",
                Rule::CapReached {
                    cap: Cap::Replicas,
                    max: 4,
                    used: Some(3),
                },
                "endpoint replicas per workspace: the limit is 4; …",
            ),
        );
        let zh = error_text(Locale::zh, &err);
        assert!(
            zh.starts_with("已达到上限：") && zh.contains('4') && zh.contains('3'),
            "{zh}"
        );
        assert!(!zh.contains("the limit"), "no English tail: {zh}");
        let en = error_text(Locale::en, &err);
        assert!(en.contains("at most 4") && en.contains("use 3"), "{en}");
        for cap in [Cap::RunningEnvironments, Cap::Uploads, Cap::Streams] {
            let err = AppError::conflict_with(
                ErrorCode::LimitReached,
                FieldProblem::new(
                    "limit",
                    Rule::CapReached {
                        cap,
                        max: 2,
                        used: None,
                    },
                    "…",
                ),
            );
            let zh = error_text(Locale::zh, &err);
            assert!(zh.contains('2') && !zh.contains('…'), "{cap:?}: {zh}");
        }
    }

    #[test]
    fn simplified_chinese_is_the_default() {
        assert_eq!(Locale::default(), Locale::zh);
    }
}

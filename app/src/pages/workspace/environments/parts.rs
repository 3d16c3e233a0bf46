//! Pieces every environment page shows: the container status and build badges, the "Docker is not
//! available" banner, and how IDs, sizes and resources are written. The formatting is pure so that the
//! server and the browser render the same text (hydration compares them).

use leptos::prelude::*;

use crate::components::badges::StateBadge;
use crate::i18n::*;
use contracts::types::{BuildStatus, DockerStatus, EnvStatus, GpuSpec};

/// The translated container status; `exited` says the code when there is one.
pub fn status_text(locale: Locale, status: EnvStatus, exit_code: Option<i64>) -> String {
    match (status, exit_code) {
        (EnvStatus::Stopped, _) => td_string!(locale, environments.status_stopped).to_string(),
        (EnvStatus::Provisioning, _) => {
            td_string!(locale, environments.status_provisioning).to_string()
        }
        (EnvStatus::Running, _) => td_string!(locale, environments.status_running).to_string(),
        (EnvStatus::Exited, Some(code)) => {
            td_string!(locale, environments.status_exited_code, code = code).to_string()
        }
        (EnvStatus::Exited, None) => td_string!(locale, environments.status_exited).to_string(),
        (EnvStatus::OomKilled, _) => td_string!(locale, environments.status_oom_killed).to_string(),
        (EnvStatus::Missing, _) => td_string!(locale, environments.status_missing).to_string(),
        (EnvStatus::Failed, _) => td_string!(locale, environments.status_failed).to_string(),
    }
}

pub fn build_text(locale: Locale, status: BuildStatus) -> &'static str {
    match status {
        BuildStatus::Queued => td_string!(locale, environments.build_queued),
        BuildStatus::Building => td_string!(locale, environments.build_building),
        BuildStatus::Built => td_string!(locale, environments.build_built),
        BuildStatus::Failed => td_string!(locale, environments.build_failed),
    }
}

/// The container's state. `data-status` carries the raw value for tests and for styling.
#[component]
pub fn StatusBadge(
    #[prop(into)] status: Signal<EnvStatus>,
    #[prop(into)] exit_code: Signal<Option<i64>>,
    #[prop(default = "env-status")] testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || status_text(i18n.get_locale(), status.get(), exit_code.get());
    view! { <StateBadge kind="env" testid state=move || status.get().as_str() text /> }
}

/// The image build of the current version.
#[component]
pub fn BuildBadge(
    #[prop(into)] status: Signal<BuildStatus>,
    #[prop(default = "env-build-status")] testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || build_text(i18n.get_locale(), status.get());
    view! { <StateBadge kind="build" testid state=move || status.get().as_str() text dot=false /> }
}

/// Shown on every environment page while the server cannot reach Docker: what it means, and the
/// server's reason in a disclosure for whoever runs the machine.
#[component]
pub fn DockerBanner(status: DockerStatus) -> impl IntoView {
    let i18n = use_i18n();
    (!status.available).then(|| {
        let detail = status.message.clone();
        view! {
            <div class="notice notice-warning docker-banner" role="status" data-testid="docker-unavailable">
                <p><strong>{t!(i18n, environments.docker_unavailable_title)}</strong></p>
                <p>{t!(i18n, environments.docker_unavailable_body)}</p>
                {detail.map(|message| view! {
                    <details>
                        <summary>{t!(i18n, environments.docker_detail)}</summary>
                        <code class="docker-banner-detail">{message}</code>
                    </details>
                })}
            </div>
        }
    })
}

/// `sha256:0123456789abcdef…` → `0123456789ab`, Docker's short form.
pub fn short_id(id: &str) -> String {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    hex.chars().take(12).collect()
}

/// Cores as people write them: `1`, `0.5`, `2.25`.
pub fn cores(cpus: f64) -> String {
    let text = format!("{cpus:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub fn gpus_text(locale: Locale, gpus: &GpuSpec) -> String {
    match gpus {
        GpuSpec::None => td_string!(locale, environments.gpus_none).to_string(),
        GpuSpec::Count(n) => td_string!(locale, environments.gpus_count, n = *n).to_string(),
        GpuSpec::Devices(list) => {
            let list = list
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            td_string!(locale, environments.gpus_devices, list = list).to_string()
        }
    }
}

/// `0.5 CPU · 64m · no GPU`.
pub fn resources_text(locale: Locale, cpus: f64, memory: &str, gpus: &GpuSpec) -> String {
    format!(
        "{} · {} · {}",
        td_string!(locale, environments.cpus, n = cores(cpus)),
        memory,
        gpus_text(locale, gpus)
    )
}

/// Bytes in binary units with one decimal: `1.5 GiB`, `640.0 KiB`, `12 B`.
pub fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_drop_the_algorithm_and_keep_twelve_digits() {
        assert_eq!(short_id("sha256:9e572c5cc2244c1d0000"), "9e572c5cc224");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn cores_lose_trailing_zeros_only() {
        assert_eq!(cores(1.0), "1");
        assert_eq!(cores(0.5), "0.5");
        assert_eq!(cores(2.25), "2.25");
        assert_eq!(cores(10.0), "10");
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(bytes_text(12), "12 B");
        assert_eq!(bytes_text(64 * 1024 * 1024), "64.0 MiB");
        assert_eq!(bytes_text(1536 * 1024 * 1024), "1.5 GiB");
    }

    #[test]
    fn statuses_and_resources_read_in_both_languages() {
        assert_eq!(
            status_text(Locale::en, EnvStatus::Exited, Some(137)),
            "Exited (code 137)"
        );
        assert_eq!(status_text(Locale::zh, EnvStatus::Running, None), "运行中");
        assert_eq!(
            resources_text(Locale::en, 0.5, "64m", &GpuSpec::Devices(vec![0, 3])),
            "0.5 CPU · 64m · GPU 0, 3"
        );
    }
}

//! CPU, memory and process count of a running environment, read again every few seconds while the
//! panel is shown (the detail page shows it only while the container runs).

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::time::Duration;

use leptos::prelude::*;

use super::parts::bytes_text;
use crate::api::environments::get_environment_stats;
use crate::components::page::Loaded;
use crate::components::poll::every;
use crate::i18n::*;

/// How often the numbers are refreshed: Docker's one-shot stats take about a second to sample, so
/// faster would only queue requests.
const REFRESH: Duration = Duration::from_secs(3);

#[component]
pub fn StatsPanel(workspace_id: WorkspaceId, environment_id: EnvironmentId) -> impl IntoView {
    let i18n = use_i18n();
    let stats = Resource::new(
        || (),
        move |_| get_environment_stats(workspace_id, environment_id),
    );
    every(REFRESH, move || stats.refetch());
    view! {
        <section class="card" aria-labelledby="env-usage-title" data-testid="env-stats">
            <h2 id="env-usage-title">{t!(i18n, env_detail.usage_title)}</h2>
            <Loaded load=move || async move { stats.await } let:s>
                {
                    let memory_share = if s.memory_limit_bytes > 0 {
                        (s.memory_bytes as f64 / s.memory_limit_bytes as f64 * 100.0).min(100.0)
                    } else {
                        0.0
                    };
                    view! {
                        <dl class="stats">
                            <div>
                                <dt>{t!(i18n, env_detail.cpu)}</dt>
                                <dd data-testid="stats-cpu">{format!("{:.1} %", s.cpu_percent)}</dd>
                            </div>
                            <div>
                                <dt>{t!(i18n, env_detail.memory)}</dt>
                                <dd data-testid="stats-memory">
                                    {format!("{} / {}", bytes_text(s.memory_bytes), bytes_text(s.memory_limit_bytes))}
                                    <span class="meter" aria-hidden="true">
                                        <span class="meter-fill" style=format!("width: {memory_share:.0}%")></span>
                                    </span>
                                </dd>
                            </div>
                            <div>
                                <dt>{t!(i18n, env_detail.pids)}</dt>
                                <dd data-testid="stats-pids">
                                    {s.pids.map(|p| p.to_string()).unwrap_or_else(|| "–".to_string())}
                                </dd>
                            </div>
                        </dl>
                    }
                }
            </Loaded>
            <p class="hint">{t!(i18n, env_detail.usage_refresh)}</p>
        </section>
    }
    .into_any()
}

//! Checkpoints as a table: step, the dev metrics they were ranked by, size, whether retention kept them
//! (best, kept, or files deleted; "learned nothing" instead of best when its dev predictions are
//! degenerate), sha256 of the weights and a download link (a tar streamed by the
//! server). Used on a job's page and, with a job column for lineage, on the Models page. Editors and
//! owners also get Deploy (`endpoints::deploy`) on every checkpoint still on disk; given the workspace's
//! endpoints, a column links each checkpoint to the endpoints serving it (the rest of its lineage).

use contracts::ids::{CheckpointId, JobId, WorkspaceId};
use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::components::A;

use super::job_href;
use super::parts::metric_text;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::datasets::short_sha;
use crate::pages::workspace::endpoints::deploy::DeployCheckpoint;
use crate::pages::workspace::endpoints::{endpoint_href, EndpointStatusBadge};
use crate::pages::workspace::environments::parts::bytes_text;
use contracts::metrics::Degenerate;
use contracts::types::{CheckpointFormat, CheckpointInfo, CheckpointState, EndpointSummary};

/// A checkpoint's download in `format`: the Hugging Face directory Paddock keeps, or the PaddleNLP
/// directory made from it on request (a team that came from Paddle takes its model back).
pub fn download_url(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    format: CheckpointFormat,
) -> String {
    let url = format!("/api/v1/workspaces/{workspace_id}/checkpoints/{checkpoint_id}/download");
    match format {
        CheckpointFormat::HuggingFace => url,
        CheckpointFormat::PaddleNlp => format!("{url}?format=paddlenlp"),
    }
}

/// The space the checkpoints still on disk take.
pub fn bytes_kept(list: &[CheckpointInfo]) -> u64 {
    list.iter()
        .filter(|c| c.deleted_at.is_none())
        .map(|c| c.bytes)
        .sum()
}

#[component]
pub fn CheckpointsTable(
    workspace_id: WorkspaceId,
    #[prop(into)] list: Signal<Vec<CheckpointInfo>>,
    /// Job names by id: shows a job column linking to each checkpoint's job.
    #[prop(optional)]
    jobs: Option<BTreeMap<JobId, String>>,
    /// Editors and owners: a Deploy button per checkpoint still on disk.
    #[prop(optional)]
    can_deploy: bool,
    /// The job's name on a job's page (the deployment's default name; `jobs` has them on Models).
    #[prop(optional, into)]
    job_name: Option<String>,
    /// The workspace's endpoints: a column with those serving each checkpoint.
    #[prop(optional, into)]
    serving: Option<Signal<Vec<EndpointSummary>>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let with_jobs = jobs.is_some();
    let jobs = StoredValue::new(jobs.unwrap_or_default());
    let job_name = StoredValue::new(job_name);
    let with_serving = serving.is_some();
    // The job column leads (on Models); who serves each, then the actions (download, deploy) close
    // the row, in a column that stays in view while a wide table scrolls.
    let columns = move |locale| {
        let mut columns = columns!(checkpoints: col_step, col_metrics, col_size, col_state, "sha256", col_created)(
            locale,
        );
        if with_jobs {
            columns.insert(0, td_string!(locale, checkpoints.col_job));
        }
        if with_serving {
            columns.push(td_string!(locale, checkpoints.col_served));
        }
        columns.push(td_string!(locale, checkpoints.col_actions));
        columns
    };
    view! {
        <p class="hint" data-testid="checkpoints-space">
            {move || t_string!(i18n, checkpoints.space, size = list.with(|l| bytes_text(bytes_kept(l)))).to_string()}
        </p>
        <DataTable testid="checkpoints-table" columns sticky_end=true>
            {move || list.get().into_iter().map(|c| {
                let st = c.state();
                let accuracy = c.metrics.as_ref().map(|m| m.accuracy);
                let f1 = c.metrics.as_ref().map(|m| m.macro_f1);
                // An entity model's checkpoint is ranked by entity F1: that is its figure.
                let entity_f1 = c.metrics.as_ref().and_then(|m| m.entities).map(|e| e.f1);
                let name = job_name.get_value()
                    .or_else(|| jobs.with_value(|j| j.get(&c.job_id).cloned()))
                    .unwrap_or_else(|| format!("#{}", c.job_id));
                let actions = c.deleted_at.is_none().then(|| {
                    let (checkpoint_id, step, job_name, degenerate) = (c.id, c.step, name.clone(), c.degenerate);
                    view! {
                        <div class="row-actions">
                            <a class="button button-small" href=download_url(workspace_id, c.id, CheckpointFormat::HuggingFace) download="" rel="external"
                                title=move || t_string!(i18n, checkpoints.download_hint).to_string() data-testid="checkpoint-download">
                                {t!(i18n, checkpoints.download)}
                            </a>
                            <a class="button button-small" href=download_url(workspace_id, c.id, CheckpointFormat::PaddleNlp) download="" rel="external"
                                title=move || t_string!(i18n, checkpoints.download_paddle_hint).to_string() data-testid="checkpoint-download-paddle">
                                {t!(i18n, checkpoints.download_paddle)}
                            </a>
                            {can_deploy.then(|| view! { <DeployCheckpoint workspace_id checkpoint_id step job_name degenerate /> })}
                        </div>
                    }
                });
                let served = serving.map(|serving| {
                    let checkpoint_id = c.id;
                    view! {
                        <td data-testid="checkpoint-endpoints">
                            {move || {
                                let here: Vec<EndpointSummary> = serving.with(|l| {
                                    l.iter().filter(|e| e.checkpoint_id == checkpoint_id).cloned().collect()
                                });
                                if here.is_empty() {
                                    return view! { <span class="muted">"–"</span> }.into_any();
                                }
                                view! {
                                    <ul class="served-by">
                                        {here.into_iter().map(|e| view! {
                                            <li>
                                                <A href=endpoint_href(workspace_id, e.id) attr:data-testid="checkpoint-endpoint" attr:data-id=e.id.get()>
                                                    {e.name}
                                                </A>
                                                " "
                                                <EndpointStatusBadge status=e.status />
                                            </li>
                                        }).collect_view()}
                                    </ul>
                                }
                                .into_any()
                            }}
                        </td>
                    }
                });
                let job = with_jobs.then(|| {
                    view! { <td class="cell-name"><A href=job_href(workspace_id, c.job_id) attr:data-testid="checkpoint-job">{name}</A></td> }
                });
                view! {
                    <tr data-testid="checkpoint-row" data-id=c.id.get() data-state=st.as_str() data-step=c.step>
                        {job}
                        <th scope="row" class="num nowrap">{c.step}{c.epoch.map(|e| format!(" · {e:.2}"))}</th>
                        <td class="nowrap">
                            {let has = c.metrics.is_some();
                            move || match (has, entity_f1) {
                                (true, Some(e)) => t_string!(i18n, checkpoints.entity_metrics, f1 = metric_text(Some(e))).to_string(),
                                (true, None) => t_string!(i18n, checkpoints.metrics, accuracy = metric_text(accuracy), f1 = metric_text(f1)).to_string(),
                                (false, _) => "–".to_string(),
                            }}
                        </td>
                        <td class="nowrap">{bytes_text(c.bytes)}</td>
                        <td><CheckpointBadge state=st degenerate=c.degenerate /></td>
                        <td><code title=c.sha256.clone()>{short_sha(&c.sha256)}</code></td>
                        <td class="nowrap"><Timestamp at=c.created_at.clone() /></td>
                        {served}
                        <td>{actions}</td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

/// Why a checkpoint learned nothing, in words.
pub fn degenerate_text(locale: Locale, why: Degenerate) -> String {
    match why {
        Degenerate::OneLabel => td_string!(locale, checkpoints.one_label).to_string(),
        Degenerate::AtChance => td_string!(locale, checkpoints.at_chance).to_string(),
    }
}

/// The checkpoint's state as a badge; a degenerate one says why in its title, so that nobody
/// mistakes the first of a failed run for a model worth deploying.
#[component]
pub fn CheckpointBadge(state: CheckpointState, degenerate: Option<Degenerate>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <span class=format!("badge badge-ckpt badge-ckpt-{}", state.as_str()) data-testid="checkpoint-state"
            title=move || degenerate.map(|why| degenerate_text(i18n.get_locale(), why))>
            {move || match state {
                CheckpointState::Deleted => t_string!(i18n, checkpoints.deleted),
                CheckpointState::Degenerate => t_string!(i18n, checkpoints.degenerate),
                CheckpointState::Best => t_string!(i18n, checkpoints.best),
                CheckpointState::Kept => t_string!(i18n, checkpoints.kept),
            }}
        </span>
    }
}

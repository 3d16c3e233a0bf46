//! `/w/{id}/models`: first the pretrained models uploaded to fine-tune from, with the upload (the best
//! start for a new team's first job); then every checkpoint the workspace's jobs wrote, newest first,
//! with its metrics, size, retention state, sha256 and a download link, and its lineage: the job that
//! produced it (and from there its dataset and spec) and the endpoints serving it, and their
//! evaluations on datasets. Checkpoints whose files retention removed are listed only on request.
//! Editors and owners deploy a checkpoint from here as an endpoint, and evaluate checkpoints.

use contracts::ids::JobId;
use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::api::{checkpoints::list_checkpoints, endpoints::list_endpoints, jobs::list_jobs};
use crate::components::empty_state::EmptyState;
use crate::components::page::Loaded;
use crate::i18n::*;
use crate::pages::workspace::jobs::checkpoints::CheckpointsTable;
use crate::pages::workspace::jobs::evaluations::EvaluationsCard;
use crate::pages::workspace::pretrained::PretrainedModels;
use crate::pages::workspace::{use_current_workspace, SectionPage};

#[component]
pub fn ModelsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let data = Resource::new(
        move || current.id.get(),
        |ws| async move {
            let checkpoints = list_checkpoints(ws).await?;
            let jobs = list_jobs(ws, Default::default()).await?;
            let endpoints = list_endpoints(ws).await?;
            Ok::<_, contracts::error::AppError>((checkpoints, jobs, endpoints))
        },
    );
    let load = move || async move {
        let can_edit = current.ws.await.is_ok_and(|ws| ws.role.can_edit());
        Ok((can_edit, data.await?))
    };
    view! {
        <SectionPage section="models">
            <PretrainedModels workspace_id=current.id.get_untracked() />
            <Loaded load let((can_edit, (mut list, jobs, endpoints)))>
                {
                    if list.is_empty() {
                        view! {
                            <EmptyState kind="models" title=move || t!(i18n, pages.models.empty_title) body=move || t!(i18n, checkpoints.empty_body) />
                        }
                        .into_any()
                    } else {
                        list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
                        let names: BTreeMap<JobId, String> = jobs.into_iter().map(|j| (j.id, j.name)).collect();
                        let workspace_id = current.id.get_untracked();
                        let deleted = list.iter().filter(|c| c.deleted_at.is_some()).count();
                        let list = Signal::stored(list);
                        let show_deleted = RwSignal::new(false);
                        let shown = Signal::derive(move || {
                            let all = show_deleted.get();
                            list.with(|l| l.iter().filter(|c| all || c.deleted_at.is_none()).cloned().collect::<Vec<_>>())
                        });
                        view! {
                            {(deleted > 0).then(|| view! {
                                <div class="field field-check">
                                    <input type="checkbox" id="show-deleted" data-testid="show-deleted"
                                        on:change=move |ev| show_deleted.set(event_target_checked(&ev)) />
                                    <label for="show-deleted">{move || t_string!(i18n, checkpoints.show_deleted, n = deleted).to_string()}</label>
                                </div>
                            })}
                            <CheckpointsTable workspace_id list=shown jobs=names.clone() can_deploy=can_edit serving=Signal::stored(endpoints) />
                            <EvaluationsCard workspace_id checkpoints=list jobs=names can_edit />
                        }
                        .into_any()
                    }
                }
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

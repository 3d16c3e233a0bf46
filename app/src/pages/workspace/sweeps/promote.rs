//! Promoting a sweep's winner, on the sweep's page: the best trial's best checkpoint, marked, with
//! what comes next in one click each — evaluate it on another dataset (then its job's page shows the
//! evaluation run and its scores), deploy it as a new endpoint, or roll it out to an endpoint that
//! serves already. Viewers see the checkpoint, not the buttons. Everything the card offers is read in
//! one go with the checkpoint, so the card holds no reading of its own.

use contracts::error::AppError;
use contracts::ids::{CheckpointId, DatasetId, EndpointId, JobId, SweepId, WorkspaceId};
use contracts::types::{CheckpointInfo, EndpointChange, EndpointSummary};
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use crate::api::checkpoints::list_checkpoints;
use crate::api::datasets::list_datasets;
use crate::api::endpoints::{list_endpoints, ChangeEndpoint};
use crate::api::evaluations::EvaluateCheckpoint;
use crate::api::jobs::get_job;
use crate::api::sweeps::get_sweep;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use crate::pages::workspace::endpoints::deploy::DeployCheckpoint;
use crate::pages::workspace::endpoints::endpoint_href;
use crate::pages::workspace::jobs::checkpoints::CheckpointBadge;
use crate::pages::workspace::jobs::evaluations::default_dataset;
use crate::pages::workspace::jobs::job_href;

/// What the card needs: the checkpoint, its job's name, the datasets it can be evaluated on (another
/// than the one it learned from first) and the endpoints it could go to.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Winner {
    pub job_id: JobId,
    checkpoint: CheckpointInfo,
    job_name: String,
    datasets: Vec<(DatasetId, String)>,
    endpoints: Vec<EndpointSummary>,
}

impl Winner {
    pub fn checkpoint_id(&self) -> CheckpointId {
        self.checkpoint.id
    }
}

/// Sweep `sweep_id`'s winner, once its best trial wrote a checkpoint. Read by a resource of the page
/// itself, beside the sweep, never by one made inside what the sweep's reading draws: a resource made
/// there is made again at each drawing on the server and loses the request's context (leptos#4866).
pub async fn winner_of(
    workspace_id: WorkspaceId,
    sweep_id: SweepId,
) -> Result<Option<Winner>, AppError> {
    let sweep = get_sweep(workspace_id, sweep_id).await?;
    let Some((job_id, Some(checkpoint_id))) =
        sweep.summary.best.map(|b| (b.job_id, b.checkpoint_id))
    else {
        return Ok(None);
    };
    let checkpoints = list_checkpoints(workspace_id).await?;
    let Some(checkpoint) = checkpoints.into_iter().find(|c| c.id == checkpoint_id) else {
        return Ok(None);
    };
    let job = get_job(workspace_id, job_id).await?;
    let endpoints = list_endpoints(workspace_id).await?;
    let datasets = list_datasets(workspace_id).await?;
    let start = default_dataset(
        &datasets,
        Some((job.spec.dataset_id, job.spec.dev_dataset_id)),
    );
    let mut datasets: Vec<(DatasetId, String)> =
        datasets.into_iter().map(|d| (d.id, d.name)).collect();
    datasets.sort_by_key(|(id, _)| Some(*id) != start);
    Ok(Some(Winner {
        job_id,
        checkpoint,
        job_name: job.summary.name,
        datasets,
        endpoints,
    }))
}

/// The best trial's best checkpoint and what can be done with it.
#[component]
pub fn Promote(workspace_id: WorkspaceId, winner: Winner, can_edit: bool) -> impl IntoView {
    let i18n = use_i18n();
    let Winner {
        job_id,
        checkpoint,
        job_name,
        datasets,
        endpoints,
    } = winner;
    let checkpoint_id = checkpoint.id;
    let gone = checkpoint.deleted_at.is_some();
    let (step, degenerate, state) = (checkpoint.step, checkpoint.degenerate, checkpoint.state());
    view! {
        <div class="promote" data-testid="sweep-promote" data-checkpoint=checkpoint_id.to_string() data-state=state.as_str()>
            <p>
                <span class="badge badge-best" data-testid="sweep-best-marked">{t!(i18n, sweeps.best_marked)}</span>" "
                {move || t!(i18n, sweeps.best_checkpoint_line, id = checkpoint_id.get(), step = step)}
                " "<CheckpointBadge state degenerate />
            </p>
            {(can_edit && !gone).then(|| view! {
                <div class="actions">
                    <Evaluate workspace_id job_id checkpoint_id datasets />
                    <DeployCheckpoint workspace_id checkpoint_id step job_name degenerate />
                    <RollOut workspace_id checkpoint_id endpoints />
                </div>
            })}
        </div>
    }
    .into_any()
}

/// "Evaluate on" a dataset: the evaluation starts and the browser goes to the job's page, where it
/// is seen running and then its scores.
#[component]
fn Evaluate(
    workspace_id: WorkspaceId,
    job_id: JobId,
    checkpoint_id: CheckpointId,
    datasets: Vec<(DatasetId, String)>,
) -> impl IntoView {
    let i18n = use_i18n();
    let action = ServerAction::<EvaluateCheckpoint>::new();
    let error = RwSignal::new(None::<AppError>);
    let navigate = use_navigate();
    on_answer(action, error, move |_| {
        navigate(&job_href(workspace_id, job_id), Default::default());
    });
    let choices = datasets
        .into_iter()
        .map(|(id, name)| (id.to_string(), name))
        .collect();
    let act = move |chosen: String| {
        if let Ok(dataset_id) = chosen.parse::<DatasetId>() {
            action.dispatch(EvaluateCheckpoint {
                workspace_id,
                checkpoint_id,
                dataset_id,
                cluster: None,
            });
        }
    };
    view! {
        <PickAndAct testid="sweep-evaluate" choices act error busy=action.pending()
            label=move || t_string!(i18n, sweeps.evaluate_on).to_string()
            button=move || t_string!(i18n, sweeps.evaluate_button).to_string() />
    }
}

/// "Roll out to" an endpoint that already serves: it moves to this checkpoint as any rollout does
/// (new replicas, the parity gate, then the traffic); the browser goes to the endpoint's page.
#[component]
fn RollOut(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    endpoints: Vec<EndpointSummary>,
) -> impl IntoView {
    let i18n = use_i18n();
    let change = ServerAction::<ChangeEndpoint>::new();
    let error = RwSignal::new(None::<AppError>);
    let navigate = use_navigate();
    on_answer(change, error, move |detail| {
        navigate(
            &endpoint_href(workspace_id, detail.summary.id),
            Default::default(),
        );
    });
    let choices = endpoints
        .into_iter()
        .filter(|e| e.checkpoint_id != checkpoint_id)
        .map(|e| (e.id.to_string(), format!("{} ({})", e.name, e.slug)))
        .collect();
    let act = move |chosen: String| {
        if let Ok(endpoint_id) = chosen.parse::<EndpointId>() {
            change.dispatch(ChangeEndpoint {
                workspace_id,
                endpoint_id,
                change: EndpointChange {
                    replicas: None,
                    checkpoint_id: Some(checkpoint_id),
                },
            });
        }
    };
    view! {
        <PickAndAct testid="sweep-rollout" choices act error busy=change.pending()
            label=move || t_string!(i18n, sweeps.rollout_to).to_string()
            button=move || t_string!(i18n, sweeps.rollout_button).to_string() />
    }
}

/// One choice and its button on a line (`{testid}-choice`, `{testid}-submit`), the first choice
/// chosen; `act` gets the chosen value. Nothing when there is nothing to choose.
#[component]
fn PickAndAct(
    testid: &'static str,
    /// (value, text) of each choice.
    choices: Vec<(String, String)>,
    act: impl Fn(String) + Send + Sync + 'static,
    error: RwSignal<Option<AppError>>,
    #[prop(into)] busy: Signal<bool>,
    /// What is chosen (heard by screen readers), and the button's words.
    #[prop(into)]
    label: Signal<String>,
    #[prop(into)] button: Signal<String>,
) -> impl IntoView {
    let Some(first) = choices.first().map(|(value, _)| value.clone()) else {
        return ().into_any();
    };
    let chosen = RwSignal::new(first);
    let options = choices
        .into_iter()
        .map(|(value, text)| view! { <option value=value>{text}</option> })
        .collect_view();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        act(chosen.get_untracked());
    };
    view! {
        <form class="inline-controls" data-testid=testid on:submit=submit>
            <label>
                <span class="visually-hidden">{move || label.get()}</span>
                <select data-testid=format!("{testid}-choice") on:change=move |ev| chosen.set(event_target_value(&ev))>{options}</select>
            </label>
            <button type="submit" class="button" data-testid=format!("{testid}-submit") disabled=move || busy.get()>
                {move || button.get()}
            </button>
        </form>
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

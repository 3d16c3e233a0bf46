//! `/w/{id}/jobs/new`: the job form. Its defaults are `JobSpec::new`'s; `?from=JOB` fills it from an
//! earlier job's spec ("clone job") and `?dataset=ID` preselects a dataset. The environment is optional:
//! "local process" runs the trainer on the server itself; an environment runs it in a container from that
//! environment's image (only environments whose current version is built are offered; the server also
//! requires the Paddock runtime in the image and says so at the field). A number that does not parse is
//! refused in the browser at its field; every other rule is the server's (`job_spec_invalid` carries
//! each broken rule as a problem at its field, shown under that field). Nothing is queued unless the
//! whole spec is valid.

use contracts::ids::{DatasetId, WorkspaceId};
use leptos::prelude::*;
use leptos_router::components::A;

use super::job_href;
use crate::api::{
    checkpoints::list_checkpoints,
    datasets::list_datasets,
    environments::list_environments,
    jobs::{get_job, get_precision_advice, list_clusters, SubmitJob},
    pretrained::list_pretrained_models,
};
use crate::components::clusters::{Partitions, RunsOn};
use crate::components::form::{FormState, FormSummary, SelectField, SubmitButton, TextField};
use crate::components::notice::ErrorNotice;
use crate::components::page::{InfoNote, Loaded, Page};
use crate::components::precision::{precision_hint, precision_options};
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, use_query_id};
use contracts::error::{AppError, ErrorCode, FieldProblem};
use contracts::job::PRESETS;
use contracts::precision::{PrecisionAdvice, Work, CHOICES};
use contracts::task::{Task, TASKS};
use contracts::types::{
    BuildStatus, CheckpointInfo, ClusterView, DatasetSummary, EnvironmentSummary, JobSpec,
    PretrainedModel, WorkspaceSummary,
};

#[component]
pub fn NewJobPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let from = use_query_id("from");
    let dataset = use_query_id("dataset");
    let choices = Resource::new(
        move || current.id.get(),
        |ws| async move {
            let datasets = list_datasets(ws).await?;
            let environments = list_environments(ws).await.unwrap_or_default();
            let checkpoints = list_checkpoints(ws).await.unwrap_or_default();
            let pretrained = list_pretrained_models(ws).await.unwrap_or_default();
            let clusters = list_clusters().await.unwrap_or_default();
            // Measured once per server at first use; a form without it starts on fp32.
            let advice = get_precision_advice(Work::Train).await.ok();
            Ok::<_, AppError>((
                datasets,
                environments,
                checkpoints,
                pretrained,
                clusters,
                advice,
            ))
        },
    );
    let source = Resource::new(
        move || (current.id.get(), from.get()),
        |(ws, from)| async move {
            match from {
                Some(job) => get_job(ws, job).await.map(|d| Some(d.spec)),
                None => Ok(None),
            }
        },
    );
    let load = move || async move { Ok((current.ws.await?, choices.await, source.await)) };
    view! {
        <Page title=move || t_string!(i18n, job_form.title).to_string() lead=move || t!(i18n, job_form.lead) class="page page-form">
            <Loaded load let((ws, choices, source))>
                {form_or_why(ws, choices, source, dataset.get_untracked(), from.get_untracked().is_some())}
            </Loaded>
        </Page>
    }
    .into_any()
}

/// The form, filled from `source` (a job to clone) or for `dataset`; or why there is none: the caller
/// may not create jobs, or the workspace has no dataset to train on yet.
fn form_or_why(
    ws: WorkspaceSummary,
    choices: Result<Choices, AppError>,
    source: Result<Option<JobSpec>, AppError>,
    dataset: Option<DatasetId>,
    cloned: bool,
) -> AnyView {
    let i18n = use_i18n();
    if !ws.role.can_edit() {
        return view! { <InfoNote testid="jobs-editor-only">{t!(i18n, jobs.editor_only)}</InfoNote> }.into_any();
    }
    let (datasets, environments, checkpoints, pretrained, clusters, advice) = match choices {
        Ok(c) => c,
        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
    };
    if datasets.is_empty() {
        return view! {
            <InfoNote testid="job-needs-dataset">
                {t!(i18n, job_form.needs_dataset)}" "
                <A href=format!("/w/{}/datasets", ws.id)>{t!(i18n, nav.datasets)}</A>
            </InfoNote>
        }
        .into_any();
    }
    let initial = match source {
        Ok(Some(spec)) => JobSpec {
            name: clone_name(&spec.name),
            ..spec
        },
        Ok(None) => {
            let first = dataset
                .filter(|id| datasets.iter().any(|d| d.id == *id))
                .unwrap_or(datasets[0].id);
            // A new job starts from the best thing the workspace has: a pretrained model, if any.
            JobSpec {
                task: datasets
                    .iter()
                    .find(|d| d.id == first)
                    .map(|d| d.task)
                    .unwrap_or_default(),
                pretrained_model_id: pretrained.first().map(|m| m.id),
                // What pays on this server: `auto` where bf16 was measured faster, else fp32.
                precision: advice
                    .as_ref()
                    .map_or_else(|| "fp32".to_string(), |a| a.default.clone()),
                ..JobSpec::new("", first)
            }
        }
        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
    };
    view! { <JobForm workspace_id=ws.id initial datasets environments checkpoints pretrained clusters advice cloned /> }.into_any()
}

/// What the form offers: datasets, environments, checkpoints, uploaded models and clusters, and the
/// precision that pays on this server.
type Choices = (
    Vec<DatasetSummary>,
    Vec<EnvironmentSummary>,
    Vec<CheckpointInfo>,
    Vec<PretrainedModel>,
    Vec<ClusterView>,
    Option<PrecisionAdvice>,
);

/// `fine-tune` → `fine-tune-copy` (within the 64-character limit).
pub fn clone_name(name: &str) -> String {
    let base: String = name.chars().take(64 - 5).collect();
    format!("{base}-copy")
}

/// The form's text, as typed; [`FormValues::to_spec`] turns it into a spec on submit.
#[derive(Debug, Clone, PartialEq)]
pub struct FormValues {
    pub name: String,
    /// The task's name ([`Task::as_str`]): the training data must be for it.
    pub task: String,
    pub dataset_id: String,
    /// Empty: hold out part of the training data.
    pub dev_dataset_id: String,
    /// Empty: a local process.
    pub environment_id: String,
    /// A cluster's name, or empty for this server.
    pub cluster: String,
    /// The cluster's partition, or empty for its default.
    pub partition: String,
    pub preset: String,
    /// Empty: from scratch.
    pub base_checkpoint_id: String,
    pub epochs: String,
    pub batch_size: String,
    pub learning_rate: String,
    pub warmup_ratio: String,
    pub max_seq_len: String,
    pub grad_accum_steps: String,
    pub max_steps: String,
    pub seed: String,
    pub precision: String,
    pub eval_every_steps: String,
    pub keep_best: String,
    pub gpus: String,
    pub ranks: String,
    pub nodes: String,
    pub priority: String,
    pub time_limit_minutes: String,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The base-model choice's value for an uploaded model (`m<id>`); a checkpoint's is its id alone.
const PRETRAINED_PREFIX: &str = "m";

impl FormValues {
    pub fn from_spec(spec: &JobSpec) -> FormValues {
        FormValues {
            name: spec.name.clone(),
            task: spec.task.as_str().to_string(),
            dataset_id: spec.dataset_id.to_string(),
            dev_dataset_id: opt(spec.dev_dataset_id),
            environment_id: opt(spec.environment_id),
            cluster: spec.cluster.clone().unwrap_or_default(),
            partition: spec.partition.clone().unwrap_or_default(),
            preset: spec.preset.clone(),
            base_checkpoint_id: match spec.pretrained_model_id {
                Some(id) => format!("{PRETRAINED_PREFIX}{id}"),
                None => opt(spec.base_checkpoint_id),
            },
            epochs: spec.epochs.to_string(),
            batch_size: spec.batch_size.to_string(),
            learning_rate: spec.learning_rate.to_string(),
            warmup_ratio: spec.warmup_ratio.to_string(),
            max_seq_len: spec.max_seq_len.to_string(),
            grad_accum_steps: spec.grad_accum_steps.to_string(),
            max_steps: opt(spec.max_steps),
            seed: spec.seed.to_string(),
            precision: spec.precision.clone(),
            eval_every_steps: spec.eval_every_steps.to_string(),
            keep_best: spec.keep_best.to_string(),
            gpus: spec.gpus.to_string(),
            ranks: opt(spec.ranks),
            nodes: opt(spec.nodes),
            priority: spec.priority.to_string(),
            time_limit_minutes: opt(spec.time_limit_minutes),
        }
    }

    /// The spec to send, or every field whose text is not a number of the right kind (all at once, so
    /// that one round of corrections is enough). The ranges are the server's to check.
    pub fn to_spec(&self) -> Result<JobSpec, Vec<&'static str>> {
        let mut p = Parse::default();
        // One choice, two fields: an uploaded model's option value is `m<id>`.
        let (base_checkpoint_id, pretrained_model_id) = match self
            .base_checkpoint_id
            .trim()
            .strip_prefix(PRETRAINED_PREFIX)
        {
            Some(id) => (None, p.num(id, "pretrained_model_id")),
            None => (
                p.maybe(&self.base_checkpoint_id, "base_checkpoint_id"),
                None,
            ),
        };
        let spec = JobSpec {
            name: self.name.trim().to_string(),
            task: Task::parse(&self.task).unwrap_or_default(),
            dataset_id: p
                .num(&self.dataset_id, "dataset_id")
                .unwrap_or(DatasetId::new(0)),
            dev_dataset_id: p.maybe(&self.dev_dataset_id, "dev_dataset_id"),
            environment_id: p.maybe(&self.environment_id, "environment_id"),
            cluster: Some(self.cluster.trim().to_string()).filter(|c| !c.is_empty()),
            // A partition is a cluster's: with none chosen, none is sent.
            partition: Some(self.partition.trim().to_string())
                .filter(|p| !p.is_empty() && !self.cluster.trim().is_empty()),
            preset: self.preset.clone(),
            base_checkpoint_id,
            pretrained_model_id,
            epochs: p.num(&self.epochs, "epochs").unwrap_or_default(),
            batch_size: p.num(&self.batch_size, "batch_size").unwrap_or_default(),
            learning_rate: p
                .num(&self.learning_rate, "learning_rate")
                .unwrap_or_default(),
            warmup_ratio: p
                .num(&self.warmup_ratio, "warmup_ratio")
                .unwrap_or_default(),
            max_seq_len: p.num(&self.max_seq_len, "max_seq_len").unwrap_or_default(),
            grad_accum_steps: p
                .num(&self.grad_accum_steps, "grad_accum_steps")
                .unwrap_or_default(),
            max_steps: p.maybe(&self.max_steps, "max_steps"),
            seed: p.num(&self.seed, "seed").unwrap_or_default(),
            precision: self.precision.clone(),
            eval_every_steps: p
                .num(&self.eval_every_steps, "eval_every_steps")
                .unwrap_or_default(),
            keep_best: p.num(&self.keep_best, "keep_best").unwrap_or_default(),
            gpus: p.num(&self.gpus, "gpus").unwrap_or_default(),
            ranks: p.maybe(&self.ranks, "ranks"),
            nodes: p.maybe(&self.nodes, "nodes"),
            priority: p.num(&self.priority, "priority").unwrap_or_default(),
            time_limit_minutes: p.maybe(&self.time_limit_minutes, "time_limit_minutes"),
        };
        match p.bad.is_empty() {
            true => Ok(spec),
            false => Err(p.bad),
        }
    }
}

/// Reads the form's numbers, noting each field whose text is not one.
#[derive(Default)]
struct Parse {
    bad: Vec<&'static str>,
}

impl Parse {
    fn num<T: std::str::FromStr>(&mut self, text: &str, field: &'static str) -> Option<T> {
        let value = text.trim().parse().ok();
        if value.is_none() {
            self.bad.push(field);
        }
        value
    }

    /// An optional number: empty is none.
    fn maybe<T: std::str::FromStr>(&mut self, text: &str, field: &'static str) -> Option<T> {
        (!text.trim().is_empty())
            .then(|| self.num(text, field))
            .flatten()
    }
}

fn environment_ready(e: &EnvironmentSummary) -> bool {
    e.build_status == BuildStatus::Built
}

#[component]
fn JobForm(
    workspace_id: WorkspaceId,
    initial: JobSpec,
    datasets: Vec<DatasetSummary>,
    environments: Vec<EnvironmentSummary>,
    checkpoints: Vec<CheckpointInfo>,
    pretrained: Vec<PretrainedModel>,
    clusters: Vec<ClusterView>,
    advice: Option<PrecisionAdvice>,
    cloned: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let start = FormValues::from_spec(&initial);
    let form = FormState::new(start.clone());
    let submit = ServerAction::<SubmitJob>::new();
    form.follow(submit, move |detail| {
        job_href(workspace_id, detail.summary.id)
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match form.values.get_untracked().to_spec() {
            Ok(spec) => {
                form.error.set(None);
                submit.dispatch(SubmitJob { workspace_id, spec });
            }
            Err(fields) => {
                let locale = i18n.get_locale_untracked();
                let message = td_string!(locale, job_form.err_number).to_string();
                let problems = (fields.into_iter())
                    .map(|field| FieldProblem::said(field, message.clone()))
                    .collect();
                form.error.set(AppError::invalid_fields(
                    ErrorCode::JobSpecInvalid,
                    problems,
                ));
            }
        }
    };
    let rows: Vec<(String, u64)> = datasets
        .iter()
        .map(|d| (d.id.to_string(), d.rows))
        .collect();
    let environments = environments.into_iter().filter(environment_ready).collect();
    let checkpoints = checkpoints
        .into_iter()
        .filter(|c| c.deleted_at.is_none())
        .collect();
    view! {
        {cloned.then(|| view! { <p class="notice notice-info" data-testid="job-cloned">{t!(i18n, job_form.cloned)}</p> })}
        <form class="form card job-form" data-testid="job-form" on:submit=on_submit novalidate>
            <DataSection form start=start.clone() datasets />
            <ModelSection form start=start.clone() environments checkpoints pretrained rows />
            <TrainingSection form start=start.clone() advice />
            <fieldset class="form-section">
                <legend>{t!(i18n, job_form.section_resources)}</legend>
                <div class="form-grid">
                    {(!clusters.is_empty()).then(|| view! {
                        <RunsOn form id="job-cluster" hint=move || t!(i18n, job_form.runs_on_hint)
                            selected=start.cluster.clone() clusters=clusters.clone()
                            set=|v, s| { v.cluster = s; v.partition.clear(); } />
                        <Partitions form id="job-partition" clusters chosen=|v| v.cluster.clone()
                            selected=start.partition.clone() set=|v, s| v.partition = s />
                        <TextField form id="job-nodes" field="nodes" label=move || t!(i18n, job_form.nodes)
                            hint=move || t!(i18n, job_form.nodes_hint) inputmode="decimal"
                            value=start.nodes.clone() set=|v, s| v.nodes = s />
                    })}
                    <TextField form id="job-gpus" field="gpus" label=move || t!(i18n, job_form.gpus)
                        hint=move || t!(i18n, job_form.gpus_hint) inputmode="decimal"
                        value=start.gpus.clone() set=|v, s| v.gpus = s />
                    <TextField form id="job-ranks" field="ranks" label=move || t!(i18n, job_form.ranks)
                        hint=move || t!(i18n, job_form.ranks_hint) inputmode="decimal"
                        value=start.ranks.clone() set=|v, s| v.ranks = s />
                    <TextField form id="job-priority" field="priority" label=move || t!(i18n, job_form.priority)
                        hint=move || t!(i18n, job_form.priority_hint) inputmode="decimal"
                        value=start.priority.clone() set=|v, s| v.priority = s />
                    <TextField form id="job-time-limit" field="time_limit_minutes" label=move || t!(i18n, job_form.time_limit)
                        hint=move || t!(i18n, job_form.optional_hint) inputmode="decimal"
                        value=start.time_limit_minutes.clone() set=|v, s| v.time_limit_minutes = s />
                </div>
            </fieldset>
            <FormSummary form heading=move || t!(i18n, job_form.summary) />
            <div class="form-actions">
                <SubmitButton pending=submit.pending() testid="job-submit">{t!(i18n, job_form.submit)}</SubmitButton>
                <A href=format!("/w/{workspace_id}/jobs") attr:class="button button-ghost" attr:data-testid="job-cancel">{t!(i18n, common.cancel)}</A>
            </div>
        </form>
    }
    .into_any()
}

/// The job's name, its training data and its dev set.
#[component]
fn DataSection(
    form: FormState<FormValues>,
    start: FormValues,
    datasets: Vec<DatasetSummary>,
) -> impl IntoView {
    let i18n = use_i18n();
    let dev_options = datasets.clone();
    let tasks: Vec<(String, Task, String)> = datasets
        .iter()
        .map(|d| {
            let labels =
                crate::pages::workspace::datasets::list::labels_text(&d.label_distribution);
            (d.id.to_string(), d.task, labels)
        })
        .collect();
    // A task chosen whose data the chosen dataset is not: the first dataset for the task is chosen.
    let for_task = tasks.clone();
    Effect::new(move |_| {
        let task = form.values.with(|v| v.task.clone());
        let chosen = form.values.with_untracked(|v| v.dataset_id.clone());
        let fits = |id: &str| {
            for_task
                .iter()
                .any(|(d, t, _)| d == id && t.as_str() == task)
        };
        if !fits(&chosen) {
            if let Some((first, _, _)) = for_task.iter().find(|(_, t, _)| t.as_str() == task) {
                form.values.update(|v| v.dataset_id = first.clone());
            }
        }
    });
    // The chosen dataset's labels, as the model will learn them.
    let labels_of_chosen = Signal::derive(move || {
        let chosen = form.values.with(|v| v.dataset_id.clone());
        tasks
            .iter()
            .find(|(id, _, _)| *id == chosen)
            .map(|(_, _, labels)| labels.clone())
            .unwrap_or_default()
    });
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, job_form.section_data)}</legend>
            <TextField form id="job-name" field="name" label=move || t!(i18n, job_form.name)
                hint=move || t!(i18n, job_form.name_hint) maxlength=64 required=true
                value=start.name.clone() set=|v, s| v.name = s />
            <div class="form-grid">
                <SelectField form id="job-task" field="task" label=move || t!(i18n, tasks.label)
                    hint=move || t!(i18n, job_form.task_hint) set=|v, s| v.task = s>
                    {TASKS.into_iter().map(|t| view! {
                        <option value=t.as_str() selected=start.task == t.as_str()>{move || task_name(i18n.get_locale(), t)}</option>
                    }).collect_view()}
                </SelectField>
                <SelectField form id="job-dataset" field="dataset_id" label=move || t!(i18n, job_form.dataset)
                    hint=move || labels_of_chosen.get() set=|v, s| v.dataset_id = s>
                    {datasets.into_iter().map(|d| {
                        let id = d.id.to_string();
                        let (name, rows, task) = (d.name, d.rows, d.task);
                        let chosen = id.clone();
                        view! {
                            <option value=id.clone()
                                prop:selected=move || form.values.with(|v| v.dataset_id == chosen)
                                hidden=move || form.values.with(|v| v.task != task.as_str())>
                                {move || t_string!(i18n, job_form.dataset_option, name = name.clone(), rows = rows).to_string()}
                            </option>
                        }
                    }).collect_view()}
                </SelectField>
                <SelectField form id="job-dev-dataset" field="dev_dataset_id" label=move || t!(i18n, job_form.dev_dataset)
                    hint=move || t!(i18n, job_form.dev_dataset_hint) set=|v, s| v.dev_dataset_id = s>
                    <option value="" selected=start.dev_dataset_id.is_empty()>{t!(i18n, job_form.dev_none)}</option>
                    {dev_options.into_iter().map(|d| {
                        let selected = d.id.to_string() == start.dev_dataset_id;
                        view! { <option value=d.id.to_string() selected=selected>{d.name}</option> }
                    }).collect_view()}
                </SelectField>
            </div>
        </fieldset>
    }
}

/// Where it runs, the model's shape, and what it starts from.
#[component]
fn ModelSection(
    form: FormState<FormValues>,
    start: FormValues,
    environments: Vec<EnvironmentSummary>,
    checkpoints: Vec<CheckpointInfo>,
    pretrained: Vec<PretrainedModel>,
    /// Each dataset's id (as the form has it) and row count: what a run from scratch can expect.
    rows: Vec<(String, u64)>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, job_form.section_model)}</legend>
            <div class="form-grid">
                <SelectField form id="job-environment" field="environment_id" label=move || t!(i18n, job_form.environment)
                    hint=move || t!(i18n, job_form.environment_hint) set=|v, s| v.environment_id = s>
                    <option value="" selected=start.environment_id.is_empty()>{t!(i18n, job_form.local_process)}</option>
                    {environments.into_iter().map(|e| {
                        let selected = e.id.to_string() == start.environment_id;
                        view! { <option value=e.id.to_string() selected=selected>{format!("{} (v{})", e.name, e.current_version)}</option> }
                    }).collect_view()}
                </SelectField>
                // A shape matters only from scratch: a model or checkpoint brings its own (issue 33: the
                // form said "nano" of an imported ERNIE 3.0 base).
                <SelectField form id="job-preset" field="preset" label=move || t!(i18n, job_form.preset)
                    hint=move || t!(i18n, job_form.preset_hint) set=|v, s| v.preset = s
                    hidden=Signal::derive(move || form.values.with(|v| !v.base_checkpoint_id.is_empty()))>
                    {PRESETS.iter().map(|p| view! { <option value=*p selected=*p == start.preset>{*p}</option> }).collect_view()}
                </SelectField>
                <SelectField form id="job-base-checkpoint" field="base_checkpoint_id" label=move || t!(i18n, job_form.base_checkpoint)
                    hint=move || t!(i18n, job_form.base_checkpoint_hint) set=|v, s| v.base_checkpoint_id = s>
                    // Best first: what was pretrained, then what this workspace trained, then nothing.
                    {(!pretrained.is_empty()).then(|| view! {
                        <optgroup label=move || t_string!(i18n, job_form.group_pretrained)>
                            {pretrained.into_iter().map(|m| {
                                let value = format!("{PRETRAINED_PREFIX}{}", m.id);
                                let selected = value == start.base_checkpoint_id;
                                let name = m.name;
                                view! {
                                    <option value=value selected=selected data-pretrained=m.id.get()>
                                        {move || t_string!(i18n, job_form.pretrained_option, name = name.clone()).to_string()}
                                    </option>
                                }
                            }).collect_view()}
                        </optgroup>
                    })}
                    {(!checkpoints.is_empty()).then(|| view! {
                        <optgroup label=move || t_string!(i18n, job_form.group_checkpoints)>
                            {checkpoints.into_iter().map(|c| {
                                let selected = c.id.to_string() == start.base_checkpoint_id;
                                let (id, job, step) = (c.id, c.job_id, c.step);
                                view! {
                                    <option value=c.id.to_string() selected=selected>
                                        {move || t_string!(i18n, job_form.checkpoint_option, id = id, job = job, step = step).to_string()}
                                    </option>
                                }
                            }).collect_view()}
                        </optgroup>
                    })}
                    <option value="" selected=start.base_checkpoint_id.is_empty()>{t!(i18n, job_form.from_scratch)}</option>
                </SelectField>
            </div>
            <ScratchNote form rows />
        </fieldset>
    }
}

/// Below this many rows, a model trained from scratch rarely learns more than the commonest label.
const SMALL_FOR_SCRATCH: u64 = 10_000;

/// While "from scratch" is chosen on a small dataset: what to expect, and the better start.
#[component]
fn ScratchNote(form: FormState<FormValues>, rows: Vec<(String, u64)>) -> impl IntoView {
    let i18n = use_i18n();
    let small = move || {
        form.values.with(|v| {
            let n = rows
                .iter()
                .find(|(id, _)| *id == v.dataset_id)
                .map(|(_, n)| *n);
            n.filter(|&n| v.base_checkpoint_id.is_empty() && n < SMALL_FOR_SCRATCH)
        })
    };
    move || {
        small().map(|n| {
            view! {
                <p class="notice notice-warning" data-testid="job-scratch-note">
                    {move || t_string!(i18n, job_form.scratch_note, rows = n).to_string()}
                </p>
            }
        })
    }
}

/// The optimiser, the schedule and what is kept.
#[component]
fn TrainingSection(
    form: FormState<FormValues>,
    start: FormValues,
    /// What pays on this server, for the precision's default and hint.
    advice: Option<PrecisionAdvice>,
) -> impl IntoView {
    let advice_note = advice.clone();
    let i18n = use_i18n();
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, job_form.section_training)}</legend>
            <div class="form-grid">
                <TextField form id="job-epochs" field="epochs" label=move || t!(i18n, job_form.epochs)
                    inputmode="decimal" value=start.epochs.clone() set=|v, s| v.epochs = s />
                <TextField form id="job-batch-size" field="batch_size" label=move || t!(i18n, job_form.batch_size)
                    inputmode="decimal" value=start.batch_size.clone() set=|v, s| v.batch_size = s />
                <TextField form id="job-learning-rate" field="learning_rate" label=move || t!(i18n, job_form.learning_rate)
                    hint=move || t!(i18n, job_form.learning_rate_hint) inputmode="decimal"
                    value=start.learning_rate.clone() set=|v, s| v.learning_rate = s />
                <TextField form id="job-warmup-ratio" field="warmup_ratio" label=move || t!(i18n, job_form.warmup_ratio)
                    inputmode="decimal" value=start.warmup_ratio.clone() set=|v, s| v.warmup_ratio = s />
                <TextField form id="job-max-seq-len" field="max_seq_len" label=move || t!(i18n, job_form.max_seq_len)
                    inputmode="decimal" value=start.max_seq_len.clone() set=|v, s| v.max_seq_len = s />
                <TextField form id="job-grad-accum-steps" field="grad_accum_steps" label=move || t!(i18n, job_form.grad_accum_steps)
                    inputmode="decimal" value=start.grad_accum_steps.clone() set=|v, s| v.grad_accum_steps = s />
                <TextField form id="job-max-steps" field="max_steps" label=move || t!(i18n, job_form.max_steps)
                    hint=move || t!(i18n, job_form.optional_hint) inputmode="decimal"
                    value=start.max_steps.clone() set=|v, s| v.max_steps = s />
                <TextField form id="job-eval-every-steps" field="eval_every_steps" label=move || t!(i18n, job_form.eval_every_steps)
                    inputmode="decimal" value=start.eval_every_steps.clone() set=|v, s| v.eval_every_steps = s />
                <TextField form id="job-seed" field="seed" label=move || t!(i18n, job_form.seed)
                    inputmode="decimal" value=start.seed.clone() set=|v, s| v.seed = s />
                <TextField form id="job-keep-best" field="keep_best" label=move || t!(i18n, job_form.keep_best)
                    hint=move || t!(i18n, job_form.keep_best_hint) inputmode="decimal"
                    value=start.keep_best.clone() set=|v, s| v.keep_best = s />
                <SelectField form id="job-precision" field="precision" label=move || t!(i18n, job_form.precision)
                    hint=move || precision_hint(t_string!(i18n, job_form.precision_hint), i18n.get_locale(), advice_note.as_ref()) set=|v, s| v.precision = s>
                    {precision_options(&CHOICES, start.precision.clone(), advice.clone())}
                </SelectField>
            </div>
        </fieldset>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::error::Rule;

    #[test]
    fn a_spec_survives_the_form_both_ways() {
        let mut spec = JobSpec::new("snownlp", DatasetId::new(3));
        spec.dev_dataset_id = Some(DatasetId::new(4));
        spec.max_steps = Some(30);
        spec.learning_rate = 0.0003;
        assert_eq!(FormValues::from_spec(&spec).to_spec(), Ok(spec.clone()));
        let defaults = FormValues::from_spec(&JobSpec::new("", DatasetId::new(1)));
        assert_eq!(defaults.max_steps, "", "optional fields start empty");
        assert_eq!(defaults.environment_id, "", "a local process by default");
        assert_eq!(defaults.cluster, "", "on this server by default");
        let mut on_cluster = JobSpec::new("x", DatasetId::new(1));
        on_cluster.cluster = Some("slurm".into());
        assert_eq!(FormValues::from_spec(&on_cluster).to_spec(), Ok(on_cluster));
        // The base model is one choice: a checkpoint's id, or an uploaded model's `m<id>`.
        let mut from_upload = JobSpec::new("x", DatasetId::new(1));
        from_upload.pretrained_model_id = Some(contracts::ids::PretrainedId::new(7));
        let values = FormValues::from_spec(&from_upload);
        assert_eq!(values.base_checkpoint_id, "m7");
        assert_eq!(values.to_spec(), Ok(from_upload));
        let mut bad = values;
        bad.base_checkpoint_id = "mx".into();
        assert_eq!(bad.to_spec(), Err(vec!["pretrained_model_id"]));
    }

    #[test]
    fn text_that_is_no_number_is_refused_at_its_field() {
        let mut values = FormValues::from_spec(&JobSpec::new("x", DatasetId::new(1)));
        values.batch_size = "lots".into();
        values.seed = "".into();
        values.max_steps = "a few".into();
        // Every one of them, in form order, not only the first.
        assert_eq!(
            values.to_spec(),
            Err(vec!["batch_size", "max_steps", "seed"])
        );
        values.batch_size = "16".into();
        values.seed = "42".into();
        values.max_steps = "".into();
        values.learning_rate = "-0.001".into();
        assert_eq!(
            values.to_spec().unwrap().learning_rate,
            -0.001,
            "the range is the server's call"
        );
    }

    #[test]
    fn server_problems_land_under_their_fields_in_the_users_language() {
        let err = AppError::invalid_fields(
            ErrorCode::JobSpecInvalid,
            vec![
                FieldProblem::new(
                    "learning_rate",
                    Rule::Interval {
                        min: 0.0,
                        min_included: false,
                        max: 1.0,
                        max_included: true,
                    },
                    "must be greater than 0 and at most 1",
                ),
                FieldProblem::new(
                    "batch_size",
                    Rule::Between { min: 1, max: 4096 },
                    "must be between 1 and 4096",
                ),
            ],
        )
        .unwrap();
        assert_eq!(
            field_text(Locale::en, &err, "learning_rate").as_deref(),
            Some("Must be greater than 0 and at most 1.")
        );
        assert_eq!(
            field_text(Locale::zh, &err, "batch_size").as_deref(),
            Some("须在 1 到 4096 之间。")
        );
        assert_eq!(field_text(Locale::en, &err, "epochs"), None);
        let one = AppError::invalid(
            "dataset_id",
            ErrorCode::JobSpecInvalid,
            "the training data needs at least two labels",
        );
        assert!(field_text(Locale::en, &one, "dataset_id").is_some());
        assert_eq!(clone_name("run"), "run-copy");
    }
}

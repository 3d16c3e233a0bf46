//! `/w/{id}/sweeps/new?from=JOB`: a sweep from a job — the job's spec is what every trial runs, but
//! for the fields given values here. Each field the form offers takes a list (`1e-4, 3e-4`) or a
//! range (`min, max`) to draw from; the rest of the sweep is how many trials, how many at once, what
//! they are compared on and whether the poor ones stop early. The server checks every value as its
//! trial's job and names what is wrong by its place (`parameters.learning_rate.values[1]`).

use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::components::A;

use super::sweep_href;
use crate::api::jobs::get_job;
use crate::api::sweeps::CreateSweep;
use crate::components::form::{
    described_by, message_at, FieldRow, FormState, FormSummary, SelectField, SubmitButton,
    TextField,
};
use crate::components::notice::ErrorNotice;
use crate::components::page::{InfoNote, Loaded, Page};
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, use_query_id};
use contracts::error::{AppError, ErrorCode, FieldProblem};
use contracts::ids::{JobId, WorkspaceId};
use contracts::sweeps::{Distribution, EarlyStopping, Goal, Method, Objective, SweepSpec};
use contracts::types::{JobSpec, WorkspaceSummary};

/// The fields the form varies, with the path the server names their problems by.
const PARAMETERS: [(&str, &str); 6] = [
    ("learning_rate", "parameters.learning_rate"),
    ("batch_size", "parameters.batch_size"),
    ("warmup_ratio", "parameters.warmup_ratio"),
    ("epochs", "parameters.epochs"),
    ("max_seq_len", "parameters.max_seq_len"),
    ("seed", "parameters.seed"),
];

#[component]
pub fn NewSweepPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let from = use_query_id("from");
    let source = Resource::new(
        move || (current.id.get(), from.get()),
        |(ws, from): (WorkspaceId, Option<JobId>)| async move {
            match from {
                Some(job) => get_job(ws, job).await.map(|d| Some(d.spec)),
                None => Ok(None),
            }
        },
    );
    let load = move || async move { Ok((current.ws.await?, source.await)) };
    view! {
        <Page title=move || t_string!(i18n, sweep_form.title).to_string() lead=move || t!(i18n, sweep_form.lead) class="page page-form">
            <Loaded load let((ws, source))>
                {form_or_why(ws, source)}
            </Loaded>
        </Page>
    }
    .into_any()
}

fn form_or_why(ws: WorkspaceSummary, source: Result<Option<JobSpec>, AppError>) -> AnyView {
    let i18n = use_i18n();
    if !ws.role.can_edit() {
        return view! { <InfoNote testid="sweeps-editor-only">{t!(i18n, sweep_form.editor_only)}</InfoNote> }.into_any();
    }
    match source {
        Ok(Some(job)) => view! { <SweepForm workspace_id=ws.id job /> }.into_any(),
        Ok(None) => view! {
            <InfoNote testid="sweep-needs-job">
                {t!(i18n, sweep_form.needs_job)}" "
                <A href=format!("/w/{}/jobs", ws.id)>{t!(i18n, nav.jobs)}</A>
            </InfoNote>
        }
        .into_any(),
        Err(err) => view! { <ErrorNotice err /> }.into_any(),
    }
}

/// The form's text, as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepValues {
    pub name: String,
    pub method: String,
    /// Per [`PARAMETERS`] entry: its distribution (empty: not varied) and its text.
    pub parameters: [(String, String); 6],
    pub max_trials: String,
    pub parallelism: String,
    pub metric: String,
    /// `maximize`, `minimize`, or empty: the metric's own way.
    pub goal: String,
    /// `none` or `asha`.
    pub early_stopping: String,
    pub min_steps: String,
    pub reduction_factor: String,
}

impl SweepValues {
    fn new(job: &JobSpec) -> SweepValues {
        SweepValues {
            name: format!("{}-sweep", job.name.chars().take(58).collect::<String>()),
            method: "grid".into(),
            parameters: Default::default(),
            max_trials: String::new(),
            parallelism: "2".into(),
            metric: job.task.default_metric().into(),
            goal: String::new(),
            early_stopping: "asha".into(),
            min_steps: job.eval_every_steps.to_string(),
            reduction_factor: "3".into(),
        }
    }

    /// The sweep to send, or the fields whose text does not read as what they take (all at once).
    pub fn to_spec(&self, job: &JobSpec) -> Result<SweepSpec, Vec<&'static str>> {
        let mut bad = Vec::new();
        let mut parameters = BTreeMap::new();
        for ((name, field), (distribution, text)) in PARAMETERS.iter().zip(&self.parameters) {
            if distribution.is_empty() {
                continue;
            }
            match distribution_of(distribution, text) {
                Some(d) => {
                    parameters.insert(name.to_string(), d);
                }
                None => bad.push(*field),
            }
        }
        let mut number = |text: &str, field: &'static str| -> Option<u32> {
            let n = text.trim().parse().ok();
            if n.is_none() {
                bad.push(field);
            }
            n
        };
        let max_trials = match self.max_trials.trim() {
            "" => None,
            text => number(text, "max_trials"),
        };
        let parallelism = number(&self.parallelism, "parallelism").unwrap_or_default();
        let early_stopping = match self.early_stopping.as_str() {
            "asha" => EarlyStopping::Asha {
                min_steps: number(&self.min_steps, "early_stopping.min_steps").unwrap_or_default(),
                reduction_factor: number(&self.reduction_factor, "early_stopping.reduction_factor")
                    .unwrap_or_default(),
            },
            _ => EarlyStopping::None,
        };
        if !bad.is_empty() {
            return Err(bad);
        }
        Ok(SweepSpec {
            name: self.name.trim().to_string(),
            job: job.clone(),
            parameters,
            method: match self.method.as_str() {
                "random" => Method::Random,
                _ => Method::Grid,
            },
            max_trials,
            parallelism,
            objective: Objective {
                metric: self.metric.clone(),
                goal: match self.goal.as_str() {
                    "maximize" => Some(Goal::Maximize),
                    "minimize" => Some(Goal::Minimize),
                    _ => None,
                },
            },
            early_stopping,
            seed: job.seed,
        })
    }
}

/// A number as JSON: a whole number as one (`16`, not `16.0`), else a finite number; `None` for
/// anything else (every field the form varies is a number).
fn number_value(text: &str) -> Option<serde_json::Value> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Some(n.into());
    }
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(Into::into)
}

/// `values` from `a, b, c`; a range from `min, max`. `None` when the text is not that.
fn distribution_of(distribution: &str, text: &str) -> Option<Distribution> {
    let parts: Vec<&str> = text
        .split([',', '，'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let range = || -> Option<(f64, f64)> {
        match parts.as_slice() {
            [min, max] => Some((min.parse().ok()?, max.parse().ok()?)),
            _ => None,
        }
    };
    match distribution {
        "values" if !parts.is_empty() => Some(Distribution::Values {
            values: parts
                .iter()
                .map(|p| number_value(p))
                .collect::<Option<_>>()?,
        }),
        "uniform" => range().map(|(min, max)| Distribution::Uniform { min, max }),
        "log_uniform" => range().map(|(min, max)| Distribution::LogUniform { min, max }),
        "int_uniform" => match parts.as_slice() {
            [min, max] => Some(Distribution::IntUniform {
                min: min.parse().ok()?,
                max: max.parse().ok()?,
            }),
            _ => None,
        },
        _ => None,
    }
}

#[component]
fn SweepForm(workspace_id: WorkspaceId, job: JobSpec) -> impl IntoView {
    let i18n = use_i18n();
    let start = SweepValues::new(&job);
    let form = FormState::new(start.clone());
    let create = ServerAction::<CreateSweep>::new();
    form.follow(create, move |detail| {
        sweep_href(workspace_id, detail.summary.id)
    });
    let metrics = job.task.metric_names();
    let base = job.clone();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match form.values.get_untracked().to_spec(&base) {
            Ok(spec) => {
                form.error.set(None);
                create.dispatch(CreateSweep { workspace_id, spec });
            }
            Err(fields) => {
                let locale = i18n.get_locale_untracked();
                let message = td_string!(locale, sweep_form.err_text).to_string();
                let problems = fields
                    .into_iter()
                    .map(|field| FieldProblem::said(field, message.clone()))
                    .collect();
                form.error.set(AppError::invalid_fields(
                    ErrorCode::SweepSpecInvalid,
                    problems,
                ));
            }
        }
    };
    let asha = Memo::new(move |_| form.values.with(|v| v.early_stopping == "asha"));
    view! {
        <p class="notice notice-info" data-testid="sweep-from">
            {move || t!(i18n, sweep_form.from_job, name = job.name.clone())}
        </p>
        <form class="form card sweep-form" data-testid="sweep-form" on:submit=on_submit novalidate>
            <fieldset class="form-section">
                <legend>{t!(i18n, sweep_form.section_search)}</legend>
                <div class="form-grid">
                    <TextField form id="sweep-name" field="name" label=move || t!(i18n, sweep_form.name)
                        value=start.name.clone() set=|v, s| v.name = s required=true maxlength=64 />
                    <SelectField form id="sweep-method" field="method" label=move || t!(i18n, sweeps.method)
                        hint=move || t!(i18n, sweep_form.method_hint) set=|v, s| v.method = s>
                        <option value="grid" selected=true>{t!(i18n, sweeps.method_grid)}</option>
                        <option value="random">{t!(i18n, sweeps.method_random)}</option>
                    </SelectField>
                </div>
                <p class="hint">{t!(i18n, sweep_form.parameters_hint)}</p>
                <div class="form-grid" data-testid="sweep-parameters">
                    {PARAMETERS.iter().enumerate().map(|(i, &(name, field))| view! {
                        <ParameterRow form index=i name field />
                    }).collect_view()}
                </div>
            </fieldset>
            <fieldset class="form-section">
                <legend>{t!(i18n, sweep_form.section_trials)}</legend>
                <div class="form-grid">
                    <TextField form id="sweep-max-trials" field="max_trials" label=move || t!(i18n, sweep_form.max_trials)
                        hint=move || t!(i18n, sweep_form.max_trials_hint) inputmode="decimal"
                        value=String::new() set=|v, s| v.max_trials = s />
                    <TextField form id="sweep-parallelism" field="parallelism" label=move || t!(i18n, sweep_form.parallelism)
                        hint=move || t!(i18n, sweep_form.parallelism_hint) inputmode="decimal"
                        value=start.parallelism.clone() set=|v, s| v.parallelism = s />
                    <SelectField form id="sweep-metric" field="objective.metric" label=move || t!(i18n, sweeps.objective)
                        set=|v, s| v.metric = s>
                        {metrics.iter().map(|m| view! {
                            <option value=*m selected=*m == start.metric>{*m}</option>
                        }).collect_view()}
                    </SelectField>
                    <SelectField form id="sweep-goal" field="objective.goal" label=move || t!(i18n, sweep_form.goal)
                        set=|v, s| v.goal = s>
                        <option value="" selected=true>{t!(i18n, sweep_form.goal_auto)}</option>
                        <option value="maximize">{t!(i18n, sweep_form.goal_max)}</option>
                        <option value="minimize">{t!(i18n, sweep_form.goal_min)}</option>
                    </SelectField>
                    <SelectField form id="sweep-early-stopping" field="early_stopping" label=move || t!(i18n, sweeps.early_stopping)
                        hint=move || t!(i18n, sweep_form.asha_hint) set=|v, s| v.early_stopping = s>
                        <option value="asha" selected=true>{t!(i18n, sweep_form.asha)}</option>
                        <option value="none">{t!(i18n, sweeps.early_none)}</option>
                    </SelectField>
                    <TextField form id="sweep-min-steps" field="early_stopping.min_steps" label=move || t!(i18n, sweep_form.min_steps)
                        inputmode="decimal" value=start.min_steps.clone() set=|v, s| v.min_steps = s />
                    <TextField form id="sweep-reduction" field="early_stopping.reduction_factor" label=move || t!(i18n, sweep_form.reduction_factor)
                        inputmode="decimal" value=start.reduction_factor.clone() set=|v, s| v.reduction_factor = s />
                </div>
                {move || (!asha.get()).then(|| view! { <p class="hint">{t!(i18n, sweep_form.no_early_hint)}</p> })}
            </fieldset>
            <FormSummary form heading=move || t!(i18n, sweep_form.summary) />
            <div class="form-actions">
                <SubmitButton pending=create.pending() testid="sweep-submit">{t!(i18n, sweep_form.submit)}</SubmitButton>
                <A href=format!("/w/{workspace_id}/sweeps") attr:class="button button-ghost" attr:data-testid="sweep-back">{t!(i18n, common.cancel)}</A>
            </div>
        </form>
    }
    .into_any()
}

/// One field the sweep may vary: how (not at all, a list, a range) and the values.
#[component]
fn ParameterRow(
    form: FormState<SweepValues>,
    index: usize,
    name: &'static str,
    field: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    let id = format!("sweep-param-{name}");
    let select_id = format!("{id}-distribution");
    let message = message_at(form.error, field);
    let described = described_by(field, false);
    let whole = matches!(name, "batch_size" | "epochs" | "max_seq_len" | "seed");
    view! {
        <FieldRow id=field label=move || name.to_string() message>
            <div class="inline-controls">
                <select id=select_id.clone() data-testid=select_id aria-label=move || t_string!(i18n, sweep_form.how)
                    on:change=move |ev| {
                        let how = event_target_value(&ev);
                        form.values.update(|v| v.parameters[index].0 = how);
                    }>
                    <option value="" selected=true>{t!(i18n, sweep_form.not_varied)}</option>
                    <option value="values">{t!(i18n, sweep_form.values)}</option>
                    {(!whole).then(|| view! {
                        <option value="uniform">{t!(i18n, sweep_form.uniform)}</option>
                        <option value="log_uniform">{t!(i18n, sweep_form.log_uniform)}</option>
                    })}
                    <option value="int_uniform">{t!(i18n, sweep_form.int_uniform)}</option>
                </select>
                <input id=field data-testid=id autocomplete="off" aria-describedby=described
                    aria-invalid=move || message.with(Option::is_some).then_some("true")
                    placeholder=move || t_string!(i18n, sweep_form.values_placeholder)
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        form.values.update(|v| v.parameters[index].1 = text);
                    } />
            </div>
        </FieldRow>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::ids::DatasetId;

    #[test]
    fn the_form_reads_lists_and_ranges_and_names_what_it_cannot() {
        let job = JobSpec::new("sentiment", DatasetId::new(1));
        let mut values = SweepValues::new(&job);
        values.parameters[0] = ("values".into(), "1e-4, 3e-4，0.001".into());
        values.parameters[1] = ("values".into(), "16, 32".into());
        values.parameters[2] = ("uniform".into(), "0, 0.2".into());
        let spec = values.to_spec(&job).unwrap();
        assert_eq!(
            spec.parameters["learning_rate"],
            Distribution::Values {
                values: vec![0.0001.into(), 0.0003.into(), 0.001.into()]
            }
        );
        assert_eq!(
            spec.parameters["batch_size"],
            Distribution::Values {
                values: vec![16.into(), 32.into()]
            }
        );
        assert_eq!(
            spec.parameters["warmup_ratio"],
            Distribution::Uniform { min: 0.0, max: 0.2 }
        );
        assert_eq!(spec.name, "sentiment-sweep");
        assert_eq!(spec.job, job);
        assert!(matches!(
            spec.early_stopping,
            EarlyStopping::Asha {
                reduction_factor: 3,
                ..
            }
        ));
        values.parameters[1] = ("values".into(), "16, big".into());
        values.parameters[2] = ("uniform".into(), "0".into());
        values.parallelism = "two".into();
        assert_eq!(
            values.to_spec(&job).unwrap_err(),
            [
                "parameters.batch_size",
                "parameters.warmup_ratio",
                "parallelism"
            ]
        );
    }
}

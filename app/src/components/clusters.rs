//! Where work runs: this server, or a cluster whose scheduler places it. The job form and the deploy
//! form offer the same choice, each cluster with the partition its work goes to and how many of its
//! GPUs are free now (or that its scheduler does not answer, and then it cannot be chosen); the job form
//! also offers the chosen cluster's partitions.

use leptos::prelude::*;

use crate::components::form::{FormState, SelectField};
use crate::i18n::*;
use contracts::types::ClusterView;

/// The "runs on" select of a spec form (its field is `cluster`): empty for this server, else a
/// cluster's name.
#[component]
pub fn RunsOn<V: Send + Sync + 'static>(
    form: FormState<V>,
    id: &'static str,
    #[prop(into)] hint: ViewFn,
    /// The cluster chosen when the form opens (empty: this server).
    selected: String,
    clusters: Vec<ClusterView>,
    set: fn(&mut V, String),
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <SelectField form id field="cluster" label=move || t!(i18n, job_form.runs_on) hint set>
            <ClusterOptions clusters selected />
        </SelectField>
    }
}

/// The options of a "runs on" select: this server (empty), then each cluster with where its work goes
/// and its free GPUs there (one whose scheduler does not answer cannot be chosen).
#[component]
pub fn ClusterOptions(clusters: Vec<ClusterView>, selected: String) -> impl IntoView {
    let i18n = use_i18n();
    view! {
            <option value="" selected=selected.is_empty()>{t!(i18n, job_form.this_server)}</option>
            {clusters.into_iter().map(|c| {
                let chosen = c.name == selected;
                let (name, problem) = (c.name.clone(), c.problem.is_some());
                let gpus = c.partitions.iter()
                    .find(|p| Some(&p.name) == c.partition.as_ref())
                    .map(|p| p.gpus)
                    .unwrap_or_default();
                let partition = c.partition.clone().unwrap_or_default();
                view! {
                    <option value=c.name.clone() selected=chosen disabled=problem data-cluster=c.name.clone()>
                        {move || if problem {
                            t_string!(i18n, job_form.cluster_unreachable, name = name.clone()).to_string()
                        } else {
                            t_string!(i18n, job_form.cluster_option, name = name.clone(), partition = partition.clone(),
                                free = gpus.free(), total = gpus.total).to_string()
                        }}
                    </option>
                }
            }).collect_view()}
    }
}

/// The partition select of a spec form (its field is `partition`), shown while a cluster is chosen
/// (`chosen` reads its name from the form): that cluster's default first (empty), then each of its
/// partitions with its free GPUs.
#[component]
pub fn Partitions<V: Send + Sync + 'static>(
    form: FormState<V>,
    id: &'static str,
    clusters: Vec<ClusterView>,
    chosen: fn(&V) -> String,
    /// The partition chosen when the form opens (empty: the default).
    selected: String,
    set: fn(&mut V, String),
) -> impl IntoView {
    let i18n = use_i18n();
    let clusters = StoredValue::new(clusters);
    let cluster = Memo::new(move |_| form.values.with(chosen));
    move || {
        let name = cluster.get();
        let c = clusters.with_value(|all| all.iter().find(|c| c.name == name).cloned())?;
        let default = c.partition.clone().unwrap_or_default();
        let selected = selected.clone();
        Some(view! {
            <SelectField form id field="partition" label=move || t!(i18n, job_form.partition)
                hint=move || t!(i18n, job_form.partition_hint) set>
                <option value="" selected=selected.is_empty()>
                    {move || t_string!(i18n, job_form.partition_default, name = default.clone()).to_string()}
                </option>
                {c.partitions.into_iter().map(|p| {
                    let chosen = p.name == selected;
                    let (name, gpus) = (p.name.clone(), p.gpus);
                    view! {
                        <option value=p.name.clone() selected=chosen>
                            {move || t_string!(i18n, job_form.partition_option, name = name.clone(),
                                free = gpus.free(), total = gpus.total).to_string()}
                        </option>
                    }
                }).collect_view()}
            </SelectField>
        })
    }
}

//! Deploy, on a checkpoint: one button in the checkpoints tables (a job's page, Models) that opens a
//! small form already filled with what most deployments want — the job's name, one replica, and under
//! "Advanced" the server's batching defaults (`EndpointSpec`'s) and the CPU — so deploying is a click on
//! Deploy and a click on Deploy. On success the browser goes to the new endpoint's page, where it is
//! seen starting and becoming ready. A number that does not parse is refused at its field in the
//! browser; every range is the server's to check, and its error is shown under the field it names.

use contracts::ids::{CheckpointId, WorkspaceId};
use leptos::html::{Details, Input};
use leptos::prelude::*;

use super::endpoint_href;
use crate::api::endpoints::DeployEndpoint;
use crate::api::jobs::{get_precision_advice, list_clusters};
use crate::components::clusters::{Partitions, RunsOn};
use crate::components::dialog::Dialog;
use crate::components::form::{FormError, FormState, SelectField, SubmitButton, TextField};
use crate::components::precision::{precision_hint, precision_options};
use crate::i18n::*;
use crate::pages::workspace::jobs::checkpoints::degenerate_text;
use contracts::error::{AppError, ErrorCode};
use contracts::metrics::Degenerate;
use contracts::precision::{PrecisionAdvice, Work, CHOICES};
use contracts::types::EndpointSpec;

/// The longest endpoint name the server takes.
const NAME_MAX: usize = 64;

/// The fields the form shows errors for itself.
const FIELDS: &[&str] = &[
    "name",
    "slug",
    "replicas",
    "max_batch_tokens",
    "max_wait_ms",
    "device",
    "precision",
    "cluster",
    "partition",
];

/// The form's text, as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct DeployValues {
    pub name: String,
    pub slug: String,
    pub replicas: String,
    pub max_batch_tokens: String,
    pub max_wait_ms: String,
    pub device: String,
    pub precision: String,
    /// A cluster's name, or empty for this server.
    pub cluster: String,
    /// One of the cluster's partitions, or empty for its default.
    pub partition: String,
}

impl DeployValues {
    /// The form as it opens: named after the job, in the precision that pays on this server
    /// (`advice`), and otherwise the server's defaults.
    pub fn new(job_name: &str, advice: Option<&PrecisionAdvice>) -> DeployValues {
        let defaults: EndpointSpec =
            serde_json::from_value(serde_json::json!({ "name": "", "checkpoint_id": 0 }))
                .expect("EndpointSpec has defaults for everything but name and checkpoint");
        DeployValues {
            name: job_name.trim().chars().take(NAME_MAX).collect(),
            slug: String::new(),
            replicas: defaults.replicas.to_string(),
            max_batch_tokens: defaults.max_batch_tokens.to_string(),
            max_wait_ms: defaults.max_wait_ms.to_string(),
            device: defaults.device,
            precision: advice.map_or(defaults.precision, |a| a.default.clone()),
            cluster: String::new(),
            partition: String::new(),
        }
    }

    /// The spec to send, or the first field whose text is not a whole number.
    pub fn to_spec(&self, checkpoint_id: CheckpointId) -> Result<EndpointSpec, &'static str> {
        fn num(s: &str, field: &'static str) -> Result<u32, &'static str> {
            s.trim().parse().map_err(|_| field)
        }
        let slug = self.slug.trim();
        Ok(EndpointSpec {
            name: self.name.trim().to_string(),
            slug: (!slug.is_empty()).then(|| slug.to_string()),
            checkpoint_id,
            replicas: num(&self.replicas, "replicas")?,
            max_batch_tokens: num(&self.max_batch_tokens, "max_batch_tokens")?,
            max_wait_ms: num(&self.max_wait_ms, "max_wait_ms")?,
            device: self.device.clone(),
            precision: self.precision.clone(),
            cluster: Some(self.cluster.trim().to_string()).filter(|c| !c.is_empty()),
            partition: Some(self.partition.trim().to_string()).filter(|p| !p.is_empty()),
            autoscale: None,
        })
    }
}

/// The Deploy button of one checkpoint, and its form while open.
#[component]
pub fn DeployCheckpoint(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    step: i64,
    /// The job that wrote the checkpoint: the endpoint's default name.
    job_name: String,
    /// Set when the checkpoint learned nothing: the form says so and asks before deploying.
    #[prop(optional_no_strip)]
    degenerate: Option<Degenerate>,
) -> impl IntoView {
    let i18n = use_i18n();
    let open = RwSignal::new(false);
    let job_name = StoredValue::new(job_name);
    view! {
        <button type="button" class="button button-small button-primary" data-testid="checkpoint-deploy"
            aria-haspopup="dialog" aria-label=move || t_string!(i18n, endpoints.deploy_aria, step = step).to_string()
            on:click=move |_| open.set(true)>
            {t!(i18n, endpoints.deploy)}
        </button>
        {move || open.get().then(|| view! {
            <DeployDialog workspace_id checkpoint_id step job_name=job_name.get_value() degenerate on_close=move || open.set(false) />
        })}
    }
}

#[component]
fn DeployDialog(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    step: i64,
    job_name: String,
    degenerate: Option<Degenerate>,
    on_close: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    // The precision that pays here, measured once per server at first use; without it, fp32.
    let advice = Resource::new(|| (), |_| get_precision_advice(Work::Serve));
    let job_name = StoredValue::new(job_name);
    view! {
        <Dialog testid="deploy-dialog" title=move || t!(i18n, endpoints.deploy_title) on_close>
            <p class="hint">{move || t_string!(i18n, endpoints.deploy_lead, id = checkpoint_id, step = step).to_string()}</p>
            <Transition fallback=move || view! { <p class="hint" data-testid="deploy-loading">{t!(i18n, common.loading)}</p> }>
                {move || Suspend::new(async move {
                    let advice = advice.await.ok();
                    view! {
                        <DeployForm workspace_id checkpoint_id job_name=job_name.get_value() degenerate advice on_close />
                    }
                })}
            </Transition>
        </Dialog>
    }
    .into_any()
}

#[component]
fn DeployForm(
    workspace_id: WorkspaceId,
    checkpoint_id: CheckpointId,
    job_name: String,
    degenerate: Option<Degenerate>,
    advice: Option<PrecisionAdvice>,
    on_close: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let start = DeployValues::new(&job_name, advice.as_ref());
    // A degenerate checkpoint deploys only once the person has said they mean it.
    let acknowledged = RwSignal::new(degenerate.is_none());
    let form = FormState::new(start.clone());
    let deploy = ServerAction::<DeployEndpoint>::new();
    form.follow(deploy, move |detail| {
        endpoint_href(workspace_id, detail.summary.id)
    });
    // Clusters this server hands work to: none on most servers, and then the form does not ask.
    let clusters = Resource::new(|| (), |_| list_clusters());
    let name_input = NodeRef::<Input>::new();
    Effect::new(move |_| {
        if let Some(input) = name_input.get() {
            let _ = input.focus();
        }
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match form.values.get_untracked().to_spec(checkpoint_id) {
            Ok(spec) => {
                form.error.set(None);
                deploy.dispatch(DeployEndpoint { workspace_id, spec });
            }
            Err(field) => {
                let locale = i18n.get_locale_untracked();
                form.error.set(Some(AppError::invalid(
                    field,
                    ErrorCode::EndpointSpecInvalid,
                    td_string!(locale, endpoints.err_number),
                )));
            }
        }
    };
    // An error in a field under "Advanced" opens it, so that the message is seen.
    let advanced = NodeRef::<Details>::new();
    Effect::new(move |_| {
        let hidden_field = form.error.with(|e| {
            e.as_ref()
                .and_then(|e| e.field())
                .is_some_and(|f| !["name", "replicas", "cluster", "partition"].contains(&f))
        });
        if let (true, Some(details)) = (hidden_field, advanced.get_untracked()) {
            details.set_open(true);
        }
    });
    view! {
            <form class="form" data-testid="deploy-form" on:submit=on_submit novalidate>
                {degenerate.map(|why| view! { <DegenerateWarning why acknowledged /> })}
                <FormError error=form.error.into() fields=FIELDS />
                <TextField form id="deploy-name" field="name" label=move || t!(i18n, endpoints.name)
                    hint=move || t!(i18n, endpoints.name_hint) maxlength=NAME_MAX as u32 required=true
                    node_ref=name_input value=start.name.clone() set=|v, s| v.name = s />
                <TextField form id="deploy-replicas" field="replicas" label=move || t!(i18n, endpoints.replicas)
                    hint=move || t!(i18n, endpoints.replicas_hint) inputmode="numeric"
                    value=start.replicas.clone() set=|v, s| v.replicas = s />
                <Transition>
                    {move || Suspend::new(async move {
                        let clusters = clusters.await.unwrap_or_default();
                        (!clusters.is_empty()).then(|| view! {
                            <RunsOn form id="deploy-cluster" hint=move || t!(i18n, endpoints.runs_on_hint)
                                selected=String::new() clusters=clusters.clone()
                                set=|v, s| { v.cluster = s; v.partition.clear(); } />
                            <Partitions form id="deploy-partition" clusters chosen=|v| v.cluster.clone()
                                selected=String::new() set=|v, s| v.partition = s />
                        })
                    })}
                </Transition>
                <details class="form-advanced" node_ref=advanced>
                    <summary>{t!(i18n, endpoints.advanced)}</summary>
                    <Advanced form start advice />
                </details>
                <div class="form-actions">
                    <SubmitButton pending=deploy.pending() testid="deploy-submit" blocked=Signal::derive(move || !acknowledged.get())>{t!(i18n, endpoints.deploy_submit)}</SubmitButton>
                    <button type="button" class="button button-ghost" on:click=move |_| on_close()>{t!(i18n, common.cancel)}</button>
                </div>
            </form>
    }
    .into_any()
}

/// Why the checkpoint should not be served, and the box to tick to serve it all the same.
#[component]
fn DegenerateWarning(why: Degenerate, acknowledged: RwSignal<bool>) -> impl IntoView {
    let i18n = use_i18n();
    let why = move || degenerate_text(i18n.get_locale(), why);
    view! {
        <div class="notice notice-warning" role="alert" data-testid="deploy-degenerate">
            <p>{move || t_string!(i18n, endpoints.degenerate_warning, why = why()).to_string()}</p>
            <div class="field field-check">
                <input type="checkbox" id="deploy-degenerate-ack" data-testid="deploy-degenerate-ack"
                    on:change=move |ev| acknowledged.set(event_target_checked(&ev)) />
                <label for="deploy-degenerate-ack">{t!(i18n, endpoints.degenerate_ack)}</label>
            </div>
        </div>
    }
}

/// What most deployments leave alone: the URL's slug, batching, device and precision.
#[component]
fn Advanced(
    form: FormState<DeployValues>,
    start: DeployValues,
    advice: Option<PrecisionAdvice>,
) -> impl IntoView {
    let i18n = use_i18n();
    let (device, precision) = (start.device.clone(), start.precision.clone());
    let advice_note = advice.clone();
    view! {
        <TextField form id="deploy-slug" field="slug" label=move || t!(i18n, endpoints.slug)
            hint=move || t!(i18n, endpoints.slug_hint) value=String::new() set=|v, s| v.slug = s />
        <div class="form-grid">
            <TextField form id="deploy-max-batch-tokens" field="max_batch_tokens" label=move || t!(i18n, endpoints.max_batch_tokens)
                hint=move || t!(i18n, endpoints.max_batch_tokens_hint) inputmode="numeric"
                value=start.max_batch_tokens.clone() set=|v, s| v.max_batch_tokens = s />
            <TextField form id="deploy-max-wait-ms" field="max_wait_ms" label=move || t!(i18n, endpoints.max_wait_ms)
                hint=move || t!(i18n, endpoints.max_wait_hint) inputmode="numeric"
                value=start.max_wait_ms.clone() set=|v, s| v.max_wait_ms = s />
        </div>
        <SelectField form id="deploy-device" field="device" label=move || t!(i18n, endpoints.device) set=|v, s| v.device = s>
            <option value="cpu" selected=device == "cpu">{t!(i18n, endpoints.device_cpu)}</option>
            <option value="cuda" selected=device == "cuda">{t!(i18n, endpoints.device_cuda)}</option>
        </SelectField>
        <SelectField form id="deploy-precision" field="precision" label=move || t!(i18n, endpoints.precision)
            hint=move || precision_hint(t_string!(i18n, endpoints.precision_hint), i18n.get_locale(), advice_note.as_ref())
            set=|v, s| v.precision = s>
            {precision_options(&CHOICES, precision, advice)}
        </SelectField>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_opens_with_the_job_name_and_the_servers_defaults() {
        let v = DeployValues::new("  情感分类 tiny  ", None);
        assert_eq!(v.name, "情感分类 tiny");
        let spec = v.to_spec(CheckpointId::new(7)).unwrap();
        assert_eq!(
            (spec.checkpoint_id, spec.replicas, spec.slug.as_deref()),
            (CheckpointId::new(7), 1, None)
        );
        assert_eq!(
            (
                spec.max_batch_tokens,
                spec.max_wait_ms,
                spec.device.as_str(),
                spec.precision.as_str()
            ),
            (8192, 5, "cpu", "fp32")
        );
        assert_eq!(spec.cluster, None, "this server unless a cluster is chosen");
        let mut on = DeployValues::new("job", None);
        on.cluster = "slurm".into();
        assert_eq!(
            on.to_spec(CheckpointId::new(7)).unwrap().cluster.as_deref(),
            Some("slurm")
        );
        let long = "名".repeat(100);
        assert_eq!(
            DeployValues::new(&long, None).name.chars().count(),
            NAME_MAX
        );
    }

    #[test]
    fn a_number_that_does_not_parse_names_its_field() {
        let mut v = DeployValues::new("job", None);
        v.max_wait_ms = "soon".into();
        assert_eq!(v.to_spec(CheckpointId::new(1)), Err("max_wait_ms"));
        v.max_wait_ms = " 10 ".into();
        v.slug = " my-model ".into();
        let spec = v.to_spec(CheckpointId::new(1)).unwrap();
        assert_eq!(
            (spec.max_wait_ms, spec.slug.as_deref()),
            (10, Some("my-model"))
        );
    }
}

//! `/w/{id}/environments/new` and `/w/{id}/environments/{env_id}/edit`: the spec form. What the browser
//! can tell on its own (a CPU count that is not a number, an environment line without `=`) is refused
//! before sending; everything else is the server's call (`spec_invalid` carries each broken rule as a
//! problem at its field), and each is shown under its field in the reader's language, with the whole
//! error above the submit button. Nothing is created unless the whole spec is valid.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::components::A;

use super::environment_href;
use super::parts::DockerBanner;
use crate::api::environments::{
    get_docker_status, get_environment, CreateEnvironment, UpdateEnvironment,
};
use crate::components::form::{
    CheckField, FormState, FormSummary, SelectField, SubmitButton, TextField,
};
use crate::components::page::{InfoNote, Loaded, Page};
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, use_detail};
use contracts::error::{AppError, ErrorCode, FieldProblem};
use contracts::types::{
    CatalogImage, DockerStatus, EnvironmentDetail, EnvironmentSpec, GpuSpec, GpuSummary,
    RuntimeNeeds,
};

/// The `<select>` value of "another image", which shows a free-text box.
const CUSTOM_IMAGE: &str = "";

/// `/w/{id}/environments/new`.
#[component]
pub fn NewEnvironmentPage() -> impl IntoView {
    view! { <FormPage edit=false /> }
}

/// `/w/{id}/environments/{env_id}/edit`.
#[component]
pub fn EditEnvironmentPage() -> impl IntoView {
    view! { <FormPage edit=true /> }
}

/// The form, empty or (`edit`) with the environment's spec, for editors and owners.
#[component]
fn FormPage(edit: bool) -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let docker = Resource::new(|| (), |_| get_docker_status());
    let detail = edit.then(|| use_detail("env_id", get_environment));
    // Where the form saves, what it starts from, and Docker's catalog (none for a viewer).
    let load = move || async move {
        let (workspace_id, environment_id, initial, can_edit) = match detail {
            Some(detail) => {
                let d = detail.await?;
                (
                    d.summary.workspace_id,
                    Some(d.summary.id),
                    d.spec,
                    d.can_edit,
                )
            }
            None => {
                let ws = current.ws.await?;
                (ws.id, None, EnvironmentSpec::default(), ws.role.can_edit())
            }
        };
        let docker = if can_edit { Some(docker.await?) } else { None };
        Ok((workspace_id, environment_id, initial, docker))
    };
    let title = move || {
        let title = if edit {
            t_string!(i18n, env_form.edit_title)
        } else {
            t_string!(i18n, env_form.new_title)
        };
        title.to_string()
    };
    let lead = move || {
        if edit {
            t_string!(i18n, env_form.edit_lead)
        } else {
            t_string!(i18n, env_form.new_lead)
        }
    };
    view! {
        <Page title lead class="page page-form">
            <Loaded load let:loaded>
                {match loaded {
                    (workspace_id, environment_id, initial, Some(docker)) => view! {
                        <EnvironmentForm workspace_id environment_id initial docker />
                    }
                    .into_any(),
                    (.., None) => view! { <EditorOnly /> }.into_any(),
                }}
            </Loaded>
        </Page>
    }
    .into_any()
}

#[component]
fn EditorOnly() -> impl IntoView {
    let i18n = use_i18n();
    view! { <InfoNote testid="environments-editor-only">{t!(i18n, environments.editor_only)}</InfoNote> }.into_any()
}

/// The form's text, as typed. Inputs are uncontrolled (the browser keeps what is typed) and copy every
/// change here; [`FormValues::to_spec`] turns it into a spec on submit.
#[derive(Debug, Clone, PartialEq)]
pub struct FormValues {
    pub name: String,
    /// A catalog reference, or [`CUSTOM_IMAGE`].
    pub base_choice: String,
    pub base_custom: String,
    pub runtime: bool,
    pub os_packages: String,
    pub cpus: String,
    pub memory: String,
    pub shm_size: String,
    /// `none`, `count` or `devices`.
    pub gpu_mode: String,
    pub gpu_count: String,
    pub gpu_devices: String,
    pub shared_gpus: bool,
    /// `KEY=VALUE` lines.
    pub env: String,
    /// `KEY=VALUE` lines; a stored secret comes back as `KEY=` (kept unless a value is typed).
    pub secret_env: String,
    pub working_dir: String,
    pub workspace_volume: String,
}

/// A mistake found in the browser: the field it concerns and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    Cpus(String),
    GpuCount,
    GpuDevices,
    EnvLine(usize),
    SecretLine(usize),
}

impl ClientError {
    /// The same shape as the server's `spec_invalid`, so one display serves both.
    fn into_app_error(self, locale: Locale) -> AppError {
        let (field, message) = match self {
            ClientError::Cpus(value) => (
                "cpus",
                td_string!(locale, env_form.err_cpus, value = value).to_string(),
            ),
            ClientError::GpuCount => (
                "gpus",
                td_string!(locale, env_form.err_gpu_count).to_string(),
            ),
            ClientError::GpuDevices => (
                "gpus",
                td_string!(locale, env_form.err_gpu_devices).to_string(),
            ),
            ClientError::EnvLine(line) => (
                "env",
                td_string!(locale, env_form.err_env_line, line = line).to_string(),
            ),
            ClientError::SecretLine(line) => (
                "secret_env",
                td_string!(locale, env_form.err_env_line, line = line).to_string(),
            ),
        };
        let problem = FieldProblem::said(field, message);
        AppError::invalid_fields(ErrorCode::SpecInvalid, vec![problem])
            .unwrap_or(AppError::Internal)
    }
}

/// `KEY=VALUE` lines of a map.
fn lines(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The map of `KEY=VALUE` lines (blank lines skipped), or the number of the first line that is not one.
fn pairs(text: &str) -> Result<BTreeMap<String, String>, usize> {
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (key, value) = line.split_once('=').ok_or(i + 1)?;
        map.insert(key.trim().to_string(), value.to_string());
    }
    Ok(map)
}

impl FormValues {
    pub fn from_spec(spec: &EnvironmentSpec, catalog: &[CatalogImage]) -> Self {
        let in_catalog = catalog.iter().any(|c| c.reference == spec.base_image);
        let (gpu_mode, gpu_count, gpu_devices) = match &spec.gpus {
            GpuSpec::None => ("none", String::new(), String::new()),
            GpuSpec::Count(n) => ("count", n.to_string(), String::new()),
            GpuSpec::Devices(d) => (
                "devices",
                String::new(),
                d.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            ),
        };
        FormValues {
            name: spec.name.clone(),
            base_choice: if in_catalog {
                spec.base_image.clone()
            } else {
                CUSTOM_IMAGE.to_string()
            },
            base_custom: if in_catalog {
                String::new()
            } else {
                spec.base_image.clone()
            },
            runtime: spec.runtime,
            os_packages: spec.os_packages.join(" "),
            cpus: super::parts::cores(spec.cpus),
            memory: spec.memory.clone(),
            shm_size: spec.shm_size.clone(),
            gpu_mode: gpu_mode.to_string(),
            gpu_count,
            gpu_devices,
            shared_gpus: spec.shared_gpus,
            env: lines(&spec.env),
            secret_env: lines(&spec.secret_env),
            working_dir: spec.working_dir.clone(),
            workspace_volume: spec.workspace_volume.clone(),
        }
    }

    /// The spec to send. Only what cannot even be sent is checked here; the rules are the server's.
    pub fn to_spec(&self) -> Result<EnvironmentSpec, ClientError> {
        let cpus = self
            .cpus
            .trim()
            .parse::<f64>()
            .map_err(|_| ClientError::Cpus(self.cpus.trim().to_string()))?;
        let gpus = match self.gpu_mode.as_str() {
            "count" => GpuSpec::Count(
                self.gpu_count
                    .trim()
                    .parse()
                    .map_err(|_| ClientError::GpuCount)?,
            ),
            "devices" => GpuSpec::Devices(
                self.gpu_devices
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<u32>().map_err(|_| ClientError::GpuDevices))
                    .collect::<Result<_, _>>()?,
            ),
            _ => GpuSpec::None,
        };
        let env = pairs(&self.env).map_err(ClientError::EnvLine)?;
        let secret_env = pairs(&self.secret_env).map_err(ClientError::SecretLine)?;
        let base_image = if self.base_choice == CUSTOM_IMAGE {
            self.base_custom.trim().to_string()
        } else {
            self.base_choice.clone()
        };
        Ok(EnvironmentSpec {
            name: self.name.trim().to_string(),
            base_image,
            runtime: self.runtime,
            os_packages: self
                .os_packages
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            cpus,
            memory: self.memory.trim().to_string(),
            shm_size: self.shm_size.trim().to_string(),
            gpus,
            shared_gpus: self.shared_gpus,
            env,
            secret_env,
            working_dir: self.working_dir.trim().to_string(),
            workspace_volume: self.workspace_volume.trim().to_string(),
        })
    }
}

/// What a catalog entry says in its `<option>`: reference, what it is, its CUDA needs, and whether it is
/// here already (or built here) or must come from a registry or an archive an admin loads.
fn catalog_label(locale: Locale, image: &CatalogImage) -> String {
    let description = match locale {
        Locale::zh => image.description_zh.clone(),
        Locale::en => image.description.clone(),
    };
    let mut notes = vec![description];
    match (&image.cuda, &image.min_driver) {
        (Some(cuda), Some(driver)) => notes.push(
            td_string!(
                locale,
                env_form.cuda,
                cuda = cuda.clone(),
                driver = driver.clone()
            )
            .to_string(),
        ),
        _ => notes.push(td_string!(locale, env_form.cpu_only).to_string()),
    }
    if image.present {
        notes.push(td_string!(locale, env_form.present).to_string());
    } else if image.local {
        notes.push(td_string!(locale, env_form.built_locally).to_string());
    } else {
        notes.push(td_string!(locale, env_form.needs_registry).to_string());
    }
    if !image.has_apt {
        notes.push(td_string!(locale, env_form.no_apt).to_string());
    }
    format!("{} — {}", image.reference, notes.join(" · "))
}

#[component]
fn EnvironmentForm(
    workspace_id: WorkspaceId,
    /// `None` creates; `Some` saves a new version of that environment.
    environment_id: Option<EnvironmentId>,
    initial: EnvironmentSpec,
    docker: DockerStatus,
) -> impl IntoView {
    let i18n = use_i18n();
    let start = FormValues::from_spec(&initial, &docker.catalog);
    let form = FormState::new(start.clone());
    let create = ServerAction::<CreateEnvironment>::new();
    let update = ServerAction::<UpdateEnvironment>::new();
    let pending = Signal::derive(move || create.pending().get() || update.pending().get());
    let to_detail =
        move |detail: &EnvironmentDetail| environment_href(workspace_id, detail.summary.id);
    form.follow(create, to_detail);
    form.follow(update, to_detail);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match (form.values.get_untracked().to_spec(), environment_id) {
            (Ok(spec), None) => {
                form.error.set(None);
                create.dispatch(CreateEnvironment { workspace_id, spec });
            }
            (Ok(spec), Some(environment_id)) => {
                form.error.set(None);
                update.dispatch(UpdateEnvironment {
                    workspace_id,
                    environment_id,
                    spec,
                });
            }
            (Err(mistake), _) => {
                let locale = i18n.get_locale_untracked();
                form.error.set(Some(mistake.into_app_error(locale)));
            }
        }
    };
    let available = docker.available;
    let cancel_href = match environment_id {
        Some(id) => environment_href(workspace_id, id),
        None => format!("/w/{workspace_id}/environments"),
    };
    let catalog = docker.catalog.clone();
    let runtime_needs = docker.runtime.clone();
    let gpus = docker.gpus.clone();
    let left_out = docker.gpus_left_out.clone();
    view! {
        <DockerBanner status=docker />
        <form class="form card env-form" data-testid="environment-form" on:submit=on_submit novalidate>
            <ImageSection form start=start.clone() catalog runtime_needs />
            <ResourcesSection form start=start.clone() gpus left_out />
            <RuntimeSection form start />
            <FormSummary form heading=move || t!(i18n, env_form.summary) />
            <div class="form-actions">
                <SubmitButton pending=Signal::derive(move || pending.get() || !available) testid="env-submit">
                    {move || if environment_id.is_some() {
                        t_string!(i18n, env_form.save_button)
                    } else {
                        t_string!(i18n, env_form.create_button)
                    }}
                </SubmitButton>
                <A href=cancel_href attr:class="button button-ghost" attr:data-testid="env-cancel">
                    {t!(i18n, env_form.cancel)}
                </A>
            </div>
        </form>
    }
    .into_any()
}

/// Name, base image (from the catalog, or typed), the Paddock runtime and OS packages.
#[component]
fn ImageSection(
    form: FormState<FormValues>,
    start: FormValues,
    catalog: Vec<CatalogImage>,
    /// What the runtime's CUDA needs of the host, whatever the base image's CUDA.
    runtime_needs: Option<RuntimeNeeds>,
) -> impl IntoView {
    let i18n = use_i18n();
    let m_base = form.message("base_image");
    let custom_image = move || form.values.with(|v| v.base_choice == CUSTOM_IMAGE);
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, env_form.section_image)}</legend>
            <TextField form id="env-name" field="name" label=move || t!(i18n, env_form.name)
                hint=move || t!(i18n, env_form.name_hint) maxlength=64 required=true
                value=start.name.clone() set=|v, s| v.name = s />
            <SelectField form id="env-base-image" field="base_image" label=move || t!(i18n, env_form.base_image)
                set=|v, s| v.base_choice = s>
                {catalog
                    .into_iter()
                    .map(|image| {
                        let selected = image.reference == start.base_choice;
                        let reference = image.reference.clone();
                        view! {
                            <option value=reference selected=selected>
                                {move || catalog_label(i18n.get_locale(), &image)}
                            </option>
                        }
                    })
                    .collect_view()}
                <option value=CUSTOM_IMAGE selected=start.base_choice == CUSTOM_IMAGE>
                    {t!(i18n, env_form.base_custom)}
                </option>
            </SelectField>
            // Its problems show at the choice above, so the message is not said twice.
            <div class="field" hidden=move || !custom_image() class:field-invalid=move || m_base.with(Option::is_some)>
                <label for="env-base-custom">{t!(i18n, env_form.base_custom_label)}</label>
                <input
                    id="env-base-custom"
                    data-testid="env-base-custom"
                    autocomplete="off"
                    value=start.base_custom.clone()
                    aria-describedby="env-base-custom-hint"
                    on:input=form.on_text(|v, s| v.base_custom = s)
                />
                <p class="hint" id="env-base-custom-hint">{t!(i18n, env_form.base_custom_hint)}</p>
            </div>
            <CheckField form id="env-runtime" label=move || t!(i18n, env_form.runtime)
                hint=move || t!(i18n, env_form.runtime_hint) checked=start.runtime set=|v, on| v.runtime = on />
            {runtime_needs.map(|needs| {
                let unknown = || "?".to_string();
                let (cuda, driver, gpu) = (
                    needs.cuda,
                    needs.min_driver.unwrap_or_else(unknown),
                    needs.min_compute_capability.unwrap_or_else(unknown),
                );
                view! {
                    <p class="hint" data-testid="env-runtime-needs">
                        {move || t_string!(i18n, env_form.runtime_needs, cuda = cuda.clone(),
                            driver = driver.clone(), gpu = gpu.clone()).to_string()}
                    </p>
                }
            })}
            <TextField form id="env-os-packages" field="os_packages" label=move || t!(i18n, env_form.os_packages)
                hint=move || t!(i18n, env_form.os_packages_hint)
                value=start.os_packages.clone() set=|v, s| v.os_packages = s />
        </fieldset>
    }
}

/// CPUs, memory, shared memory and GPUs, with the host's GPUs named.
#[component]
fn ResourcesSection(
    form: FormState<FormValues>,
    start: FormValues,
    gpus: Vec<GpuSummary>,
    left_out: Vec<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, env_form.section_resources)}</legend>
            <div class="form-grid">
                <TextField form id="env-cpus" field="cpus" label=move || t!(i18n, env_form.cpus)
                    hint=move || t!(i18n, env_form.cpus_hint) inputmode="decimal"
                    value=start.cpus.clone() set=|v, s| v.cpus = s />
                <TextField form id="env-memory" field="memory" label=move || t!(i18n, env_form.memory)
                    hint=move || t!(i18n, env_form.memory_hint)
                    value=start.memory.clone() set=|v, s| v.memory = s />
                <TextField form id="env-shm-size" field="shm_size" label=move || t!(i18n, env_form.shm_size)
                    hint=move || t!(i18n, env_form.shm_size_hint)
                    value=start.shm_size.clone() set=|v, s| v.shm_size = s />
            </div>
            <GpuChoice form start gpus left_out />
        </fieldset>
    }
}

/// No GPU, a number of GPUs, or named devices; shared or not.
#[component]
fn GpuChoice(
    form: FormState<FormValues>,
    start: FormValues,
    gpus: Vec<GpuSummary>,
    /// The host's GPUs Paddock cannot use, each with why.
    left_out: Vec<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let m_gpus = form.message("gpus");
    let gpu_mode = move || form.values.with(|v| v.gpu_mode.clone());
    let host_gpus = gpus
        .iter()
        .map(|g| match g.memory_mib {
            Some(mib) => format!("{} {} ({mib} MiB)", g.index, g.name),
            None => format!("{} {}", g.index, g.name),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let invalid = move || m_gpus.with(Option::is_some).then_some("true");
    view! {
        <fieldset class="field gpu-choice" class:field-invalid=move || m_gpus.with(Option::is_some) aria-describedby="env-gpus-error">
            <legend>{t!(i18n, env_form.gpus)}</legend>
            {[("none", "env-gpus-none"), ("count", "env-gpus-count"), ("devices", "env-gpus-devices")]
                .into_iter()
                .map(|(mode, id)| {
                    view! {
                        <label class="radio" for=id>
                            <input
                                type="radio"
                                id=id
                                data-testid=id
                                name="gpu_mode"
                                value=mode
                                checked=start.gpu_mode == mode
                                on:change=move |_| form.values.update(|v| v.gpu_mode = mode.to_string())
                            />
                            {move || match mode {
                                "none" => t_string!(i18n, env_form.gpus_none),
                                "count" => t_string!(i18n, env_form.gpus_count),
                                _ => t_string!(i18n, env_form.gpus_devices),
                            }}
                        </label>
                    }
                })
                .collect_view()}
            <div class="field" hidden=move || gpu_mode() != "count">
                <label for="env-gpu-count">{t!(i18n, env_form.gpu_count)}</label>
                <input
                    id="env-gpu-count"
                    data-testid="env-gpu-count"
                    inputmode="numeric"
                    autocomplete="off"
                    value=start.gpu_count.clone()
                    aria-invalid=invalid
                    on:input=form.on_text(|v, s| v.gpu_count = s)
                />
            </div>
            <div class="field" hidden=move || gpu_mode() != "devices">
                <label for="env-gpu-devices">{t!(i18n, env_form.gpu_devices)}</label>
                <input
                    id="env-gpu-devices"
                    data-testid="env-gpu-devices"
                    autocomplete="off"
                    value=start.gpu_devices.clone()
                    aria-invalid=invalid
                    aria-describedby="env-gpu-devices-hint"
                    on:input=form.on_text(|v, s| v.gpu_devices = s)
                />
                <p class="hint" id="env-gpu-devices-hint">{t!(i18n, env_form.gpu_devices_hint)}</p>
            </div>
            <CheckField form id="env-shared-gpus" label=move || t!(i18n, env_form.shared_gpus)
                checked=start.shared_gpus set=|v, on| v.shared_gpus = on
                hidden=Signal::derive(move || gpu_mode() == "none") />
            <p class="hint" data-testid="host-gpus">
                {move || if host_gpus.is_empty() {
                    t_string!(i18n, env_form.no_host_gpus).to_string()
                } else {
                    t_string!(i18n, env_form.host_gpus, list = host_gpus.clone()).to_string()
                }}
            </p>
            {(!left_out.is_empty()).then(|| {
                let list = left_out.join("; ");
                view! {
                    <p class="hint" data-testid="host-gpus-left-out">
                        {move || t_string!(i18n, env_form.gpus_left_out, list = list.clone()).to_string()}
                    </p>
                }
            })}
            <p class="field-error" id="env-gpus-error" data-testid="env-gpus-error">{move || m_gpus.get()}</p>
        </fieldset>
    }
}

/// Environment variables, secrets, working directory and the workspace volume's mount point.
#[component]
fn RuntimeSection(form: FormState<FormValues>, start: FormValues) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <fieldset class="form-section">
            <legend>{t!(i18n, env_form.section_runtime)}</legend>
            <TextField form id="env-env" field="env" label=move || t!(i18n, env_form.env)
                hint=move || t!(i18n, env_form.env_hint) rows=4
                value=start.env.clone() set=|v, s| v.env = s />
            <TextField form id="env-secrets" field="secret_env" label=move || t!(i18n, env_form.secret_env)
                hint=move || t!(i18n, env_form.secret_env_hint) rows=3
                value=start.secret_env.clone() set=|v, s| v.secret_env = s />
            <div class="form-grid">
                <TextField form id="env-working-dir" field="working_dir" label=move || t!(i18n, env_form.working_dir)
                    value=start.working_dir.clone() set=|v, s| v.working_dir = s />
                <TextField form id="env-workspace-volume" field="workspace_volume"
                    label=move || t!(i18n, env_form.workspace_volume) hint=move || t!(i18n, env_form.workspace_volume_hint)
                    value=start.workspace_volume.clone() set=|v, s| v.workspace_volume = s />
            </div>
        </fieldset>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<CatalogImage> {
        vec![CatalogImage {
            reference: "paddock/base:busybox".into(),
            description: "BusyBox".into(),
            description_zh: "BusyBox".into(),
            cuda: None,
            min_driver: None,
            local: true,
            present: false,
            has_apt: false,
        }]
    }

    #[test]
    fn a_spec_survives_the_form_both_ways() {
        let spec = EnvironmentSpec {
            name: "nlp".into(),
            os_packages: vec!["curl".into(), "git=1:2.39".into()],
            cpus: 0.5,
            memory: "64m".into(),
            shm_size: "16m".into(),
            gpus: GpuSpec::Devices(vec![0, 3]),
            shared_gpus: true,
            env: [
                ("A".to_string(), "x=y".to_string()),
                ("HF_HOME".to_string(), "/workspace/hf".to_string()),
            ]
            .into(),
            ..Default::default()
        };
        let values = FormValues::from_spec(&spec, &catalog());
        assert_eq!(values.base_choice, "paddock/base:busybox");
        assert_eq!(values.to_spec().unwrap(), spec);

        let custom = EnvironmentSpec {
            base_image: "debian:bookworm-slim".into(),
            gpus: GpuSpec::Count(2),
            ..Default::default()
        };
        let values = FormValues::from_spec(&custom, &catalog());
        assert_eq!(values.base_choice, CUSTOM_IMAGE);
        assert_eq!(values.base_custom, "debian:bookworm-slim");
        assert_eq!(values.to_spec().unwrap(), custom);
    }

    #[test]
    fn what_cannot_be_sent_is_refused_in_the_browser() {
        let mut values = FormValues::from_spec(&EnvironmentSpec::default(), &catalog());
        values.cpus = "two".into();
        assert_eq!(values.to_spec(), Err(ClientError::Cpus("two".into())));
        values.cpus = "2".into();
        values.env = "A=1\n\nNOT A PAIR".into();
        assert_eq!(values.to_spec(), Err(ClientError::EnvLine(3)));
        values.env.clear();
        values.gpu_mode = "devices".into();
        values.gpu_devices = "0, x".into();
        assert_eq!(values.to_spec(), Err(ClientError::GpuDevices));
        let err = ClientError::GpuDevices.into_app_error(Locale::en);
        assert_eq!(err.field(), Some("gpus"));
        assert!(field_text(Locale::en, &err, "gpus")
            .unwrap()
            .contains("whole numbers"));
    }

    #[test]
    fn server_problems_land_under_their_fields() {
        let err = AppError::invalid_fields(
            ErrorCode::SpecInvalid,
            vec![
                FieldProblem::said("name", "may not contain `;`"),
                FieldProblem::said(
                    "memory",
                    "\"lots\" is not a size; use a number with a unit, like 512m or 8g",
                ),
                FieldProblem::said("os_packages[1]", "bad name"),
                FieldProblem::said("env.HOME", "not allowed"),
            ],
        )
        .unwrap();
        let at = |f| field_text(Locale::en, &err, f);
        assert_eq!(at("name").as_deref(), Some("may not contain `;`"));
        assert_eq!(
            at("memory").as_deref(),
            Some("\"lots\" is not a size; use a number with a unit, like 512m or 8g")
        );
        assert_eq!(
            at("os_packages").as_deref(),
            Some("os_packages[1]: bad name")
        );
        assert_eq!(at("env").as_deref(), Some("env.HOME: not allowed"));
        assert_eq!(at("cpus"), None);
        assert_eq!(at("os"), None, "a prefix of a field name is not that field");
    }

    #[test]
    fn other_errors_show_their_translation_at_their_field() {
        let taken = AppError::conflict("name", ErrorCode::EnvironmentNameTaken, "taken");
        assert_eq!(
            field_text(Locale::en, &taken, "name").as_deref(),
            Some("An environment with this name already exists in this workspace.")
        );
        assert_eq!(field_text(Locale::en, &taken, "memory"), None);
        let image = AppError::invalid(
            "base_image",
            ErrorCode::ImageUnavailable,
            "nope:1 is not on this machine",
        );
        assert_eq!(
            field_text(Locale::zh, &image, "base_image").as_deref(),
            Some("镜像不可用：nope:1 is not on this machine")
        );
    }
}

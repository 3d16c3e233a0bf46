//! `/w/{id}/environments/new` and `/w/{id}/environments/{env_id}/edit`: the spec form. What the browser
//! can tell on its own (a CPU count that is not a number, an environment line without `=`) is refused
//! before sending; everything else is the server's call (`spec_invalid` lists every broken rule as
//! "field: message; field: message"), and each message is shown under the field it names, with the whole
//! list above the submit button. Nothing is created unless the whole spec is valid.

use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::parts::DockerBanner;
use super::{environment_href, use_environment_id};
use crate::api::environments::{
    get_docker_status, get_environment, CreateEnvironment, UpdateEnvironment,
};
use crate::components::form::SubmitButton;
use crate::components::notice::{ErrorNotice, Loading};
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, PageHeader};
use contracts::error::{AppError, ErrorCode, FieldProblem};
use contracts::types::{CatalogImage, DockerStatus, EnvironmentSpec, GpuSpec};

/// The `<select>` value of "another image", which shows a free-text box.
const CUSTOM_IMAGE: &str = "";

/// `/w/{id}/environments/new`.
#[component]
pub fn NewEnvironmentPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let docker = Resource::new(|| (), |_| get_docker_status());
    view! {
        <Title text=move || t_string!(i18n, env_form.new_title).to_string() />
        <div class="page page-form">
            <PageHeader title=move || t!(i18n, env_form.new_title) lead=move || t!(i18n, env_form.new_lead) />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let ws = match current.ws.await {
                        Ok(ws) => ws,
                        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
                    };
                    if !ws.role.can_edit() {
                        return view! { <EditorOnly /> }.into_any();
                    }
                    match docker.await {
                        Ok(docker) => view! {
                            <EnvironmentForm workspace_id=ws.id environment_id=None initial=EnvironmentSpec::default() docker />
                        }
                        .into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
    .into_any()
}

/// `/w/{id}/environments/{env_id}/edit`.
#[component]
pub fn EditEnvironmentPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let environment_id = use_environment_id();
    let docker = Resource::new(|| (), |_| get_docker_status());
    let detail = Resource::new(
        move || (current.id.get(), environment_id.get()),
        |(ws, env)| get_environment(ws, env),
    );
    view! {
        <Title text=move || t_string!(i18n, env_form.edit_title).to_string() />
        <div class="page page-form">
            <PageHeader title=move || t!(i18n, env_form.edit_title) lead=move || t!(i18n, env_form.edit_lead) />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let (detail, docker) = (detail.await, docker.await);
                    let detail = match detail {
                        Ok(detail) => detail,
                        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
                    };
                    if !detail.can_edit {
                        return view! { <EditorOnly /> }.into_any();
                    }
                    match docker {
                        Ok(docker) => view! {
                            <EnvironmentForm
                                workspace_id=detail.summary.workspace_id
                                environment_id=Some(detail.summary.id)
                                initial=detail.spec
                                docker
                            />
                        }
                        .into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
    .into_any()
}

#[component]
fn EditorOnly() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p class="notice notice-info" data-testid="environments-editor-only">{t!(i18n, environments.editor_only)}</p>
    }
    .into_any()
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

/// One labelled control with its hint and error line (`{id}-hint`, `{id}-error`).
#[component]
fn Row(
    id: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    message: Signal<Option<String>>,
    children: Children,
) -> impl IntoView {
    view! {
        <div class="field" class:field-invalid=move || message.with(Option::is_some)>
            <label for=id>{label.run()}</label>
            {children()}
            {hint.map(|h| view! { <p class="hint" id=format!("{id}-hint")>{h.run()}</p> })}
            <p class="field-error" id=format!("{id}-error") data-testid=format!("{id}-error")>
                {move || message.get()}
            </p>
        </div>
    }
    .into_any()
}

fn described_by(id: &str) -> String {
    format!("{id}-hint {id}-error")
}

/// What a catalog entry says in its `<option>`: reference, what it is, and its CUDA needs.
fn catalog_label(locale: Locale, image: &CatalogImage) -> String {
    let mut notes = vec![image.description.clone()];
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
    if image.local {
        notes.push(td_string!(locale, env_form.built_locally).to_string());
    }
    if !image.has_apt {
        notes.push(td_string!(locale, env_form.no_apt).to_string());
    }
    format!("{} — {}", image.reference, notes.join(" · "))
}

#[component]
fn EnvironmentForm(
    workspace_id: i64,
    /// `None` creates; `Some` saves a new version of that environment.
    environment_id: Option<i64>,
    initial: EnvironmentSpec,
    docker: DockerStatus,
) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let start = FormValues::from_spec(&initial, &docker.catalog);
    let values = RwSignal::new(start.clone());
    let error = RwSignal::new(None::<AppError>);
    let create = ServerAction::<CreateEnvironment>::new();
    let update = ServerAction::<UpdateEnvironment>::new();
    let pending = Signal::derive(move || create.pending().get() || update.pending().get());

    let go = navigate.clone();
    Effect::new(move |_| match create.value().get() {
        Some(Ok(detail)) => go(
            &environment_href(workspace_id, detail.summary.id),
            Default::default(),
        ),
        Some(Err(err)) => error.set(Some(err)),
        None => {}
    });
    Effect::new(move |_| match update.value().get() {
        Some(Ok(detail)) => navigate(
            &environment_href(workspace_id, detail.summary.id),
            Default::default(),
        ),
        Some(Err(err)) => error.set(Some(err)),
        None => {}
    });

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match values.get_untracked().to_spec() {
            Ok(spec) => {
                error.set(None);
                match environment_id {
                    None => {
                        create.dispatch(CreateEnvironment { workspace_id, spec });
                    }
                    Some(environment_id) => {
                        update.dispatch(UpdateEnvironment {
                            workspace_id,
                            environment_id,
                            spec,
                        });
                    }
                }
            }
            Err(mistake) => error.set(Some(mistake.into_app_error(i18n.get_locale_untracked()))),
        }
    };

    let message = move |field: &'static str| {
        Signal::derive(move || {
            error.with(|e| {
                e.as_ref()
                    .and_then(|e| field_text(i18n.get_locale(), e, field))
            })
        })
    };
    let invalid =
        move |m: Signal<Option<String>>| move || m.with(Option::is_some).then_some("true");
    let m_secret = message("secret_env");
    let (m_name, m_base, m_packages, m_cpus, m_memory, m_shm, m_gpus, m_env, m_dir, m_volume) = (
        message("name"),
        message("base_image"),
        message("os_packages"),
        message("cpus"),
        message("memory"),
        message("shm_size"),
        message("gpus"),
        message("env"),
        message("working_dir"),
        message("workspace_volume"),
    );
    let set = move |f: fn(&mut FormValues, String)| {
        move |ev: leptos::ev::Event| {
            let value = event_target_value(&ev);
            values.update(|v| f(v, value));
        }
    };
    let custom_image = move || values.with(|v| v.base_choice == CUSTOM_IMAGE);
    let gpu_mode = move || values.with(|v| v.gpu_mode.clone());
    let host_gpus = docker
        .gpus
        .iter()
        .map(|g| format!("{} {} ({} MiB)", g.index, g.name, g.memory_mib))
        .collect::<Vec<_>>()
        .join(", ");
    let available = docker.available;
    let cancel_href = match environment_id {
        Some(id) => environment_href(workspace_id, id),
        None => format!("/w/{workspace_id}/environments"),
    };
    let catalog = docker.catalog.clone();

    view! {
        <DockerBanner status=docker />
        <form class="form card env-form" data-testid="environment-form" on:submit=on_submit novalidate>
            <fieldset class="form-section">
                <legend>{t!(i18n, env_form.section_image)}</legend>
                <Row id="env-name" label=move || t!(i18n, env_form.name) hint=ViewFn::from(move || t!(i18n, env_form.name_hint)) message=m_name>
                    <input
                        id="env-name"
                        data-testid="env-name"
                        autocomplete="off"
                        maxlength="64"
                        required=true
                        value=start.name.clone()
                        aria-invalid=invalid(m_name)
                        aria-describedby=described_by("env-name")
                        on:input=set(|v, s| v.name = s)
                    />
                </Row>
                <Row id="env-base-image" label=move || t!(i18n, env_form.base_image) message=m_base>
                    <select
                        id="env-base-image"
                        data-testid="env-base-image"
                        aria-invalid=invalid(m_base)
                        aria-describedby=described_by("env-base-image")
                        on:change=set(|v, s| v.base_choice = s)
                    >
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
                    </select>
                </Row>
                <div class="field" hidden=move || !custom_image() class:field-invalid=move || m_base.with(Option::is_some)>
                    <label for="env-base-custom">{t!(i18n, env_form.base_custom_label)}</label>
                    <input
                        id="env-base-custom"
                        data-testid="env-base-custom"
                        autocomplete="off"
                        value=start.base_custom.clone()
                        aria-describedby="env-base-custom-hint"
                        on:input=set(|v, s| v.base_custom = s)
                    />
                    <p class="hint" id="env-base-custom-hint">{t!(i18n, env_form.base_custom_hint)}</p>
                </div>
                <div class="field field-check">
                    <input
                        type="checkbox"
                        id="env-runtime"
                        data-testid="env-runtime"
                        checked=start.runtime
                        aria-describedby="env-runtime-hint"
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            values.update(|v| v.runtime = on);
                        }
                    />
                    <label for="env-runtime">{t!(i18n, env_form.runtime)}</label>
                    <p class="hint" id="env-runtime-hint">{t!(i18n, env_form.runtime_hint)}</p>
                </div>
                <Row id="env-os-packages" label=move || t!(i18n, env_form.os_packages) hint=ViewFn::from(move || t!(i18n, env_form.os_packages_hint)) message=m_packages>
                    <input
                        id="env-os-packages"
                        data-testid="env-os-packages"
                        autocomplete="off"
                        value=start.os_packages.clone()
                        aria-invalid=invalid(m_packages)
                        aria-describedby=described_by("env-os-packages")
                        on:input=set(|v, s| v.os_packages = s)
                    />
                </Row>
            </fieldset>

            <fieldset class="form-section">
                <legend>{t!(i18n, env_form.section_resources)}</legend>
                <div class="form-grid">
                    <Row id="env-cpus" label=move || t!(i18n, env_form.cpus) hint=ViewFn::from(move || t!(i18n, env_form.cpus_hint)) message=m_cpus>
                        <input
                            id="env-cpus"
                            data-testid="env-cpus"
                            inputmode="decimal"
                            autocomplete="off"
                            value=start.cpus.clone()
                            aria-invalid=invalid(m_cpus)
                            aria-describedby=described_by("env-cpus")
                            on:input=set(|v, s| v.cpus = s)
                        />
                    </Row>
                    <Row id="env-memory" label=move || t!(i18n, env_form.memory) hint=ViewFn::from(move || t!(i18n, env_form.memory_hint)) message=m_memory>
                        <input
                            id="env-memory"
                            data-testid="env-memory"
                            autocomplete="off"
                            value=start.memory.clone()
                            aria-invalid=invalid(m_memory)
                            aria-describedby=described_by("env-memory")
                            on:input=set(|v, s| v.memory = s)
                        />
                    </Row>
                    <Row id="env-shm-size" label=move || t!(i18n, env_form.shm_size) hint=ViewFn::from(move || t!(i18n, env_form.shm_size_hint)) message=m_shm>
                        <input
                            id="env-shm-size"
                            data-testid="env-shm-size"
                            autocomplete="off"
                            value=start.shm_size.clone()
                            aria-invalid=invalid(m_shm)
                            aria-describedby=described_by("env-shm-size")
                            on:input=set(|v, s| v.shm_size = s)
                        />
                    </Row>
                </div>
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
                                        on:change=move |_| values.update(|v| v.gpu_mode = mode.to_string())
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
                            aria-invalid=invalid(m_gpus)
                            on:input=set(|v, s| v.gpu_count = s)
                        />
                    </div>
                    <div class="field" hidden=move || gpu_mode() != "devices">
                        <label for="env-gpu-devices">{t!(i18n, env_form.gpu_devices)}</label>
                        <input
                            id="env-gpu-devices"
                            data-testid="env-gpu-devices"
                            autocomplete="off"
                            value=start.gpu_devices.clone()
                            aria-invalid=invalid(m_gpus)
                            aria-describedby="env-gpu-devices-hint"
                            on:input=set(|v, s| v.gpu_devices = s)
                        />
                        <p class="hint" id="env-gpu-devices-hint">{t!(i18n, env_form.gpu_devices_hint)}</p>
                    </div>
                    <div class="field field-check" hidden=move || gpu_mode() == "none">
                        <input
                            type="checkbox"
                            id="env-shared-gpus"
                            data-testid="env-shared-gpus"
                            checked=start.shared_gpus
                            on:change=move |ev| {
                                let on = event_target_checked(&ev);
                                values.update(|v| v.shared_gpus = on);
                            }
                        />
                        <label for="env-shared-gpus">{t!(i18n, env_form.shared_gpus)}</label>
                    </div>
                    <p class="hint" data-testid="host-gpus">
                        {move || if host_gpus.is_empty() {
                            t_string!(i18n, env_form.no_host_gpus).to_string()
                        } else {
                            t_string!(i18n, env_form.host_gpus, list = host_gpus.clone()).to_string()
                        }}
                    </p>
                    <p class="field-error" id="env-gpus-error" data-testid="env-gpus-error">{move || m_gpus.get()}</p>
                </fieldset>
            </fieldset>

            <fieldset class="form-section">
                <legend>{t!(i18n, env_form.section_runtime)}</legend>
                <Row id="env-env" label=move || t!(i18n, env_form.env) hint=ViewFn::from(move || t!(i18n, env_form.env_hint)) message=m_env>
                    <textarea
                        id="env-env"
                        data-testid="env-env"
                        rows="4"
                        spellcheck="false"
                        aria-invalid=invalid(m_env)
                        aria-describedby=described_by("env-env")
                        on:input=set(|v, s| v.env = s)
                    >
                        {start.env.clone()}
                    </textarea>
                </Row>
                <Row id="env-secrets" label=move || t!(i18n, env_form.secret_env) hint=ViewFn::from(move || t!(i18n, env_form.secret_env_hint)) message=m_secret>
                    <textarea
                        id="env-secrets"
                        data-testid="env-secrets"
                        rows="3"
                        autocomplete="off"
                        spellcheck="false"
                        aria-invalid=invalid(m_secret)
                        aria-describedby=described_by("env-secrets")
                        on:input=set(|v, s| v.secret_env = s)
                    >
                        {start.secret_env.clone()}
                    </textarea>
                </Row>
                <div class="form-grid">
                    <Row id="env-working-dir" label=move || t!(i18n, env_form.working_dir) message=m_dir>
                        <input
                            id="env-working-dir"
                            data-testid="env-working-dir"
                            autocomplete="off"
                            value=start.working_dir.clone()
                            aria-invalid=invalid(m_dir)
                            aria-describedby=described_by("env-working-dir")
                            on:input=set(|v, s| v.working_dir = s)
                        />
                    </Row>
                    <Row id="env-workspace-volume" label=move || t!(i18n, env_form.workspace_volume) hint=ViewFn::from(move || t!(i18n, env_form.workspace_volume_hint)) message=m_volume>
                        <input
                            id="env-workspace-volume"
                            data-testid="env-workspace-volume"
                            autocomplete="off"
                            value=start.workspace_volume.clone()
                            aria-invalid=invalid(m_volume)
                            aria-describedby=described_by("env-workspace-volume")
                            on:input=set(|v, s| v.workspace_volume = s)
                        />
                    </Row>
                </div>
            </fieldset>

            <div aria-live="assertive" class="form-error-slot">
                {move || error.get().map(|err| {
                    let code = err.code().to_string();
                    view! {
                        <div class="notice notice-error" role="alert" data-testid="form-error" data-code=code>
                            <p><strong>{t!(i18n, env_form.summary)}</strong></p>
                            <p class="form-error-detail">{move || error_text(i18n.get_locale(), &err)}</p>
                        </div>
                    }
                })}
            </div>
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

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<CatalogImage> {
        vec![CatalogImage {
            reference: "paddock/base:busybox".into(),
            description: "BusyBox".into(),
            cuda: None,
            min_driver: None,
            local: true,
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

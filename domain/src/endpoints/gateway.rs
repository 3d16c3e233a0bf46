//! The gateway in front of every endpoint: `POST /v1/endpoints/{slug}/predict` with an endpoint API key.
//! It checks the key (only its SHA-256 is stored), applies the key's rate limit (a token bucket per key),
//! sends the request to the ready replica with the fewest requests in flight, bounds the wait, and keeps
//! the numbers the endpoint page and `/metrics` show: QPS and latency percentiles over the last minute,
//! errors, rate-limited requests and the forward-pass sizes the replicas reported. A sample of requests
//! (every error, one in ten of the rest) is logged to the database. It also measures each endpoint's load
//! for its scaler (requests in flight, integrated over time, and calls), and holds a call to an endpoint
//! scaled to zero while its scaler starts a replica.

use contracts::ids::{EndpointId, KeyId};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::SqlitePool;
use tokio::sync::RwLock;

use contracts::error::{AppError, ErrorCode};
use contracts::types::EndpointMetrics;

/// How long the gateway waits for a replica's answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The window QPS and percentiles are computed over.
const WINDOW: Duration = Duration::from_secs(60);
/// Latency samples kept per endpoint (the oldest go first).
const MAX_SAMPLES: usize = 20_000;

/// One replica the gateway can send to.
pub struct Backend {
    pub base_url: String,
    /// The replica's bearer token (see `serve-model`'s `PADDOCK_MODEL_TOKEN`).
    pub token: String,
    /// Requests sent and not yet answered: the load-balancing key.
    pub outstanding: AtomicUsize,
}

/// Which version of an endpoint answered a call: the stable one, or a canary beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    Stable,
    Canary,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Stable => "stable",
            Version::Canary => "canary",
        }
    }
}

/// Which version a call asks for: its share of the traffic decides (`Share`), or a tester's
/// `X-Paddock-Canary: always` / `never` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Share,
    Canary,
    Stable,
}

impl Pick {
    /// From the `X-Paddock-Canary` header's value (anything else: the share decides).
    pub fn from_header(value: Option<&str>) -> Pick {
        match value.map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("always") => Pick::Canary,
            Some(v) if v.eq_ignore_ascii_case("never") => Pick::Stable,
            _ => Pick::Share,
        }
    }
}

/// An endpoint's replicas as calls reach them: the stable version's, and a canary's with its share.
#[derive(Default, Clone)]
pub struct Route {
    pub stable: Vec<Arc<Backend>>,
    pub canary: Vec<Arc<Backend>>,
    /// Percent of calls (of those that do not ask) that go to the canary.
    pub canary_percent: u32,
}

impl Route {
    fn is_empty(&self) -> bool {
        self.stable.is_empty() && self.canary.is_empty()
    }

    /// The backends to try for `pick`: the chosen version's, then (unless a tester asked for the
    /// canary) the other's — a call whose replicas cannot be connected to never reached a model, so it
    /// may go on. `forward` takes the least busy of the first version left.
    fn candidates(&self, pick: Pick) -> Vec<(Version, &Arc<Backend>)> {
        let canary = !self.canary.is_empty()
            && match pick {
                Pick::Canary => true,
                Pick::Stable => false,
                Pick::Share => rand::random::<u32>() % 100 < self.canary_percent,
            };
        fn tagged(version: Version, list: &[Arc<Backend>]) -> Vec<(Version, &Arc<Backend>)> {
            list.iter().map(|b| (version, b)).collect()
        }
        let (stable, canary_list) = (
            tagged(Version::Stable, &self.stable),
            tagged(Version::Canary, &self.canary),
        );
        match (canary, pick) {
            (true, Pick::Canary) => canary_list,
            (true, _) => [canary_list, stable].concat(),
            (false, Pick::Stable) => stable,
            (false, _) => [stable, canary_list].concat(),
        }
    }
}

/// A call's outcome — the replica's status and body, or why there was none — and the version that gave
/// it (the last one tried), so that a canary's timeouts count against the canary.
pub struct Answered {
    pub outcome: Result<(u16, bytes::Bytes), AppError>,
    pub version: Version,
}

/// A version's calls in the current canary step.
#[derive(Default)]
struct StepCalls {
    /// (milliseconds, answered without error), oldest first.
    calls: VecDeque<(f64, bool)>,
}

/// What one version did over the current canary step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepFigures {
    pub requests: u64,
    pub errors: u64,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl StepFigures {
    pub fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.errors as f64 / self.requests as f64
        }
    }
}

/// The `p`th percentile of `sorted` (nearest rank).
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// What the gateway knows about one endpoint's traffic.
#[derive(Default)]
struct Stats {
    samples: VecDeque<(Instant, f64)>,
    requests: u64,
    errors: u64,
    rate_limited: u64,
    batch_rows: BTreeMap<u32, u64>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The load on one endpoint, as its scaler reads it.
struct Load {
    /// Requests being answered or waiting for a replica now.
    in_flight: usize,
    /// Requests × seconds in flight since the gateway started: its growth over an interval divided by
    /// the interval is the mean number in flight (Little's law), however short the requests.
    in_flight_seconds: f64,
    at: Instant,
    /// Requests that reached the gateway.
    calls: u64,
    last_call: Option<Instant>,
    /// Since when a call has been waiting for a replica of an endpoint at zero replicas.
    waiting_since: Option<Instant>,
}

impl Load {
    fn new() -> Self {
        Load {
            in_flight: 0,
            in_flight_seconds: 0.0,
            at: Instant::now(),
            calls: 0,
            last_call: None,
            waiting_since: None,
        }
    }

    /// Brings the integral up to now (before `in_flight` changes).
    fn advance(&mut self, now: Instant) {
        self.in_flight_seconds += self.in_flight as f64 * now.duration_since(self.at).as_secs_f64();
        self.at = now;
    }
}

/// What the scaler reads of an endpoint's load: cumulative figures (it keeps the previous reading and
/// divides the growth by the time between two readings), and the instants it decides idleness and
/// cold starts by.
#[derive(Debug, Clone, Copy)]
pub struct LoadReading {
    pub at: Instant,
    pub in_flight_seconds: f64,
    pub calls: u64,
    pub in_flight: usize,
    pub last_call: Option<Instant>,
    pub waiting_since: Option<Instant>,
}

impl LoadReading {
    /// Mean requests in flight and requests per second between `earlier` and this reading.
    pub fn since(&self, earlier: &LoadReading) -> (f64, f64) {
        let span = self.at.duration_since(earlier.at).as_secs_f64();
        if span <= 0.0 {
            return (self.in_flight as f64, 0.0);
        }
        (
            (self.in_flight_seconds - earlier.in_flight_seconds).max(0.0) / span,
            self.calls.saturating_sub(earlier.calls) as f64 / span,
        )
    }
}

/// An endpoint that may be at zero replicas: a call that finds none wakes its scaler and waits.
struct Wakeable {
    wake: Arc<tokio::sync::Notify>,
    wait: Duration,
}

#[derive(Default)]
pub struct Gateway {
    /// slug → ready replicas. Replaced whole on every change, so a request sees one consistent set.
    routes: RwLock<HashMap<String, Arc<Route>>>,
    /// Per endpoint and version: the calls of the current canary step.
    steps: Mutex<HashMap<(EndpointId, Version), StepCalls>>,
    /// Bumped on every route change, for calls waiting on a replica.
    route_changes: RouteChanges,
    /// slug → its load.
    loads: Mutex<HashMap<String, Load>>,
    /// slug → how to wake it, for endpoints whose scaler may stop every replica.
    wakeable: Mutex<HashMap<String, Wakeable>>,
    stats: Mutex<HashMap<EndpointId, Stats>>,
    buckets: Mutex<HashMap<KeyId, Bucket>>,
    sampled: AtomicU64,
    /// Per key: when its `last_used_at` was last written.
    key_writes: Mutex<HashMap<KeyId, Instant>>,
    client: reqwest::Client,
}

/// A call in an endpoint's load until dropped.
struct Counted<'a> {
    gateway: &'a Gateway,
    slug: &'a str,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.gateway.count(self.slug, -1);
    }
}

/// A counter of route changes that calls waiting for a replica watch.
struct RouteChanges(tokio::sync::watch::Sender<u64>);

impl Default for RouteChanges {
    fn default() -> Self {
        RouteChanges(tokio::sync::watch::channel(0).0)
    }
}

/// How stale a key's `last_used_at` may get: one write per key per minute, not one per request.
const KEY_USE_EVERY: Duration = Duration::from_secs(60);

/// A key that may call an endpoint.
pub struct Caller {
    pub key_id: KeyId,
    pub endpoint_id: EndpointId,
    pub rate_limit_per_minute: u32,
}

impl Gateway {
    /// Makes `route` the endpoint's replicas (none: the endpoint answers 503, or wakes).
    pub async fn set_route(&self, slug: &str, route: Route) {
        self.routes
            .write()
            .await
            .insert(slug.to_string(), Arc::new(route));
        self.route_changes.0.send_modify(|n| *n += 1);
    }

    pub async fn remove_route(&self, slug: &str) {
        self.routes.write().await.remove(slug);
        self.set_wakeable(slug, None);
        self.route_changes.0.send_modify(|n| *n += 1);
    }

    /// Lets calls that find `slug` without a replica wake it (`Some`: its scaler's bell and how long a
    /// call waits for a replica), or makes them fail at once (`None`).
    pub fn set_wakeable(&self, slug: &str, wake: Option<(Arc<tokio::sync::Notify>, Duration)>) {
        let mut all = self.wakeable.lock().unwrap_or_else(|p| p.into_inner());
        match wake {
            Some((wake, wait)) => all.insert(slug.to_string(), Wakeable { wake, wait }),
            None => all.remove(slug),
        };
    }

    /// Changes how long calls to `slug` wait for a replica, if they wait at all: a new policy applies
    /// to the next call, not after its scaler's next tick.
    pub fn set_wake_wait(&self, slug: &str, wait: Duration) {
        if let Some(w) = self
            .wakeable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(slug)
        {
            w.wait = wait;
        }
    }

    /// The load on `slug` now.
    pub fn load(&self, slug: &str) -> LoadReading {
        let now = Instant::now();
        let mut loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
        let load = loads.entry(slug.to_string()).or_insert_with(Load::new);
        load.advance(now);
        LoadReading {
            at: now,
            in_flight_seconds: load.in_flight_seconds,
            calls: load.calls,
            in_flight: load.in_flight,
            last_call: load.last_call,
            waiting_since: load.waiting_since,
        }
    }

    /// Counts a call into (`+1`) or out of (`-1`) `slug`'s load.
    fn count(&self, slug: &str, delta: isize) {
        let now = Instant::now();
        let mut loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
        let load = loads.entry(slug.to_string()).or_insert_with(Load::new);
        load.advance(now);
        if delta > 0 {
            load.calls += 1;
            load.last_call = Some(now);
        }
        load.in_flight = load.in_flight.saturating_add_signed(delta);
    }

    fn waiting(&self, slug: &str, since: Option<Instant>) {
        let mut loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
        let load = loads.entry(slug.to_string()).or_insert_with(Load::new);
        load.waiting_since = match since {
            Some(at) => Some(load.waiting_since.map_or(at, |w| w.min(at))),
            None => None,
        };
    }

    /// Forgets when calls started waiting (the scaler has timed the cold start they caused).
    pub fn woken(&self, slug: &str) {
        self.waiting(slug, None);
    }

    /// The current replicas of `slug`; for an endpoint at zero, wakes it and waits (up to its bound)
    /// for the first replica. Empty: none came.
    async fn replicas_or_wake(&self, slug: &str) -> Result<Arc<Route>, AppError> {
        let mut changes = self.route_changes.0.subscribe();
        let current = || async {
            self.routes
                .read()
                .await
                .get(slug)
                .cloned()
                .unwrap_or_default()
        };
        let route = current().await;
        if !route.is_empty() {
            return Ok(route);
        }
        let wake = self
            .wakeable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(slug)
            .map(|w| (w.wake.clone(), w.wait));
        let Some((bell, wait)) = wake else {
            return Ok(route);
        };
        self.waiting(slug, Some(Instant::now()));
        bell.notify_one();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let route = current().await;
            if !route.is_empty() {
                return Ok(route);
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return Err(AppError::unavailable_for(
                    ErrorCode::EndpointWaking,
                    format!(
                        "the endpoint had no replica running and is starting one; it did not answer within {} s, try again",
                        wait.as_secs()
                    ),
                    5,
                ));
            }
        }
    }

    /// The endpoint's current route.
    pub async fn route(&self, slug: &str) -> Route {
        self.routes
            .read()
            .await
            .get(slug)
            .map(|r| r.as_ref().clone())
            .unwrap_or_default()
    }

    /// Every replica calls can reach now, stable and canary.
    pub async fn backends(&self, slug: &str) -> Vec<Arc<Backend>> {
        let route = self.route(slug).await;
        [route.stable, route.canary].concat()
    }

    /// The key behind `secret` if it may call `slug`.
    pub async fn authenticate(
        &self,
        db: &SqlitePool,
        slug: &str,
        secret: &str,
    ) -> Result<Caller, AppError> {
        let hash = crate::tokens::digest(secret);
        let row: Option<(KeyId, EndpointId, i64)> = sqlx::query_as(
            "SELECT k.id, k.endpoint_id, k.rate_limit_per_minute FROM endpoint_keys k JOIN endpoints e ON e.id = k.endpoint_id
             WHERE k.secret_sha256 = ? AND k.revoked_at IS NULL AND e.slug = ?",
        )
        .bind(hash)
        .bind(slug)
        .fetch_optional(db)
        .await?;
        let (key_id, endpoint_id, rate) = row.ok_or_else(|| AppError::KeyRefused {
            code: ErrorCode::KeyRefused,
            message: format!(
                "this key may not call `{slug}`: it is revoked, mistyped, or another endpoint's"
            ),
        })?;
        Ok(Caller {
            key_id,
            endpoint_id,
            rate_limit_per_minute: rate.max(1) as u32,
        })
    }

    /// Whether the key's `last_used_at` should be written now (its first use, then once a minute).
    pub fn key_use_due(&self, key_id: KeyId) -> bool {
        let now = Instant::now();
        let mut writes = self.key_writes.lock().unwrap_or_else(|p| p.into_inner());
        match writes.get(&key_id) {
            Some(at) if now.duration_since(*at) < KEY_USE_EVERY => false,
            _ => {
                writes.insert(key_id, now);
                true
            }
        }
    }

    /// Takes one request from the key's bucket, or says how long to wait.
    pub fn admit(&self, caller: &Caller) -> Result<(), AppError> {
        let rate = f64::from(caller.rate_limit_per_minute);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let bucket = buckets.entry(caller.key_id).or_insert(Bucket {
            tokens: rate,
            at: now,
        });
        bucket.tokens =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate / 60.0).min(rate);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        // Seconds until the bucket holds a whole token again.
        let wait = ((1.0 - bucket.tokens) * 60.0 / rate).ceil().max(1.0) as u64;
        drop(buckets);
        self.record_rate_limited(caller.endpoint_id);
        Err(AppError::TooManyRequests {
            retry_after_secs: wait,
        })
    }

    /// Sends `body` to the least busy replica of `slug` of the version `pick` gets; the replica's status
    /// and body come back as-is. A replica that cannot be connected to (it just crashed, or was stopped a
    /// moment ago) is skipped for the next one: the request never reached a model, so sending it
    /// elsewhere is safe.
    pub async fn forward(&self, slug: &str, body: bytes::Bytes, pick: Pick) -> Answered {
        self.count(slug, 1);
        // Counted out when the call ends, also when its caller goes away mid-way.
        let _counted = Counted {
            gateway: self,
            slug,
        };
        let route = match self.replicas_or_wake(slug).await {
            Ok(route) => route,
            Err(e) => {
                return Answered {
                    outcome: Err(e),
                    version: Version::Stable,
                }
            }
        };
        let mut candidates = route.candidates(pick);
        let none_ready = candidates.is_empty();
        let mut version = candidates.first().map_or(Version::Stable, |(v, _)| *v);
        let answer = |version, outcome| Answered { outcome, version };
        loop {
            // The least busy of the chosen version's replicas not tried yet, else the other version's.
            let first = candidates.first().map(|(v, _)| *v);
            let Some(at) = candidates
                .iter()
                .enumerate()
                .filter(|(_, (v, _))| Some(*v) == first)
                .min_by_key(|(_, (_, b))| b.outstanding.load(Ordering::SeqCst))
                .map(|(i, _)| i)
            else {
                return answer(
                    version,
                    Err(AppError::unavailable(
                        ErrorCode::EndpointUnavailable,
                        if none_ready {
                            "the endpoint has no ready replica right now"
                        } else {
                            "the endpoint's replicas could not be reached"
                        },
                    )),
                );
            };
            let (tried_version, backend) = candidates.remove(at);
            version = tried_version;
            backend.outstanding.fetch_add(1, Ordering::SeqCst);
            let result = self.send(backend, body.clone()).await;
            backend.outstanding.fetch_sub(1, Ordering::SeqCst);
            match result {
                Err(e) if e.is_connect() => continue,
                Err(e) if e.is_timeout() => {
                    return answer(
                        version,
                        Err(AppError::unavailable(
                            ErrorCode::EndpointTimeout,
                            format!(
                                "the model did not answer within {} s",
                                REQUEST_TIMEOUT.as_secs()
                            ),
                        )),
                    )
                }
                Err(_) => {
                    return answer(
                        version,
                        Err(AppError::unavailable(
                            ErrorCode::EndpointUnavailable,
                            "the endpoint's replica broke off the answer",
                        )),
                    )
                }
                Ok(answered) => return answer(version, Ok(answered)),
            }
        }
    }

    async fn send(
        &self,
        backend: &Backend,
        body: bytes::Bytes,
    ) -> Result<(u16, bytes::Bytes), reqwest::Error> {
        let response = self
            .client
            .post(format!("{}/predict", backend.base_url))
            .bearer_auth(&backend.token)
            .header("content-type", "application/json")
            .body(body)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.bytes().await?))
    }

    /// Records a served request; returns whether it belongs to the logged sample.
    pub fn record(
        &self,
        endpoint_id: EndpointId,
        version: Version,
        latency: Duration,
        ok: bool,
        batch_rows: Option<u32>,
    ) -> bool {
        let now = Instant::now();
        let ms = latency.as_secs_f64() * 1000.0;
        {
            let mut steps = self.steps.lock().unwrap_or_else(|p| p.into_inner());
            let step = &mut steps.entry((endpoint_id, version)).or_default().calls;
            step.push_back((ms, ok));
            if step.len() > MAX_SAMPLES {
                step.pop_front();
            }
        }
        {
            let mut all = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            let stats = all.entry(endpoint_id).or_default();
            stats.requests += 1;
            if !ok {
                stats.errors += 1;
            }
            if let Some(rows) = batch_rows {
                *stats.batch_rows.entry(rows).or_insert(0) += 1;
            }
            stats.samples.push_back((now, ms));
            while stats.samples.len() > MAX_SAMPLES
                || stats
                    .samples
                    .front()
                    .is_some_and(|(t, _)| now.duration_since(*t) > WINDOW)
            {
                stats.samples.pop_front();
            }
        }
        metrics::histogram!("paddock_endpoint_request_seconds", "endpoint" => endpoint_id.to_string()).record(latency.as_secs_f64());
        metrics::counter!("paddock_endpoint_requests_total", "endpoint" => endpoint_id.to_string(), "ok" => ok.to_string(), "version" => version.as_str())
            .increment(1);
        if let Some(rows) = batch_rows {
            metrics::histogram!("paddock_endpoint_batch_rows", "endpoint" => endpoint_id.to_string()).record(f64::from(rows));
        }
        !ok || self
            .sampled
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(10)
    }

    fn record_rate_limited(&self, endpoint_id: EndpointId) {
        let mut all = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(endpoint_id).or_default().rate_limited += 1;
        metrics::counter!("paddock_endpoint_rate_limited_total", "endpoint" => endpoint_id.to_string()).increment(1);
    }

    /// Starts a new canary step: both versions' calls are counted afresh.
    pub fn reset_step(&self, endpoint_id: EndpointId) {
        let mut steps = self.steps.lock().unwrap_or_else(|p| p.into_inner());
        for version in [Version::Stable, Version::Canary] {
            steps.remove(&(endpoint_id, version));
        }
    }

    /// What `version` did over the current canary step.
    pub fn step_figures(&self, endpoint_id: EndpointId, version: Version) -> StepFigures {
        let steps = self.steps.lock().unwrap_or_else(|p| p.into_inner());
        let Some(step) = steps.get(&(endpoint_id, version)) else {
            return StepFigures::default();
        };
        let mut sorted: Vec<f64> = step.calls.iter().map(|(ms, _)| *ms).collect();
        sorted.sort_by(f64::total_cmp);
        StepFigures {
            requests: step.calls.len() as u64,
            errors: step.calls.iter().filter(|(_, ok)| !ok).count() as u64,
            p95_ms: percentile(&sorted, 95.0),
            p99_ms: percentile(&sorted, 99.0),
        }
    }

    /// The endpoint's numbers now.
    pub fn metrics(&self, endpoint_id: EndpointId) -> EndpointMetrics {
        let all = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let Some(stats) = all.get(&endpoint_id) else {
            return EndpointMetrics::default();
        };
        let now = Instant::now();
        let recent: Vec<f64> = stats
            .samples
            .iter()
            .filter(|(t, _)| now.duration_since(*t) <= WINDOW)
            .map(|(_, ms)| *ms)
            .collect();
        let span = stats
            .samples
            .iter()
            .find(|(t, _)| now.duration_since(*t) <= WINDOW)
            .map(|(t, _)| now.duration_since(*t).as_secs_f64().max(1.0))
            .unwrap_or(1.0);
        let mut sorted = recent.clone();
        sorted.sort_by(f64::total_cmp);
        let pct = |p: f64| percentile(&sorted, p);
        EndpointMetrics {
            qps: recent.len() as f64 / span,
            p50_ms: pct(50.0),
            p95_ms: pct(95.0),
            p99_ms: pct(99.0),
            requests_total: stats.requests,
            errors_total: stats.errors,
            rate_limited_total: stats.rate_limited,
            batch_rows: stats.batch_rows.iter().map(|(k, v)| (*k, *v)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_rate_and_then_429_with_a_wait() {
        let gateway = Gateway::default();
        let caller = Caller {
            key_id: KeyId::new(1),
            endpoint_id: EndpointId::new(9),
            rate_limit_per_minute: 3,
        };
        for _ in 0..3 {
            gateway.admit(&caller).unwrap();
        }
        match gateway.admit(&caller) {
            Err(AppError::TooManyRequests { retry_after_secs }) => {
                assert!((1..=20).contains(&retry_after_secs))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(gateway.metrics(EndpointId::new(9)).rate_limited_total, 1);
        assert!(
            gateway.key_use_due(KeyId::new(1)),
            "the first use is written"
        );
        assert!(
            !gateway.key_use_due(KeyId::new(1)),
            "then not again within a minute"
        );
        assert!(gateway.key_use_due(KeyId::new(2)));
        // Another key has its own bucket.
        gateway
            .admit(&Caller {
                key_id: KeyId::new(2),
                endpoint_id: EndpointId::new(9),
                rate_limit_per_minute: 3,
            })
            .unwrap();
    }

    #[test]
    fn a_canary_gets_its_share_or_a_testers_call_and_the_other_version_is_the_fallback() {
        let backend = |url: &str| {
            Arc::new(Backend {
                base_url: url.into(),
                token: String::new(),
                outstanding: AtomicUsize::new(0),
            })
        };
        let versions = |route: &Route, pick| -> Vec<Version> {
            route.candidates(pick).into_iter().map(|(v, _)| v).collect()
        };
        let mut route = Route {
            stable: vec![backend("s1"), backend("s2")],
            canary: vec![backend("c1")],
            canary_percent: 0,
        };
        use Version::{Canary, Stable};
        assert_eq!(versions(&route, Pick::Share), [Stable, Stable, Canary]);
        assert_eq!(versions(&route, Pick::Canary), [Canary], "a tester's call");
        assert_eq!(versions(&route, Pick::Stable), [Stable, Stable]);
        route.canary_percent = 100;
        assert_eq!(versions(&route, Pick::Share), [Canary, Stable, Stable]);
        route.canary.clear();
        assert_eq!(
            versions(&route, Pick::Canary),
            [Stable, Stable],
            "no canary: the stable version answers"
        );
        assert_eq!(Pick::from_header(Some(" Always ")), Pick::Canary);
        assert_eq!(Pick::from_header(Some("never")), Pick::Stable);
        assert_eq!(Pick::from_header(Some("yes")), Pick::Share);
    }

    #[test]
    fn load_is_the_time_integral_of_calls_in_flight() {
        let gateway = Gateway::default();
        let before = gateway.load("ep");
        gateway.count("ep", 1);
        gateway.count("ep", 1);
        std::thread::sleep(Duration::from_millis(50));
        gateway.count("ep", -1);
        let after = gateway.load("ep");
        let (in_flight, qps) = after.since(&before);
        // Two calls in flight for most of the span, one for the rest: between one and two on average.
        assert!((1.0..=2.0).contains(&in_flight), "{in_flight}");
        assert!(qps > 0.0);
        assert_eq!((after.calls, after.in_flight), (2, 1));
        assert!(after.last_call.is_some());
    }

    #[test]
    fn percentiles_and_batch_sizes_come_from_what_was_recorded() {
        let gateway = Gateway::default();
        for ms in 1..=100 {
            gateway.record(
                EndpointId::new(5),
                Version::Stable,
                Duration::from_millis(ms),
                ms != 100,
                Some(if ms % 2 == 0 { 4 } else { 1 }),
            );
        }
        let m = gateway.metrics(EndpointId::new(5));
        assert_eq!((m.requests_total, m.errors_total), (100, 1));
        assert_eq!(
            (m.p50_ms.map(f64::round), m.p99_ms.map(f64::round)),
            (Some(50.0), Some(99.0))
        );
        assert_eq!(m.batch_rows.get(&4), Some(&50));
    }
}

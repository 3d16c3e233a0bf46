//! The gateway in front of every endpoint: `POST /v1/endpoints/{slug}/predict` with an endpoint API key.
//! It checks the key (only its SHA-256 is stored), applies the key's rate limit (a token bucket per key),
//! sends the request to the ready replica with the fewest requests in flight, bounds the wait, and keeps
//! the numbers the endpoint page and `/metrics` show: QPS and latency percentiles over the last minute,
//! errors, rate-limited requests and the forward-pass sizes the replicas reported. A sample of requests
//! (every error, one in ten of the rest) is logged to the database.

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

#[derive(Default)]
pub struct Gateway {
    /// slug → ready replicas. Replaced whole on every change, so a request sees one consistent set.
    routes: RwLock<HashMap<String, Arc<Vec<Arc<Backend>>>>>,
    stats: Mutex<HashMap<EndpointId, Stats>>,
    buckets: Mutex<HashMap<KeyId, Bucket>>,
    sampled: AtomicU64,
    /// Per key: when its `last_used_at` was last written.
    key_writes: Mutex<HashMap<KeyId, Instant>>,
    client: reqwest::Client,
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
    /// Makes `backends` the endpoint's replicas (empty: the endpoint answers 503).
    pub async fn set_route(&self, slug: &str, backends: Vec<Arc<Backend>>) {
        self.routes
            .write()
            .await
            .insert(slug.to_string(), Arc::new(backends));
    }

    pub async fn remove_route(&self, slug: &str) {
        self.routes.write().await.remove(slug);
    }

    pub async fn backends(&self, slug: &str) -> Vec<Arc<Backend>> {
        self.routes
            .read()
            .await
            .get(slug)
            .map(|b| b.as_ref().clone())
            .unwrap_or_default()
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

    /// Sends `body` to the least busy replica of `slug`; the replica's status and body come back as-is.
    /// A replica that cannot be connected to (it just crashed, or was stopped a moment ago) is skipped
    /// for the next one: the request never reached a model, so sending it elsewhere is safe.
    pub async fn forward(
        &self,
        slug: &str,
        body: bytes::Bytes,
    ) -> Result<(u16, bytes::Bytes), AppError> {
        let backends = self
            .routes
            .read()
            .await
            .get(slug)
            .cloned()
            .unwrap_or_default();
        let mut tried: Vec<&Arc<Backend>> = Vec::new();
        loop {
            let Some(backend) = backends
                .iter()
                .filter(|b| !tried.iter().any(|t| Arc::ptr_eq(t, b)))
                .min_by_key(|b| b.outstanding.load(Ordering::SeqCst))
            else {
                return Err(AppError::unavailable(
                    ErrorCode::EndpointUnavailable,
                    if tried.is_empty() {
                        "the endpoint has no ready replica right now"
                    } else {
                        "the endpoint's replicas could not be reached"
                    },
                ));
            };
            backend.outstanding.fetch_add(1, Ordering::SeqCst);
            let result = self.send(backend, body.clone()).await;
            backend.outstanding.fetch_sub(1, Ordering::SeqCst);
            match result {
                Err(e) if e.is_connect() => tried.push(backend),
                Err(e) if e.is_timeout() => {
                    return Err(AppError::unavailable(
                        ErrorCode::EndpointTimeout,
                        format!(
                            "the model did not answer within {} s",
                            REQUEST_TIMEOUT.as_secs()
                        ),
                    ))
                }
                Err(_) => {
                    return Err(AppError::unavailable(
                        ErrorCode::EndpointUnavailable,
                        "the endpoint's replica broke off the answer",
                    ))
                }
                Ok(answer) => return Ok(answer),
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
        latency: Duration,
        ok: bool,
        batch_rows: Option<u32>,
    ) -> bool {
        let now = Instant::now();
        let ms = latency.as_secs_f64() * 1000.0;
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
        metrics::counter!("paddock_endpoint_requests_total", "endpoint" => endpoint_id.to_string(), "ok" => ok.to_string())
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
        let pct = |p: f64| -> Option<f64> {
            if sorted.is_empty() {
                return None;
            }
            let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
            Some(sorted[rank.clamp(1, sorted.len()) - 1])
        };
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
    fn percentiles_and_batch_sizes_come_from_what_was_recorded() {
        let gateway = Gateway::default();
        for ms in 1..=100 {
            gateway.record(
                EndpointId::new(5),
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

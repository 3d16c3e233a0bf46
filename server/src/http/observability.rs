//! Operational endpoints and request metrics: `/healthz` (the database answers), `/metrics`
//! (Prometheus text: request counts and latency by method, route and status, plus gauges of users,
//! workspaces and members read from the database at scrape time). `/metrics` tells how busy the
//! instance is and which routes exist, so only admins and the configured metrics token may read it.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use contracts::error::AppError;
use domain::AppState;

/// Latency buckets in seconds: from a cached page (~1 ms) to a slow password hash or upload (~10 s).
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide Prometheus recorder (once; later calls reuse it).
pub fn install_recorder() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("http_request_duration_seconds".into()),
                LATENCY_BUCKETS,
            )
            .expect("latency buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!(
                "a metrics recorder was already installed; /metrics will only show this one's data"
            );
        }
        handle
    })
}

/// Counts and times every request. The route label is the matched route pattern (`/api/v1/workspaces/{id}`),
/// never the raw path, so ids do not multiply the series.
pub async fn track(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().as_str().to_owned();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| {
            if req.uri().path().starts_with("/pkg/") {
                "/pkg/*".into()
            } else {
                "unmatched".into()
            }
        });
    let res = next.run(req).await;
    let labels = [
        ("method", method),
        ("route", route),
        ("status", res.status().as_u16().to_string()),
    ];
    metrics::counter!("http_requests_total", &labels[..]).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels[..])
        .record(start.elapsed().as_secs_f64());
    res
}

/// An admin's session or token, or `Authorization: Bearer <--metrics-token>`.
async fn may_read_metrics(state: &AppState, parts: &Parts) -> Result<(), AppError> {
    if let (Some(expected), Ok(Some(given))) = (
        &state.security.metrics_token,
        domain::auth::bearer_token(parts),
    ) {
        // Compared as digests so the time taken says nothing about how much of the token matched.
        if domain::tokens::digest(given) == domain::tokens::digest(expected) {
            return Ok(());
        }
    }
    if domain::auth::require(state, parts).await?.is_admin {
        Ok(())
    } else {
        Err(AppError::Forbidden)
    }
}

pub async fn metrics_endpoint(State(state): State<AppState>, parts: Parts) -> Response {
    if let Err(e) = may_read_metrics(&state, &parts).await {
        return e.into_response();
    }
    let handle = install_recorder();
    let counts: Result<(i64, i64, i64, i64), sqlx::Error> = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM users WHERE disabled = 0),
                (SELECT COUNT(*) FROM workspaces WHERE deleting_since IS NULL), (SELECT COUNT(*) FROM members)",
    )
    .fetch_one(&state.db)
    .await;
    match counts {
        Ok((users, active, workspaces, members)) => {
            metrics::gauge!("paddock_users").set(users as f64);
            metrics::gauge!("paddock_users_active").set(active as f64);
            metrics::gauge!("paddock_workspaces").set(workspaces as f64);
            metrics::gauge!("paddock_workspace_members").set(members as f64);
        }
        Err(e) => tracing::error!(error = %e, "reading gauges for /metrics"),
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    )
        .into_response()
}

pub async fn healthz(State(state): State<AppState>) -> Response {
    match sqlx::query_scalar::<_, i64>("SELECT 1")
        .fetch_one(&state.db)
        .await
    {
        Ok(_) => axum::Json(serde_json::json!({ "status": "ok" })).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "health check: database unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({ "status": "database unavailable" })),
            )
                .into_response()
        }
    }
}

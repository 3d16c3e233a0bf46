//! Security headers on every response. Pages get a Content-Security-Policy whose script sources are
//! this server and the per-response nonce Leptos puts on its own inline scripts (the hydration
//! bootstrap and serialized resources), set by [`crate::shell`]; everything else (JSON, files,
//! errors) gets a policy that allows nothing, since none of it is meant to run in a browser.
//! Inline `style` attributes stay allowed: the UI and the vendored xterm.js/uPlot use them, and a
//! style cannot run code.

use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, STRICT_TRANSPORT_SECURITY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use domain::AppState;

/// The policy of anything that is not a page.
const NOTHING_RUNS: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The policy of a dashboard page rendered with `nonce`.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; \
         connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}

pub async fn secure(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let headers = res.headers_mut();
    let fixed = [
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (X_FRAME_OPTIONS, "DENY"),
        // Same-origin navigations keep the Referer the CSRF check may use; other sites get none.
        (REFERRER_POLICY, "same-origin"),
        (CONTENT_SECURITY_POLICY, NOTHING_RUNS),
    ];
    for (name, value) in fixed {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
    // Only where users reach the server over HTTPS (a browser ignores it over plain HTTP).
    if state.security.secure_cookies {
        headers
            .entry(STRICT_TRANSPORT_SECURITY)
            .or_insert(HeaderValue::from_static("max-age=31536000"));
    }
    res
}

/// The bundle (`/pkg`) keeps its file names from one version to the next (Leptos loads
/// `/pkg/paddock.wasm`), so a browser may keep a copy only if it asks again before each use: the
/// answer is a 304 without a body until the server is upgraded.
pub async fn revalidate(mut res: Response) -> Response {
    res.headers_mut()
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-cache"));
    res
}

//! Protection against requests a browser makes on another site's behalf, applied to every route
//! (REST and server functions).
//!
//! **Host allow-list** ([`check_host`]): DNS rebinding points a name the attacker owns at the
//! server's address, so the victim's browser talks to Paddock as a "same-origin" page of that name —
//! on a fresh localhost install it could even claim the first (admin) account. The browser still
//! sends the attacker's name as `Host`, so a request whose `Host` is not one the server is known by
//! (localhost, the bind address, `--public-url`, `--allowed-host`, or any IP address when listening
//! on all of them: an address cannot be rebound) is refused before anything else runs.
//!
//! **CSRF** for cookie-authenticated mutations. Like Go's `http.CrossOriginProtection`: a state-changing request is refused when the
//! browser says it comes from another site — `Sec-Fetch-Site` other than `same-origin`/`none`, or an
//! `Origin` (else `Referer`) whose host differs from `Host` and from the configured allowed origins.
//! Requests with none of these headers come from non-browser clients and pass; requests carrying
//! `Authorization: Bearer` cannot be forged by a browser and are exempt. SameSite=Lax cookies are the
//! second line of defence.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use contracts::error::{AppError, ErrorCode};
use domain::{AppState, SecurityConfig};

pub async fn protect(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    if let Some(host) = host {
        if !check_host(&host, &state.security) {
            tracing::warn!(%host, path = req.uri().path(), "request for a foreign Host refused");
            return AppError::denied(
                ErrorCode::HostNotAllowed,
                format!(
                    "this server does not answer to the host {host:?}; start it with \
                     --public-url or --allowed-host to add a name"
                ),
            )
            .into_response();
        }
    }
    if needs_check(req.method(), req.headers()) {
        if let Err(why) = check(req.headers(), &state.security.allowed_origins) {
            tracing::warn!(method = %req.method(), path = req.uri().path(), why, "cross-site request refused");
            return AppError::denied(
                ErrorCode::CsrfRejected,
                format!("cross-site request refused: {why}"),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// Whether `host` (a `Host` header value: name or address, optional port) is one the server is
/// known by. Without a `Host` at all (HTTP/1.0 tools) there is nothing a browser could have forged.
pub fn check_host(host: &str, security: &SecurityConfig) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or("")
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host.as_str(),
        }
    };
    let name = name.trim_end_matches('.');
    if security.allowed_hosts.iter().any(|h| h == name) {
        return true;
    }
    security.any_ip_host
        && name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok()
}

fn needs_check(method: &Method, headers: &HeaderMap) -> bool {
    let safe = matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    );
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer "));
    !safe && !bearer
}

/// `Err` with the reason when the request is cross-site.
pub fn check(headers: &HeaderMap, allowed_origins: &[String]) -> Result<(), &'static str> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site") {
        return match site {
            "same-origin" | "none" => Ok(()),
            _ => Err("Sec-Fetch-Site is not same-origin"),
        };
    }
    let Some(source) = get("origin")
        .filter(|o| *o != "null")
        .or_else(|| get("referer"))
    else {
        // `Origin: null` (sandboxed or privacy-sensitive contexts) with no Referer is refused:
        // a browser sent it, and we cannot tell where from.
        return if get("origin").is_some() {
            Err("Origin is null")
        } else {
            Ok(())
        };
    };
    let Some(host) = get("host") else {
        return Err("no Host header");
    };
    let (scheme, rest) = source.split_once("://").ok_or("malformed Origin/Referer")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.eq_ignore_ascii_case(host) {
        return Ok(());
    }
    let origin = format!("{scheme}://{authority}");
    if allowed_origins
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin))
    {
        return Ok(());
    }
    Err("Origin does not match Host")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn same_origin_passes_and_foreign_origin_fails() {
        let none: &[String] = &[];
        assert!(check(
            &headers(&[
                ("host", "127.0.0.1:3000"),
                ("origin", "http://127.0.0.1:3000")
            ]),
            none
        )
        .is_ok());
        assert!(check(
            &headers(&[
                ("host", "127.0.0.1:3000"),
                ("origin", "http://evil.example")
            ]),
            none
        )
        .is_err());
        assert!(check(
            &headers(&[("host", "a:1"), ("referer", "http://a:1/signin?x=1")]),
            none
        )
        .is_ok());
        assert!(check(
            &headers(&[("host", "a:1"), ("referer", "http://b:1/")]),
            none
        )
        .is_err());
        assert!(check(
            &headers(&[("host", "a:1"), ("sec-fetch-site", "cross-site")]),
            none
        )
        .is_err());
        assert!(check(
            &headers(&[("host", "a:1"), ("sec-fetch-site", "same-origin")]),
            none
        )
        .is_ok());
        assert!(check(&headers(&[("host", "a:1"), ("origin", "null")]), none).is_err());
        assert!(
            check(&headers(&[("host", "a:1")]), none).is_ok(),
            "non-browser client"
        );
        let allowed = vec!["https://paddock.example.com".to_string()];
        assert!(check(
            &headers(&[
                ("host", "10.0.0.5:3000"),
                ("origin", "https://paddock.example.com")
            ]),
            &allowed
        )
        .is_ok());
    }

    #[test]
    fn only_known_hosts_are_answered() {
        let mut security = SecurityConfig {
            allowed_hosts: vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "[::1]".into(),
                "paddock.example.com".into(),
            ],
            ..SecurityConfig::default()
        };
        for ok in [
            "localhost:3000",
            "127.0.0.1:3000",
            "[::1]:3000",
            "PADDOCK.example.com",
            "paddock.example.com.:443",
        ] {
            assert!(check_host(ok, &security), "{ok}");
        }
        for foreign in [
            "evil.example",
            "evil.example:3000",
            "10.0.0.5:3000",
            "[::2]:1",
            "",
        ] {
            assert!(!check_host(foreign, &security), "{foreign}");
        }
        security.any_ip_host = true;
        assert!(check_host("10.0.0.5:3000", &security));
        assert!(check_host("[fe80::1]:3000", &security));
        assert!(!check_host("evil.example:3000", &security));
        assert!(!check_host("10.0.0.5.nip.io", &security));
    }

    #[test]
    fn bearer_requests_and_reads_are_exempt() {
        assert!(!needs_check(&Method::GET, &HeaderMap::new()));
        assert!(!needs_check(
            &Method::POST,
            &headers(&[("authorization", "Bearer pdk_x")])
        ));
        assert!(needs_check(&Method::POST, &HeaderMap::new()));
        assert!(needs_check(
            &Method::DELETE,
            &headers(&[("authorization", "Basic eA==")])
        ));
    }
}

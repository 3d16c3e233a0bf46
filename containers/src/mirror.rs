//! A registry mirror for Docker Hub: where a machine that cannot reach Docker Hub (most of the servers
//! Paddock's users run, behind the Great Firewall or with no internet at all) gets `debian:bookworm-slim`
//! or `pytorch/pytorch:…` from instead — a company registry, a cloud vendor's mirror, a `registry:2` on
//! the LAN. Paddock rewrites the reference itself (`debian:bookworm-slim` is pulled as
//! `mirror.example.cn/library/debian:bookworm-slim` and tagged back under its own name) rather than asking
//! for the daemon's `registry-mirrors`, which needs root on the host and a daemon restart, and which
//! Docker applies to Docker Hub only when the mirror speaks for all of it. References that name another
//! registry (`nvcr.io/…`, `localhost:5000/…`) are pulled as they are.

use std::fmt;

/// `host[:port][/path]`, without a scheme: Docker decides between HTTPS and HTTP itself (HTTP only for
/// loopback addresses and the daemon's `insecure-registries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror(String);

impl Mirror {
    /// Reads a mirror as an admin types it; a trailing `/` and a scheme (`https://`) are tolerated and
    /// dropped, anything else that is not a registry address is refused with the reason.
    pub fn parse(text: &str) -> Result<Mirror, String> {
        let text = text.trim();
        let bare = text
            .strip_prefix("https://")
            .or_else(|| text.strip_prefix("http://"))
            .unwrap_or(text)
            .trim_end_matches('/');
        let not_an_address = || {
            format!(
                "`{text}` is not a registry address: give a host name or address, e.g. registry.example.cn or 10.0.0.5:5000"
            )
        };
        if bare.contains("://") {
            return Err(not_an_address());
        }
        let (host, path) = bare.split_once('/').unwrap_or((bare, ""));
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(not_an_address());
        }
        if let Some(port) = port {
            if port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(format!("`{port}` is not a port (1–65535)"));
            }
        }
        let path_ok = |c: &str| {
            !c.is_empty()
                && c.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
        };
        if !path.is_empty() && !path.split('/').all(path_ok) {
            return Err(format!(
                "`{path}` is not a repository path: lowercase letters, digits, `.`, `_`, `-` and `/`"
            ));
        }
        Ok(Mirror(bare.to_ascii_lowercase()))
    }

    /// `reference` as this mirror serves it, when it is a Docker Hub image (`debian:bookworm-slim` →
    /// `<mirror>/library/debian:bookworm-slim`); `None` for an image of another registry, which is
    /// pulled from there.
    pub fn rewrite(&self, reference: &str) -> Option<String> {
        let (first, rest) = match reference.split_once('/') {
            Some((first, rest)) => (first, Some(rest)),
            None => (reference, None),
        };
        // Docker's own rule: a first component with a `.` or a `:`, or `localhost`, names a registry.
        let names_registry = first.contains(['.', ':']) || first == "localhost";
        match rest {
            Some(_) if names_registry => None,
            Some(_) => Some(format!("{}/{reference}", self.0)),
            None => Some(format!("{}/library/{reference}", self.0)),
        }
    }
}

impl Mirror {
    /// `host[:port]`: where the registry's API (`/v2/`) answers.
    pub fn host(&self) -> &str {
        self.0.split_once('/').map_or(&self.0, |(host, _)| host)
    }
}

impl fmt::Display for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_references_go_to_the_mirror_and_others_stay() {
        let m = Mirror::parse("https://Mirror.example.cn:5000/hub/").unwrap();
        assert_eq!(m.to_string(), "mirror.example.cn:5000/hub");
        assert_eq!(
            m.rewrite("debian:bookworm-slim").as_deref(),
            Some("mirror.example.cn:5000/hub/library/debian:bookworm-slim")
        );
        assert_eq!(
            m.rewrite("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime")
                .as_deref(),
            Some("mirror.example.cn:5000/hub/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime")
        );
        assert_eq!(
            m.rewrite("busybox@sha256:00").as_deref(),
            Some("mirror.example.cn:5000/hub/library/busybox@sha256:00")
        );
        for elsewhere in [
            "nvcr.io/nvidia/pytorch:24.01-py3",
            "localhost/x:1",
            "10.0.0.5:5000/x",
        ] {
            assert_eq!(m.rewrite(elsewhere), None, "{elsewhere}");
        }
    }

    #[test]
    fn what_is_not_a_registry_address_is_refused_with_why() {
        for good in [
            "registry.example.cn",
            "10.0.0.5:5000",
            "localhost:5000/mirror",
        ] {
            assert!(Mirror::parse(good).is_ok(), "{good}");
        }
        for (bad, says) in [
            ("", "not a registry address"),
            ("ftp://x y", "not a registry address"),
            ("mirror.cn:99999", "not a port"),
            ("mirror.cn:0", "not a port"),
            ("-mirror.cn", "not a registry address"),
            ("mirror.cn/Hub", "not a repository path"),
            ("mirror.cn/a//b", "not a repository path"),
        ] {
            let err = Mirror::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

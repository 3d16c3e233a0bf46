//! Label keys and deterministic names. Labels are how Paddock recognises its own Docker objects after a
//! restart (reconcile) and how tests find what to clean up; names are derived, never random, so that every
//! operation can inspect-then-create and be retried safely.

/// Every container and volume Paddock creates carries `paddock.managed=true`; reconcile lists by it.
pub const MANAGED: &str = "paddock.managed";
/// The workspace (slug or id) a container or volume belongs to.
pub const WORKSPACE: &str = "paddock.workspace";
/// The environment (id/version) a container runs.
pub const ENVIRONMENT: &str = "paddock.environment";
/// Which Paddock installation (or test run) owns the object; lets two servers, or parallel tests, share a
/// daemon without adopting each other's containers.
pub const INSTANCE: &str = "paddock.instance";
/// On images: the hash of everything that went into the build (see `build::BuildKey`); the build cache key.
pub const BUILD_HASH: &str = "paddock.build-hash";
/// On images: `base` or `env`.
pub const IMAGE_KIND: &str = "paddock.image-kind";

/// Deterministic container name `paddock-<prefix>-<parts…>`, with anything outside Docker's name alphabet
/// replaced by `-`. The prefix is the instance (or test run); parts identify the object (e.g. `env`, id).
pub fn container_name(prefix: &str, parts: &[&str]) -> String {
    let mut name = format!("paddock-{}", sanitize(prefix));
    for part in parts {
        name.push('-');
        name.push_str(&sanitize(part));
    }
    name
}

/// Deterministic Docker volume name for a workspace volume (`paddock-<prefix>-ws-<volume>`).
pub fn volume_name(prefix: &str, workspace_volume: &str) -> String {
    container_name(prefix, &["ws", workspace_volume])
}

/// Deterministic Docker network name for a workspace (`paddock-<prefix>-net-<workspace>`).
pub fn network_name(prefix: &str, workspace: &str) -> String {
    container_name(prefix, &["net", workspace])
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_deterministic_and_docker_safe() {
        assert_eq!(
            container_name("main", &["env", "42", "v3"]),
            "paddock-main-env-42-v3"
        );
        assert_eq!(container_name("a b", &["x/y"]), "paddock-a-b-x-y");
        assert_eq!(
            volume_name("main", "team-data"),
            "paddock-main-ws-team-data"
        );
    }
}

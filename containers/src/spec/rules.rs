//! The syntax rules for individual spec fields. Each returns a message fit for the user (without the field
//! name, which the caller adds). They are strict on purpose: anything that reaches a Dockerfile, a container
//! name or a volume path must not be able to inject shell, Dockerfile syntax or path traversal.

/// Environment names: a letter or digit, then letters, digits, spaces, `_`, `.`, `-`; at most 64 characters.
/// Letters and digits of any script (a team names its environment `中文分类`): the name is a label
/// people read, never part of a container name, a path or a Dockerfile. No shell metacharacters,
/// quotes, slashes or control characters.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if name.chars().count() > 64 {
        return Err("must be at most 64 characters".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, ' ' | '_' | '.' | '-')))
    {
        return Err(format!(
            "may contain only letters, digits, spaces, '_', '.' and '-' (found {bad:?}); shell metacharacters are not allowed"
        ));
    }
    if !name.starts_with(char::is_alphanumeric) {
        return Err("must start with a letter or digit".into());
    }
    Ok(())
}

/// Docker image references: `[host[:port]/]path[:tag][@sha256:…]`, or a bare image ID `sha256:<64 hex>`.
pub fn check_image_ref(reference: &str) -> Result<(), String> {
    let r = reference;
    if r.is_empty() {
        return Err("must not be empty".into());
    }
    if r.len() > 255 {
        return Err("must be at most 255 characters".into());
    }
    if let Some(hex) = r.strip_prefix("sha256:") {
        return if is_sha256_hex(hex) {
            Ok(())
        } else {
            Err("an image ID must be sha256: followed by 64 hex digits".into())
        };
    }
    let (rest, digest) = match r.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (r, None),
    };
    if let Some(d) = digest {
        if !d.strip_prefix("sha256:").is_some_and(is_sha256_hex) {
            return Err(format!(
                "digest {d:?} must be sha256: followed by 64 hex digits"
            ));
        }
    }
    // A tag is after the last ':' that comes after the last '/' (a ':' before it is a registry port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return Err(format!(
                "tag {tag:?} may contain only letters, digits, '_', '.' and '-'"
            ));
        }
    }
    let mut components: Vec<&str> = name.split('/').collect();
    let first = components[0];
    if components.len() > 1 && (first.contains('.') || first.contains(':') || first == "localhost")
    {
        let (host, port) = match first.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (first, None),
        };
        let host_ok = !host.is_empty()
            && host.split('.').all(|part| {
                !part.is_empty()
                    && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        let port_ok = port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()));
        if !host_ok || !port_ok {
            return Err(format!("registry {first:?} is not a valid host[:port]"));
        }
        components.remove(0);
    }
    for component in components {
        if !is_path_component(component) {
            return Err(format!(
                "{component:?} is not a valid image name part (lowercase letters and digits, separated by '.', '_', '__' or '-')"
            ));
        }
    }
    Ok(())
}

fn is_path_component(c: &str) -> bool {
    if c.is_empty() || !c.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return false;
    }
    if !c.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return false;
    }
    let bytes = c.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_lowercase() || b.is_ascii_digit() {
            i += 1;
            continue;
        }
        // A separator run: '.', '_', '__', or any number of '-'.
        let start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_lowercase() || bytes[i].is_ascii_digit()) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.chars().all(|ch| ch == '-');
        if !ok {
            return false;
        }
    }
    true
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// Debian package names (Debian policy 5.6.1: lowercase letters, digits, `+`, `-`, `.`, at least two
/// characters, starting alphanumeric), optionally pinned as `name=version`.
pub fn check_package(package: &str) -> Result<(), String> {
    let (name, version) = match package.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (package, None),
    };
    let name_ok = name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'));
    if !name_ok {
        return Err(format!(
            "{package:?} is not a Debian package name (lowercase letters, digits, '+', '-', '.'; at least 2 characters)"
        ));
    }
    if let Some(v) = version {
        let ok = !v.is_empty()
            && v.starts_with(|c: char| c.is_ascii_digit())
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '~' | '-' | ':'));
        if !ok {
            return Err(format!("{package:?} has an invalid version pin"));
        }
    }
    Ok(())
}

/// Environment variable names: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn check_env_name(name: &str) -> Result<(), String> {
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "{name:?} is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"
        ));
    }
    if reserved_env(name) {
        return Err(format!(
            "{name} is set by Paddock (which GPUs the container sees); choose another name"
        ));
    }
    Ok(())
}

/// Variables that decide which GPUs a container sees: Paddock sets them, and a team's variables may not
/// (`NVIDIA_VISIBLE_DEVICES=all` would reach every GPU of the host).
pub fn reserved_env(name: &str) -> bool {
    name.starts_with("NVIDIA_") || matches!(name, "CUDA_VISIBLE_DEVICES" | "CUDA_DEVICE_ORDER")
}

/// Environment variable values: anything printable on one line. NUL cannot be passed to a process, and a
/// newline would end the generated Dockerfile's ENV instruction.
pub fn check_env_value(value: &str) -> Result<(), String> {
    if value.contains('\0') {
        return Err("must not contain NUL".into());
    }
    if value.contains(['\n', '\r']) {
        return Err("must be a single line".into());
    }
    Ok(())
}

/// Absolute container paths made of plain segments: no `..`, no `.`, no empty segments beyond the root,
/// and only `[A-Za-z0-9_.-]` in segments (the path is written into a Dockerfile).
pub fn check_abs_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("{path:?} must be an absolute path"));
    }
    if path.len() > 255 {
        return Err("must be at most 255 characters".into());
    }
    let trimmed = path.trim_end_matches('/');
    for segment in trimmed.split('/').skip(1) {
        if segment == ".." || segment == "." {
            return Err(format!("{path:?} must not contain '.' or '..' segments"));
        }
        if segment.is_empty() {
            return Err(format!("{path:?} must not contain empty segments"));
        }
        if !segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(format!(
                "{path:?} may contain only letters, digits, '_', '.', '-' and '/'"
            ));
        }
    }
    Ok(())
}

/// Workspace volume names: `[a-z0-9][a-z0-9_.-]*`, at most 64 characters, no `..`.
pub fn check_volume(name: &str) -> Result<(), String> {
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
    if !ok {
        return Err(format!(
            "{name:?} must match [a-z0-9][a-z0-9_.-]* (no '/', no uppercase)"
        ));
    }
    if name.len() > 64 {
        return Err("must be at most 64 characters".into());
    }
    if name.contains("..") {
        return Err(format!("{name:?} must not contain '..' (path traversal)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_reject_shell_metacharacters() {
        assert!(check_name("My env 2.0_x-y").is_ok());
        assert!(check_name("中文分类 环境-2").is_ok());
        assert!(check_name("终端").is_ok());
        for bad in [
            "a;rm -rf /",
            "$(id)",
            "a|b",
            "`x`",
            "a&b",
            "a>b",
            "a\"b",
            "a'b",
            "a/b",
            "",
            "  ",
            "-x",
            "a\nb",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn image_references() {
        for ok in [
            "debian:bookworm-slim",
            "paddock/base:busybox",
            "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
            "localhost:5000/team/img:v1",
            "registry.example.com/a/b__c/d-e:latest",
            "ubuntu@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(check_image_ref(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "Debian",
            "debian:",
            "debian:bad tag",
            "a//b",
            "-x",
            "x;rm",
            "host:99999999/x",
            "a@sha256:12",
            "sha256:xyz",
        ] {
            assert!(check_image_ref(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn packages() {
        for ok in [
            "curl",
            "python3.11",
            "libstdc++6",
            "g++",
            "curl=7.88.1-10+deb12u5",
            "tzdata=2024a-0+deb12u1",
        ] {
            assert_eq!(check_package(ok), Ok(()), "{ok}");
        }
        for bad in [
            "c",
            "Curl",
            "curl;rm",
            "-curl",
            "curl=",
            "curl=abc",
            "a b",
            "curl=1.0 && x",
        ] {
            assert!(check_package(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn env_vars() {
        assert!(check_env_name("HF_HOME").is_ok());
        assert!(check_env_name("_x1").is_ok());
        for bad in ["1X", "A-B", "", "A B", "A=B"] {
            assert!(check_env_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_env_value("any $thing \"quoted\"").is_ok());
        assert!(check_env_value("a\0b").is_err());
        assert!(check_env_value("a\nb").is_err());
    }

    #[test]
    fn paths() {
        assert!(check_abs_path("/workspace").is_ok());
        assert!(check_abs_path("/workspace/project-1/").is_ok());
        assert!(check_abs_path("/").is_ok());
        for bad in [
            "workspace",
            "/a/../etc",
            "/a/./b",
            "/a//b",
            "/a b",
            "/a;b",
            "../x",
        ] {
            assert!(check_abs_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn volumes() {
        assert!(check_volume("team-data").is_ok());
        assert!(check_volume("ws1.v2_x").is_ok());
        for bad in [
            "../etc",
            "a/../../b",
            "a..b",
            "/abs",
            "Upper",
            "-x",
            "",
            ".hidden",
            "a/b",
        ] {
            assert!(check_volume(bad).is_err(), "{bad:?}");
        }
    }
}

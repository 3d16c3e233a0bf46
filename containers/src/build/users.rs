//! The non-root user. Environments run as `paddock` (uid/gid 1000). Instead of `useradd` (absent on
//! scratch/busybox bases) Paddock reads the base image's `/etc/passwd` and `/etc/group`, merges the user in,
//! and writes the result into the build context — so the same code works on every base, and the files are a
//! pure function of the base image (deterministic). Any existing uid/gid 1000 entry (Ubuntu 24.04 ships a
//! user `ubuntu` with uid 1000) is replaced so `id -un` says `paddock`.

/// The user every environment runs as; Docker's `User` is set to these numbers, not the name, so nothing
/// depends on name resolution.
pub const UID: u32 = 1000;
pub const GID: u32 = 1000;
pub const USER: &str = "paddock";
pub const HOME: &str = "/home/paddock";

const ROOT_PASSWD: &str = "root:x:0:0:root:/root:/bin/sh";
const ROOT_GROUP: &str = "root:x:0:";

/// The base's passwd (None when it has none) with `paddock` merged in.
pub fn merge_passwd(base: Option<&str>) -> String {
    merge(
        base,
        ROOT_PASSWD,
        &format!("{USER}:x:{UID}:{GID}:Paddock:{HOME}:/bin/sh"),
        2,
        UID,
    )
}

/// The base's group file (None when it has none) with group `paddock` merged in.
pub fn merge_group(base: Option<&str>) -> String {
    merge(base, ROOT_GROUP, &format!("{USER}:x:{GID}:"), 2, GID)
}

/// Keeps every line of `base` except those naming `paddock` or using `id` in field `id_field`; adds a root
/// line when the base has none; appends `entry`.
fn merge(base: Option<&str>, root: &str, entry: &str, id_field: usize, id: u32) -> String {
    let mut lines: Vec<&str> = base
        .unwrap_or("")
        .lines()
        .filter(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            let is_ours = fields.first() == Some(&USER)
                || fields.get(id_field) == Some(&id.to_string().as_str());
            !line.trim().is_empty() && !is_ours
        })
        .collect();
    if !lines.iter().any(|l| l.starts_with("root:")) {
        lines.insert(0, root);
    }
    lines.push(entry);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_base_gets_root_and_paddock() {
        assert_eq!(
            merge_passwd(None),
            "root:x:0:0:root:/root:/bin/sh\npaddock:x:1000:1000:Paddock:/home/paddock:/bin/sh\n"
        );
        assert_eq!(merge_group(None), "root:x:0:\npaddock:x:1000:\n");
    }

    #[test]
    fn existing_uid_1000_is_replaced_and_others_kept() {
        let ubuntu = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n";
        assert_eq!(
            merge_passwd(Some(ubuntu)),
            "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\npaddock:x:1000:1000:Paddock:/home/paddock:/bin/sh\n"
        );
        let group = "root:x:0:\nubuntu:x:1000:\nusers:x:100:ubuntu\n";
        assert_eq!(
            merge_group(Some(group)),
            "root:x:0:\nusers:x:100:ubuntu\npaddock:x:1000:\n"
        );
    }

    #[test]
    fn merging_twice_is_stable() {
        let once = merge_passwd(Some("root:x:0:0:root:/root:/bin/sh\n"));
        assert_eq!(merge_passwd(Some(&once)), once);
    }
}

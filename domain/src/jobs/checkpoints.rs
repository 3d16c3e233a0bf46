//! Registering a checkpoint a run wrote: the trainer's `checkpoint` event names a folder in the run's
//! output, which a container job (or anyone with a shell in the workspace volume) can change or replace
//! at any time. So the path is only believed inside the job's own run folder, and the folder is copied —
//! regular files only, bounded, through no link — into the workspace's store, where no container can
//! write. Hash and size are the server's own, of the copy. Downloads, evaluations, deployments and
//! fine-tuning read that copy; the run's folder is only watched for the trainer's best-k retention.

use contracts::ids::JobId;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// The most entries a checkpoint folder may hold (a Hugging Face checkpoint has a handful).
pub const MAX_ENTRIES: usize = 10_000;
/// The most a checkpoint folder may weigh; an ERNIE 3.0 base checkpoint with its optimizer state is
/// about 1.3 GB.
pub const MAX_BYTES: u64 = 32 << 30;
/// The file whose sha256 identifies a checkpoint (as in the trainer's events).
const WEIGHTS: &str = "model.safetensors";

/// Job `job_id`'s checkpoints in the store: `checkpoints/<job>`.
pub fn store_rel(job_id: JobId) -> PathBuf {
    Path::new("checkpoints").join(job_id.to_string())
}

/// The checkpoint folder a `checkpoint` event reports, relative to the run root, whether the trainer
/// wrote it relative to its run folder or absolute under one of `roots` (the run root on the host, and
/// `/workspace` in a container). It must be a folder inside the job's own run folder (`jobs/<id>/…`,
/// plain names only); anything else is refused with the reason, never stored.
pub fn reported_rel(reported: &str, job_id: JobId, roots: &[&Path]) -> Result<PathBuf, String> {
    let path = Path::new(reported);
    let rel = match roots.iter().find_map(|root| path.strip_prefix(root).ok()) {
        Some(rest) => rest.to_path_buf(),
        None if path.is_relative() => super::job_rel(job_id).join(path),
        None => return Err(format!("`{reported}` is outside the job's run folder")),
    };
    let names: Option<Vec<&str>> = rel
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    match names {
        Some(names) if names.len() > 2 && names[0] == "jobs" && names[1] == job_id.to_string() => {
            Ok(names.iter().collect())
        }
        _ => Err(format!(
            "`{reported}` is not a folder inside the job's run folder"
        )),
    }
}

/// A checkpoint copied into the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    /// Relative to the store.
    pub path: String,
    pub bytes: u64,
    /// Hex sha256 of `model.safetensors`.
    pub sha256: String,
}

/// Copies the checkpoint folder `run_rel` beneath `run_root` into `store` (the workspace's store on the
/// host, which only the server writes) as `checkpoints/<job>/<folder name>`. The copy is made under a
/// temporary name and renamed into place, so a reader never sees half a checkpoint and a copy cut short
/// by a crash is simply made again.
pub fn copy_to_store(
    run_root: &beneath::Dir,
    run_rel: &Path,
    store: &Path,
    job_id: JobId,
) -> beneath::Result<Copied> {
    let name = run_rel
        .file_name()
        .ok_or_else(|| beneath::Error::Outside(run_rel.to_path_buf()))?;
    let files = run_root.open_dir(run_rel)?.files(MAX_ENTRIES)?;
    let bytes: u64 = files.iter().map(|f| f.bytes).sum();
    if bytes > MAX_BYTES {
        return Err(beneath::Error::TooLarge {
            path: run_rel.to_path_buf(),
            bytes,
            limit: MAX_BYTES,
        });
    }
    if !files.iter().any(|f| f.path == Path::new(WEIGHTS)) {
        return Err(beneath::Error::Missing(run_rel.join(WEIGHTS)));
    }
    let rel = store_rel(job_id).join(name);
    let target = store.join(&rel);
    let partial = target.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| beneath::Error::Io {
            path: path.clone(),
            source,
        }
    };
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(io(&partial))?;
    }
    let mut sha256 = String::new();
    for mut entry in files {
        let to = partial.join(&entry.path);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let mut out = std::fs::File::create(&to).map_err(io(&to))?;
        // No more than the size listed: a file still growing cannot make the copy unbounded.
        let mut from = (&mut entry.file).take(entry.bytes);
        let mut hasher = (entry.path == Path::new(WEIGHTS)).then(Sha256::new);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = from
                .read(&mut buf)
                .map_err(io(&run_rel.join(&entry.path)))?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n]).map_err(io(&to))?;
            if let Some(h) = hasher.as_mut() {
                h.update(&buf[..n]);
            }
        }
        out.sync_all().map_err(io(&to))?;
        if let Some(h) = hasher {
            sha256 = hex::encode(h.finalize());
        }
    }
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io(&target))?;
    }
    std::fs::rename(&partial, &target).map_err(io(&target))?;
    Ok(Copied {
        path: rel.to_string_lossy().into_owned(),
        bytes,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_paths_must_name_a_folder_in_the_jobs_own_run() {
        let roots = [
            Path::new("/data/volumes/w1/workspace"),
            Path::new("/workspace"),
        ];
        let ok = |p: &str| {
            reported_rel(p, JobId::new(7), &roots).map(|p| p.to_string_lossy().into_owned())
        };
        for good in [
            "output/checkpoints/step-10",
            "./output/checkpoints/step-10",
            "/workspace/jobs/7/output/checkpoints/step-10",
            "/data/volumes/w1/workspace/jobs/7/output/checkpoints/step-10",
        ] {
            assert_eq!(
                ok(good).unwrap(),
                "jobs/7/output/checkpoints/step-10",
                "{good}"
            );
        }
        for bad in [
            "output/../../8/output/checkpoints/step-1",
            "/workspace/jobs/8/output/checkpoints/step-1",
            "/etc",
            "/data/paddock.db",
            "/workspace/jobs/7",
            "",
        ] {
            assert!(ok(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_checkpoint_is_copied_whole_with_the_servers_own_hash() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let ckpt = run.join("jobs/3/output/checkpoints/step-5");
        std::fs::create_dir_all(ckpt.join("tokenizer")).unwrap();
        std::fs::write(ckpt.join(WEIGHTS), b"weights").unwrap();
        std::fs::write(ckpt.join("config.json"), b"{}").unwrap();
        std::fs::write(ckpt.join("tokenizer/vocab.txt"), b"[PAD]\n").unwrap();
        let store = dir.path().join("store");
        let root = beneath::Dir::open(&run).unwrap();
        let rel = Path::new("jobs/3/output/checkpoints/step-5");
        let copied = copy_to_store(&root, rel, &store, JobId::new(3)).unwrap();
        assert_eq!(copied.path, "checkpoints/3/step-5");
        assert_eq!(copied.bytes, 7 + 2 + 6);
        assert_eq!(copied.sha256, hex::encode(Sha256::digest(b"weights")));
        let copy = store.join("checkpoints/3/step-5");
        assert_eq!(
            std::fs::read(copy.join("tokenizer/vocab.txt")).unwrap(),
            b"[PAD]\n"
        );
        assert!(!store.join("checkpoints/3/.step-5.partial").exists());

        // Copied again (a restart re-reading its events): replaced, not nested.
        std::fs::write(ckpt.join(WEIGHTS), b"weights2").unwrap();
        let again = copy_to_store(&root, rel, &store, JobId::new(3)).unwrap();
        assert_eq!(again.sha256, hex::encode(Sha256::digest(b"weights2")));
        assert!(!copy.join("step-5").exists());

        // A link anywhere in the folder refuses the whole copy; nothing half-copied is left in place.
        std::os::unix::fs::symlink("/etc/hostname", ckpt.join("extra")).unwrap();
        let err = copy_to_store(&root, rel, &store, JobId::new(3)).unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert_eq!(
            std::fs::read(copy.join(WEIGHTS)).unwrap(),
            b"weights2",
            "the registered copy stays as it was"
        );
        std::fs::remove_file(ckpt.join("extra")).unwrap();

        // No weights, no checkpoint.
        std::fs::remove_file(ckpt.join(WEIGHTS)).unwrap();
        assert!(copy_to_store(&root, rel, &store, JobId::new(3))
            .unwrap_err()
            .is_missing());
    }
}

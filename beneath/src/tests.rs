use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::time::Duration;

use super::*;

/// A tree with a file and a secret outside it.
fn tree() -> (tempfile::TempDir, Dir) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("vol/jobs/1")).unwrap();
    std::fs::write(tmp.path().join("vol/jobs/1/events.jsonl"), "one\ntwo\n").unwrap();
    std::fs::write(tmp.path().join("secret.db"), "SECRET").unwrap();
    let dir = Dir::open(&tmp.path().join("vol")).unwrap();
    (tmp, dir)
}

/// The file outside the tree still holds what it held.
fn assert_secret_untouched(tmp: &tempfile::TempDir) {
    assert_eq!(
        std::fs::read(tmp.path().join("secret.db")).unwrap(),
        b"SECRET"
    );
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// Runs `f` on another thread and fails the test if it has not returned within ten seconds: what is
/// tested is that it does not block.
fn without_blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the call blocked")
}

#[test]
fn a_file_beneath_is_read() {
    let (_tmp, dir) = tree();
    assert_eq!(
        dir.read(Path::new("jobs/1/events.jsonl"), 100).unwrap(),
        b"one\ntwo\n"
    );
    assert_eq!(
        dir.read_from(Path::new("./jobs/1/events.jsonl"), 4, 100)
            .unwrap(),
        b"two\n"
    );
    assert_eq!(
        dir.read_from(Path::new("jobs/1/events.jsonl"), 0, 3)
            .unwrap(),
        b"one"
    );
    let tail = |max| {
        dir.read_tail(Path::new("jobs/1/events.jsonl"), max)
            .unwrap()
    };
    assert_eq!(tail(4), b"two\n");
    assert_eq!(tail(100), b"one\ntwo\n");
}

#[test]
fn paths_that_leave_the_directory_are_refused() {
    let (_tmp, dir) = tree();
    for path in ["../secret.db", "jobs/../../secret.db", "/etc/hostname", ""] {
        let err = dir.read(Path::new(path), 100).unwrap_err();
        assert!(matches!(err, Error::Outside(_)), "{path}: {err}");
    }
}

#[test]
fn a_link_as_the_file_is_refused_even_when_it_points_inside() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    symlink(tmp.path().join("secret.db"), vol.join("data.tsv")).unwrap();
    symlink("jobs/1/events.jsonl", vol.join("inside.tsv")).unwrap();
    for name in ["data.tsv", "inside.tsv"] {
        let err = dir.read(Path::new(name), 100).unwrap_err();
        assert!(matches!(err, Error::Link(_)), "{name}: {err}");
        assert!(err.is_refusal());
    }
}

#[test]
fn a_link_on_the_way_is_refused() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    // A job directory renamed and replaced by a link to the data directory.
    std::fs::rename(vol.join("jobs/1"), vol.join("jobs/1.old")).unwrap();
    symlink(tmp.path(), vol.join("jobs/1")).unwrap();
    let err = dir.read(Path::new("jobs/1/secret.db"), 100).unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    let err = dir.open_dir(Path::new("jobs/1")).unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    assert!(dir.files(100).is_err_and(|e| matches!(e, Error::Link(_))));
}

#[test]
fn a_fifo_device_or_directory_is_refused_without_blocking() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    mkfifo(&vol.join("config.json"));
    std::fs::create_dir(vol.join("folder")).unwrap();
    let dir = std::sync::Arc::new(dir);
    for (name, found) in [("config.json", "a FIFO"), ("folder", "a directory")] {
        let d = dir.clone();
        let err = without_blocking(move || d.read(Path::new(name), 100)).unwrap_err();
        assert!(
            matches!(&err, Error::Kind { found: f, .. } if *f == found),
            "{name}: {err}"
        );
    }
    let d = dir.clone();
    let err = without_blocking(move || d.create_file(Path::new("folder"), 0o644)).unwrap_err();
    assert!(matches!(err, Error::Kind { .. }), "{err}");
    // /dev/null reached through a planted link is a link; reached as the tree itself, a device.
    let dev = Dir::open(Path::new("/dev")).unwrap();
    let err = dev.read(Path::new("null"), 100).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kind {
                found: "a device",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_file_over_the_limit_is_refused_before_reading() {
    let (_tmp, dir) = tree();
    let err = dir.read(Path::new("jobs/1/events.jsonl"), 7).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                bytes: 8,
                limit: 7,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "`jobs/1/events.jsonl` is 8 bytes, more than the 7 accepted"
    );
}

#[test]
fn writing_replaces_a_planted_link_or_fifo_instead_of_going_through_it() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    symlink(tmp.path().join("secret.db"), vol.join("jobs/1/job.toml")).unwrap();
    mkfifo(&vol.join("jobs/1/trainer.pid"));
    dir.write(Path::new("jobs/1/job.toml"), b"[job]\n", 0o644)
        .unwrap();
    let d = std::sync::Arc::new(dir);
    let d2 = d.clone();
    without_blocking(move || d2.write(Path::new("jobs/1/trainer.pid"), b"7\n", 0o644)).unwrap();
    assert_secret_untouched(&tmp);
    assert_eq!(
        std::fs::read(vol.join("jobs/1/job.toml")).unwrap(),
        b"[job]\n"
    );
    assert_eq!(
        std::fs::read(vol.join("jobs/1/trainer.pid")).unwrap(),
        b"7\n"
    );
    // Through a link on the way, nothing is written at all.
    symlink(tmp.path(), vol.join("jobs/2")).unwrap();
    let err = d
        .write(Path::new("jobs/2/secret.db"), b"x", 0o644)
        .unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    assert_secret_untouched(&tmp);
}

#[test]
fn directories_are_created_but_not_through_links() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    let made = dir.create_dir_all(Path::new("jobs/7/out"), 0o755).unwrap();
    made.write(Path::new("x"), b"1", 0o644).unwrap();
    assert!(vol.join("jobs/7/out/x").is_file());
    symlink(tmp.path(), vol.join("jobs/8")).unwrap();
    let err = dir
        .create_dir_all(Path::new("jobs/8/out"), 0o755)
        .unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn removal_unlinks_links_without_following_them() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), "k").unwrap();
    std::fs::create_dir_all(vol.join("evals/3/deep")).unwrap();
    std::fs::write(vol.join("evals/3/deep/f"), "f").unwrap();
    symlink(&outside, vol.join("evals/3/link")).unwrap();
    symlink(&outside, vol.join("evals/3/deep/link")).unwrap();
    mkfifo(&vol.join("evals/3/fifo"));
    dir.remove_all(Path::new("evals/3")).unwrap();
    assert!(!vol.join("evals/3").exists());
    assert!(
        outside.join("keep").is_file(),
        "what the links pointed to is untouched"
    );
    // The directory itself a link: the link goes, its target stays.
    symlink(&outside, vol.join("evals/4")).unwrap();
    dir.remove_all(Path::new("evals/4")).unwrap();
    assert!(vol.join("evals/4").symlink_metadata().is_err());
    assert!(outside.join("keep").is_file());
    // A link on the way: refused, nothing removed.
    symlink(&outside, vol.join("evals/5")).unwrap();
    let err = dir.remove_all(Path::new("evals/5/keep")).unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    assert!(outside.join("keep").is_file());
    // Nothing there is not an error.
    dir.remove_all(Path::new("evals/6/x")).unwrap();
}

#[test]
fn a_listing_holds_regular_files_only() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    std::fs::create_dir_all(vol.join("ckpt/sub")).unwrap();
    std::fs::write(vol.join("ckpt/model.safetensors"), "weights").unwrap();
    std::fs::write(vol.join("ckpt/sub/vocab.txt"), "v").unwrap();
    let ckpt = dir.open_dir(Path::new("ckpt")).unwrap();
    let files = ckpt.files(100).unwrap();
    let listed: Vec<_> = files.iter().map(|e| (e.path.clone(), e.bytes)).collect();
    assert_eq!(
        listed,
        [
            (PathBuf::from("model.safetensors"), 7),
            (PathBuf::from("sub/vocab.txt"), 1)
        ]
    );
    let err = ckpt.files(1).unwrap_err();
    assert!(matches!(err, Error::TooMany { limit: 1, .. }), "{err}");
    mkfifo(&vol.join("ckpt/sub/pipe"));
    let err = ckpt.files(100).unwrap_err();
    assert_eq!(err.to_string(), "`sub/pipe` is a FIFO");
    std::fs::remove_file(vol.join("ckpt/sub/pipe")).unwrap();
    symlink(tmp.path().join("secret.db"), vol.join("ckpt/config.json")).unwrap();
    let err = ckpt.files(100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`config.json` is a symbolic link, which is not followed"
    );
}

#[test]
fn a_file_moves_in_without_replacing_anything() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    let upload = tmp.path().join("upload.tmp");
    std::fs::write(&upload, "rows").unwrap();
    dir.create_dir_all(Path::new("datasets/9"), 0o755).unwrap();
    dir.move_in(&upload, Path::new("datasets/9/data.tsv"))
        .unwrap();
    assert_eq!(
        std::fs::read(vol.join("datasets/9/data.tsv")).unwrap(),
        b"rows"
    );
    std::fs::write(&upload, "again").unwrap();
    let err = dir
        .move_in(&upload, Path::new("datasets/9/data.tsv"))
        .unwrap_err();
    assert!(matches!(err, Error::Kind { .. }), "{err}");
    symlink(tmp.path(), vol.join("datasets/10")).unwrap();
    let err = dir
        .move_in(&upload, Path::new("datasets/10/secret.db"))
        .unwrap_err();
    assert!(matches!(err, Error::Link(_)), "{err}");
    assert_secret_untouched(&tmp);
}

#[test]
fn existence_is_told_without_following() {
    let (tmp, dir) = tree();
    let vol = tmp.path().join("vol");
    symlink("/nonexistent", vol.join("dangling")).unwrap();
    assert!(dir.exists(Path::new("jobs/1/events.jsonl")).unwrap());
    assert!(dir.exists(Path::new("dangling")).unwrap());
    assert!(!dir.exists(Path::new("jobs/2/x")).unwrap());
    symlink(tmp.path(), vol.join("jobs/3")).unwrap();
    assert!(dir.exists(Path::new("jobs/3/secret.db")).is_err());
}

//! A job's log on disk: every line the supervisor reads from the trainer's stderr (also those past the
//! database's per-job limit) and every note the platform adds, each stamped with the time it was
//! recorded, appended to `<data-dir>/logs/jobs/<id>/job.log` and rotated by size (`job.log.1` is the
//! previous file, up to `job.log.4`) with the `file-rotate` crate — so a job that logs without end
//! keeps its most recent output and never more than [`FILE_BYTES`] × ([`KEPT_FILES`] + 1) bytes.
//!
//! The database is the record the UI and the API read; this file is its complete, greppable twin for
//! operators. Lines are appended after the transaction that recorded them committed: a crash between
//! the two can cost the file that batch (the database and `train.log` still have it), never duplicate it.

use std::io::Write;
use std::path::{Path, PathBuf};

use file_rotate::compression::Compression;
use file_rotate::suffix::AppendCount;
use file_rotate::{ContentLimit, FileRotate};

/// A file is rotated once it has passed this size (lines are never cut in two).
pub const FILE_BYTES: usize = 16 << 20;
/// Rotated files kept besides the current one.
pub const KEPT_FILES: usize = 4;

/// The open log of one job.
pub struct JobLogFile {
    path: PathBuf,
    writer: FileRotate<AppendCount>,
    /// A failing disk is reported once, not for every line.
    warned: bool,
}

impl JobLogFile {
    /// Opens (appending) or creates `dir/job.log`; `None`, with a warning, when the directory cannot be
    /// made — the job runs on without a file.
    pub fn open(dir: &Path) -> Option<JobLogFile> {
        Self::with_limit(dir, FILE_BYTES)
    }

    fn with_limit(dir: &Path, bytes: usize) -> Option<JobLogFile> {
        // file-rotate panics when it cannot create the directory itself; it finds it made.
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the job's log directory");
            return None;
        }
        let path = dir.join("job.log");
        let writer = FileRotate::new(
            &path,
            AppendCount::new(KEPT_FILES),
            ContentLimit::BytesSurpassed(bytes),
            Compression::None,
            None,
        );
        Some(JobLogFile {
            path,
            writer,
            warned: false,
        })
    }

    /// Appends `lines`, each as `<time> <line>`.
    pub fn append(&mut self, at: &str, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        let mut text = String::new();
        for line in lines {
            text.push_str(at);
            text.push(' ');
            text.push_str(line);
            text.push('\n');
        }
        if let Err(e) = self
            .writer
            .write_all(text.as_bytes())
            .and_then(|_| self.writer.flush())
        {
            if !self.warned {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot write a job's log file");
                self.warned = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_stamped_appended_across_reopenings_and_rotated_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs/jobs/7");
        let mut file = JobLogFile::with_limit(&logs, 100).unwrap();
        file.append(
            "2026-12-03T04:00:00Z",
            &["step 1/30".into(), "step 2/30".into()],
        );
        drop(file);
        // A restarted server appends to what is there.
        let mut file = JobLogFile::with_limit(&logs, 100).unwrap();
        file.append("2026-12-03T04:00:01Z", &["step 3/30".into()]);
        let text = std::fs::read_to_string(logs.join("job.log")).unwrap();
        assert_eq!(
            text,
            "2026-12-03T04:00:00Z step 1/30\n2026-12-03T04:00:00Z step 2/30\n2026-12-03T04:00:01Z step 3/30\n"
        );
        // Past 100 bytes the file is rotated: job.log.1 holds the older lines, whole.
        for i in 4..=40 {
            file.append("2026-12-03T04:00:02Z", &[format!("step {i}/40")]);
        }
        let current = std::fs::read_to_string(logs.join("job.log")).unwrap();
        assert!(current.ends_with("step 40/40\n"), "{current}");
        let previous = std::fs::read_to_string(logs.join("job.log.1")).unwrap();
        assert!(previous
            .lines()
            .all(|l| l.starts_with("2026-12-03T04:00:0") && l.contains("/")));
        // Only KEPT_FILES rotated files stay, however much is written.
        assert!(logs.join(format!("job.log.{KEPT_FILES}")).exists());
        assert!(!logs.join(format!("job.log.{}", KEPT_FILES + 1)).exists());
        let total: u64 = std::fs::read_dir(&logs)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(
            total <= 2 * 100 * (KEPT_FILES as u64 + 1),
            "{total} bytes on disk"
        );
    }
}

//! The process's own log. Lines go to stderr (stdout carries only results, such as serve's `listening
//! on` line), or with `paddock serve --log-file` to a file rotated once it passes `--log-max-bytes`
//! (the full file is renamed `<file>.1`, replacing the one before: about twice the limit on disk).
//!
//! Warnings and errors are limited per cause: one place in the code (a callsite) may log at most
//! [`PER_WINDOW`] lines per [`WINDOW`]; the rest are counted and said as one line when that place logs
//! again after the window. Much of what the server warns about comes from files a tenant controls (a
//! run folder replaced by a link is refused on every poll), and a tenant must not be able to fill the
//! host's disk through the server's log.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use file_rotate::compression::Compression;
use file_rotate::suffix::AppendCount;
use file_rotate::{ContentLimit, FileRotate};
use tracing::callsite::Identifier;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The window over which one callsite's warnings are counted.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Warnings or errors one callsite may log per [`WINDOW`].
pub const PER_WINDOW: u32 = 10;
/// The default size of the log file before it is rotated.
pub const DEFAULT_MAX_BYTES: u64 = 100 << 20;

/// Sets up the process's log: `file` (and the byte limit of each of its two files), or stderr.
pub fn init(file: Option<(&Path, u64)>) -> std::io::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tower_sessions=warn".into());
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(Repeats::new(WINDOW, PER_WINDOW));
    match file {
        Some((path, max_bytes)) => {
            // Opened here, so a path that cannot be written stops the start with its reason.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            let writer = Mutex::new(capped_file(path, max_bytes));
            let fmt = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer);
            registry.with(fmt).init();
        }
        None => registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .init(),
    }
    Ok(())
}

/// `path`, rotated once a write passes `max_bytes` (`file-rotate`, as the jobs' log files are): the
/// full file becomes `<file>.1`, replacing the one before.
fn capped_file(path: &Path, max_bytes: u64) -> FileRotate<AppendCount> {
    let bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX).max(1024);
    FileRotate::new(
        path,
        AppendCount::new(1),
        ContentLimit::BytesSurpassed(bytes),
        Compression::None,
        None,
    )
}

/// Drops warnings and errors of a callsite beyond its budget per window (see the module's doc).
struct Repeats {
    window: Duration,
    per_window: u32,
    seen: Mutex<HashMap<Identifier, Budget>>,
}

struct Budget {
    since: Instant,
    logged: u32,
    dropped: u64,
}

impl Repeats {
    fn new(window: Duration, per_window: u32) -> Repeats {
        Repeats {
            window,
            per_window,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Whether an event of `callsite` may be logged now, and how many of its lines were dropped in the
    /// window that just ended (to be said once).
    fn admit(&self, callsite: Identifier, now: Instant) -> (bool, u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let budget = seen.entry(callsite).or_insert(Budget {
            since: now,
            logged: 0,
            dropped: 0,
        });
        let mut ended_dropping = 0;
        if now.duration_since(budget.since) >= self.window {
            ended_dropping = std::mem::take(&mut budget.dropped);
            budget.since = now;
            budget.logged = 0;
        }
        if budget.logged < self.per_window {
            budget.logged += 1;
            (true, ended_dropping)
        } else {
            budget.dropped += 1;
            (false, ended_dropping)
        }
    }
}

impl<S: Subscriber> Layer<S> for Repeats {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let meta = event.metadata();
        // INFO and below are the server's own course of business (a start, a request), not a cause.
        if *meta.level() > Level::WARN {
            return true;
        }
        let (admitted, dropped) = self.admit(meta.callsite(), Instant::now());
        if dropped > 0 {
            // Logged from another callsite, after the lock is released.
            tracing::warn!(
                dropped,
                from = meta.target(),
                message_of = meta.name(),
                "lines about one cause were dropped in the last minute (at most {PER_WINDOW} a minute are logged)"
            );
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callsite_logs_its_budget_per_window_and_then_says_how_many_it_dropped() {
        struct Site;
        impl tracing::callsite::Callsite for Site {
            fn set_interest(&self, _: tracing::subscriber::Interest) {}
            fn metadata(&self) -> &tracing::Metadata<'_> {
                unimplemented!("only its identity is used")
            }
        }
        static SITE: Site = Site;
        let repeats = Repeats::new(Duration::from_secs(60), 3);
        let start = Instant::now();
        let id = || Identifier(&SITE);
        let admitted: Vec<bool> = (0..5).map(|_| repeats.admit(id(), start).0).collect();
        assert_eq!(admitted, [true, true, true, false, false]);
        let later = start + Duration::from_secs(61);
        assert_eq!(repeats.admit(id(), later), (true, 2));
        assert_eq!(repeats.admit(id(), later), (true, 0));
    }

    #[test]
    fn the_log_file_is_rotated_at_its_limit() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paddock.log");
        let mut file = capped_file(&path, 1024);
        for _ in 0..25 {
            file.write_all(&[b'x'; 99]).unwrap();
            file.write_all(b"\n").unwrap();
        }
        file.flush().unwrap();
        let now = std::fs::metadata(&path).unwrap().len();
        let before = std::fs::metadata(dir.path().join("paddock.log.1"))
            .unwrap()
            .len();
        assert!(now <= 1124 && before <= 1124, "{now} {before}");
        assert!(!dir.path().join("paddock.log.2").exists());
    }
}

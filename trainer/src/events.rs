//! Writing the machine-readable event stream a training run sends to stdout, one JSON object per line,
//! which the platform parses to drive its job page (the types are `contracts::events`, shared with that
//! reader; schema in `trainer/EVENTS.md`). Human-facing output goes to
//! stderr instead ([`crate::progress`]: a bar on a terminal, else a line per event), never into the
//! stream.

use std::io::Write;
use std::sync::{Arc, Mutex};

pub use contracts::events::{EndStatus, Event, Line, Start, Task};

use crate::progress::Progress;

/// Renders one event as its JSON line (without the newline), stamped now.
pub fn to_json_line(event: &Event) -> String {
    Line {
        ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        event: event.clone(),
    }
    .to_json()
}

/// Where events go. Cloneable handles share one writer so that lines never interleave.
#[derive(Clone)]
pub struct EventSink {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    /// The human-readable account on stderr, for runs started from the command line.
    progress: Option<Arc<Progress>>,
    /// Every event emitted, kept for callers (tests, the CLI's exit status) that want them back.
    history: Arc<Mutex<Vec<Event>>>,
}

impl EventSink {
    /// Events on stdout; their human-readable account on stderr.
    pub fn stdout() -> Self {
        EventSink::new(Box::new(std::io::stdout())).with_progress(Progress::stderr())
    }

    /// The same sink, also telling its events to `progress`.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Events written to `out` (no human-readable account).
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        EventSink {
            out: Arc::new(Mutex::new(out)),
            progress: None,
            history: Arc::default(),
        }
    }

    /// Events only kept in memory.
    pub fn memory() -> Self {
        EventSink::new(Box::new(std::io::sink()))
    }

    /// Writes one event line and flushes, so a consumer sees it at once. A closed stdout (the platform
    /// went away) is not a reason to stop training, so write errors are only logged.
    pub fn emit(&self, event: Event) {
        if let Some(progress) = &self.progress {
            progress.event(&event);
        }
        let line = to_json_line(&event);
        if let Ok(mut out) = self.out.lock() {
            if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                tracing::warn!("could not write event: {e}");
            }
        }
        if let Ok(mut h) = self.history.lock() {
            h.push(event);
        }
    }

    /// A run that could not go on: an `error` event with `message`, then `end` with status `failed`.
    pub fn failed(&self, message: &str) {
        self.emit(Event::Error {
            message: message.to_string(),
        });
        self.emit(Event::End {
            status: EndStatus::Failed,
            step: 0,
            best_checkpoint: None,
            best_metric: None,
        });
    }

    /// A line for people only (stderr), about something no event carries.
    pub fn note(&self, line: &str) {
        if let Some(progress) = &self.progress {
            progress.note(line);
        }
    }

    /// A copy of every event emitted so far.
    pub fn history(&self) -> Vec<Event> {
        self.history.lock().map(|h| h.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A writer whose bytes the test can read back while the sink still holds it.
    #[derive(Clone, Default)]
    pub(crate) struct Shared(pub(crate) Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_json_with_event_and_ts() {
        let buf = Shared::default();
        let sink = EventSink::new(Box::new(buf.clone()));
        sink.emit(Event::Step {
            step: 3,
            epoch: 0.5,
            loss: 0.25,
            lr: 1e-4,
            samples_per_s: 10.0,
            tokens_per_s: 100.0,
            grad_norm: 1.0,
        });
        sink.emit(Event::End {
            status: EndStatus::Completed,
            step: 3,
            best_checkpoint: None,
            best_metric: None,
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "step");
        assert_eq!(lines[0]["step"], 3);
        assert_eq!(lines[0]["loss"], 0.25);
        assert_eq!(lines[1]["event"], "end");
        assert_eq!(lines[1]["status"], "completed");
        let ts = lines[0]["ts"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(sink.history().len(), 2);
    }
}

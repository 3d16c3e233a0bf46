//! A job's live stream (`GET /api/v1/workspaces/{id}/jobs/{job}/stream`, Server-Sent Events): `metric`
//! events carry a [`MetricPoint`], `log` a [`LogLine`], `status` the [`JobSummary`] whenever it changes.
//! The stream starts with everything so far (or after the ids it is given) and ends once the job has
//! ended and all it produced was sent. It is closed at its end or its first error
//! ([`crate::components::sse`]); the page reopens it after the last ids it saw when it dropped.

use crate::components::sse::{EventStream, Message};
use contracts::ids::{JobId, WorkspaceId};
use contracts::types::{JobSummary, LogLine, MetricPoint};

/// Where the stream is; `after` = (last metric id, last log id) seen, to resume without repeats.
pub fn stream_url(workspace_id: WorkspaceId, job_id: JobId, after: (i64, i64)) -> String {
    format!(
        "/api/v1/workspaces/{workspace_id}/jobs/{job_id}/stream?metrics_after={}&logs_after={}",
        after.0, after.1
    )
}

/// What the stream delivers, decoded.
pub enum Event {
    Metric(MetricPoint),
    Log(LogLine),
    /// Boxed: a summary is several times the size of the other events.
    Status(Box<JobSummary>),
    /// The server sent everything the ended job produced; the stream is closed.
    End,
    /// The connection dropped before the end.
    Closed,
}

/// Opens the stream at `url` and hands `on_event` what it delivers.
pub fn open(url: &str, on_event: impl Fn(Event) + 'static) -> Option<EventStream> {
    EventStream::open(url, &["metric", "log", "status"], move |message| {
        let event = match message {
            Message::Data("metric", text) => serde_json::from_str(&text).ok().map(Event::Metric),
            Message::Data("log", text) => serde_json::from_str(&text).ok().map(Event::Log),
            Message::Data(_, text) => serde_json::from_str(&text).ok().map(Event::Status),

            Message::End => Some(Event::End),
            Message::Dropped => Some(Event::Closed),
        };
        if let Some(event) = event {
            on_event(event);
        }
    })
}

//! Status changes from Docker's event stream, limited to Paddock's containers (label `paddock.managed`) and
//! mapped to [`ContainerStatus`]. The app keeps one subscription open and writes each change to its database;
//! after a reconnect it reconciles, since events missed while disconnected are gone.

use std::collections::{BTreeMap, HashMap, HashSet};

use bollard::query_parameters::EventsOptionsBuilder;
use futures_util::{Stream, StreamExt};

use super::ContainerStatus;
use crate::error::{Error, Result};
use crate::labels;
use crate::Docker;

/// Docker actions that change what a user sees.
const ACTIONS: &[&str] = &[
    "create", "start", "restart", "pause", "unpause", "die", "oom", "destroy",
];

/// One status change of a Paddock container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEvent {
    pub id: String,
    pub name: Option<String>,
    /// Docker's action (`start`, `die`, `oom`, …).
    pub action: String,
    /// The container's `paddock.*` labels (Docker repeats all labels in event attributes).
    pub labels: BTreeMap<String, String>,
    pub status: ContainerStatus,
    /// Unix time in nanoseconds.
    pub time_nano: Option<i64>,
}

impl Docker {
    /// A never-ending stream of status changes of containers labelled `paddock.managed=true` (and, when
    /// given, `paddock.instance=<instance>`). An OOM kill is reported as `oom` and its following `die` as
    /// [`ContainerStatus::OomKilled`] too, so the final state of such a container is not "exited 137".
    ///
    /// The stream is lazy: Docker is asked only when it is first polled, and sends events from then on —
    /// unless `since_nanos` (Unix time in nanoseconds, e.g. the last event's `time_nano` before a reconnect)
    /// asks it to replay from that moment.
    pub fn container_events(
        &self,
        instance: Option<&str>,
        since_nanos: Option<i64>,
    ) -> impl Stream<Item = Result<ContainerEvent>> + Send + 'static {
        let mut label_filters = vec![format!("{}=true", labels::MANAGED)];
        if let Some(instance) = instance {
            label_filters.push(format!("{}={instance}", labels::INSTANCE));
        }
        let filters: HashMap<&str, Vec<String>> = HashMap::from([
            ("type", vec!["container".to_string()]),
            ("label", label_filters),
            ("event", ACTIONS.iter().map(|a| a.to_string()).collect()),
        ]);
        let mut options = EventsOptionsBuilder::default().filters(&filters);
        if let Some(nanos) = since_nanos {
            // Docker takes "seconds.nanoseconds".
            options = options.since(&format!(
                "{}.{:09}",
                nanos.div_euclid(1_000_000_000),
                nanos.rem_euclid(1_000_000_000)
            ));
        }
        let options = options.build();
        let mut oom_killed: HashSet<String> = HashSet::new();
        self.api().events(Some(options)).filter_map(move |item| {
            let mapped = match item {
                Err(e) => Some(Err(Error::docker(
                    "watching Docker events",
                    "events",
                    "",
                    e,
                ))),
                Ok(message) => map_event(message, &mut oom_killed).map(Ok),
            };
            std::future::ready(mapped)
        })
    }
}

/// What Docker's recent event log says about a container's last run: whether it was OOM-killed, killed
/// through the API, or neither (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LastRun {
    OomKilled,
    Killed,
    Unexplained,
}

impl Docker {
    /// Tells an OOM kill from another SIGKILL for a container that exited with 137 while `inspect` says
    /// `OOMKilled: false`. Docker sets that flag only when containerd's OOM notice reaches it before the exit
    /// notice; under load it sometimes comes after, and the flag stays false although Docker then logs an
    /// `oom` event. So the daemon's event log (its last few hundred events, in memory) is asked for the
    /// container's last run. A SIGKILL nobody sent through the API is waited on briefly, since the OOM notice
    /// may still be on its way; with nothing in the log (a restarted daemon) the exit stays "exited 137".
    pub async fn sigkill_status(&self, id: &str) -> ContainerStatus {
        for attempt in 0..2 {
            if attempt > 0 {
                tokio::time::sleep(OOM_NOTICE_LAG).await;
            }
            match self.last_run(id).await {
                Ok(LastRun::OomKilled) => return ContainerStatus::OomKilled,
                Ok(LastRun::Killed) => break,
                Ok(LastRun::Unexplained) => continue,
                Err(e) => {
                    tracing::debug!(container = id, error = %e, "reading Docker's event log");
                    break;
                }
            }
        }
        ContainerStatus::Exited { code: 137 }
    }

    async fn last_run(&self, id: &str) -> Result<LastRun> {
        let filters: HashMap<&str, Vec<String>> = HashMap::from([
            ("type", vec!["container".to_string()]),
            ("container", vec![id.to_string()]),
            (
                "event",
                ["start", "restart", "kill", "oom"]
                    .iter()
                    .map(|a| a.to_string())
                    .collect(),
            ),
        ]);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // With `until`, Docker replays what it kept and ends the stream instead of following it.
        let options = EventsOptionsBuilder::default()
            .filters(&filters)
            .since("0")
            .until(&format!("{}.{:09}", now.as_secs(), now.subsec_nanos()))
            .build();
        let mut actions = Vec::new();
        let mut stream = self.api().events(Some(options));
        while let Some(message) = stream.next().await {
            let message = message
                .map_err(|e| Error::docker("reading Docker's event log", "events", id, e))?;
            actions.extend(message.action);
        }
        Ok(last_run(&actions))
    }
}

/// How long Docker's OOM notice may trail the exit it explains.
const OOM_NOTICE_LAG: std::time::Duration = std::time::Duration::from_millis(500);

fn last_run(actions: &[String]) -> LastRun {
    let this_run = actions
        .iter()
        .rposition(|a| a == "start" || a == "restart")
        .map_or(actions, |start| &actions[start + 1..]);
    if this_run.iter().any(|a| a == "oom") {
        LastRun::OomKilled
    } else if this_run.iter().any(|a| a == "kill") {
        LastRun::Killed
    } else {
        LastRun::Unexplained
    }
}

fn map_event(
    message: bollard::models::EventMessage,
    oom_killed: &mut HashSet<String>,
) -> Option<ContainerEvent> {
    let action = message.action?;
    let actor = message.actor?;
    let id = actor.id?;
    let attributes = actor.attributes.unwrap_or_default();
    let status = match action.as_str() {
        "create" => ContainerStatus::Created,
        "start" | "restart" | "unpause" => {
            oom_killed.remove(&id);
            ContainerStatus::Running
        }
        "pause" => ContainerStatus::Paused,
        "oom" => {
            oom_killed.insert(id.clone());
            ContainerStatus::OomKilled
        }
        "die" if oom_killed.contains(&id) => ContainerStatus::OomKilled,
        "die" => ContainerStatus::Exited {
            code: attributes
                .get("exitCode")
                .and_then(|c| c.parse().ok())
                .unwrap_or(-1),
        },
        "destroy" => {
            oom_killed.remove(&id);
            ContainerStatus::Missing
        }
        _ => return None,
    };
    Some(ContainerEvent {
        id,
        name: attributes.get("name").cloned(),
        action,
        labels: attributes
            .into_iter()
            .filter(|(k, _)| k.starts_with("paddock."))
            .collect(),
        status,
        time_nano: message.time_nano,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{EventActor, EventMessage};

    fn event(action: &str, attrs: &[(&str, &str)]) -> EventMessage {
        EventMessage {
            action: Some(action.into()),
            actor: Some(EventActor {
                id: Some("c1".into()),
                attributes: Some(
                    attrs
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn maps_die_with_exit_code_and_labels() {
        let mut oom = HashSet::new();
        let e = map_event(
            event(
                "die",
                &[
                    ("exitCode", "3"),
                    ("name", "n"),
                    ("paddock.workspace", "w"),
                    ("image", "i"),
                ],
            ),
            &mut oom,
        )
        .unwrap();
        assert_eq!(e.status, ContainerStatus::Exited { code: 3 });
        assert_eq!(
            e.labels,
            BTreeMap::from([("paddock.workspace".to_string(), "w".to_string())])
        );
        assert_eq!(e.name.as_deref(), Some("n"));
    }

    #[test]
    fn only_the_last_runs_events_explain_a_sigkill() {
        let run =
            |actions: &[&str]| last_run(&actions.iter().map(|a| a.to_string()).collect::<Vec<_>>());
        assert_eq!(run(&["start", "oom"]), LastRun::OomKilled);
        // The OOM notice after someone's kill still wins: the kernel did it.
        assert_eq!(run(&["start", "kill", "oom"]), LastRun::OomKilled);
        assert_eq!(run(&["start", "kill", "kill"]), LastRun::Killed);
        assert_eq!(run(&["start", "oom", "restart"]), LastRun::Unexplained);
        assert_eq!(run(&["start", "oom", "start", "kill"]), LastRun::Killed);
        assert_eq!(run(&[]), LastRun::Unexplained);
    }

    #[test]
    fn oom_then_die_stays_oom_until_restart() {
        let mut oom = HashSet::new();
        assert_eq!(
            map_event(event("oom", &[]), &mut oom).unwrap().status,
            ContainerStatus::OomKilled
        );
        assert_eq!(
            map_event(event("die", &[("exitCode", "137")]), &mut oom)
                .unwrap()
                .status,
            ContainerStatus::OomKilled
        );
        assert_eq!(
            map_event(event("start", &[]), &mut oom).unwrap().status,
            ContainerStatus::Running
        );
        assert_eq!(
            map_event(event("die", &[("exitCode", "137")]), &mut oom)
                .unwrap()
                .status,
            ContainerStatus::Exited { code: 137 }
        );
        assert!(map_event(event("exec_start: sh", &[]), &mut oom).is_none());
    }
}

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

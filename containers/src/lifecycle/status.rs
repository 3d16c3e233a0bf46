//! Container status as the app stores it: the few states a user sees, derived from Docker's inspect data,
//! list summaries and events. OOM kills are their own state, because "your process used more memory than the
//! environment allows" is the most useful thing to tell someone whose training run died.

use bollard::models::{ContainerState, ContainerStateStatusEnum};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum ContainerStatus {
    Created,
    Running,
    Paused,
    Restarting,
    /// Stopped by itself or by `stop`, with the main process's exit code.
    Exited {
        code: i64,
    },
    /// Killed by the kernel for exceeding the memory limit.
    OomKilled,
    /// Docker could not stop or remove it cleanly.
    Dead,
    /// No such container (removed, or never created).
    Missing,
}

impl ContainerStatus {
    pub fn is_running(self) -> bool {
        matches!(self, ContainerStatus::Running)
    }

    /// From `inspect`'s `State`.
    pub fn from_state(state: &ContainerState) -> Self {
        if state.oom_killed == Some(true) {
            return ContainerStatus::OomKilled;
        }
        match state.status {
            Some(ContainerStateStatusEnum::CREATED) => ContainerStatus::Created,
            // "stopping" (newer engines) is still running until it has exited.
            Some(ContainerStateStatusEnum::RUNNING) | Some(ContainerStateStatusEnum::STOPPING) => {
                ContainerStatus::Running
            }
            Some(ContainerStateStatusEnum::PAUSED) => ContainerStatus::Paused,
            Some(ContainerStateStatusEnum::RESTARTING) => ContainerStatus::Restarting,
            Some(ContainerStateStatusEnum::EXITED) => ContainerStatus::Exited {
                code: state.exit_code.unwrap_or(-1),
            },
            Some(ContainerStateStatusEnum::DEAD) | Some(ContainerStateStatusEnum::REMOVING) => {
                ContainerStatus::Dead
            }
            Some(ContainerStateStatusEnum::EMPTY) | None => ContainerStatus::Dead,
        }
    }

    /// From a list summary's `State` and `Status` text ("Exited (137) 5 seconds ago"); OOM is not visible
    /// there, so callers that care inspect exited containers.
    pub fn from_summary(state: &str, status_text: &str) -> Self {
        match state {
            "created" => ContainerStatus::Created,
            "running" => ContainerStatus::Running,
            "paused" => ContainerStatus::Paused,
            "restarting" => ContainerStatus::Restarting,
            "exited" => ContainerStatus::Exited {
                code: exit_code_in(status_text).unwrap_or(-1),
            },
            _ => ContainerStatus::Dead,
        }
    }
}

fn exit_code_in(text: &str) -> Option<i64> {
    let start = text.find('(')? + 1;
    let end = start + text[start..].find(')')?;
    text[start..end].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_inspect_state() {
        let state = |status, code, oom| ContainerState {
            status: Some(status),
            exit_code: Some(code),
            oom_killed: Some(oom),
            ..Default::default()
        };
        assert_eq!(
            ContainerStatus::from_state(&state(ContainerStateStatusEnum::RUNNING, 0, false)),
            ContainerStatus::Running
        );
        assert_eq!(
            ContainerStatus::from_state(&state(ContainerStateStatusEnum::EXITED, 3, false)),
            ContainerStatus::Exited { code: 3 }
        );
        assert_eq!(
            ContainerStatus::from_state(&state(ContainerStateStatusEnum::EXITED, 137, true)),
            ContainerStatus::OomKilled
        );
    }

    #[test]
    fn from_list_summary() {
        assert_eq!(
            ContainerStatus::from_summary("exited", "Exited (137) 5 seconds ago"),
            ContainerStatus::Exited { code: 137 }
        );
        assert_eq!(
            ContainerStatus::from_summary("running", "Up 3 minutes"),
            ContainerStatus::Running
        );
        assert_eq!(
            ContainerStatus::from_summary("exited", "weird"),
            ContainerStatus::Exited { code: -1 }
        );
    }

    #[test]
    fn serializes_for_the_app() {
        assert_eq!(
            serde_json::to_string(&ContainerStatus::Exited { code: 2 }).unwrap(),
            r#"{"state":"exited","code":2}"#
        );
        assert_eq!(
            serde_json::to_string(&ContainerStatus::OomKilled).unwrap(),
            r#"{"state":"oom_killed"}"#
        );
    }
}

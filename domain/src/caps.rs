//! Caps on what one workspace or one user may hold at once, so that one team (or one script) cannot
//! take the whole machine: running environments and endpoint replicas per workspace, counted in the
//! database where they are recorded; uploads in progress and open live streams per user, counted
//! here in memory (they last as long as a connection, and a restart ends them all). The values are
//! instance settings an admin changes (`PATCH /api/v1/admin/settings`); a refusal names the cap and
//! its value.

use contracts::ids::{EndpointId, EnvironmentId, UserId, WorkspaceId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlx::{SqliteConnection, SqlitePool};

use super::admin::read_settings;
use contracts::error::{AppError, Cap, ErrorCode, FieldProblem, Rule};

/// The refusal of one more than `cap` allows: the rule, for the dashboard to say in its language, and
/// an English sentence for API users.
fn reached(cap: Cap, max: u32, used: Option<i64>) -> AppError {
    let (what, hint) = match cap {
        Cap::RunningEnvironments => (
            "running environments per workspace",
            "stop one first, or ask an admin to raise the cap".to_string(),
        ),
        Cap::Replicas => (
            "endpoint replicas per workspace",
            format!(
                "the workspace's other endpoints use {}; undeploy or scale one down first",
                used.unwrap_or(0)
            ),
        ),
        Cap::Uploads => (
            "uploads in progress per user",
            "wait for one to finish".to_string(),
        ),
        Cap::Streams => (
            "open live streams (log views, terminals) per user",
            "close some tabs".to_string(),
        ),
    };
    AppError::conflict_with(
        ErrorCode::LimitReached,
        FieldProblem::new(
            "limit",
            Rule::CapReached {
                cap,
                max: i64::from(max),
                used,
            },
            format!("{what}: the limit is {max}; {hint}"),
        ),
    )
}

/// Refuses to start one more environment when the workspace already runs its cap (`env_id` itself
/// does not count: starting a running environment again is not one more).
pub async fn environment_may_start(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    env_id: EnvironmentId,
) -> Result<(), AppError> {
    let max = read_settings(&mut *conn).await?.max_running_environments;
    let running: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM environments
         WHERE workspace_id = ? AND id != ? AND status IN ('provisioning', 'running')",
    )
    .bind(workspace_id)
    .bind(env_id)
    .fetch_one(conn)
    .await?;
    if running >= i64::from(max) {
        return Err(reached(Cap::RunningEnvironments, max, None));
    }
    Ok(())
}

/// Refuses an endpoint of `wanted` replicas when the workspace's other live endpoints already ask
/// for so many that the sum would pass its cap (`endpoint_id`: the endpoint being changed, whose
/// current count is replaced, not added to).
pub async fn replicas_fit(
    conn: &mut SqliteConnection,
    workspace_id: WorkspaceId,
    endpoint_id: Option<EndpointId>,
    wanted: i64,
) -> Result<(), AppError> {
    let max = read_settings(&mut *conn).await?.max_replicas;
    let others: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(replicas), 0) FROM endpoints
         WHERE workspace_id = ? AND id IS NOT ? AND status NOT IN ('stopped', 'failed')",
    )
    .bind(workspace_id)
    .bind(endpoint_id)
    .fetch_one(conn)
    .await?;
    if others + wanted > i64::from(max) {
        return Err(reached(Cap::Replicas, max, Some(others)));
    }
    Ok(())
}

/// What a user holds open for as long as a connection lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Upload,
    Stream,
}

/// Per user and kind, how many are open now.
#[derive(Default)]
pub struct Open {
    counts: Mutex<HashMap<(Kind, UserId), u32>>,
}

/// One open upload or stream; dropping it (the request or stream ended) frees its place.
pub struct Permit {
    open: Arc<Open>,
    key: (Kind, UserId),
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

impl Open {
    /// A place for one more `kind` of `user_id`'s, or the refusal naming the cap.
    pub async fn take(
        self: &Arc<Self>,
        db: &SqlitePool,
        kind: Kind,
        user_id: UserId,
    ) -> Result<Permit, AppError> {
        let settings = read_settings(db).await?;
        let (max, cap) = match kind {
            Kind::Upload => (settings.max_uploads_per_user, Cap::Uploads),
            Kind::Stream => (settings.max_streams_per_user, Cap::Streams),
        };
        self.take_up_to(kind, user_id, max)
            .ok_or_else(|| reached(cap, max, None))
    }

    fn take_up_to(self: &Arc<Self>, kind: Kind, user_id: UserId, max: u32) -> Option<Permit> {
        let key = (kind, user_id);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(key).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Permit {
            open: self.clone(),
            key,
        })
    }
}

/// `stream`, holding `permit` for as long as it is read (a live stream's place is freed when the
/// client goes away and the stream is dropped).
pub fn holding<S: futures_util::Stream>(
    stream: S,
    permit: Permit,
) -> impl futures_util::Stream<Item = S::Item> {
    use futures_util::StreamExt;
    stream.map(move |item| {
        let _held = &permit;
        item
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_per_user_and_kind_and_come_back_when_dropped() {
        let open = Arc::new(Open::default());
        let a = open.take_up_to(Kind::Stream, UserId::new(1), 2).unwrap();
        let _b = open.take_up_to(Kind::Stream, UserId::new(1), 2).unwrap();
        assert!(open.take_up_to(Kind::Stream, UserId::new(1), 2).is_none());
        assert!(
            open.take_up_to(Kind::Stream, UserId::new(2), 2).is_some(),
            "another user"
        );
        assert!(
            open.take_up_to(Kind::Upload, UserId::new(1), 2).is_some(),
            "another kind"
        );
        drop(a);
        assert!(open.take_up_to(Kind::Stream, UserId::new(1), 2).is_some());
    }
}

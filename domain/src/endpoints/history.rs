//! An endpoint's history: what it did by itself (its scaler's and its canary's decisions, with the
//! figures they were made on) and what people changed in how it runs, one typed line each
//! (`contracts::scaling::EndpointEvent`), newest first on its page.

use contracts::error::AppError;
use contracts::ids::{EndpointId, UserId};
use contracts::scaling::{EndpointEvent, HistoryEntry};
use sqlx::{SqliteConnection, SqlitePool};

/// History lines an endpoint's page shows.
const HISTORY_SHOWN: i64 = 50;

/// Appends `event` to the endpoint's history, by `actor` (`None`: the endpoint itself).
pub(crate) async fn record(
    conn: &mut SqliteConnection,
    endpoint_id: EndpointId,
    actor: Option<UserId>,
    event: &EndpointEvent,
) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO endpoint_history (endpoint_id, at, actor_id, event) VALUES (?, ?, ?, ?)",
    )
    .bind(endpoint_id)
    .bind(crate::now())
    .bind(actor)
    .bind(sqlx::types::Json(event))
    .execute(conn)
    .await?;
    Ok(())
}

/// The endpoint's own history lines (its scaler's): a database too busy to take one is logged, not
/// fatal to scaling.
pub(crate) async fn record_quietly(db: &SqlitePool, endpoint_id: EndpointId, event: EndpointEvent) {
    let written = async {
        let mut conn = db.acquire().await?;
        record(&mut conn, endpoint_id, None, &event).await
    }
    .await;
    if let Err(e) = written {
        tracing::warn!(%endpoint_id, error = %e, "could not record a scaling decision");
    }
}

/// The endpoint's history, newest first.
pub(crate) async fn history(
    conn: &mut SqliteConnection,
    endpoint_id: EndpointId,
) -> Result<Vec<HistoryEntry>, AppError> {
    let rows: Vec<(String, Option<String>, sqlx::types::Json<EndpointEvent>)> = sqlx::query_as(
        "SELECT h.at, u.username, h.event FROM endpoint_history h LEFT JOIN users u ON u.id = h.actor_id
         WHERE h.endpoint_id = ? ORDER BY h.id DESC LIMIT ?",
    )
    .bind(endpoint_id)
    .bind(HISTORY_SHOWN)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(at, by, event)| HistoryEntry {
            at,
            by,
            event: event.0,
        })
        .collect())
}

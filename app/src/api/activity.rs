//! A workspace's activity log (the audit trail), newest first.

use contracts::ids::WorkspaceId;
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::AuditEntry;
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::audit};

/// `before` is an entry id, for paging.
#[server(prefix = "/rpc", endpoint = "list_activity")]
pub async fn list_activity(
    workspace_id: WorkspaceId,
    before: Option<i64>,
) -> Result<Vec<AuditEntry>, AppError> {
    as_caller(|s, a| async move { audit::list(&s.db, &a, workspace_id, before).await }).await
}

//! The caller's personal API tokens (for the REST API and the CLI).

use contracts::ids::TokenId;
use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::{ApiToken, NewApiToken, TokenScope};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, contracts::types::TokenRequest, domain::tokens};

#[server(prefix = "/rpc", endpoint = "list_tokens")]
pub async fn list_tokens() -> Result<Vec<ApiToken>, AppError> {
    as_caller(|s, a| async move { tokens::list(&s.db, &a).await }).await
}

/// The secret is in the answer once.
#[server(prefix = "/rpc", endpoint = "create_token")]
pub async fn create_token(
    name: String,
    scope: TokenScope,
    expires_in_days: u32,
) -> Result<NewApiToken, AppError> {
    let request = TokenRequest {
        name,
        scope,
        expires_in_days,
    };
    as_caller(|s, a| async move { tokens::create(&s.db, &a, &request).await }).await
}

#[server(prefix = "/rpc", endpoint = "revoke_token")]
pub async fn revoke_token(token_id: TokenId) -> Result<(), AppError> {
    as_caller(|s, a| async move { tokens::revoke(&s.db, &a, token_id).await }).await
}

//! Accounts and the session: the only server functions that run without a signed-in caller.

use leptos::prelude::*;

use contracts::error::AppError;
use contracts::types::Me;
#[cfg(feature = "ssr")]
use {
    crate::context::{self as ctx, respond},
    domain::{accounts, sessions},
};

/// The signed-in account, or `None`.
#[server(prefix = "/rpc", endpoint = "current_user")]
pub async fn current_user() -> Result<Option<Me>, AppError> {
    respond(async { Ok(ctx::maybe_actor().await?.map(|a| a.me())) }.await)
}

/// Creates an account and signs it in. The first account becomes the instance admin.
#[server(prefix = "/rpc", endpoint = "sign_up")]
pub async fn sign_up(username: String, password: String) -> Result<Me, AppError> {
    respond(
        async {
            let state = ctx::state()?;
            let ip = ctx::client_ip();
            let signed = accounts::sign_up(
                &state.db,
                &state.throttle,
                &username,
                &password,
                ip.as_deref(),
            )
            .await?;
            sessions::sign_in(&ctx::session()?, signed.me.id, signed.session_epoch).await?;
            Ok(signed.me)
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "sign_in")]
pub async fn sign_in(username: String, password: String) -> Result<Me, AppError> {
    respond(
        async {
            let state = ctx::state()?;
            let ip = ctx::client_ip();
            let signed = accounts::sign_in(
                &state.db,
                &state.throttle,
                &username,
                &password,
                ip.as_deref(),
            )
            .await?;
            sessions::sign_in(&ctx::session()?, signed.me.id, signed.session_epoch).await?;
            Ok(signed.me)
        }
        .await,
    )
}

#[server(prefix = "/rpc", endpoint = "sign_out")]
pub async fn sign_out() -> Result<(), AppError> {
    respond(async { sessions::sign_out(&ctx::session()?).await }.await)
}

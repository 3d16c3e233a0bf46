//! Accounts and the session: the only server functions that run without a signed-in caller.

use leptos::prelude::*;

use contracts::error::AppError;
use contracts::identity::ProviderButton;
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
    respond(enter(accounts::Door::SignUp, &username, &password).await)
}

#[server(prefix = "/rpc", endpoint = "sign_in")]
pub async fn sign_in(username: String, password: String) -> Result<Me, AppError> {
    respond(enter(accounts::Door::SignIn, &username, &password).await)
}

/// Signs up or in through `door`, into this request's session.
#[cfg(feature = "ssr")]
async fn enter(door: accounts::Door, username: &str, password: &str) -> Result<Me, AppError> {
    let (state, ip) = (ctx::state()?, ctx::client_ip());
    let attempt = accounts::Attempt {
        username,
        password,
        ip: ip.as_deref(),
    };
    accounts::enter(&state, &ctx::session()?, door, attempt).await
}

#[server(prefix = "/rpc", endpoint = "sign_out")]
pub async fn sign_out() -> Result<(), AppError> {
    respond(async { sessions::sign_out(&ctx::session()?).await }.await)
}

/// The company sign-in providers the sign-in page offers (enabled ones only).
#[server(prefix = "/rpc", endpoint = "sign_in_providers")]
pub async fn sign_in_providers() -> Result<Vec<ProviderButton>, AppError> {
    respond(async { domain::identity::providers::buttons(&ctx::state()?.db).await }.await)
}

/// Signs in through the LDAP / Active Directory provider `provider`, into this request's session.
#[server(prefix = "/rpc", endpoint = "directory_sign_in")]
pub async fn directory_sign_in(
    provider: String,
    username: String,
    password: String,
) -> Result<Me, AppError> {
    respond(
        async {
            let (state, ip) = (ctx::state()?, ctx::client_ip());
            domain::identity::ldap::enter(
                &state,
                &ctx::session()?,
                &provider,
                &username,
                &password,
                ip.as_deref(),
            )
            .await
        }
        .await,
    )
}

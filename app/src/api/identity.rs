//! Company sign-in for instance admins: identity providers, their group mappings, "test this
//! provider", and who may still sign in with a password. The sign-in page's own calls are in
//! [`super::accounts`].

use leptos::prelude::*;

use contracts::error::AppError;
use contracts::identity::{
    CheckOutcome, GroupMapping, MappingId, MappingInput, Provider, ProviderId, ProviderInput,
};
#[cfg(feature = "ssr")]
use {crate::context::as_caller, domain::identity::providers};

#[server(prefix = "/rpc", endpoint = "list_providers")]
pub async fn list_providers() -> Result<Vec<Provider>, AppError> {
    as_caller(|s, a| async move { providers::list(&s.db, &a).await }).await
}

#[server(prefix = "/rpc", endpoint = "create_provider", input = leptos::server_fn::codec::Json)]
pub async fn create_provider(input: ProviderInput) -> Result<Provider, AppError> {
    as_caller(|s, a| async move { providers::create(&s.db, &a, input).await }).await
}

#[server(prefix = "/rpc", endpoint = "delete_provider")]
pub async fn delete_provider(provider_id: ProviderId) -> Result<(), AppError> {
    as_caller(|s, a| async move { providers::delete(&s.db, &a, provider_id).await }).await
}

#[server(prefix = "/rpc", endpoint = "add_group_mapping", input = leptos::server_fn::codec::Json)]
pub async fn add_group_mapping(
    provider_id: ProviderId,
    input: MappingInput,
) -> Result<GroupMapping, AppError> {
    as_caller(|s, a| async move { providers::add_mapping(&s.db, &a, provider_id, input).await })
        .await
}

#[server(prefix = "/rpc", endpoint = "remove_group_mapping")]
pub async fn remove_group_mapping(
    provider_id: ProviderId,
    mapping_id: MappingId,
) -> Result<(), AppError> {
    as_caller(
        |s, a| async move { providers::remove_mapping(&s.db, &a, provider_id, mapping_id).await },
    )
    .await
}

#[server(prefix = "/rpc", endpoint = "check_provider")]
pub async fn check_provider(
    provider_id: ProviderId,
    username: String,
) -> Result<Vec<CheckOutcome>, AppError> {
    let request = contracts::identity::CheckRequest {
        username: Some(username).filter(|u| !u.trim().is_empty()),
    };
    as_caller(
        |s, a| async move { providers::check_provider(&s.db, &a, provider_id, request).await },
    )
    .await
}

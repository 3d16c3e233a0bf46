//! Sign-in through an OpenID Connect provider (`openidconnect`): the authorization-code flow with
//! PKCE. [`start`] reads the provider's discovery document and makes the `state`, `nonce` and PKCE
//! verifier, which the caller keeps in the browser's server-side session ([`Pending`]), never in the
//! URL or a cookie of their own; [`finish`] takes them back out once (a replayed or foreign `state`
//! finds nothing), exchanges the code, and checks the ID token's signature against the provider's
//! keys, its issuer, audience, nonce and expiry (a minute of leeway for clocks). A token signed with a
//! key the cached key set lacks makes it fetch the keys again, once. Groups come from the ID token's
//! claim, or else from userinfo (whose `sub` must be the token's).
//!
//! The HTTP client follows no redirects (a discovery or token endpoint that redirects could send the
//! client secret elsewhere) and gives up after [`TIMEOUT`].

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, IssuerUrl,
    Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    SignatureVerificationError, TokenResponse,
};
use serde::{Deserialize, Serialize};

use contracts::error::{AppError, ErrorCode};
use contracts::identity::{OidcSettings, ProviderKind, ProviderSettings};

use super::{Identity, ProviderRow};
use crate::accounts::SignedIn;

/// How long one request to the provider may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a sign-in may take between [`start`] and [`finish`] (the provider's pages in between).
pub const PENDING_FOR: Duration = Duration::from_secs(600);
/// Clock difference allowed when checking an ID token's expiry.
const LEEWAY: chrono::Duration = chrono::Duration::seconds(60);
/// How long a provider's discovery document and keys are reused.
const METADATA_FOR: Duration = Duration::from_secs(600);
/// The largest userinfo answer read.
const MAX_USERINFO: usize = 256 * 1024;

/// A sign-in under way: what [`finish`] needs, kept in the browser's session between the two.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    pub provider: String,
    state: String,
    nonce: String,
    verifier: String,
    /// Where to go once signed in (a path of this site).
    pub next: String,
    /// Unix seconds at [`start`].
    started: i64,
}

/// What the provider sent back to the redirect URI.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The provider's own refusal (`access_denied`, …).
    pub error: Option<String>,
}

fn client() -> Result<reqwest::Client, AppError> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let built = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| contracts::error::internal("OIDC HTTP client", e))?;
    Ok(CLIENT.get_or_init(|| built).clone())
}

fn settings_of(provider: &ProviderRow) -> Result<OidcSettings, AppError> {
    match provider.settings()? {
        ProviderSettings::Oidc(s) => Ok(s),
        ProviderSettings::Ldap(_) => Err(contracts::error::internal(
            "provider kind",
            "an LDAP provider used as OIDC",
        )),
    }
}

fn down(what: &str, e: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %e, "OIDC: {what} failed");
    AppError::unavailable(
        ErrorCode::IdentityProviderUnavailable,
        format!("the identity provider could not be used ({what} failed)"),
    )
}

fn token_invalid(why: impl std::fmt::Display) -> AppError {
    AppError::denied(
        ErrorCode::IdTokenInvalid,
        format!("the ID token was refused: {why}"),
    )
}

fn expired() -> AppError {
    AppError::denied(
        ErrorCode::SignInExpired,
        "this sign-in was not started here, was already used, or took too long; start again",
    )
}

/// The provider's discovery document with its key set, from the cache unless `fresh`.
async fn metadata(settings: &OidcSettings, fresh: bool) -> Result<CoreProviderMetadata, AppError> {
    type Cache = Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = settings.issuer.clone();
    if !fresh {
        let hit = cache.lock().ok().and_then(|c| {
            c.get(&key)
                .filter(|(at, _)| at.elapsed() < METADATA_FOR)
                .map(|(_, m)| m.clone())
        });
        if let Some(m) = hit {
            return Ok(m);
        }
    }
    let issuer =
        IssuerUrl::new(settings.issuer.clone()).map_err(|e| down("reading the issuer URL", e))?;
    let found = CoreProviderMetadata::discover_async(issuer, &client()?)
        .await
        .map_err(|e| down("discovery", e))?;
    if let Ok(mut c) = cache.lock() {
        c.insert(key, (Instant::now(), found.clone()));
    }
    Ok(found)
}

/// Where to send the browser to sign in through the OIDC provider `name`, and what to keep until
/// it comes back. `redirect_uri` is this server's callback for the provider (registered there).
pub async fn start(
    db: &sqlx::SqlitePool,
    name: &str,
    redirect_uri: &str,
    next: &str,
    ip: Option<&str>,
) -> Result<(String, Pending), AppError> {
    let provider = super::enabled(db, name, ProviderKind::Oidc).await?;
    match begin(&provider, redirect_uri, next).await {
        Ok(started) => Ok(started),
        Err(e) => Err(super::refused(db, &provider, "", ip, e).await),
    }
}

async fn begin(
    provider: &ProviderRow,
    redirect_uri: &str,
    next: &str,
) -> Result<(String, Pending), AppError> {
    let settings = settings_of(provider)?;
    let meta = metadata(&settings, false).await?;
    let redirect = RedirectUrl::new(redirect_uri.to_string())
        .map_err(|e| contracts::error::internal("redirect URI", e))?;
    let client =
        CoreClient::from_provider_metadata(meta, ClientId::new(settings.client_id.clone()), None)
            .set_redirect_uri(redirect);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .set_pkce_challenge(challenge);
    for scope in &settings.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state, nonce) = request.url();
    let pending = Pending {
        provider: provider.name.clone(),
        state: state.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
        next: next.to_string(),
        started: chrono::Utc::now().timestamp(),
    };
    Ok((url.to_string(), pending))
}

/// Ends a sign-in through the OIDC provider `name`: `pending` is what [`start`] left in this
/// browser's session (taken out by the caller whatever happens, so a `state` works once). Every
/// refusal is audited.
pub async fn finish(
    db: &sqlx::SqlitePool,
    name: &str,
    pending: Option<Pending>,
    callback: &Callback,
    redirect_uri: &str,
    ip: Option<&str>,
) -> Result<(SignedIn, String), AppError> {
    let provider = super::enabled(db, name, ProviderKind::Oidc).await?;
    match complete(&provider, pending, callback, redirect_uri).await {
        Ok((identity, next)) => Ok((super::admit(db, &provider, &identity, ip).await?, next)),
        Err((who, e)) => Err(super::refused(db, &provider, &who, ip, e).await),
    }
}

/// The identity the callback proves, or the error with whom it concerned (the token's subject when
/// it got that far).
async fn complete(
    provider: &ProviderRow,
    pending: Option<Pending>,
    callback: &Callback,
    redirect_uri: &str,
) -> Result<(Identity, String), (String, AppError)> {
    let none = |e| (String::new(), e);
    // The state first: without the one this browser started, nothing else is looked at.
    let pending = pending
        .filter(|p| p.provider == provider.name)
        .filter(|p| {
            let given = callback.state.as_deref().unwrap_or("");
            bool::from(subtle::ConstantTimeEq::ct_eq(
                given.as_bytes(),
                p.state.as_bytes(),
            ))
        })
        .filter(|p| chrono::Utc::now().timestamp() - p.started <= PENDING_FOR.as_secs() as i64)
        .ok_or_else(|| none(expired()))?;
    if let Some(error) = &callback.error {
        let said: String = error
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(64)
            .collect();
        return Err(none(AppError::denied(
            ErrorCode::IdTokenInvalid,
            format!("the provider refused the sign-in ({said})"),
        )));
    }
    let code = callback
        .code
        .clone()
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or_else(|| none(token_invalid("no authorization code")))?;
    let settings = settings_of(provider).map_err(none)?;
    let secret = provider.secret().map_err(none)?.unwrap_or_default();
    let redirect = RedirectUrl::new(redirect_uri.to_string())
        .map_err(|e| none(contracts::error::internal("redirect URI", e)))?;
    let meta = metadata(&settings, false).await.map_err(none)?;
    let userinfo_url = meta.userinfo_endpoint().map(|u| u.url().clone());
    let oidc = CoreClient::from_provider_metadata(
        meta,
        ClientId::new(settings.client_id.clone()),
        Some(ClientSecret::new(secret.clone())),
    )
    .set_redirect_uri(redirect.clone());
    let http = client().map_err(none)?;
    let tokens = oidc
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| none(down("the token request", e)))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
        .request_async(&http)
        .await
        .map_err(|e| none(token_exchange_error(e)))?;
    let id_token = tokens
        .id_token()
        .ok_or_else(|| none(token_invalid("the provider sent no ID token")))?;
    let nonce = Nonce::new(pending.nonce.clone());
    let leeway = || chrono::Utc::now() - LEEWAY;
    let verified = {
        let verifier = oidc.id_token_verifier().set_time_fn(leeway);
        match id_token.claims(&verifier, &nonce) {
            Ok(c) => Ok(c.clone()),
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => Err(None),
            Err(e) => Err(Some(e)),
        }
    };
    let claims = match verified {
        Ok(c) => c,
        // A key this server has not seen: the provider may have rotated its keys. Read them again,
        // once, and check with those.
        Err(None) => {
            let fresh = metadata(&settings, true).await.map_err(none)?;
            let again = CoreClient::from_provider_metadata(
                fresh,
                ClientId::new(settings.client_id.clone()),
                Some(ClientSecret::new(secret)),
            )
            .set_redirect_uri(redirect);
            let verifier = again.id_token_verifier().set_time_fn(leeway);
            id_token
                .claims(&verifier, &nonce)
                .cloned()
                .map_err(|e| none(token_invalid(e)))?
        }
        Err(Some(e)) => return Err(none(token_invalid(e))),
    };
    let subject = claims.subject().to_string();
    let with_who = |e| (subject.clone(), e);
    // The verified token's own payload, for the claims the standard set does not name (groups).
    let mut extra = payload(&id_token.to_string()).unwrap_or_default();
    let wants_userinfo = [
        settings.groups_claim.as_str(),
        settings.username_claim.as_str(),
        "email",
    ]
    .iter()
    .any(|c| !extra.contains_key(*c));
    if wants_userinfo {
        if let Some(url) = userinfo_url {
            let info = userinfo(&http, url, tokens.access_token().secret())
                .await
                .map_err(with_who)?;
            if info.get("sub").and_then(|s| s.as_str()) != Some(subject.as_str()) {
                return Err(with_who(token_invalid("userinfo is about another subject")));
            }
            for (k, v) in info {
                extra.entry(k).or_insert(v);
            }
        }
    }
    let text = |claim: &str| {
        extra
            .get(claim)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let email = claims
        .email()
        .map(|e| e.to_string())
        .or_else(|| text("email"));
    let email_verified = claims
        .email_verified()
        .or_else(|| extra.get("email_verified").and_then(|v| v.as_bool()))
        .unwrap_or(false);
    let username = text(&settings.username_claim)
        .or_else(|| claims.preferred_username().map(|u| u.to_string()))
        .unwrap_or_default();
    let groups = groups_in(extra.get(&settings.groups_claim));
    Ok((
        Identity {
            subject,
            username,
            email,
            email_verified,
            groups,
        },
        pending.next,
    ))
}

/// A failed token request: the provider down, or its refusal of the code (reused, expired, not
/// ours), which is the sign-in's fault, not the provider's.
fn token_exchange_error<E: std::error::Error>(
    e: openidconnect::RequestTokenError<
        E,
        openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    >,
) -> AppError {
    match e {
        openidconnect::RequestTokenError::ServerResponse(r) => {
            token_invalid(format!("the provider refused the code ({})", r.error()))
        }
        other => down("the token request", other),
    }
}

/// The claims of a JWT's payload (already verified by the caller).
fn payload(jwt: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    use base64::Engine;
    let part = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A groups claim's names: a list of strings (or one string), bounded.
fn groups_in(value: Option<&serde_json::Value>) -> BTreeSet<String> {
    let ok = |s: &str| !s.is_empty() && s.len() <= contracts::identity::MAX_GROUP_LEN;
    match value {
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .filter_map(|v| v.as_str())
            .filter(|s| ok(s))
            .take(512)
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::String(s)) if ok(s) => BTreeSet::from([s.clone()]),
        _ => BTreeSet::new(),
    }
}

async fn userinfo(
    http: &reqwest::Client,
    url: openidconnect::url::Url,
    access_token: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, AppError> {
    let response = http
        .get(url)
        .bearer_auth(access_token)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| down("the userinfo request", e))?;
    if !response.status().is_success() {
        return Err(down("the userinfo request", response.status()));
    }
    if response
        .content_length()
        .is_some_and(|n| n as usize > MAX_USERINFO)
    {
        return Err(down("the userinfo request", "an answer too large"));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| down("the userinfo request", e))?;
    if body.len() > MAX_USERINFO {
        return Err(down("the userinfo request", "an answer too large"));
    }
    serde_json::from_slice(&body).map_err(|e| down("reading userinfo (JSON expected)", e))
}

/// "Test this provider": the discovery document (naming this issuer) and the signing keys.
pub async fn check(settings: &OidcSettings) -> Vec<contracts::identity::CheckOutcome> {
    use contracts::identity::{CheckOutcome, CheckStep};
    match metadata(settings, true).await {
        Ok(meta) => {
            let keys = meta.jwks().keys().len();
            vec![
                CheckOutcome {
                    step: CheckStep::Discovery,
                    ok: true,
                    detail: format!("issuer {}", meta.issuer().as_str()),
                    code: None,
                    groups: vec![],
                },
                CheckOutcome {
                    step: CheckStep::Keys,
                    ok: keys > 0,
                    detail: format!("{keys} signing keys"),
                    code: (keys == 0).then_some(ErrorCode::IdentityProviderUnavailable),
                    groups: vec![],
                },
            ]
        }
        Err(e) => vec![CheckOutcome {
            step: CheckStep::Discovery,
            ok: false,
            detail: e.to_string(),
            code: Some(e.code()),
            groups: vec![],
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_strings_bounded() {
        let v = serde_json::json!(["nlp", "", 3, "x".repeat(600), "ops"]);
        assert_eq!(
            groups_in(Some(&v)),
            BTreeSet::from(["nlp".into(), "ops".into()])
        );
        assert_eq!(
            groups_in(Some(&serde_json::json!("one"))),
            BTreeSet::from(["one".into()])
        );
        assert!(groups_in(Some(&serde_json::json!({"a": 1}))).is_empty());
        assert!(groups_in(None).is_empty());
    }
}

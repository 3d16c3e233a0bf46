//! Sign-in against an LDAP directory or Active Directory (`ldap3`): the service account binds and
//! searches for the person by the name they typed (escaped into the filter, so `*)(uid=*` is a name,
//! not a query), then a second connection binds as the entry found with the password they typed. An
//! empty password is refused before anything is sent: LDAP treats a bind with a name and no password
//! as anonymous, and an anonymous bind "succeeds". Every connection is TLS (StartTLS on `ldap://`,
//! or `ldaps://`) verified against the system's roots and the provider's own CA, except a plain
//! `ldap://` to a loopback address an admin chose (checked in [`super::providers`]).
//!
//! The directory is asked again while people stay signed in ([`recheck`]): their groups are applied
//! anew, and a person whose entry is gone stops being vouched for at once.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, LdapError, Scope, SearchEntry};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use contracts::error::{AppError, ErrorCode};
use contracts::identity::{
    CheckOutcome, CheckStep, LdapGroups, LdapSettings, ProviderKind, ProviderSettings,
    MAX_GROUP_LEN,
};

use super::{Identity, ProviderRow};
use crate::accounts::SignedIn;
use crate::throttle::{self, Throttle};

/// How long a connection, a bind or a search may take: a directory that does not answer is down.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most groups one person's sign-in reads (nested ones included); beyond, the rest are ignored
/// and the log says so.
const MAX_GROUPS: usize = 512;
/// How deep nested `memberOf` groups are followed.
const MAX_NESTING: usize = 8;
/// The longest name accepted at the sign-in form.
const MAX_NAME: usize = 256;
/// LDAP result codes this module tells apart.
const INVALID_CREDENTIALS: u32 = 49;
const NO_SUCH_OBJECT: u32 = 32;

/// Signs `username` in through the LDAP provider `name`, under the same failed-sign-in budgets as
/// passwords. Every refusal is audited ([`super::refused`]).
pub async fn sign_in(
    db: &sqlx::SqlitePool,
    throttle: &Throttle,
    name: &str,
    username: &str,
    password: &str,
    ip: Option<&str>,
) -> Result<SignedIn, AppError> {
    let provider = super::enabled(db, name, ProviderKind::Ldap).await?;
    let key = format!("{}:{}", provider.name, username.trim().to_lowercase());
    let budgets = throttle::sign_in_keys(&key, ip);
    let ticket = throttle
        .take(&budgets)
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
    let identity = match authenticate(&provider, username, password).await {
        Ok(identity) => identity,
        Err(e) => return Err(super::refused(db, &provider, username, ip, e).await),
    };
    throttle.give_back(ticket, |_| true);
    throttle.forget(&budgets[0].0);
    super::admit(db, &provider, &identity, ip).await
}

/// [`sign_in`], then binds `session` to the account: the one way in through a directory for both the
/// dashboard and the REST API (as `accounts::enter` is for passwords).
pub async fn enter(
    state: &crate::AppState,
    session: &crate::sessions::Session,
    name: &str,
    username: &str,
    password: &str,
    ip: Option<&str>,
) -> Result<contracts::types::Me, AppError> {
    let signed = sign_in(&state.db, &state.throttle, name, username, password, ip).await?;
    crate::sessions::sign_in(session, signed.me.id, signed.session_epoch).await?;
    Ok(signed.me)
}

/// The settings of an LDAP provider row.
fn settings_of(provider: &ProviderRow) -> Result<LdapSettings, AppError> {
    match provider.settings()? {
        ProviderSettings::Ldap(s) => Ok(s),
        ProviderSettings::Oidc(_) => Err(contracts::error::internal(
            "provider kind",
            "an OIDC provider used as LDAP",
        )),
    }
}

/// Who `username` is, proved by `password`.
async fn authenticate(
    provider: &ProviderRow,
    username: &str,
    password: &str,
) -> Result<Identity, AppError> {
    let username = username.trim();
    if username.is_empty()
        || username.chars().count() > MAX_NAME
        || username.chars().any(char::is_control)
    {
        return Err(AppError::InvalidCredentials);
    }
    if password.is_empty() {
        return Err(AppError::invalid(
            "password",
            ErrorCode::PasswordRequired,
            "a password is required (an empty one would be an anonymous bind)",
        ));
    }
    let settings = settings_of(provider)?;
    let secret = provider.secret()?.unwrap_or_default();
    let mut service = connect(&settings).await?;
    bind_service(&mut service, &settings, &secret).await?;
    let entry = find_person(&mut service, &settings, username)
        .await?
        .ok_or(AppError::InvalidCredentials)?;
    // The person's own bind, on a connection of its own: the service connection keeps its rights.
    let mut own = connect(&settings).await?;
    match own
        .simple_bind(&entry.dn, password)
        .await
        .map(|r| r.success())
    {
        Ok(Ok(_)) => {}
        Ok(Err(LdapError::LdapResult { result })) if result.rc == INVALID_CREDENTIALS => {
            return Err(AppError::InvalidCredentials)
        }
        Ok(Err(e)) | Err(e) => return Err(down("the person's bind", e)),
    }
    let _ = own.unbind().await;
    let groups = groups_of(&mut service, &settings, &entry).await?;
    let _ = service.unbind().await;
    Ok(identity_of(&settings, entry, groups))
}

fn identity_of(settings: &LdapSettings, entry: SearchEntry, groups: BTreeSet<String>) -> Identity {
    let email = first(&entry, &settings.email_attribute);
    Identity {
        username: first(&entry, &settings.username_attribute).unwrap_or_default(),
        email_verified: email.is_some(),
        email,
        subject: entry.dn,
        groups,
    }
}

/// The first value of `attribute` (names compared without case, as LDAP does).
fn first(entry: &SearchEntry, attribute: &str) -> Option<String> {
    values(entry, attribute).into_iter().next()
}

fn values(entry: &SearchEntry, attribute: &str) -> Vec<String> {
    entry
        .attrs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(attribute))
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// An error that says the directory could not be used (down, TLS, a refused service bind): logged in
/// full, said to the person as "unavailable".
fn down(what: &str, e: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %e, "LDAP: {what} failed");
    AppError::unavailable(
        ErrorCode::IdentityProviderUnavailable,
        format!("the directory could not be used ({what} failed)"),
    )
}

/// A connection with TLS as the settings say, its driver running beside it.
async fn connect(settings: &LdapSettings) -> Result<Ldap, AppError> {
    let ldaps = settings.url.starts_with("ldaps://");
    let conn_settings = LdapConnSettings::new()
        .set_conn_timeout(TIMEOUT)
        .set_config(tls_config(settings.ca_pem.as_deref())?)
        .set_starttls(settings.starttls && !ldaps);
    let (conn, mut ldap) = LdapConnAsync::with_settings(conn_settings, &settings.url)
        .await
        .map_err(|e| down("connecting (TLS included)", e))?;
    tokio::spawn(async move {
        if let Err(e) = conn.drive().await {
            tracing::debug!(error = %e, "LDAP connection ended");
        }
    });
    ldap.with_timeout(TIMEOUT);
    Ok(ldap)
}

/// The system's roots (read once) and the provider's CA certificates.
pub(crate) fn tls_config(ca_pem: Option<&str>) -> Result<Arc<ClientConfig>, AppError> {
    static SYSTEM: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    let system = SYSTEM.get_or_init(|| rustls_native_certs::load_native_certs().certs);
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(system.iter().cloned());
    for cert in ca_certificates(ca_pem.unwrap_or(""))? {
        roots
            .add(cert)
            .map_err(|e| invalid_ca(format!("a certificate is not usable as a CA: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| contracts::error::internal("TLS versions", e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The certificates of a PEM text (none for an empty one).
pub(crate) fn ca_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, AppError> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid_ca(format!("not PEM certificates: {e}")))
}

fn invalid_ca(why: String) -> AppError {
    AppError::invalid(
        "settings.ldap.ca_pem",
        ErrorCode::IdentityProviderInvalid,
        why,
    )
}

async fn bind_service(
    ldap: &mut Ldap,
    settings: &LdapSettings,
    secret: &str,
) -> Result<(), AppError> {
    if secret.is_empty() {
        return Err(down("the service bind", "no service password is set"));
    }
    ldap.simple_bind(&settings.bind_dn, secret)
        .await
        .and_then(|r| r.success())
        .map(drop)
        .map_err(|e| down("the service bind", e))
}

/// The one entry the user filter finds for `username`; none when there is no such person or the
/// filter finds several (a name must say who it is).
async fn find_person(
    ldap: &mut Ldap,
    settings: &LdapSettings,
    username: &str,
) -> Result<Option<SearchEntry>, AppError> {
    let filter = settings
        .user_filter
        .replace("{username}", &ldap3::ldap_escape(username));
    let attrs = [
        settings.username_attribute.as_str(),
        settings.email_attribute.as_str(),
        "memberOf",
    ];
    let (found, _) = ldap
        .search(&settings.user_base, Scope::Subtree, &filter, attrs.to_vec())
        .await
        .and_then(|r| r.success())
        .map_err(|e| down("the search for the person", e))?;
    if found.len() > 1 {
        tracing::warn!(
            count = found.len(),
            "LDAP: the user filter found several entries for one name"
        );
        return Ok(None);
    }
    Ok(found.into_iter().next().map(SearchEntry::construct))
}

/// The names of the person's groups, by the provider's group style.
async fn groups_of(
    ldap: &mut Ldap,
    settings: &LdapSettings,
    person: &SearchEntry,
) -> Result<BTreeSet<String>, AppError> {
    let mut names = BTreeSet::new();
    match &settings.groups {
        LdapGroups::MemberAttribute { base } => {
            let filter = format!(
                "(&(objectClass=groupOfNames)(member={}))",
                ldap3::ldap_escape(&person.dn)
            );
            let (found, _) = ldap
                .search(base, Scope::Subtree, &filter, vec!["cn"])
                .await
                .and_then(|r| r.success())
                .map_err(|e| down("the group search", e))?;
            for entry in found.into_iter().take(MAX_GROUPS) {
                names.extend(first(&SearchEntry::construct(entry), "cn"));
            }
        }
        LdapGroups::MemberOf { nested } => {
            let mut seen: BTreeSet<String> = BTreeSet::new();
            let mut level: Vec<String> = values(person, "memberOf");
            for depth in 0..=MAX_NESTING {
                let mut next = Vec::new();
                for dn in level {
                    if seen.len() >= MAX_GROUPS {
                        tracing::warn!(person = %person.dn, "LDAP: more groups than are read");
                        break;
                    }
                    if !seen.insert(dn.clone()) {
                        continue;
                    }
                    if *nested && depth < MAX_NESTING {
                        next.extend(memberships_of_group(ldap, &dn).await?);
                    }
                }
                if next.is_empty() {
                    break;
                }
                level = next;
            }
            names.extend(seen.iter().filter_map(|dn| group_name(dn)));
        }
    }
    names.retain(|n| !n.is_empty() && n.len() <= MAX_GROUP_LEN);
    Ok(names)
}

/// The groups a group is a member of (its own `memberOf`).
async fn memberships_of_group(ldap: &mut Ldap, dn: &str) -> Result<Vec<String>, AppError> {
    match ldap
        .search(dn, Scope::Base, "(objectClass=*)", vec!["memberOf"])
        .await
        .and_then(|r| r.success())
    {
        Ok((found, _)) => Ok(found
            .into_iter()
            .next()
            .map(|e| values(&SearchEntry::construct(e), "memberOf"))
            .unwrap_or_default()),
        // A group the service may not read, or gone since: no parents known.
        Err(LdapError::LdapResult { result }) if result.rc == NO_SUCH_OBJECT => Ok(Vec::new()),
        Err(e) => Err(down("reading a group's groups", e)),
    }
}

/// A group's name from its DN: the value of the first RDN (`cn=nlp\,team,ou=groups,…` → `nlp,team`).
pub(crate) fn group_name(dn: &str) -> Option<String> {
    let (_, rest) = dn.split_once('=')?;
    let mut name = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.extend(chars.next()),
            ',' | '+' => break,
            c => name.push(c),
        }
    }
    Some(name.trim().to_string())
}

/// How often signed-in people's entries are read again (and the least time between two reads of one).
pub const RECHECK_PERIOD: Duration = Duration::from_secs(300);

/// Reads again, from the directory, every LDAP identity last checked more than `older_than` ago:
/// its groups applied anew (grants audited as at sign-in), its check renewed; an entry the directory
/// no longer has stops being vouched for at once (`identity.gone` in the audit log). A directory
/// that cannot be reached changes nothing: the identities' `max_age_secs` bounds how long they last.
/// Returns how many identities were read.
pub async fn recheck(db: &sqlx::SqlitePool, older_than: Duration) -> Result<usize, AppError> {
    let sql = format!(
        "SELECT {} FROM identity_providers WHERE kind = 'ldap' AND enabled",
        ProviderRow::COLUMNS
    );
    let providers = sqlx::query_as::<_, ProviderRow>(&sql).fetch_all(db).await?;
    let mut read = 0;
    for provider in providers {
        let due: Vec<String> = sqlx::query_scalar(
            "SELECT subject FROM user_identities
             WHERE provider_id = ? AND verified_at > 0 AND verified_at <= unixepoch() - ?",
        )
        .bind(provider.id)
        .bind(older_than.as_secs() as i64)
        .fetch_all(db)
        .await?;
        if due.is_empty() {
            continue;
        }
        match recheck_provider(db, &provider, &due).await {
            Ok(n) => read += n,
            Err(e) => {
                tracing::warn!(provider = %provider.name, error = %e, "LDAP re-check skipped")
            }
        }
    }
    Ok(read)
}

async fn recheck_provider(
    db: &sqlx::SqlitePool,
    provider: &ProviderRow,
    subjects: &[String],
) -> Result<usize, AppError> {
    let settings = settings_of(provider)?;
    let mut ldap = connect(&settings).await?;
    bind_service(
        &mut ldap,
        &settings,
        &provider.secret()?.unwrap_or_default(),
    )
    .await?;
    let attrs = [
        settings.username_attribute.as_str(),
        settings.email_attribute.as_str(),
        "memberOf",
    ];
    for dn in subjects {
        let found = match ldap
            .search(dn, Scope::Base, "(objectClass=*)", attrs.to_vec())
            .await
            .and_then(|r| r.success())
        {
            Ok((found, _)) => found.into_iter().next().map(SearchEntry::construct),
            Err(LdapError::LdapResult { result }) if result.rc == NO_SUCH_OBJECT => None,
            Err(e) => return Err(down("the re-check search", e)),
        };
        match found {
            Some(entry) => {
                let groups = groups_of(&mut ldap, &settings, &entry).await?;
                super::recheck_identity(db, provider, &identity_of(&settings, entry, groups))
                    .await?;
            }
            None => super::gone(db, provider, dn).await?,
        }
    }
    let _ = ldap.unbind().await;
    Ok(subjects.len())
}

/// Runs [`recheck`] every [`RECHECK_PERIOD`], forever; the server runs it beside the listener.
pub async fn recheck_forever(db: sqlx::SqlitePool) {
    let mut tick = tokio::time::interval(RECHECK_PERIOD);
    loop {
        tick.tick().await;
        if let Err(e) = recheck(&db, RECHECK_PERIOD).await {
            tracing::warn!(error = %e, "LDAP re-check failed");
        }
    }
}

/// "Test this provider": connect, bind as the service, and with a username, find the person and
/// their groups. Each step says whether it passed; the first failure ends the run.
pub async fn check(
    settings: &LdapSettings,
    secret: &str,
    username: Option<&str>,
) -> Vec<CheckOutcome> {
    let mut steps = Vec::new();
    let mut say = |step, result: Result<String, AppError>, groups: Vec<String>| {
        let ok = result.is_ok();
        let code = result.as_ref().err().map(AppError::code);
        steps.push(CheckOutcome {
            step,
            ok,
            detail: result.unwrap_or_else(|e| e.to_string()),
            code,
            groups,
        });
        ok
    };
    let mut ldap = match connect(settings).await {
        Ok(l) => l,
        Err(e) => {
            say(CheckStep::Connect, Err(e), vec![]);
            return steps;
        }
    };
    let tls = if settings.url.starts_with("ldaps://") {
        "TLS (ldaps)"
    } else if settings.starttls {
        "StartTLS"
    } else {
        "no TLS (loopback)"
    };
    say(
        CheckStep::Connect,
        Ok(format!("connected to {} with {tls}", settings.url)),
        vec![],
    );
    let bound = bind_service(&mut ldap, settings, secret).await;
    if !say(
        CheckStep::Bind,
        bound.map(|_| format!("bound as {}", settings.bind_dn)),
        vec![],
    ) {
        return steps;
    }
    if let Some(username) = username.map(str::trim).filter(|u| !u.is_empty()) {
        let person = find_person(&mut ldap, settings, username).await;
        let person = match person {
            Ok(Some(p)) => {
                say(CheckStep::Search, Ok(format!("found {}", p.dn)), vec![]);
                p
            }
            Ok(None) => {
                say(
                    CheckStep::Search,
                    Err(AppError::invalid(
                        "username",
                        ErrorCode::IdentityProviderInvalid,
                        format!("the user filter finds no single entry for {username:?}"),
                    )),
                    vec![],
                );
                return steps;
            }
            Err(e) => {
                say(CheckStep::Search, Err(e), vec![]);
                return steps;
            }
        };
        match groups_of(&mut ldap, settings, &person).await {
            Ok(groups) => {
                let list: Vec<String> = groups.into_iter().collect();
                say(
                    CheckStep::Groups,
                    Ok(format!("{} groups", list.len())),
                    list,
                )
            }
            Err(e) => say(CheckStep::Groups, Err(e), vec![]),
        };
    }
    let _ = ldap.unbind().await;
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_come_from_the_first_rdn() {
        assert_eq!(
            group_name("cn=nlp-team,ou=groups,dc=x").as_deref(),
            Some("nlp-team")
        );
        assert_eq!(
            group_name("CN=NLP\\, Beijing,OU=Groups,DC=corp").as_deref(),
            Some("NLP, Beijing")
        );
        assert_eq!(group_name("cn=a+ou=b,dc=x").as_deref(), Some("a"));
        assert_eq!(group_name("no rdn"), None);
    }

    #[test]
    fn a_ca_that_is_not_pem_is_refused_at_its_field() {
        let e = tls_config(Some(
            "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        ))
        .unwrap_err();
        assert_eq!(e.field(), Some("settings.ldap.ca_pem"));
        assert!(tls_config(None).is_ok());
    }
}

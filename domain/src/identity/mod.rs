//! Company sign-in: identity providers beside passwords. A provider (OpenID Connect: [`oidc`], LDAP /
//! Active Directory: [`ldap`]) proves who someone is and says which groups they are in; this module
//! turns that [`Identity`] into an account and its access, the same way for every provider:
//!
//! - **Which account.** The identity already linked (provider, subject); else an existing account an
//!   admin marked for linking with this e-mail (`users.link_email`, used once, and only when the
//!   provider says the e-mail is verified); else a new account when the provider may create them;
//!   else refused (`account_not_provisioned`). A disabled account is refused.
//! - **Which access.** The provider's group mappings are applied at every sign-in: the memberships
//!   and the admin flag that *mappings* granted follow the groups (added, changed, taken away);
//!   memberships a person added by hand are left as they are.
//! - **For how long.** An account with a company identity is only as good as its last check: its
//!   sessions and API tokens stop working `max_age_secs` after the last sign-in through the provider
//!   (or, for LDAP, the last directory re-check, [`ldap::recheck`], which also applies group changes
//!   to people who stay signed in). A person the directory no longer knows loses access at the next
//!   re-check ([`auth`](crate::auth) reads [`VOUCHED`]).
//!
//! Every sign-in, link, grant change and refusal is in the audit log; a refusal creates nothing.

pub mod ldap;
pub mod oidc;
pub mod providers;

use std::collections::{BTreeMap, BTreeSet};

use contracts::error::{AppError, ErrorCode};
use contracts::identity::{ProviderId, ProviderKind, ProviderSettings};
use contracts::ids::{UserId, WorkspaceId};
use contracts::types::{Me, Role};
use sqlx::SqliteConnection;

use crate::accounts::SignedIn;
use crate::audit::{self, Entry};
use crate::db::write_tx;

/// What a provider says about the person signing in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The provider's stable id of the person (OIDC `sub`, the LDAP entry's DN).
    pub subject: String,
    /// What a new account's username is made from (a claim, an attribute); cleaned up to the
    /// username rules, made unique.
    pub username: String,
    pub email: Option<String>,
    /// Whether the provider vouches for `email` (OIDC `email_verified`; a directory's own attribute).
    pub email_verified: bool,
    pub groups: BTreeSet<String>,
}

/// The SQL condition, over `users u`, that the account may act: it has no company identity, or one
/// that a provider that is still enabled checked within its `max_age_secs`.
pub const VOUCHED: &str = "(NOT EXISTS (SELECT 1 FROM user_identities i WHERE i.user_id = u.id)
     OR EXISTS (SELECT 1 FROM user_identities i JOIN identity_providers p ON p.id = i.provider_id
                WHERE i.user_id = u.id AND p.enabled AND i.verified_at + p.max_age_secs > unixepoch()))";

/// A provider as stored, secret still sealed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProviderRow {
    pub id: ProviderId,
    pub name: String,
    pub kind: String,
    pub display_name: String,
    pub settings: String,
    pub secret: Option<String>,
    pub enabled: bool,
    pub create_accounts: bool,
    pub max_age_secs: i64,
    pub created_at: String,
}

impl ProviderRow {
    pub(crate) const COLUMNS: &'static str =
        "id, name, kind, display_name, settings, secret, enabled,
        create_accounts, max_age_secs, created_at";

    pub fn settings(&self) -> Result<ProviderSettings, AppError> {
        serde_json::from_str(&self.settings)
            .map_err(|e| contracts::error::internal("stored provider settings", e))
    }

    pub fn kind(&self) -> Option<ProviderKind> {
        match self.kind.as_str() {
            "oidc" => Some(ProviderKind::Oidc),
            "ldap" => Some(ProviderKind::Ldap),
            _ => None,
        }
    }

    /// The secret in the clear, for the one request that needs it.
    pub fn secret(&self) -> Result<Option<String>, AppError> {
        self.secret
            .as_deref()
            .map(|sealed| {
                let plain = crate::sealing::open(sealed, &sealed_for(self.id))?;
                String::from_utf8(plain)
                    .map_err(|e| contracts::error::internal("provider secret", e))
            })
            .transpose()
    }
}

/// What a provider's sealed secret is bound to.
pub(crate) fn sealed_for(id: ProviderId) -> String {
    format!("identity_provider:{id}")
}

/// The enabled provider called `name` of this kind, or `NotFound` (a disabled one is not there for
/// anyone signing in).
pub async fn enabled(
    db: &sqlx::SqlitePool,
    name: &str,
    kind: ProviderKind,
) -> Result<ProviderRow, AppError> {
    let sql = format!(
        "SELECT {} FROM identity_providers WHERE name = ? AND kind = ? AND enabled",
        ProviderRow::COLUMNS
    );
    sqlx::query_as::<_, ProviderRow>(&sql)
        .bind(name)
        .bind(kind.as_str())
        .fetch_optional(db)
        .await?
        .ok_or(AppError::NotFound)
}

/// Signs `identity` in through `provider`: the account found, linked or created, its grants
/// applied, everything audited in one transaction. A refusal is audited and creates nothing.
pub async fn admit(
    db: &sqlx::SqlitePool,
    provider: &ProviderRow,
    identity: &Identity,
    ip: Option<&str>,
) -> Result<SignedIn, AppError> {
    let mut tx = write_tx(db).await?;
    match admit_in(&mut tx, provider, identity, ip).await {
        Ok(signed) => {
            tx.commit().await?;
            Ok(signed)
        }
        Err(e) => {
            drop(tx);
            Err(refused(db, provider, &identity.username, ip, e).await)
        }
    }
}

/// Records a refused company sign-in (the name tried, what was wrong) and gives the error back:
/// every way a provider says no goes through here, so none is left out of the log.
pub async fn refused(
    db: &sqlx::SqlitePool,
    provider: &ProviderRow,
    who: &str,
    ip: Option<&str>,
    error: AppError,
) -> AppError {
    // The name as typed may be anything: kept short and printable in the log.
    let who: String = who.chars().filter(|c| !c.is_control()).take(128).collect();
    let detail = serde_json::json!({
        "provider": provider.name,
        "kind": provider.kind,
        "who": who,
        "code": error.code(),
        "reason": error.to_string(),
    });
    let entry = Entry {
        ip,
        ..Entry::unattended("signin.refused", "identity_provider", &provider.name)
    };
    let written = async {
        let mut tx = write_tx(db).await?;
        audit::record(&mut tx, entry.detail(detail)).await?;
        tx.commit().await?;
        Ok::<_, AppError>(())
    };
    if let Err(e) = written.await {
        tracing::error!(error = %e, "recording a refused sign-in failed");
    }
    error
}

#[derive(sqlx::FromRow)]
struct Account {
    id: UserId,
    username: String,
    is_admin: bool,
    disabled: bool,
    session_epoch: i64,
    admin_granted_by: Option<ProviderId>,
}

async fn admit_in(
    tx: &mut SqliteConnection,
    provider: &ProviderRow,
    identity: &Identity,
    ip: Option<&str>,
) -> Result<SignedIn, AppError> {
    let linked: Option<UserId> = sqlx::query_scalar(
        "SELECT user_id FROM user_identities WHERE provider_id = ? AND subject = ?",
    )
    .bind(provider.id)
    .bind(&identity.subject)
    .fetch_optional(&mut *tx)
    .await?;
    let (user_id, how) = match linked {
        Some(id) => (id, "returning"),
        None => match claimable(tx, provider.id, identity).await? {
            Some(id) => (id, "linked"),
            None if provider.create_accounts => (create(tx, identity).await?, "created"),
            None => {
                return Err(AppError::denied(
                    ErrorCode::AccountNotProvisioned,
                    format!(
                        "{} does not create accounts and no account is set to link to this person",
                        provider.name
                    ),
                ))
            }
        },
    };
    let account = sqlx::query_as::<_, Account>(
        "SELECT id, username, is_admin, disabled, session_epoch, admin_granted_by FROM users WHERE id = ?",
    )
    .bind(user_id)
    .fetch_one(&mut *tx)
    .await?;
    if account.disabled {
        return Err(AppError::denied(
            ErrorCode::AccountDisabled,
            "this account has been disabled by an administrator",
        ));
    }
    record_check(tx, provider, user_id, identity).await?;
    let changes = apply_grants(tx, provider, &account, &identity.groups, ip).await?;
    let is_admin = changes.is_admin.unwrap_or(account.is_admin);
    let entry = Entry {
        actor_id: Some(user_id),
        ip,
        ..Entry::unattended("signin", "identity_provider", &provider.name)
    };
    let detail = serde_json::json!({
        "provider": provider.name,
        "account": how,
        "subject": identity.subject,
        "groups": identity.groups,
        "granted": changes.summary,
    });
    audit::record(tx, entry.detail(detail)).await?;
    Ok(SignedIn {
        me: Me {
            id: user_id,
            username: account.username,
            is_admin,
        },
        session_epoch: account.session_epoch,
    })
}

/// Keeps what `provider` said of `identity` now (its groups, its e-mail) and renews its check.
async fn record_check(
    tx: &mut SqliteConnection,
    provider: &ProviderRow,
    user_id: UserId,
    identity: &Identity,
) -> Result<(), AppError> {
    let groups = serde_json::to_string(&identity.groups).unwrap_or_else(|_| "[]".into());
    sqlx::query(
        "INSERT INTO user_identities (provider_id, subject, user_id, email, groups, verified_at)
         VALUES (?, ?, ?, ?, ?, unixepoch())
         ON CONFLICT (provider_id, subject)
         DO UPDATE SET email = excluded.email, groups = excluded.groups, verified_at = excluded.verified_at",
    )
    .bind(provider.id)
    .bind(&identity.subject)
    .bind(user_id)
    .bind(&identity.email)
    .bind(&groups)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The directory read `identity` again while its person stays signed in: its groups applied, its
/// check renewed; audited (`identity.recheck`) when that changed their access.
pub(crate) async fn recheck_identity(
    db: &sqlx::SqlitePool,
    provider: &ProviderRow,
    identity: &Identity,
) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    let Some(account) = sqlx::query_as::<_, Account>(
        "SELECT u.id, u.username, u.is_admin, u.disabled, u.session_epoch, u.admin_granted_by
         FROM users u JOIN user_identities i ON i.user_id = u.id
         WHERE i.provider_id = ? AND i.subject = ?",
    )
    .bind(provider.id)
    .bind(&identity.subject)
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(());
    };
    record_check(&mut tx, provider, account.id, identity).await?;
    let changes = apply_grants(&mut tx, provider, &account, &identity.groups, None).await?;
    if !changes.summary.is_empty() {
        let entry = Entry::unattended("identity.recheck", "user", &account.username);
        let detail = serde_json::json!({
            "provider": provider.name, "groups": identity.groups, "granted": changes.summary,
        });
        audit::record(&mut tx, entry.detail(detail)).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The directory no longer has `subject`: it vouches for nothing from now on (the account's sessions
/// and tokens stop at their next request); a later sign-in through the provider would renew it.
pub(crate) async fn gone(
    db: &sqlx::SqlitePool,
    provider: &ProviderRow,
    subject: &str,
) -> Result<(), AppError> {
    let mut tx = write_tx(db).await?;
    let user: Option<String> = sqlx::query_scalar(
        "UPDATE user_identities SET verified_at = 0 WHERE provider_id = ? AND subject = ?
         RETURNING (SELECT username FROM users WHERE id = user_id)",
    )
    .bind(provider.id)
    .bind(subject)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(username) = user {
        let entry = Entry::unattended("identity.gone", "user", &username);
        let detail = serde_json::json!({ "provider": provider.name, "subject": subject });
        audit::record(&mut tx, entry.detail(detail)).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// An existing account an admin marked for this person's verified e-mail, unlinked on the way.
async fn claimable(
    tx: &mut SqliteConnection,
    provider: ProviderId,
    identity: &Identity,
) -> Result<Option<UserId>, AppError> {
    let Some(email) = identity
        .email
        .as_deref()
        .filter(|_| identity.email_verified)
    else {
        return Ok(None);
    };
    // Not an account this provider already knows as someone else (one identity per provider).
    let found: Option<UserId> = sqlx::query_scalar(
        "UPDATE users SET link_email = NULL WHERE link_email = lower(?)
           AND NOT EXISTS (SELECT 1 FROM user_identities i WHERE i.user_id = users.id AND i.provider_id = ?)
         RETURNING id",
    )
    .bind(email.trim())
    .bind(provider)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(id) = found {
        let entry = Entry {
            actor_id: Some(id),
            ..Entry::unattended("identity.link", "user", &identity.subject)
        };
        audit::record(tx, entry.detail(serde_json::json!({ "email": email }))).await?;
    }
    Ok(found)
}

/// A new account for `identity`, with no password (it signs in only through its provider), named
/// after its username made to fit the rules and unique (`wang.wei`, then `wang.wei-2`, …).
async fn create(tx: &mut SqliteConnection, identity: &Identity) -> Result<UserId, AppError> {
    let base = username_from(&identity.username, identity.email.as_deref());
    for n in 1..=100u32 {
        let candidate = if n == 1 {
            base.clone()
        } else {
            let suffix = format!("-{n}");
            let keep = crate::accounts::USERNAME_MAX - suffix.len();
            format!("{}{suffix}", &base[..base.len().min(keep)])
        };
        let inserted: Option<UserId> = sqlx::query_scalar(
            "INSERT INTO users (username, password_hash, is_admin, created_at) VALUES (?, '', 0, ?)
             ON CONFLICT (username) DO NOTHING RETURNING id",
        )
        .bind(&candidate)
        .bind(crate::now())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(id) = inserted {
            let entry = Entry {
                actor_id: Some(id),
                ..Entry::unattended("user.create", "user", &candidate)
            };
            let detail = serde_json::json!({ "is_admin": false, "subject": identity.subject });
            audit::record(tx, entry.detail(detail)).await?;
            return Ok(id);
        }
    }
    Err(contracts::error::internal(
        "company account",
        format!("no free username near {base:?}"),
    ))
}

/// A username by the account rules (3–32 of `a-z 0-9 _ . -`) made from what the provider gave:
/// lower-cased, other characters dropped (a Chinese display name leaves nothing, hence the e-mail's
/// local part, then `user`).
pub fn username_from(name: &str, email: Option<&str>) -> String {
    let clean = |s: &str| -> String {
        s.trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(*c))
            .take(crate::accounts::USERNAME_MAX)
            .collect()
    };
    let local = email.and_then(|e| e.split('@').next()).unwrap_or("");
    [clean(name), clean(local)]
        .into_iter()
        .find(|c| c.len() >= crate::accounts::USERNAME_MIN)
        .unwrap_or_else(|| "user".into())
}

/// What applying a person's groups changed: for the audit entry, and the admin flag when it moved.
struct Changes {
    summary: Vec<serde_json::Value>,
    is_admin: Option<bool>,
}

/// Makes the memberships and the admin flag that `provider`'s mappings grant `account` exactly those
/// its `groups` call for. Each membership change is also recorded in its workspace's log.
async fn apply_grants(
    tx: &mut SqliteConnection,
    provider: &ProviderRow,
    account: &Account,
    groups: &BTreeSet<String>,
    ip: Option<&str>,
) -> Result<Changes, AppError> {
    let mappings: Vec<(String, Option<WorkspaceId>, Option<String>, bool)> = sqlx::query_as(
        "SELECT group_name, workspace_id, role, instance_admin FROM group_mappings WHERE provider_id = ?",
    )
    .bind(provider.id)
    .fetch_all(&mut *tx)
    .await?;
    let mut wanted: BTreeMap<WorkspaceId, Role> = BTreeMap::new();
    let mut admin = false;
    for (group, workspace, role, instance_admin) in mappings {
        if !groups.contains(&group) {
            continue;
        }
        admin |= instance_admin;
        if let (Some(ws), Some(role)) = (workspace, role.as_deref().and_then(Role::parse)) {
            let best = wanted.entry(ws).or_insert(role);
            *best = (*best).max(role);
        }
    }
    let held: Vec<(WorkspaceId, String, Option<ProviderId>)> =
        sqlx::query_as("SELECT workspace_id, role, granted_by FROM members WHERE user_id = ?")
            .bind(account.id)
            .fetch_all(&mut *tx)
            .await?;
    let mut summary = Vec::new();
    let mut note = |tx_entry: (&'static str, WorkspaceId, Option<Role>)| {
        summary.push(serde_json::json!({
            "change": tx_entry.0, "workspace_id": tx_entry.1, "role": tx_entry.2.map(Role::as_str),
        }));
        tx_entry
    };
    let mut changes = Vec::new();
    for (ws, role) in &wanted {
        match held.iter().find(|(w, _, _)| w == ws) {
            None => {
                sqlx::query(
                    "INSERT INTO members (workspace_id, user_id, role, added_at, granted_by) VALUES (?, ?, ?, ?, ?)",
                )
                .bind(ws)
                .bind(account.id)
                .bind(role.as_str())
                .bind(crate::now())
                .bind(provider.id)
                .execute(&mut *tx)
                .await?;
                changes.push(note(("member.add", *ws, Some(*role))));
            }
            Some((_, current, Some(by))) if *by == provider.id && current != role.as_str() => {
                sqlx::query("UPDATE members SET role = ? WHERE workspace_id = ? AND user_id = ?")
                    .bind(role.as_str())
                    .bind(ws)
                    .bind(account.id)
                    .execute(&mut *tx)
                    .await?;
                changes.push(note(("member.role", *ws, Some(*role))));
            }
            // Already as wanted, or a membership a person (or another provider) gave: theirs.
            Some(_) => {}
        }
    }
    for (ws, _, by) in &held {
        if *by == Some(provider.id) && !wanted.contains_key(ws) {
            sqlx::query("DELETE FROM members WHERE workspace_id = ? AND user_id = ?")
                .bind(ws)
                .bind(account.id)
                .execute(&mut *tx)
                .await?;
            changes.push(note(("member.remove", *ws, None)));
        }
    }
    for (action, ws, role) in changes {
        let entry = Entry {
            workspace_id: Some(ws),
            actor_id: None,
            ip,
            ..Entry::unattended(action, "member", &account.username)
        };
        let detail = serde_json::json!({
            "role": role.map(Role::as_str), "by_provider": provider.name,
        });
        audit::record(tx, entry.detail(detail)).await?;
    }
    let is_admin = if admin && !account.is_admin {
        Some(true)
    } else if !admin && account.admin_granted_by == Some(provider.id) {
        Some(false)
    } else {
        None
    };
    if let Some(flag) = is_admin {
        sqlx::query("UPDATE users SET is_admin = ?, admin_granted_by = ? WHERE id = ?")
            .bind(flag)
            .bind(flag.then_some(provider.id))
            .bind(account.id)
            .execute(&mut *tx)
            .await?;
        summary.push(serde_json::json!({ "change": "instance_admin", "value": flag }));
        let entry = Entry {
            ip,
            ..Entry::unattended("user.admin", "user", &account.username)
        };
        let detail = serde_json::json!({ "is_admin": flag, "by_provider": provider.name });
        audit::record(tx, entry.detail(detail)).await?;
    }
    Ok(Changes { summary, is_admin })
}

#[cfg(test)]
mod tests;

//! Identity providers and their group mappings, for instance admins: created, changed, checked
//! ("test this provider") and deleted here, each change audited. A provider's secret is sealed on the
//! way in and never read back; the sign-in page learns only the enabled providers' names
//! ([`buttons`]). Deleting a provider takes away every membership and admin flag its mappings granted
//! (the admin flags here, the memberships by their foreign key) and its identities, so its people's sessions end.

use contracts::error::{AppError, ErrorCode, FieldProblem, Rule};
use contracts::identity::{
    CheckOutcome, CheckRequest, Grant, GroupMapping, LdapGroups, LdapSettings, MappingId,
    MappingInput, OidcSettings, Provider, ProviderButton, ProviderId, ProviderInput,
    ProviderSettings, MAX_AGE_SECS, MAX_GROUP_LEN,
};
use contracts::ids::WorkspaceId;
use contracts::types::Role;
use sqlx::SqlitePool;

use super::{sealed_for, ProviderRow};
use crate::audit::{self, Entry};
use crate::auth::Actor;
use crate::db::{taken, write_tx};

fn require_admin(actor: &Actor) -> Result<(), AppError> {
    if actor.is_admin {
        Ok(())
    } else {
        Err(AppError::Forbidden)
    }
}

/// The enabled providers, as the sign-in page shows them. Anyone may read this.
pub async fn buttons(db: &SqlitePool) -> Result<Vec<ProviderButton>, AppError> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT name, display_name, kind FROM identity_providers WHERE enabled ORDER BY display_name, name",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, display_name, kind)| {
            let kind = serde_json::from_value(serde_json::Value::String(kind)).ok()?;
            Some(ProviderButton {
                name,
                display_name,
                kind,
            })
        })
        .collect())
}

pub async fn list(db: &SqlitePool, actor: &Actor) -> Result<Vec<Provider>, AppError> {
    require_admin(actor)?;
    let sql = format!(
        "SELECT {} FROM identity_providers ORDER BY name",
        ProviderRow::COLUMNS
    );
    let rows = sqlx::query_as::<_, ProviderRow>(&sql).fetch_all(db).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(view(db, row).await?);
    }
    Ok(out)
}

pub async fn get(db: &SqlitePool, actor: &Actor, id: ProviderId) -> Result<Provider, AppError> {
    require_admin(actor)?;
    view(db, row(db, id).await?).await
}

pub(crate) async fn row(
    db: impl sqlx::SqliteExecutor<'_>,
    id: ProviderId,
) -> Result<ProviderRow, AppError> {
    let sql = format!(
        "SELECT {} FROM identity_providers WHERE id = ?",
        ProviderRow::COLUMNS
    );
    sqlx::query_as::<_, ProviderRow>(&sql)
        .bind(id)
        .fetch_optional(db)
        .await?
        .ok_or(AppError::NotFound)
}

async fn view(db: &SqlitePool, row: ProviderRow) -> Result<Provider, AppError> {
    let mappings = mappings(db, row.id).await?;
    Ok(Provider {
        id: row.id,
        settings: row.settings()?,
        name: row.name,
        display_name: row.display_name,
        has_secret: row.secret.is_some(),
        enabled: row.enabled,
        create_accounts: row.create_accounts,
        max_age_secs: u32::try_from(row.max_age_secs).unwrap_or(0),
        created_at: row.created_at,
        mappings,
    })
}

async fn mappings(db: &SqlitePool, id: ProviderId) -> Result<Vec<GroupMapping>, AppError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: MappingId,
        group_name: String,
        workspace_id: Option<WorkspaceId>,
        role: Option<String>,
        workspace_name: Option<String>,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT m.id, m.group_name, m.workspace_id, m.role, w.name AS workspace_name
         FROM group_mappings m LEFT JOIN workspaces w ON w.id = m.workspace_id
         WHERE m.provider_id = ? ORDER BY m.group_name, m.id",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| GroupMapping {
            id: r.id,
            group: r.group_name,
            grant: match (r.workspace_id, r.role.as_deref().and_then(Role::parse)) {
                (Some(workspace_id), Some(role)) => Grant::Workspace { workspace_id, role },
                _ => Grant::InstanceAdmin {},
            },
            workspace_name: r.workspace_name,
        })
        .collect())
}

/// Creates a provider. A secret is required: the OIDC client secret, the LDAP service password.
pub async fn create(
    db: &SqlitePool,
    actor: &Actor,
    input: ProviderInput,
) -> Result<Provider, AppError> {
    require_admin(actor)?;
    let name = check(&input, false)?;
    save(db, actor, None, &name, &input).await
}

/// Replaces a provider's settings; an absent secret keeps the stored one. Its kind cannot change
/// (its identities' subjects mean something only to that protocol): make a new provider instead.
pub async fn update(
    db: &SqlitePool,
    actor: &Actor,
    id: ProviderId,
    input: ProviderInput,
) -> Result<Provider, AppError> {
    require_admin(actor)?;
    let before = row(db, id).await?;
    let name = check(&input, before.secret.is_some())?;
    if before.kind != input.settings.kind().as_str() {
        return Err(AppError::invalid(
            "settings",
            ErrorCode::IdentityProviderInvalid,
            "a provider's kind cannot change; create a new provider",
        ));
    }
    save(db, actor, Some(id), &name, &input).await
}

/// Writes a checked provider (a new one when `id` is `None`), its secret sealed, and the audit entry,
/// in one transaction.
async fn save(
    db: &SqlitePool,
    actor: &Actor,
    id: Option<ProviderId>,
    name: &str,
    input: &ProviderInput,
) -> Result<Provider, AppError> {
    let action = match id {
        None => "identity_provider.create",
        Some(_) => "identity_provider.update",
    };
    let mut tx = write_tx(db).await?;
    let written: Result<ProviderId, sqlx::Error> = sqlx::query_scalar(
        "INSERT INTO identity_providers
           (id, name, kind, display_name, settings, enabled, create_accounts, max_age_secs, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, display_name = excluded.display_name,
           settings = excluded.settings, enabled = excluded.enabled,
           create_accounts = excluded.create_accounts, max_age_secs = excluded.max_age_secs
         RETURNING id",
    )
    .bind(id)
    .bind(name)
    .bind(input.settings.kind().as_str())
    .bind(input.display_name.trim())
    .bind(stored_settings(&input.settings)?)
    .bind(input.enabled)
    .bind(input.create_accounts)
    .bind(input.max_age_secs)
    .bind(crate::now())
    .fetch_one(&mut *tx)
    .await;
    let id = written.map_err(taken(
        "name",
        ErrorCode::IdentityProviderNameTaken,
        "an identity provider with this name already exists",
    ))?;
    if let Some(secret) = &input.secret {
        store_secret(&mut tx, id, secret).await?;
    }
    let entry = Entry::by(actor, None, action, "identity_provider", name);
    audit::record(&mut tx, entry.detail(audited(input))).await?;
    tx.commit().await?;
    view(db, row(db, id).await?).await
}

/// What the audit log keeps of a change: everything but the secret, which it says was set or kept.
fn audited(input: &ProviderInput) -> serde_json::Value {
    serde_json::json!({
        "display_name": input.display_name,
        "settings": input.settings,
        "secret": if input.secret.is_some() { "set" } else { "kept" },
        "enabled": input.enabled,
        "create_accounts": input.create_accounts,
        "max_age_secs": input.max_age_secs,
    })
}

fn stored_settings(settings: &ProviderSettings) -> Result<String, AppError> {
    serde_json::to_string(settings).map_err(|e| contracts::error::internal("provider settings", e))
}

async fn store_secret(
    tx: &mut sqlx::SqliteConnection,
    id: ProviderId,
    secret: &str,
) -> Result<(), AppError> {
    let sealed = crate::sealing::seal(secret.as_bytes(), &sealed_for(id))?;
    sqlx::query("UPDATE identity_providers SET secret = ? WHERE id = ?")
        .bind(sealed)
        .bind(id)
        .execute(tx)
        .await?;
    Ok(())
}

pub async fn delete(db: &SqlitePool, actor: &Actor, id: ProviderId) -> Result<(), AppError> {
    require_admin(actor)?;
    let provider = row(db, id).await?;
    let mut tx = write_tx(db).await?;
    sqlx::query(
        "UPDATE users SET is_admin = 0, admin_granted_by = NULL WHERE admin_granted_by = ?",
    )
    .bind(id)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM identity_providers WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::by(
        actor,
        None,
        "identity_provider.delete",
        "identity_provider",
        &provider.name,
    );
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(())
}

/// Adds a group → grant rule; it applies at each person's next sign-in (or directory re-check).
pub async fn add_mapping(
    db: &SqlitePool,
    actor: &Actor,
    id: ProviderId,
    input: MappingInput,
) -> Result<GroupMapping, AppError> {
    require_admin(actor)?;
    let provider = row(db, id).await?;
    let group = input.group.trim();
    if group.is_empty() || group.len() > MAX_GROUP_LEN || group.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "group",
            ErrorCode::GroupMappingInvalid,
            format!("a group name is 1–{MAX_GROUP_LEN} bytes without control characters"),
        ));
    }
    let (workspace, role, admin) = match &input.grant {
        Grant::Workspace { workspace_id, role } => {
            (Some(*workspace_id), Some(role.as_str()), false)
        }
        Grant::InstanceAdmin {} => (None, None, true),
    };
    let mut tx = write_tx(db).await?;
    if let Some(ws) = workspace {
        let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM workspaces WHERE id = ?")
            .bind(ws)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(AppError::invalid(
                "grant.workspace_id",
                ErrorCode::GroupMappingInvalid,
                format!("there is no workspace {ws}"),
            ));
        }
    }
    let mapping_id: MappingId = sqlx::query_scalar(
        "INSERT INTO group_mappings (provider_id, group_name, workspace_id, role, instance_admin, created_at)
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(id)
    .bind(group)
    .bind(workspace)
    .bind(role)
    .bind(admin)
    .bind(crate::now())
    .fetch_one(&mut *tx)
    .await
    .map_err(taken(
        "group",
        ErrorCode::GroupMappingInvalid,
        "this group already maps to this workspace (or to admin)",
    ))?;
    let entry = Entry::by(
        actor,
        workspace,
        "group_mapping.add",
        "identity_provider",
        &provider.name,
    );
    let detail = serde_json::json!({ "group": group, "grant": input.grant });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    mappings(db, id)
        .await?
        .into_iter()
        .find(|m| m.id == mapping_id)
        .ok_or(AppError::NotFound)
}

/// Removes a rule; the access it gave goes at each person's next sign-in (or directory re-check).
pub async fn remove_mapping(
    db: &SqlitePool,
    actor: &Actor,
    id: ProviderId,
    mapping: MappingId,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let provider = row(db, id).await?;
    let mut tx = write_tx(db).await?;
    let removed: Option<(String, Option<WorkspaceId>)> = sqlx::query_as(
        "DELETE FROM group_mappings WHERE id = ? AND provider_id = ? RETURNING group_name, workspace_id",
    )
    .bind(mapping)
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((group, workspace)) = removed else {
        return Err(AppError::NotFound);
    };
    let entry = Entry::by(
        actor,
        workspace,
        "group_mapping.remove",
        "identity_provider",
        &provider.name,
    );
    audit::record(&mut tx, entry.detail(serde_json::json!({ "group": group }))).await?;
    tx.commit().await?;
    Ok(())
}

/// "Test this provider", with its stored settings and secret.
pub async fn check_provider(
    db: &SqlitePool,
    actor: &Actor,
    id: ProviderId,
    request: CheckRequest,
) -> Result<Vec<CheckOutcome>, AppError> {
    require_admin(actor)?;
    let provider = row(db, id).await?;
    let secret = provider.secret()?.unwrap_or_default();
    Ok(match provider.settings()? {
        ProviderSettings::Ldap(settings) => {
            super::ldap::check(&settings, &secret, request.username.as_deref()).await
        }
        ProviderSettings::Oidc(settings) => super::oidc::check(&settings).await,
    })
}

/// Sets (or clears, with `None`) the e-mail by which a company identity may claim the account `user`.
pub async fn set_link_email(
    db: &SqlitePool,
    actor: &Actor,
    user: contracts::ids::UserId,
    email: Option<&str>,
) -> Result<(), AppError> {
    require_admin(actor)?;
    let email = email
        .map(|e| e.trim().to_lowercase())
        .filter(|e| !e.is_empty());
    if let Some(e) = &email {
        let plausible = e.len() <= 254
            && e.split_once('@')
                .is_some_and(|(l, d)| !l.is_empty() && d.contains('.'))
            && !e.chars().any(|c| c.is_whitespace() || c.is_control());
        if !plausible {
            return Err(AppError::invalid(
                "link_email",
                ErrorCode::IdentityProviderInvalid,
                "not an e-mail address",
            ));
        }
    }
    let mut tx = write_tx(db).await?;
    let username: Option<String> =
        sqlx::query_scalar("UPDATE users SET link_email = ? WHERE id = ? RETURNING username")
            .bind(&email)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
    let username = username.ok_or(AppError::NotFound)?;
    let entry = Entry::by(actor, None, "user.link_email", "user", &username);
    audit::record(&mut tx, entry.detail(serde_json::json!({ "email": email }))).await?;
    tx.commit().await?;
    Ok(())
}

/// Checks a provider's input and returns its normalised name; every broken rule at once.
/// `has_secret`: whether a secret is stored already (a new provider must bring one).
pub fn check(input: &ProviderInput, has_secret: bool) -> Result<String, AppError> {
    let mut problems = Vec::new();
    let mut bad = |field: &str, why: String| problems.push(FieldProblem::said(field, why));
    let name = input.name.trim().to_lowercase();
    let name_ok = (2..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    if !name_ok {
        bad(
            "name",
            "2–32 characters of a-z, 0-9 and '-', not starting with '-'".into(),
        );
    }
    let display = input.display_name.trim();
    if display.is_empty() || display.chars().count() > 64 || display.chars().any(char::is_control) {
        bad(
            "display_name",
            "1–64 characters without control characters".into(),
        );
    }
    if !MAX_AGE_SECS.contains(&input.max_age_secs) {
        problems.push(FieldProblem::new(
            "max_age_secs",
            Rule::Between {
                min: i64::from(*MAX_AGE_SECS.start()),
                max: i64::from(*MAX_AGE_SECS.end()),
            },
            format!(
                "from {} to {} seconds",
                MAX_AGE_SECS.start(),
                MAX_AGE_SECS.end()
            ),
        ));
    }
    match &input.secret {
        Some(s) if s.is_empty() || s.len() > 1024 => {
            problems.push(FieldProblem::said("secret", "1–1024 bytes"))
        }
        None if !has_secret => problems.push(FieldProblem::said(
            "secret",
            "required: the OIDC client secret, or the LDAP service account's password",
        )),
        _ => {}
    }
    match &input.settings {
        ProviderSettings::Ldap(l) => ldap_problems(l, &mut problems),
        ProviderSettings::Oidc(o) => oidc_problems(o, &mut problems),
    }
    match AppError::invalid_fields(ErrorCode::IdentityProviderInvalid, problems) {
        Some(e) => Err(e),
        None => Ok(name),
    }
}

/// Whether `host` (from a URL, brackets dropped) is this machine: the only place a connection
/// without TLS is allowed to go.
fn loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://host[:port]` split: (scheme, host); the rest of the URL is returned for checking.
fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty()
        || authority.contains('@')
        || authority
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return None;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    Some((scheme, host, path))
}

fn dn_like(field: &str, value: &str, problems: &mut Vec<FieldProblem>) {
    if value.trim().is_empty()
        || value.len() > 1024
        || !value.contains('=')
        || value.chars().any(char::is_control)
    {
        problems.push(FieldProblem::said(
            field,
            "a DN such as ou=people,dc=example,dc=com",
        ));
    }
}

fn attribute(field: &str, value: &str, problems: &mut Vec<FieldProblem>) {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ';');
    if !ok {
        problems.push(FieldProblem::said(
            field,
            "an attribute name (letters, digits, '-')",
        ));
    }
}

fn ldap_problems(l: &LdapSettings, problems: &mut Vec<FieldProblem>) {
    match split_url(l.url.trim()) {
        Some(("ldaps", _, "" | "/")) => {}
        Some(("ldap", host, "" | "/")) => {
            if !l.starttls && !loopback(host) {
                problems.push(FieldProblem::said(
                    "settings.ldap.starttls",
                    "a directory on another machine is reached with StartTLS or ldaps://: passwords cross the network",
                ));
            }
        }
        _ => problems.push(FieldProblem::said(
            "settings.ldap.url",
            "ldap://host[:port] or ldaps://host[:port]",
        )),
    }
    dn_like("settings.ldap.bind_dn", &l.bind_dn, problems);
    dn_like("settings.ldap.user_base", &l.user_base, problems);
    let filter = l.user_filter.trim();
    if !(filter.starts_with('(') && filter.ends_with(')') && filter.contains("{username}"))
        || filter.len() > 1024
    {
        problems.push(FieldProblem::said(
            "settings.ldap.user_filter",
            "an LDAP filter in parentheses containing {username}",
        ));
    }
    attribute(
        "settings.ldap.username_attribute",
        &l.username_attribute,
        problems,
    );
    attribute(
        "settings.ldap.email_attribute",
        &l.email_attribute,
        problems,
    );
    if let LdapGroups::MemberAttribute { base } = &l.groups {
        dn_like("settings.ldap.groups.base", base, problems);
    }
    if let Some(pem) = l.ca_pem.as_deref().filter(|p| !p.trim().is_empty()) {
        match super::ldap::ca_certificates(pem) {
            Ok(certs) if certs.is_empty() => problems.push(FieldProblem::said(
                "settings.ldap.ca_pem",
                "no certificate in it (-----BEGIN CERTIFICATE-----)",
            )),
            Ok(_) => {}
            Err(e) => problems.push(FieldProblem::said("settings.ldap.ca_pem", e.to_string())),
        }
    }
}

fn oidc_problems(o: &OidcSettings, problems: &mut Vec<FieldProblem>) {
    match split_url(o.issuer.trim()) {
        Some(("https", _, _)) => {}
        Some(("http", host, _)) if loopback(host) => {}
        _ => problems.push(FieldProblem::said(
            "settings.oidc.issuer",
            "an https:// URL (http:// only on this machine)",
        )),
    }
    if o.client_id.trim().is_empty() || o.client_id.len() > 256 {
        problems.push(FieldProblem::said(
            "settings.oidc.client_id",
            "1–256 characters",
        ));
    }
    for (i, scope) in o.scopes.iter().enumerate() {
        if scope.is_empty()
            || scope.len() > 128
            || !scope
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
        {
            problems.push(FieldProblem::said(
                format!("settings.oidc.scopes[{i}]"),
                "a scope word",
            ));
        }
    }
    for (field, claim) in [
        ("settings.oidc.groups_claim", &o.groups_claim),
        ("settings.oidc.username_claim", &o.username_claim),
    ] {
        if claim.is_empty() || claim.len() > 128 || claim.chars().any(|c| c.is_control()) {
            problems.push(FieldProblem::said(field, "a claim name"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ldap_input(url: &str, starttls: bool) -> ProviderInput {
        serde_json::from_value(serde_json::json!({
            "name": "Corp-LDAP", "display_name": "公司目录", "secret": "s3cret",
            "settings": {"ldap": {"url": url, "starttls": starttls, "bind_dn": "cn=svc,dc=x",
                         "user_base": "ou=people,dc=x", "groups": {"style": "member_of", "nested": true}}}
        }))
        .unwrap()
    }

    #[test]
    fn plain_ldap_only_to_this_machine() {
        assert_eq!(
            check(&ldap_input("ldap://127.0.0.1:389", false), true).unwrap(),
            "corp-ldap"
        );
        assert!(check(&ldap_input("ldap://dc.corp.example", true), true).is_ok());
        assert!(check(&ldap_input("ldaps://[::1]:636", true), true).is_ok());
        let e = check(&ldap_input("ldap://dc.corp.example", false), true).unwrap_err();
        assert_eq!(e.field(), Some("settings.ldap.starttls"));
        let e = check(&ldap_input("http://dc", true), true).unwrap_err();
        assert_eq!(e.field(), Some("settings.ldap.url"));
    }

    #[test]
    fn every_broken_rule_at_once_and_a_new_provider_brings_a_secret() {
        let mut input = ldap_input("ldaps://dc", true);
        input.name = "-".into();
        input.secret = None;
        input.max_age_secs = 5;
        if let ProviderSettings::Ldap(l) = &mut input.settings {
            l.user_filter = "(uid=*)".into();
            l.email_attribute = "mail)(x".into();
        }
        let e = check(&input, false).unwrap_err();
        let fields: Vec<&str> = e.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "name",
                "max_age_secs",
                "secret",
                "settings.ldap.user_filter",
                "settings.ldap.email_attribute"
            ]
        );
        assert!(check(
            &{
                let mut i = input.clone();
                i.name = "ok".into();
                i.max_age_secs = 600;
                i
            },
            true
        )
        .unwrap_err()
        .problems()
        .iter()
        .all(|p| p.field.starts_with("settings.")));
    }

    #[test]
    fn an_oidc_issuer_is_https_or_local() {
        let oidc = |issuer: &str| ProviderInput {
            settings: ProviderSettings::Oidc(
                serde_json::from_value(
                    serde_json::json!({"issuer": issuer, "client_id": "paddock"}),
                )
                .unwrap(),
            ),
            ..ldap_input("ldaps://x", true)
        };
        assert!(check(&oidc("https://sso.corp.example/realms/x"), true).is_ok());
        assert!(check(&oidc("http://127.0.0.1:9000"), true).is_ok());
        assert_eq!(
            check(&oidc("http://sso.corp.example"), true)
                .unwrap_err()
                .field(),
            Some("settings.oidc.issuer")
        );
    }
}

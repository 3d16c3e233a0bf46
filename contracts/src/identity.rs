//! Company sign-in: the identity providers an admin configures (OpenID Connect, LDAP / Active
//! Directory), the group mappings that give their people workspaces and roles, and what the sign-in
//! page and the admin's "test this provider" read. Secrets (an OIDC client secret, an LDAP service
//! bind password) go in and never come back: a provider read back says only whether it has one.

use serde::{Deserialize, Serialize};

use crate::ids::WorkspaceId;
pub use crate::ids::{MappingId, ProviderId};
use crate::types::Role;

/// Which protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Oidc,
    Ldap,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Oidc => "oidc",
            ProviderKind::Ldap => "ldap",
        }
    }
}

/// An OpenID Connect provider (Keycloak, Authentik, Azure AD / Entra ID, Okta, Dex, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OidcSettings {
    /// The issuer URL; its `/.well-known/openid-configuration` is read for the rest. `https://`, or
    /// `http://` on a loopback address only.
    pub issuer: String,
    pub client_id: String,
    /// Asked for beside `openid` (default: `profile`, `email`).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The ID token or userinfo claim that lists the person's groups (default `groups`).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// The claim whose value becomes a new account's username (default `preferred_username`).
    #[serde(default = "default_username_claim")]
    pub username_claim: String,
}

/// An LDAP directory (OpenLDAP, 389 DS, Active Directory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LdapSettings {
    /// `ldap://host[:port]` (then StartTLS unless `starttls` is off, which only a loopback host may
    /// do) or `ldaps://host[:port]`.
    pub url: String,
    #[serde(default = "yes")]
    pub starttls: bool,
    /// PEM certificates to trust for the directory's TLS (a company CA), beside the system's.
    #[serde(default)]
    pub ca_pem: Option<String>,
    /// The service account that searches (`cn=paddock,ou=services,dc=example,dc=com`); its password
    /// is the provider's secret.
    pub bind_dn: String,
    /// Where people are searched (`ou=people,dc=example,dc=com`), the whole subtree.
    pub user_base: String,
    /// The search for the person, `{username}` standing for the escaped name they typed (default
    /// `(&(objectClass=person)(uid={username}))`; AD: `(sAMAccountName={username})`).
    #[serde(default = "default_user_filter")]
    pub user_filter: String,
    /// The attribute a new account's username is taken from (default `uid`).
    #[serde(default = "default_username_attribute")]
    pub username_attribute: String,
    /// The attribute holding the e-mail (default `mail`); directory addresses count as verified.
    #[serde(default = "default_email_attribute")]
    pub email_attribute: String,
    /// How the person's groups are found.
    pub groups: LdapGroups,
}

/// Where an LDAP directory keeps group membership.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "style", rename_all = "snake_case", deny_unknown_fields)]
pub enum LdapGroups {
    /// Groups are entries under `base` that list their members' DNs in `member` (`groupOfNames`,
    /// OpenLDAP, 389 DS); a group's name is its `cn`.
    MemberAttribute { base: String },
    /// The person's entry lists its groups' DNs in `memberOf` (Active Directory); `nested` also
    /// counts the groups those groups belong to (AD's `LDAP_MATCHING_RULE_IN_CHAIN`). A group's name
    /// is the `cn` of its DN.
    MemberOf {
        #[serde(default)]
        nested: bool,
    },
}

fn yes() -> bool {
    true
}
fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_username_claim() -> String {
    "preferred_username".into()
}
fn default_user_filter() -> String {
    "(&(objectClass=person)(uid={username}))".into()
}
fn default_username_attribute() -> String {
    "uid".into()
}
fn default_email_attribute() -> String {
    "mail".into()
}

/// A provider's protocol settings, under its kind: `{"oidc": {…}}` or `{"ldap": {…}}`. (Tagged from
/// outside, not by a `kind` field beside them: the settings refuse fields they do not know, and an
/// OpenAPI schema of a closed object with a tag field added cannot be satisfied.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProviderSettings {
    Oidc(OidcSettings),
    Ldap(LdapSettings),
}

impl ProviderSettings {
    pub fn kind(&self) -> ProviderKind {
        match self {
            ProviderSettings::Oidc(_) => ProviderKind::Oidc,
            ProviderSettings::Ldap(_) => ProviderKind::Ldap,
        }
    }
}

/// The shortest and longest time one sign-in vouches for a person (5 minutes, 30 days).
pub const MAX_AGE_SECS: std::ops::RangeInclusive<u32> = 300..=2_592_000;
/// Twelve hours: a working day, then the provider is asked again.
pub const DEFAULT_MAX_AGE_SECS: u32 = 43_200;

/// What an admin sends to create or replace a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProviderInput {
    /// 2–32 of `a-z 0-9 -`: the provider's name in URLs and the CLI.
    pub name: String,
    /// What the sign-in button says: "使用 {display_name} 登录".
    pub display_name: String,
    pub settings: ProviderSettings,
    /// The OIDC client secret or the LDAP service bind password. On a change, absent keeps the
    /// stored one.
    #[serde(default)]
    pub secret: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Whether a first sign-in with no account creates one (otherwise refused unless an admin set
    /// the person's e-mail on an existing account to link).
    #[serde(default = "yes")]
    pub create_accounts: bool,
    /// How long one sign-in vouches for the person's sessions and API tokens (300–2592000 s).
    #[serde(default = "default_max_age")]
    pub max_age_secs: u32,
}

fn default_max_age() -> u32 {
    DEFAULT_MAX_AGE_SECS
}

/// A provider as an admin reads it back: no secret, only whether one is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Provider {
    pub id: ProviderId,
    pub name: String,
    pub display_name: String,
    pub settings: ProviderSettings,
    pub has_secret: bool,
    pub enabled: bool,
    pub create_accounts: bool,
    pub max_age_secs: u32,
    pub created_at: String,
    pub mappings: Vec<GroupMapping>,
}

/// A sign-in button: what anyone may know about an enabled provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderButton {
    pub name: String,
    pub display_name: String,
    pub kind: ProviderKind,
}

/// What membership of a group gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Grant {
    /// This role in this workspace (the highest wins when several groups map to one workspace).
    Workspace {
        workspace_id: WorkspaceId,
        role: Role,
    },
    /// Instance admin. (Braces so that a stray field is refused, as for the other grant.)
    InstanceAdmin {},
}

/// One group → grant rule of a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupMapping {
    pub id: MappingId,
    /// The group's name as the provider reports it (an OIDC claim's value, an LDAP group's `cn`);
    /// compared exactly.
    pub group: String,
    pub grant: Grant,
    /// The workspace's name, for reading (none for an admin grant).
    #[serde(default)]
    pub workspace_name: Option<String>,
}

/// What an admin sends to add a mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MappingInput {
    pub group: String,
    pub grant: Grant,
}

/// The longest group name kept (AD DNs can be long; names beyond are not groups).
pub const MAX_GROUP_LEN: usize = 512;

/// The steps of checking a provider, in order; each is reported passed or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CheckStep {
    /// OIDC: the discovery document was read and names this issuer.
    Discovery,
    /// OIDC: the signing keys were read.
    Keys,
    /// LDAP: a connection, with TLS as configured.
    Connect,
    /// LDAP: the service account's bind.
    Bind,
    /// LDAP: the search for the test user.
    Search,
    /// LDAP: the test user's groups.
    Groups,
}

/// One step's outcome: `detail` is English for the log, `code` what the UI translates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckOutcome {
    pub step: CheckStep,
    pub ok: bool,
    pub detail: String,
    /// Why the step failed, for the UI to say in the reader's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<crate::error::ErrorCode>,
    /// The groups found (the `groups` step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// What "test this provider" sends: for LDAP, a username to search (no password needed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    #[serde(default)]
    pub username: Option<String>,
}

/// A sign-in through an LDAP provider.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DirectorySignIn {
    pub username: String,
    pub password: String,
}

/// Who may sign in with a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PasswordSignIn {
    #[default]
    Everyone,
    /// Only instance admins without a company identity: the break-glass account.
    Admins,
}

impl PasswordSignIn {
    pub fn as_str(self) -> &'static str {
        match self {
            PasswordSignIn::Everyone => "everyone",
            PasswordSignIn::Admins => "admins",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "everyone" => Some(PasswordSignIn::Everyone),
            "admins" => Some(PasswordSignIn::Admins),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_with_their_defaults() {
        let ldap: ProviderSettings = serde_json::from_value(serde_json::json!({"ldap": {
            "url": "ldap://127.0.0.1:13389", "bind_dn": "cn=svc,dc=x",
            "user_base": "ou=people,dc=x", "groups": {"style": "member_attribute", "base": "ou=groups,dc=x"}
        }}))
        .unwrap();
        let ProviderSettings::Ldap(l) = &ldap else {
            panic!("{ldap:?}")
        };
        assert!(l.starttls);
        assert_eq!(l.user_filter, "(&(objectClass=person)(uid={username}))");
        let back = serde_json::to_value(&ldap).unwrap();
        assert_eq!(back["ldap"]["starttls"], true);
        let typo = serde_json::json!({"ldap": {"url": "ldaps://x", "bind_dn": "cn=a", "user_base": "ou=b",
            "user_filer": "(uid={username})", "groups": {"style": "member_of"}}});
        assert!(
            serde_json::from_value::<ProviderSettings>(typo).is_err(),
            "a misspelt field is refused"
        );
        let mapping: MappingInput = serde_json::from_value(
            serde_json::json!({"group": "nlp", "grant": {"kind": "workspace", "workspace_id": 3, "role": "editor"}}),
        )
        .unwrap();
        assert_eq!(
            mapping.grant,
            Grant::Workspace {
                workspace_id: WorkspaceId::new(3),
                role: Role::Editor
            }
        );
        let unknown = serde_json::from_value::<MappingInput>(
            serde_json::json!({"group": "x", "grant": {"kind": "instance_admin", "role": "owner"}}),
        );
        assert!(unknown.is_err(), "an admin grant takes no role");
    }
}

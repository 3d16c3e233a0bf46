//! Data shapes shared by the server and the browser: what server functions and the REST API return.
//! Kept free of server-only types so they compile to wasm.

use serde::{Deserialize, Serialize};

/// A member's role in a workspace. Ordered: a higher role can do everything a lower one can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Editor,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "editor" => Some(Role::Editor),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }

    /// Editors and owners may create and change resources; viewers only read.
    pub fn can_edit(self) -> bool {
        self >= Role::Editor
    }
}

/// The signed-in account, as the UI needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Me {
    pub id: i64,
    pub username: String,
    pub is_admin: bool,
}

/// A workspace seen by one of its members (the role is the caller's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WorkspaceSummary {
    pub id: i64,
    pub name: String,
    pub role: Role,
    pub member_count: i64,
    /// RFC 3339.
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Member {
    pub user_id: i64,
    pub username: String,
    pub role: Role,
    /// RFC 3339.
    pub added_at: String,
}

/// One line of a workspace's audit log: who did what to which resource, when, from where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub id: i64,
    /// The acting user's name; `None` when the account has since been deleted.
    pub actor: Option<String>,
    /// A dotted verb such as `workspace.create`, `member.add`, `member.remove`.
    pub action: String,
    /// The kind of resource acted on (`workspace`, `member`, ...).
    pub resource_type: String,
    /// The resource's human-readable identifier (a username, a workspace name, ...).
    pub resource: String,
    /// Free-form JSON with details (old and new values).
    pub detail: Option<String>,
    pub ip: Option<String>,
    /// RFC 3339.
    pub at: String,
}

/// A personal API token as listed: the secret itself is never shown again after creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ApiToken {
    pub id: i64,
    pub name: String,
    /// The first characters of the token, enough to recognise it.
    pub prefix: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

/// Returned once, when a token is created: `secret` is what goes after `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NewApiToken {
    pub token: ApiToken,
    pub secret: String,
}

/// An account as an instance admin sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct UserAccount {
    pub id: i64,
    pub username: String,
    pub is_admin: bool,
    pub disabled: bool,
    pub created_at: String,
}

/// Instance-wide settings an admin can change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct InstanceSettings {
    pub signup_enabled: bool,
}

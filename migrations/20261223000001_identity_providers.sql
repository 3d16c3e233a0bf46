-- Company sign-in: identity providers (OpenID Connect, LDAP/Active Directory) beside passwords, the
-- identities they vouch for, and the groups that map to workspaces, roles and the instance admin flag.

-- One provider an admin configured. `settings` is JSON without secrets (issuer, client id, scopes, the
-- LDAP URL, bases and filters: `contracts::identity`); `secret` is the client secret or the service
-- bind password, sealed (`domain::sealing`, bound to `identity_provider:<id>`), never sent back.
CREATE TABLE identity_providers (
    id              INTEGER PRIMARY KEY,
    -- In URLs (`/auth/oidc/{name}/start`) and the CLI: 2–32 of [a-z0-9-].
    name            TEXT    NOT NULL UNIQUE,
    kind            TEXT    NOT NULL CHECK (kind IN ('oidc', 'ldap')),
    -- What the sign-in page's button says ("使用 企业账号 登录").
    display_name    TEXT    NOT NULL,
    settings        TEXT    NOT NULL,
    secret          TEXT,
    enabled         INTEGER NOT NULL DEFAULT 1,
    -- A first sign-in with no account creates one; off: refused unless linked or pre-linked.
    create_accounts INTEGER NOT NULL DEFAULT 1,
    -- How long one sign-in vouches for the person: past it, their sessions and API tokens stop working
    -- until they sign in through the provider again (or, for LDAP, the directory re-check renews it).
    max_age_secs    INTEGER NOT NULL DEFAULT 43200 CHECK (max_age_secs BETWEEN 300 AND 2592000),
    created_at      TEXT    NOT NULL
);

-- Who a provider says an account is: the provider's stable subject (OIDC `sub`, the LDAP entry's DN),
-- the groups it reported at the last check and when that was (unix seconds; 0 = the directory no
-- longer knows them: vouches for nothing).
CREATE TABLE user_identities (
    provider_id INTEGER NOT NULL REFERENCES identity_providers(id) ON DELETE CASCADE,
    subject     TEXT    NOT NULL,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email       TEXT,
    groups      TEXT    NOT NULL DEFAULT '[]',
    verified_at INTEGER NOT NULL,
    PRIMARY KEY (provider_id, subject),
    UNIQUE (user_id, provider_id)
);
CREATE INDEX user_identities_by_user ON user_identities (user_id);

-- A provider's group → a role in a workspace, or → instance admin. Re-applied at every sign-in.
CREATE TABLE group_mappings (
    id             INTEGER PRIMARY KEY,
    provider_id    INTEGER NOT NULL REFERENCES identity_providers(id) ON DELETE CASCADE,
    group_name     TEXT    NOT NULL CHECK (length(group_name) BETWEEN 1 AND 512),
    workspace_id   INTEGER REFERENCES workspaces(id) ON DELETE CASCADE,
    role           TEXT    CHECK (role IN ('owner', 'editor', 'viewer')),
    instance_admin INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT    NOT NULL,
    CHECK ((workspace_id IS NOT NULL AND role IS NOT NULL AND instance_admin = 0)
        OR (workspace_id IS NULL AND role IS NULL AND instance_admin = 1))
);
CREATE UNIQUE INDEX group_mappings_unique ON group_mappings (provider_id, group_name, IFNULL(workspace_id, 0));

-- A membership a provider's mapping granted (NULL: added by a person). Only those are taken away when
-- the group goes; a provider deleted takes its grants with it.
ALTER TABLE members ADD COLUMN granted_by INTEGER REFERENCES identity_providers(id) ON DELETE CASCADE;
-- The instance admin flag, when a provider's mapping set it: removed with the group, or with the provider
-- (`identity::providers::delete`; no trigger: the start-up table rebuild drops and renames `users`).
ALTER TABLE users ADD COLUMN admin_granted_by INTEGER REFERENCES identity_providers(id) ON DELETE SET NULL;
-- The e-mail by which a company identity may claim this existing account, set by an admin; used once
-- (cleared when linked), and only with an e-mail the provider says is verified.
ALTER TABLE users ADD COLUMN link_email TEXT;
-- Who may sign in with a password: everyone, or only instance admins without a company identity (the
-- break-glass account) once company sign-in is the way in.
ALTER TABLE instance_settings ADD COLUMN password_sign_in TEXT NOT NULL DEFAULT 'everyone'
    CHECK (password_sign_in IN ('everyone', 'admins'));

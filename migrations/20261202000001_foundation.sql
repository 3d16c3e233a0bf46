-- Foundation schema: accounts, instance settings, team workspaces and their members, the audit log and
-- personal API tokens. Never edit this file once applied; add a new migration instead.
-- Timestamps are RFC 3339 UTC strings (what the API returns), booleans are 0/1.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    -- Lower-cased, 3–32 chars of [a-z0-9_.-]; validated in `ssr::accounts`.
    username      TEXT    NOT NULL UNIQUE,
    -- argon2id PHC string.
    password_hash TEXT    NOT NULL,
    is_admin      INTEGER NOT NULL DEFAULT 0,
    disabled      INTEGER NOT NULL DEFAULT 0,
    -- Stored in each session; bumping it (password reset, disable) ends every existing session.
    session_epoch INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT    NOT NULL
);

-- One row: settings an instance admin can change.
CREATE TABLE instance_settings (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    signup_enabled INTEGER NOT NULL
);
INSERT INTO instance_settings (id, signup_enabled) VALUES (1, 1);

CREATE TABLE workspaces (
    id         INTEGER PRIMARY KEY,
    -- Not unique: two teams may pick the same name without learning of each other.
    name       TEXT    NOT NULL,
    created_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at TEXT    NOT NULL
);

CREATE TABLE members (
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role         TEXT    NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    added_at     TEXT    NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX members_by_user ON members (user_id);

-- Who did what to which resource, when, from where. Rows outlive their workspace and actor
-- (SET NULL) so that deletions stay on record.
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY,
    workspace_id  INTEGER REFERENCES workspaces(id) ON DELETE SET NULL,
    actor_id      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    action        TEXT    NOT NULL,
    resource_type TEXT    NOT NULL,
    resource      TEXT    NOT NULL,
    detail        TEXT,
    ip            TEXT,
    at            TEXT    NOT NULL
);
CREATE INDEX audit_log_by_workspace ON audit_log (workspace_id, id);

-- Personal API tokens. Only the SHA-256 of the secret is stored; `prefix` lets a person recognise it.
CREATE TABLE api_tokens (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    prefix        TEXT    NOT NULL,
    secret_sha256 TEXT    NOT NULL UNIQUE,
    created_at    TEXT    NOT NULL,
    last_used_at  TEXT
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);

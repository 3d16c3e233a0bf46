-- Personal API tokens get an expiry (NULL: never) and a scope: `read` tokens may only read (GET),
-- for dashboards and scripts that must not change anything. Tokens made before keep full access and
-- no expiry, as they were issued. Never edit this file once applied; add a new migration instead.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write'));
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;

-- Endpoints: checkpoints served over HTTP. An endpoint has model-server replicas (processes Paddock
-- started and can find again after a restart), API keys (only their SHA-256 is stored) with rate limits,
-- the report of the parity gate it passed or failed, and a sampled log of the requests it served.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE endpoints (
    id               INTEGER PRIMARY KEY,
    workspace_id     INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- In the public URL `/v1/endpoints/<slug>/predict`: unique across the installation.
    slug             TEXT    NOT NULL UNIQUE,
    name             TEXT    NOT NULL,
    checkpoint_id    INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE RESTRICT,
    replicas         INTEGER NOT NULL,
    max_batch_tokens INTEGER NOT NULL,
    max_wait_ms      INTEGER NOT NULL,
    -- `cpu` or `cuda`.
    device           TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'starting'
        CHECK (status IN ('starting', 'ready', 'failed', 'stopped')),
    status_message   TEXT,
    -- JSON: samples compared, largest logit difference, and the first mismatch if any.
    parity_report    TEXT,
    created_by       INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);
CREATE INDEX endpoints_by_workspace ON endpoints (workspace_id, id);

CREATE TABLE endpoint_replicas (
    id          INTEGER PRIMARY KEY,
    endpoint_id INTEGER NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    pid         INTEGER,
    base_url    TEXT,
    status      TEXT    NOT NULL CHECK (status IN ('starting', 'ready', 'failed', 'stopped')),
    restarts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    started_at  TEXT,
    UNIQUE (endpoint_id, ordinal)
);

CREATE TABLE endpoint_keys (
    id                    INTEGER PRIMARY KEY,
    endpoint_id           INTEGER NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    name                  TEXT    NOT NULL,
    prefix                TEXT    NOT NULL,
    secret_sha256         TEXT    NOT NULL UNIQUE,
    rate_limit_per_minute INTEGER NOT NULL,
    created_by            INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at            TEXT    NOT NULL,
    last_used_at          TEXT,
    revoked_at            TEXT
);

-- A sample of the requests served (every error, and one in ten of the rest).
CREATE TABLE endpoint_requests (
    id          INTEGER PRIMARY KEY,
    endpoint_id INTEGER NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    key_id      INTEGER REFERENCES endpoint_keys(id) ON DELETE SET NULL,
    status      INTEGER NOT NULL,
    latency_ms  REAL    NOT NULL,
    inputs      INTEGER NOT NULL,
    at          TEXT    NOT NULL
);
CREATE INDEX endpoint_requests_by_endpoint ON endpoint_requests (endpoint_id, id);

-- Environments: versioned container specs per workspace, the images built from them (the lock), the
-- container each environment runs, the GPUs it holds and what Docker said about it.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE environments (
    id              INTEGER PRIMARY KEY,
    workspace_id    INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- The spec's name, copied here so lists and uniqueness need no JSON.
    name            TEXT    NOT NULL,
    -- The version a provision uses: the newest one, unless the user rolls back.
    current_version INTEGER NOT NULL DEFAULT 1,
    -- The container's state as Paddock last saw it: stopped (never started or removed on purpose),
    -- provisioning, running, exited, oom_killed, missing (gone behind Paddock's back), failed.
    status          TEXT    NOT NULL DEFAULT 'stopped'
        CHECK (status IN ('stopped', 'provisioning', 'running', 'exited', 'oom_killed', 'missing', 'failed')),
    exit_code       INTEGER,
    -- Why the last action failed, in words for the user.
    status_message  TEXT,
    -- The deterministic container name, set once the environment has been provisioned.
    container_name  TEXT,
    container_id    TEXT,
    -- Last terminal/exec activity or start; idle auto-stop compares against it.
    last_active_at  TEXT,
    created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE environment_versions (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    version        INTEGER NOT NULL,
    -- The spec as the user wrote it (`containers::EnvSpec` JSON) and its hashes.
    spec_json      TEXT    NOT NULL,
    spec_hash      TEXT    NOT NULL,
    -- queued → building → built | failed.
    build_status   TEXT    NOT NULL DEFAULT 'queued'
        CHECK (build_status IN ('queued', 'building', 'built', 'failed')),
    build_hash     TEXT,
    -- The lock: the image ID the build produced. A later build that gives another ID is recorded in
    -- `previous_image_id` so the change is visible.
    image_id       TEXT,
    previous_image_id TEXT,
    image_tag      TEXT,
    dockerfile     TEXT,
    build_log      TEXT    NOT NULL DEFAULT '',
    build_error    TEXT,
    build_started_at  TEXT,
    build_finished_at TEXT,
    created_by     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at     TEXT    NOT NULL,
    UNIQUE (environment_id, version)
);

-- Paddock's GPU inventory: which holder (an environment now, jobs later) holds which host GPU.
-- A GPU held exclusively by one holder is never given to another; shared leases only coexist with
-- other shared leases.
CREATE TABLE gpu_leases (
    gpu_index   INTEGER NOT NULL,
    holder_kind TEXT    NOT NULL CHECK (holder_kind IN ('environment', 'job')),
    holder_id   INTEGER NOT NULL,
    shared      INTEGER NOT NULL DEFAULT 0,
    since       TEXT    NOT NULL,
    PRIMARY KEY (gpu_index, holder_kind, holder_id)
);
CREATE INDEX gpu_leases_by_holder ON gpu_leases (holder_kind, holder_id);

-- What happened to an environment's container (Docker events, reconcile findings, idle stops).
CREATE TABLE environment_events (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    kind           TEXT    NOT NULL,
    message        TEXT    NOT NULL,
    at             TEXT    NOT NULL
);
CREATE INDEX environment_events_by_environment ON environment_events (environment_id, id);

-- This installation's name on the Docker daemon: the `paddock.instance` label and name prefix of every
-- container and volume it creates. Random at first start, so that two installations (or parallel test
-- servers) sharing one daemon never adopt or remove each other's containers.
CREATE TABLE instance_identity (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    instance TEXT    NOT NULL
);

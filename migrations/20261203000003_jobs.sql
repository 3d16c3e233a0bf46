-- Fine-tuning jobs: a reproducible spec (the form and the job.toml the trainer runs), their place in the
-- workspace's queue, where and how they run, what they reported (metrics, logs) and the checkpoints they
-- wrote. The job's files live in the workspace volume under `jobs/<id>/`.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY,
    workspace_id    INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL,
    -- The form as submitted (JSON) and the trainer's job file rendered from it.
    spec_json       TEXT    NOT NULL,
    config_toml     TEXT    NOT NULL,
    -- `local` (a child process of the server) or `docker` (a container from the environment's image).
    executor        TEXT    NOT NULL CHECK (executor IN ('local', 'docker')),
    environment_id  INTEGER REFERENCES environments(id) ON DELETE SET NULL,
    -- The environment image the Docker executor runs (the lock at submission).
    image_id        TEXT,
    dataset_id      INTEGER REFERENCES datasets(id) ON DELETE RESTRICT,
    dev_dataset_id  INTEGER REFERENCES datasets(id) ON DELETE RESTRICT,
    -- Higher runs first; FIFO (by id) within a priority.
    priority        INTEGER NOT NULL DEFAULT 0,
    gpus            INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'starting', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled')),
    status_message  TEXT,
    exit_code       INTEGER,
    -- Host GPU indices while it runs (JSON array).
    gpu_indices     TEXT,
    -- The local executor's wrapper shell and trainer processes; the Docker executor's container.
    pid             INTEGER,
    container_name  TEXT,
    -- Lines of the event stream already ingested, so a restarted server continues where it stopped.
    events_offset   INTEGER NOT NULL DEFAULT 0,
    log_offset      INTEGER NOT NULL DEFAULT 0,
    step            INTEGER NOT NULL DEFAULT 0,
    total_steps     INTEGER,
    epoch           REAL,
    -- Stop gracefully (with a checkpoint) after this many seconds of running.
    time_limit_secs INTEGER,
    retry_of        INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT
);
CREATE INDEX jobs_by_workspace ON jobs (workspace_id, id);
CREATE INDEX jobs_by_status ON jobs (status, priority, id);

-- What a job reported: every `step` and `eval` event (the chart's points).
CREATE TABLE job_metrics (
    id      INTEGER PRIMARY KEY,
    job_id  INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    kind    TEXT    NOT NULL CHECK (kind IN ('step', 'eval')),
    step    INTEGER NOT NULL,
    epoch   REAL,
    -- The event's fields (loss, lr, samples_per_s, ... or accuracy, macro_f1, ...).
    data    TEXT    NOT NULL,
    at      TEXT    NOT NULL
);
CREATE INDEX job_metrics_by_job ON job_metrics (job_id, id);

-- The trainer's stderr and the platform's own notes, line by line.
CREATE TABLE job_logs (
    id      INTEGER PRIMARY KEY,
    job_id  INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    line    TEXT    NOT NULL,
    at      TEXT    NOT NULL
);
CREATE INDEX job_logs_by_job ON job_logs (job_id, id);

-- Every checkpoint a job wrote. Rows stay after the trainer's best-k retention deletes the files
-- (`deleted_at`), so the job's history stays complete.
CREATE TABLE checkpoints (
    id           INTEGER PRIMARY KEY,
    job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    step         INTEGER NOT NULL,
    epoch        REAL,
    metrics      TEXT,
    -- Relative to the workspace volume.
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL,
    sha256       TEXT    NOT NULL,
    best         INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT    NOT NULL,
    deleted_at   TEXT,
    UNIQUE (job_id, step)
);
CREATE INDEX checkpoints_by_workspace ON checkpoints (workspace_id, id);

-- Per-workspace limits; no row means no limit beyond the host.
CREATE TABLE workspace_quotas (
    workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    max_gpus     INTEGER NOT NULL
);

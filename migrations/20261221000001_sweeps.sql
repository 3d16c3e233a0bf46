-- Sweeps (issue 37): a job spec tried with several settings, each trial an ordinary job of the queue
-- that names its sweep and number; the decisions of early stopping at each rung, one row per trial
-- and rung, written in the transaction that stops the trial.
CREATE TABLE sweeps (
    id              INTEGER PRIMARY KEY,
    workspace_id    INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL,
    -- The spec as checked, its objective's goal and its trial count said (JSON).
    spec_json       TEXT    NOT NULL,
    max_trials      INTEGER NOT NULL CHECK (max_trials >= 1),
    -- Trials queued so far: moved with the insert of each trial's job, so a trial whose job was
    -- deleted is not made again.
    trials_started  INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'paused', 'finished', 'cancelled')),
    status_reason   TEXT,
    status_message  TEXT,
    created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    finished_at     TEXT
);
CREATE INDEX sweeps_by_workspace ON sweeps (workspace_id, id);
CREATE INDEX sweeps_by_status ON sweeps (status);

ALTER TABLE jobs ADD COLUMN sweep_id INTEGER REFERENCES sweeps(id) ON DELETE SET NULL;
ALTER TABLE jobs ADD COLUMN trial INTEGER;
CREATE UNIQUE INDEX jobs_by_sweep_trial ON jobs (sweep_id, trial) WHERE sweep_id IS NOT NULL;

CREATE TABLE sweep_rungs (
    sweep_id   INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    -- The rung's step, the trial's best objective by then, and how many trials had reached it.
    rung_step  INTEGER NOT NULL,
    value      REAL    NOT NULL,
    peers      INTEGER NOT NULL,
    continued  INTEGER NOT NULL CHECK (continued IN (0, 1)),
    at         TEXT    NOT NULL,
    PRIMARY KEY (job_id, rung_step)
);
CREATE INDEX sweep_rungs_by_sweep ON sweep_rungs (sweep_id, rung_step);

-- Evaluations: a checkpoint measured on a workspace dataset by `paddock eval` (accuracy, macro-F1,
-- per-class precision/recall/F1 and the confusion matrix). The run is a background process whose
-- files live in the workspace volume under `evaluations/<id>/`; the row says where it runs and, once it
-- is over, what it found.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE evaluations (
    id              INTEGER PRIMARY KEY,
    workspace_id    INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- Results belong to the checkpoint: deleting its job deletes them.
    checkpoint_id   INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
    -- The dataset may be deleted later; its name and hash stay, so the result still says what it measured.
    dataset_id      INTEGER REFERENCES datasets(id) ON DELETE SET NULL,
    dataset_name    TEXT    NOT NULL,
    dataset_sha256  TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    -- Why it failed (the evaluator's own message), or a note on success.
    status_message  TEXT,
    -- The wrapper shell of the running evaluator (to tell a live run from one lost with the machine).
    pid             INTEGER,
    rows            INTEGER,
    accuracy        REAL,
    macro_f1        REAL,
    loss            REAL,
    -- JSON: the label names in id order, [{label, precision, recall, f1, support}], and
    -- confusion[gold][predicted] in label-id order.
    labels_json     TEXT,
    per_class_json  TEXT,
    confusion_json  TEXT,
    created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at      TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT
);
CREATE INDEX evaluations_by_checkpoint ON evaluations (checkpoint_id, id);
CREATE INDEX evaluations_by_workspace ON evaluations (workspace_id, id);
CREATE INDEX evaluations_by_status ON evaluations (status, id);

-- Datasets: labelled text files uploaded to a workspace, validated by the trainer's validator before
-- they are kept. The file lives in the workspace volume (`datasets/<id>/<file>` under `/workspace`), so
-- jobs in containers read the same bytes whose sha256 is recorded here.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE datasets (
    id           INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- 1–64 characters, unique in the workspace.
    name         TEXT    NOT NULL,
    -- The uploaded file's name (sanitised); its extension gives the format.
    file_name    TEXT    NOT NULL,
    format       TEXT    NOT NULL CHECK (format IN ('csv', 'tsv', 'jsonl')),
    -- Path relative to the workspace volume's root.
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL,
    sha256       TEXT    NOT NULL,
    rows         INTEGER NOT NULL,
    text_column  TEXT    NOT NULL,
    label_column TEXT    NOT NULL,
    -- The validator's report (JSON: rows, label distribution, length histogram, warnings with lines).
    report_json  TEXT    NOT NULL,
    -- The first rows, for the preview table (JSON: {columns, rows}).
    preview_json TEXT    NOT NULL,
    created_by   INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at   TEXT    NOT NULL,
    UNIQUE (workspace_id, name)
);

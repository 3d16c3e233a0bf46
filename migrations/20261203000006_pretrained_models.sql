-- Pretrained models: Hugging Face model directories (config.json, vocab.txt or tokenizer.json, weights)
-- a workspace uploaded as a .tar archive to fine-tune from. Kept unpacked in the workspace volume
-- (`models/<id>/`, `/workspace/models/<id>` in containers) once the trainer has loaded them.
-- Never edit this file once applied; add a new migration instead.

CREATE TABLE pretrained_models (
    id           INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- 1–64 characters, unique in the workspace.
    name         TEXT    NOT NULL,
    -- The uploaded archive's name (sanitised) and sha256.
    file_name    TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    -- The unpacked directory, relative to the workspace volume, and its size.
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL,
    -- From config.json: model_type, layers, hidden size, vocabulary, labels (JSON).
    config_json  TEXT    NOT NULL,
    created_by   INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at   TEXT    NOT NULL,
    UNIQUE (workspace_id, name)
);

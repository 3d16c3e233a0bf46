-- The server's own store (see `app/src/ssr/storage.rs`): datasets, uploaded models and registered
-- checkpoints move out of the workspace volumes, where containers could rename them. `path` of a
-- checkpoint becomes its copy in the store; `run_path` is the folder in its run that the trainer's
-- retention may remove (NULL: registered before the store). `storage_layout` says which layout the data
-- directory has (1: all in the volumes; 2: store and runs); `layout::migrate` moves it at start.
-- Never edit this file once applied; add a new migration instead.
ALTER TABLE checkpoints ADD COLUMN run_path TEXT;
ALTER TABLE instance_settings ADD COLUMN storage_layout INTEGER NOT NULL DEFAULT 1;

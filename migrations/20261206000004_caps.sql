-- Caps on what one workspace or one user may hold at once, editable by instance admins: running
-- environments and endpoint replicas per workspace, uploads in progress and open live streams (SSE,
-- terminal) per user. Never edit this file once applied; add a new migration instead.
ALTER TABLE instance_settings ADD COLUMN max_running_environments INTEGER NOT NULL DEFAULT 8;
ALTER TABLE instance_settings ADD COLUMN max_replicas INTEGER NOT NULL DEFAULT 16;
ALTER TABLE instance_settings ADD COLUMN max_uploads_per_user INTEGER NOT NULL DEFAULT 2;
ALTER TABLE instance_settings ADD COLUMN max_streams_per_user INTEGER NOT NULL DEFAULT 32;

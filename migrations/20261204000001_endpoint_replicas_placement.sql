-- Endpoint replicas run as local processes or in containers; a replica that serves on a GPU holds it in
-- the shared GPU inventory like environments and jobs do. SQLite cannot alter a CHECK constraint, so
-- gpu_leases is rebuilt with the new holder kind.
ALTER TABLE endpoint_replicas ADD COLUMN container TEXT;

CREATE TABLE gpu_leases_new (
    gpu_index   INTEGER NOT NULL,
    holder_kind TEXT    NOT NULL CHECK (holder_kind IN ('environment', 'job', 'endpoint_replica')),
    holder_id   INTEGER NOT NULL,
    shared      INTEGER NOT NULL DEFAULT 0,
    since       TEXT    NOT NULL,
    PRIMARY KEY (gpu_index, holder_kind, holder_id)
);
INSERT INTO gpu_leases_new (gpu_index, holder_kind, holder_id, shared, since)
    SELECT gpu_index, holder_kind, holder_id, shared, since FROM gpu_leases;
DROP TABLE gpu_leases;
ALTER TABLE gpu_leases_new RENAME TO gpu_leases;
CREATE INDEX gpu_leases_by_holder ON gpu_leases (holder_kind, holder_id);

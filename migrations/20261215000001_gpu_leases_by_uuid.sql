-- GPUs are leased by UUID: nvidia-smi's index shifts when a GPU falls off the bus, and CUDA numbers
-- devices fastest-first unless told otherwise, so an index names different hardware to different
-- readers. The index stays for people (forms, pages, audit). Leases taken before this name their GPU by
-- index (`index:N`); the server matches them to the GPU at that index at its next start
-- (`domain::gpus::adopt_index_leases`).
CREATE TABLE gpu_leases_new (
    gpu_uuid    TEXT    NOT NULL,
    gpu_index   INTEGER NOT NULL,
    holder_kind TEXT    NOT NULL CHECK (holder_kind IN ('environment', 'job', 'endpoint_replica')),
    holder_id   INTEGER NOT NULL,
    shared      INTEGER NOT NULL DEFAULT 0,
    since       TEXT    NOT NULL,
    PRIMARY KEY (gpu_uuid, holder_kind, holder_id)
);
INSERT INTO gpu_leases_new (gpu_uuid, gpu_index, holder_kind, holder_id, shared, since)
    SELECT 'index:' || gpu_index, gpu_index, holder_kind, holder_id, shared, since FROM gpu_leases;
DROP TABLE gpu_leases;
ALTER TABLE gpu_leases_new RENAME TO gpu_leases;
CREATE INDEX gpu_leases_by_holder ON gpu_leases (holder_kind, holder_id);

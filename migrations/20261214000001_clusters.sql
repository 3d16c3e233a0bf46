-- Clusters an instance admin registered from the dashboard, which the server reaches again at every
-- start. A cluster given in `paddock serve`'s settings is not here: it comes and goes with them.
-- `reach` is how its tools are reached (JSON `ClusterReach`: on this host with a `slurm.conf`, or over
-- SSH to a login node with the host keys to trust); the SSH key is the server's own, in its data
-- directory. Work records the cluster by name (`jobs.cluster`, …), so a name is never reused while
-- anything of it may still run: removal is refused until nothing does.
CREATE TABLE clusters (
    name          TEXT PRIMARY KEY NOT NULL,
    executor      TEXT NOT NULL CHECK (executor = 'slurm'),
    reach         TEXT NOT NULL,
    partition     TEXT,
    account       TEXT,
    qos           TEXT,
    cpus          INTEGER NOT NULL CHECK (cpus > 0),
    memory_mb     INTEGER NOT NULL CHECK (memory_mb > 0),
    gpu_stand_ins INTEGER NOT NULL DEFAULT 0 CHECK (gpu_stand_ins IN (0, 1)),
    created_by    INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at    TEXT NOT NULL
);

-- The Slurm account and QoS a workspace's work is charged to on a cluster, set by instance admins (they
-- map teams onto the cluster's own accounting); no row: the server's defaults (`--slurm-account`,
-- `--slurm-qos`), else the cluster's.
CREATE TABLE workspace_cluster_accounts (
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    cluster      TEXT NOT NULL,
    account      TEXT,
    qos          TEXT,
    PRIMARY KEY (workspace_id, cluster)
);

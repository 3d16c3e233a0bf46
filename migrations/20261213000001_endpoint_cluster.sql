-- Where an endpoint's replicas run: `cluster` names the cluster they are batch jobs on (NULL: this
-- server), and each replica's `cluster_job` is its Slurm job id there — what the watcher asks the
-- scheduler about, and what a restarted server re-attaches by.
ALTER TABLE endpoints ADD COLUMN cluster TEXT;
ALTER TABLE endpoint_replicas ADD COLUMN cluster_job TEXT;

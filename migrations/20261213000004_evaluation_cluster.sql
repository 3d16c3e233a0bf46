-- Where an evaluation runs: `cluster` names the cluster it was handed to (NULL: this server), and
-- `cluster_job` is its batch job there once submitted — what a restarted server follows it by.
ALTER TABLE evaluations ADD COLUMN cluster TEXT;
ALTER TABLE evaluations ADD COLUMN cluster_job TEXT;

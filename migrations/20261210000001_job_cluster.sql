-- Where a job runs: `cluster` names the cluster it was submitted to (NULL: this server), and
-- `cluster_job` is its job id there once submitted — what a restarted server finds it again by, as
-- `pid` and `container_name` are for a process or a container here. `executor` keeps saying how the
-- trainer runs (`local`: the paddock runtime, natively; `docker`: in the environment's image).
ALTER TABLE jobs ADD COLUMN cluster TEXT;
ALTER TABLE jobs ADD COLUMN cluster_job TEXT;

-- A job on a cluster may span several nodes, each with the job's `gpus`: the quota counts gpus × nodes.
ALTER TABLE jobs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1 CHECK (nodes BETWEEN 1 AND 32);

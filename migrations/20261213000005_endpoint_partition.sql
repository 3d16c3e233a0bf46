-- The partition of its cluster an endpoint's replicas are submitted to (NULL: the server's, else the
-- cluster's default), checked against the scheduler's list when it is deployed.
ALTER TABLE endpoints ADD COLUMN partition TEXT;

-- Each replica start gets its own bearer token, which `serve-model` requires on every call but
-- `/health`: a replica on a shared network (a cluster's nodes, a Docker bridge) answers the gateway and
-- the parity gate alone. Kept so a restarted server can call the replicas it re-attaches to.
ALTER TABLE endpoint_replicas ADD COLUMN token TEXT;

-- Canary rollouts: the canary under way on an endpoint (JSON `contracts::scaling::Canary`; NULL: none),
-- and which replicas are the canary's (they serve its checkpoint, beside the stable ones).
-- Never edit this file once applied; add a new migration instead.

ALTER TABLE endpoints ADD COLUMN canary TEXT;
ALTER TABLE endpoint_replicas ADD COLUMN canary INTEGER NOT NULL DEFAULT 0;

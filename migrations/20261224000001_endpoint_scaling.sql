-- Endpoints that size themselves: an autoscaling policy (JSON `contracts::scaling::Autoscale`; NULL:
-- a fixed number of replicas), the last cold start's time, and the history of what the scaler (or a
-- person changing how the endpoint runs) decided, with the figures it decided on.
-- Never edit this file once applied; add a new migration instead.

ALTER TABLE endpoints ADD COLUMN autoscale TEXT;
-- Milliseconds from the call that woke a scaled-to-zero endpoint to its first ready replica.
ALTER TABLE endpoints ADD COLUMN cold_start_ms INTEGER;

CREATE TABLE endpoint_history (
    id          INTEGER PRIMARY KEY,
    endpoint_id INTEGER NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    at          TEXT    NOT NULL,
    -- NULL: the endpoint itself (its scaler).
    actor_id    INTEGER REFERENCES users(id) ON DELETE SET NULL,
    -- JSON `contracts::scaling::EndpointEvent`.
    event       TEXT    NOT NULL
);
CREATE INDEX endpoint_history_by_endpoint ON endpoint_history (endpoint_id, id);

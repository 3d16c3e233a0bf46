-- Why an endpoint's, a replica's and an image build's status last changed, as a stable word
-- (`deployed`, `parity_failed`, `exited`, `retired`, `rebuild_requested`, ...), apart from the
-- human-readable message; written with every move of their state machines. NULL for rows written
-- before it existed.
ALTER TABLE endpoints ADD COLUMN status_reason TEXT;
ALTER TABLE endpoint_replicas ADD COLUMN status_reason TEXT;
ALTER TABLE environment_versions ADD COLUMN build_reason TEXT;

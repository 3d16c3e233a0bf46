-- Why a job's status last changed, as a stable word (`time_limit`, `cancel_requested`, `start_failed`,
-- ...), kept apart from the human-readable `status_message`: the supervisor decides on it (a stop for
-- the time limit ends as failed, one asked by a person as cancelled), so a message no longer doubles
-- as a control flag. NULL for rows written before it existed.
ALTER TABLE jobs ADD COLUMN status_reason TEXT;
-- A run stopping at its time limit was marked by this message alone; it is now a stop with its reason.
UPDATE jobs SET status = 'cancelling', status_reason = 'time_limit'
 WHERE status = 'running' AND status_message = 'time limit reached';

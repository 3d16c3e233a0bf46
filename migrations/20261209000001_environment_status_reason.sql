-- Why an environment's status last changed, as a stable word (`up_requested`, `provisioned`,
-- `exited`, `disappeared`, `idle`, ...), apart from the human-readable message; written with every
-- move of its state machine. NULL for rows written before it existed.
ALTER TABLE environments ADD COLUMN status_reason TEXT;

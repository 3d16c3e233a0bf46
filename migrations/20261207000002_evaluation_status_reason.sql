-- Why an evaluation's status last changed, as a stable word (`completed`, `evaluator_failed`,
-- `inputs_gone`, ...), apart from the human-readable `status_message`; written with every move of its
-- state machine. NULL for rows written before it existed.
ALTER TABLE evaluations ADD COLUMN status_reason TEXT;

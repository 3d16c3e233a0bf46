-- What a job's run trains in and why (issue 34): `auto` measures bf16 against float32 at the start of the
-- run, and the job page shows the figures. JSON of `contracts::precision::PrecisionChoice`, from the
-- run's `start` event; NULL until the run starts, and for runs of trainers that did not say.
ALTER TABLE jobs ADD COLUMN precision_choice TEXT;

-- A line Paddock wrote into a job's log keeps what it said as data (`contracts::types::LogNote`, JSON),
-- so the page words it in its reader's language; `line` keeps the English for clients and the search.
ALTER TABLE job_logs ADD COLUMN note TEXT;

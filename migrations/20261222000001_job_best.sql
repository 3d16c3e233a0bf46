-- The runs table (issue 37): each job's best dev score, kept as its evaluations arrive so the jobs list
-- can sort and filter by it in SQL. The metric is the one its checkpoints are ranked by: the task's
-- (`macro_f1` for classification and matching, entity `f1` for entity extraction); `best_step` is the
-- first evaluation that reached it.
ALTER TABLE jobs ADD COLUMN best_metric TEXT;
ALTER TABLE jobs ADD COLUMN best_value REAL;
ALTER TABLE jobs ADD COLUMN best_step INTEGER;

-- Jobs evaluated before this migration: their best from the stored evaluations, as ingestion keeps it.
WITH scored AS (
    SELECT m.job_id, m.id, m.step,
        CASE WHEN json_extract(j.spec_json, '$.task') = 'ner' THEN 'f1' ELSE 'macro_f1' END AS metric,
        CASE WHEN json_extract(j.spec_json, '$.task') = 'ner'
            THEN json_extract(m.data, '$.entities.f1') ELSE json_extract(m.data, '$.macro_f1') END AS value
    FROM job_metrics m JOIN jobs j ON j.id = m.job_id
    WHERE m.kind = 'eval' AND coalesce(json_extract(m.data, '$.split'), 'dev') = 'dev'
), ranked AS (
    SELECT job_id, step, metric, value,
        row_number() OVER (PARTITION BY job_id ORDER BY value DESC, id) AS place
    FROM scored WHERE value IS NOT NULL
)
UPDATE jobs SET best_metric = ranked.metric, best_value = ranked.value, best_step = ranked.step
FROM ranked WHERE ranked.job_id = jobs.id AND ranked.place = 1;

CREATE INDEX jobs_by_dataset ON jobs (workspace_id, dataset_id);

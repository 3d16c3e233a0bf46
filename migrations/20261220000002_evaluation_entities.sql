-- An entity model's evaluation (issue 36): its micro-averaged entity scores over exact spans
-- (`{precision, recall, f1, gold, predicted}`, contracts' `EntityScores`), its headline; NULL for the
-- tasks that label a whole row. Its per-type scores and confusion (with a last `O` for "no entity") use
-- the existing columns.
ALTER TABLE evaluations ADD COLUMN entities_json TEXT;

-- What a dataset's rows are for (issue 36): `classification` (one text, one label) or `matching` (two
-- texts, one label about the pair, the second in `pair_column`). A job trains the task of its data; the
-- parity gate and evaluations read pairs where the dataset has a pair column. The value is the
-- contract's `Task`, checked where it is decoded, so that a later task needs no table rebuild.
ALTER TABLE datasets ADD COLUMN task TEXT NOT NULL DEFAULT 'classification';
ALTER TABLE datasets ADD COLUMN pair_column TEXT;

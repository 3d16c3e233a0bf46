-- Names for a dataset's label values (issue 33): `{"0": "负面", "1": "正面"}` as given at upload. The file
-- is kept as uploaded; the names are applied as its rows are read (validation, training, evaluation), so
-- models, metrics and endpoints answer in the names. NULL: the values are the names.
ALTER TABLE datasets ADD COLUMN label_names_json TEXT;

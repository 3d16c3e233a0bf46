-- A pretrained model uploaded as a PaddleNLP directory is converted on arrival; its import report
-- (contracts::types::PaddleImport as JSON: tensors mapped, parity on sample texts). NULL: uploaded in
-- the Hugging Face layout.
ALTER TABLE pretrained_models ADD COLUMN paddle_import_json TEXT;

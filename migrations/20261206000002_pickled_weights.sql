-- A pickled `pytorch_model.bin` is code as much as data for anything that unpickles it, so uploads of
-- one are refused unless an instance admin allows them; safetensors is the default.
-- Never edit this file once applied; add a new migration instead.
ALTER TABLE instance_settings ADD COLUMN allow_pickled_weights INTEGER NOT NULL DEFAULT 0;

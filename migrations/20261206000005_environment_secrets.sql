-- Secret environment variables of an environment: write-only (nobody reads a value back, viewers see
-- names), never baked into an image or stored in a version's spec, given to the container when it
-- starts. JSON object name → value. Never edit this file once applied; add a new migration instead.
ALTER TABLE environments ADD COLUMN secret_env_json TEXT NOT NULL DEFAULT '{}';

-- The numeric precision an endpoint's replicas serve in: `fp32`, or `bf16` / `fp16` autocast. Endpoints
-- deployed before this column existed served in float32.
-- Never edit this file once applied; add a new migration instead.

ALTER TABLE endpoints ADD COLUMN precision TEXT NOT NULL DEFAULT 'fp32'
    CHECK (precision IN ('fp32', 'bf16', 'fp16'));

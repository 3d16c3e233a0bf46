-- The change of a ready endpoint under way (`contracts::types::EndpointChange` as JSON), kept apart from
-- `status_message` so that the dashboard can say it in the reader's language; NULL when none is.
ALTER TABLE endpoints ADD COLUMN pending_change TEXT;

-- Deleting a workspace takes time (its processes and containers are stopped, its files removed) and
-- must survive a crash half-way, so it is recorded first: from `deleting_since` on, the workspace has
-- no members, its keys are revoked, and the server finishes the deletion (again at every start) before
-- the row itself goes. Never edit this file once applied; add a new migration instead.
ALTER TABLE workspaces ADD COLUMN deleting_since TEXT;

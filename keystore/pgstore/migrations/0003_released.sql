-- 0003: Release marks the row released instead of deleting it.
--
-- A released row is an in-flight row (status NULL) whose lease ended at the
-- release: Claim takes it over like an expired lease, but without reporting
-- TookOver, and Prune deletes it with the other expired rows. Until then a
-- Release repeated by the same token (a retry of one that was applied) finds
-- it and succeeds instead of reporting the lease lost.
ALTER TABLE {{table}} ADD COLUMN released boolean NOT NULL DEFAULT false;

-- 0004: the tokens a Release fenced.
--
-- A Release fences its token (see package keystore, "Claims whose outcome
-- is unknown"): it is added to the row's fenced tokens, or, for a key with
-- no row, a released row with token 0 (never issued) and the token fenced
-- is inserted. A Claim never takes a row over for a fenced token (nor,
-- for a row released before this version, for the token that released
-- it). fenced_at is when the row last fenced a token: Prune keeps the row
-- for its grace after both expires_at and fenced_at, so that a fence
-- outlives the Release by the grace even on a row that ended long before.
ALTER TABLE {{table}} ADD COLUMN fenced bigint[];
ALTER TABLE {{table}} ADD COLUMN fenced_at timestamptz;

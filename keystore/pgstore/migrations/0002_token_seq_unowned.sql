-- 0002: the token sequence no longer belongs to the token column.
--
-- TRUNCATE … RESTART IDENTITY restarts every sequence owned by a column of
-- the table; a restarted sequence would issue tokens again that stale owners
-- still hold, and their late Complete would then pass the fence. A sequence
-- that no column owns is left alone by TRUNCATE (with or without RESTART
-- IDENTITY), DELETE and Prune. Dropping the table no longer drops the
-- sequence: drop it yourself, with the table, only when no replica runs.
ALTER SEQUENCE {{seq}} OWNED BY NONE;

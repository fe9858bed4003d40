-- 0005: the count of each client's new keys (Config.ClientKeys).
--
-- One row per client: the new keys it acquired (n, never above the bound)
-- in the window that ends at window_end, which started with the first of
-- them, and the count before the last claim statement that changed it
-- (prev), which that statement reads back. A claim's own statement takes
-- the client's row first (an upsert, which locks it: the claims of one
-- client count one after the other), then inserts the keys the count
-- leaves room for. Unlogged: the counts are a defence, not a record, so
-- they cost no WAL; a crash of the database empties the table, and every
-- count starts again. Prune deletes the rows whose window ended.
CREATE UNLOGGED TABLE IF NOT EXISTS {{clients}} (
    client     text        PRIMARY KEY,
    n          integer     NOT NULL,
    prev       integer     NOT NULL,
    window_end timestamptz NOT NULL
);

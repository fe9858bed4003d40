-- 0006: the count of each client's new keys, in shards.
--
-- A client's count is split over at most 16 rows (shard 0 to 15), each
-- the new keys the client acquired (n) in the window that ends at
-- window_end, which started with the first of them, and the row's count
-- before the last claim statement that changed it (prev), which that
-- statement reads back. A claim's statement takes a row of its client
-- that no other statement holds (SKIP LOCKED), or starts a new one, so
-- that the first claims of one client that run at once do not wait for
-- each other; it reads the other rows as its snapshot shows them. The
-- client's count is the sum of its rows whose windows run. Unlogged, as
-- the table of version 5 it replaces (which stays, for processes of an
-- earlier version still running, and is pruned): a crash of the database
-- empties it, and every count starts again.
CREATE UNLOGGED TABLE IF NOT EXISTS {{shards}} (
    client     text        NOT NULL,
    shard      smallint    NOT NULL,
    n          integer     NOT NULL,
    prev       integer     NOT NULL,
    window_end timestamptz NOT NULL,
    PRIMARY KEY (client, shard)
);

-- 0001: the key table, its token sequence and the expiry index.
--
-- One row per key. An in-flight row has status NULL and expires_at is the end
-- of its lease; a completed row has its recorded response in status, header
-- (binary-encoded, see record.go) and body, and expires_at is the end of
-- its retention.
CREATE TABLE {{table}} (
    key         text COLLATE "C" PRIMARY KEY,
    fingerprint bytea       NOT NULL,
    token       bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    took_over   boolean     NOT NULL DEFAULT false,
    status      integer,
    header      bytea,
    body        bytea
);

-- Tokens come from one sequence for the whole table, so a token is never
-- issued twice, not even for a key that was released, pruned and claimed
-- again. (Dropping the table dropped the sequence; see 0002.)
CREATE SEQUENCE {{seq}} AS bigint MINVALUE 1 OWNED BY {{table}}.token;

-- Pruning walks this index from the oldest expiry.
CREATE INDEX {{index}} ON {{table}} (expires_at);

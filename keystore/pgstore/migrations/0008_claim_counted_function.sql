-- 0008: the first statement of a claim for a bounded client, as a function.
--
-- SELECT * FROM {{claimcountedfn}}(key, fingerprint, lease in
-- microseconds, token, client, bound, window in microseconds) answers as
-- the query it replaces, which it runs (unchanged) only for a key whose
-- row its read does not find: a key with a row (a replay, a key in
-- flight, an ended row) is reported from that read, as the query would
-- report it, without a count row read, locked or written, and without
-- setting up the query's inserts (the table's ROW EXCLUSIVE lock, its
-- indexes opened). Processes of earlier versions still send the query.
CREATE OR REPLACE FUNCTION {{claimcountedfn}}(text, bytea, bigint, bigint, text, integer, bigint)
RETURNS TABLE (o_acquired boolean, o_took_over boolean, o_token bigint, o_fingerprint bytea,
               o_status integer, o_header bytea, o_body bytea, o_remaining bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    RETURN QUERY
    SELECT false, false, k.token, k.fingerprint, k.status, k.header, k.body,
           (extract(epoch FROM k.expires_at - clock_timestamp()) * 1000000)::bigint
    FROM {{table}} k
    WHERE k.key = $1;
    IF FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH cur AS MATERIALIZED (
        SELECT k.token, k.fingerprint, k.status, k.header, k.body, k.expires_at
        FROM {{table}} k
        WHERE k.key = $1::text
    ), live AS MATERIALIZED (
        SELECT c.shard, c.n, c.window_end
        FROM {{shards}} c
        WHERE c.client = $5::text AND NOT EXISTS (SELECT FROM cur)
    ), pick AS MATERIALIZED (
        SELECT c.shard
        FROM {{shards}} c
        WHERE c.client = $5::text AND NOT EXISTS (SELECT FROM cur)
        ORDER BY c.shard
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ), slot AS MATERIALIZED (
        SELECT pick.shard FROM pick
        UNION ALL
        SELECT CASE WHEN m.next < {{nshards}} THEN m.next ELSE pg_backend_pid() % {{nshards}} END::smallint
        FROM (SELECT coalesce(max(live.shard) + 1, 0) AS next FROM live) AS m
        WHERE NOT EXISTS (SELECT FROM pick) AND NOT EXISTS (SELECT FROM cur)
    ), others AS MATERIALIZED (
        SELECT coalesce(sum(live.n), 0)::integer AS n, min(live.window_end) FILTER (WHERE live.n > 0) AS window_end
        FROM live, slot
        WHERE live.shard <> slot.shard AND live.window_end > clock_timestamp()
    ), bump AS (
        INSERT INTO {{shards}} AS c (client, shard, n, prev, window_end)
        SELECT $5::text, slot.shard, CASE WHEN others.n < $6::integer THEN 1 ELSE 0 END, 0,
               clock_timestamp() + $7::bigint * interval '1 microsecond'
        FROM slot, others
        ON CONFLICT (client, shard) DO UPDATE SET
            prev       = CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END,
            n          = CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END
                         + CASE WHEN CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END
                                     + (SELECT others.n FROM others) < $6::integer THEN 1 ELSE 0 END,
            window_end = CASE WHEN c.window_end > clock_timestamp() THEN c.window_end ELSE excluded.window_end END
        RETURNING c.prev, c.window_end
    ), ins AS (
        INSERT INTO {{table}} (key, fingerprint, token, expires_at)
        SELECT $1::text, $2::bytea, $4::bigint, clock_timestamp() + $3::bigint * interval '1 microsecond'
        FROM bump, others
        WHERE bump.prev + others.n < $6::integer
        ON CONFLICT (key) DO NOTHING
        RETURNING token
    )
    SELECT true, false, ins.token, NULL::bytea, NULL::integer, NULL::bytea, NULL::bytea, $3::bigint
    FROM ins
    UNION ALL
    SELECT false, false, cur.token, cur.fingerprint, cur.status, cur.header, cur.body,
           (extract(epoch FROM cur.expires_at - clock_timestamp()) * 1000000)::bigint
    FROM cur
    UNION ALL
    SELECT false, false, -1::bigint, NULL::bytea, NULL::integer, NULL::bytea, NULL::bytea,
           (extract(epoch FROM least(others.window_end, CASE WHEN bump.prev > 0 THEN bump.window_end END) - clock_timestamp()) * 1000000)::bigint
    FROM bump, others
    WHERE bump.prev + others.n >= $6::integer;
END
$fn$;

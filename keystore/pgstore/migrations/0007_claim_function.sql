-- 0007: the first statement of a claim, as a function.
--
-- SELECT * FROM {{claimfn}}(key, fingerprint, lease in microseconds,
-- token) settles the two common cases of Claim in one statement, as the
-- query it replaces did: a key with a row is reported from a plain read
-- (the row's token, fingerprint, record columns and the remaining lease
-- or retention in microseconds, zero or negative once it has ended; no
-- write, no row lock); a key with no row is inserted for the token
-- (acquired true; fingerprint NULL: the one given; remaining the lease).
-- No row at all (the insert met a row committed after the read) leaves
-- the claim to its second statement, which takes an ended row over or
-- reports the race's winner. The insert is planned and run only for a key
-- with no row: a replay takes no lock but the read's, and costs the
-- database a read's work, where a query that merely contains an INSERT
-- takes the table's ROW EXCLUSIVE lock and opens its indexes even when it
-- inserts nothing. Processes of earlier versions still send that query:
-- the two agree on every row.
CREATE OR REPLACE FUNCTION {{claimfn}}(p_key text, p_fingerprint bytea, p_us bigint, p_token bigint)
RETURNS TABLE (o_acquired boolean, o_took_over boolean, o_token bigint, o_fingerprint bytea,
               o_status integer, o_header bytea, o_body bytea, o_remaining bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    RETURN QUERY
    SELECT false, false, k.token, k.fingerprint, k.status, k.header, k.body,
           (extract(epoch FROM k.expires_at - clock_timestamp()) * 1000000)::bigint
    FROM {{table}} k
    WHERE k.key = p_key;
    IF FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    INSERT INTO {{table}} AS k (key, fingerprint, token, expires_at)
    VALUES (p_key, p_fingerprint, p_token, clock_timestamp() + p_us * interval '1 microsecond')
    ON CONFLICT (key) DO NOTHING
    RETURNING true, false, k.token, NULL::bytea, NULL::integer, NULL::bytea, NULL::bytea, p_us;
END
$fn$;

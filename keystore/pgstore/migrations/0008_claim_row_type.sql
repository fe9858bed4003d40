-- 0008: the claim function returns rows of a type of its own.
--
-- The function of migration 7, with the same parameters, body and
-- columns, now declared RETURNS SETOF {{claimrow}} instead of RETURNS
-- TABLE (…). A function with OUT parameters (which RETURNS TABLE declares)
-- has its row description built again from its catalog entry, parameter
-- arrays and all, on every run of a query that calls it; a named
-- composite type's comes from the type cache. Every claim's first
-- statement calls it. The columns keep their names and types, so a
-- statement that processes of earlier versions prepared before this
-- migration runs on, and returns the same row.
CREATE TYPE {{claimrow}} AS (o_acquired boolean, o_took_over boolean, o_token bigint, o_fingerprint bytea,
                             o_status integer, o_header bytea, o_body bytea, o_remaining bigint);
DROP FUNCTION {{claimfn}}(text, bytea, bigint, bigint);
CREATE FUNCTION {{claimfn}}(p_key text, p_fingerprint bytea, p_us bigint, p_token bigint)
RETURNS SETOF {{claimrow}}
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

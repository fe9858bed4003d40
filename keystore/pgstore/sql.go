package pgstore

// maxTableLen keeps the names derived from the table name (the longest adds
// "_expires_at_idx") within PostgreSQL's 63-byte identifier limit, so that
// none is silently truncated into another.
const maxTableLen = 48

// statements holds a store's SQL, with its names filled in.
type statements struct {
	fastClaim, batchClaim, claim, extend, completeHeld, complete, batchComplete, release, prune string
	// With Config.ClientKeys: the claim statements for a client, and the
	// pruning of the counts.
	fastClaimCounted, batchClaimCounted, pruneClients, pruneShards string
	// With Config.MaxKeys: the table's sample, and a key's row.
	room, exists string
}

func newStatements(n names) statements {
	return statements{
		fastClaim:     n.expand(fastClaimSQL),
		batchClaim:    n.expand(batchClaimSQL),
		claim:         n.expand(claimSQL),
		extend:        n.expand(extendSQL),
		completeHeld:  n.expand(completeHeldSQL),
		complete:      n.expand(completeSQL),
		batchComplete: n.expand(batchCompleteSQL),
		release:       n.expand(releaseSQL),
		prune:         n.expand(pruneSQL),

		fastClaimCounted:  n.expand(fastClaimCountedSQL),
		batchClaimCounted: n.expand(batchClaimCountedSQL),
		pruneClients:      n.expand(pruneClientsSQL),
		pruneShards:       n.expand(pruneShardsSQL),
		room:              n.expand(roomSQL),
		exists:            n.expand(existsSQL),
	}
}

// fastClaimSQL is Claim's first statement, which settles the two common
// cases: a key with no row (inserted, acquired) and a live key (reported
// from a plain read, with no write and no row lock). $1 key, $2
// fingerprint, $3 lease in microseconds, $4 the caller's token. It returns
// the columns of claimSQL, in at most one row: an inserted key (acquired
// true; fingerprint NULL: the one given), or the row the read shows, live
// or not, with its token and the remaining lease or retention in
// microseconds, zero or negative once it has ended. No row (the insert met
// a row committed after the read) or an ended one is left to claimSQL,
// which takes an expired key over or reports the race's winner. The work
// is the claim function's (migration 7), which plans and runs its INSERT
// … ON CONFLICT DO NOTHING only for a key with no row: a replay is a
// plain read, and takes no lock but the read's.
const fastClaimSQL = `SELECT * FROM {{claimfn}}($1::text, $2::bytea, $3::bigint, $4::bigint)`

// batchClaimSQL is fastClaimSQL for several keys at once, all different:
// $1 keys, $2 fingerprints, $3 leases in microseconds, $4 tokens, arrays of
// one element per request. It returns one row per request: its number (1
// for the first element), then the columns of fastClaimSQL, the
// fingerprint NULL when the request got no row there (acquired false,
// remaining 0). The keys are inserted in their order, so that two batches
// that meet on several new keys wait for each other in one order, never in
// a cycle.
const batchClaimSQL = `
WITH req AS MATERIALIZED (
    SELECT r.key, r.fingerprint, r.us, r.token, r.i
    FROM unnest($1::text[], $2::bytea[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS r(key, fingerprint, us, token, i)
), cur AS MATERIALIZED (
    SELECT req.i, k.token, k.fingerprint, k.status, k.header, k.body, k.expires_at
    FROM req JOIN {{table}} k ON k.key = req.key
), ins AS (
    INSERT INTO {{table}} (key, fingerprint, token, expires_at)
    SELECT req.key, req.fingerprint, req.token, clock_timestamp() + req.us * interval '1 microsecond'
    FROM req
    WHERE NOT EXISTS (SELECT FROM cur WHERE cur.i = req.i)
    ORDER BY req.key
    ON CONFLICT (key) DO NOTHING
    RETURNING key, token
)
SELECT req.i, ins.token IS NOT NULL, false, COALESCE(ins.token, cur.token, 0), cur.fingerprint, cur.status, cur.header, cur.body,
       COALESCE((extract(epoch FROM cur.expires_at - clock_timestamp()) * 1000000)::bigint, 0)
FROM req LEFT JOIN ins ON ins.key = req.key LEFT JOIN cur ON cur.i = req.i`

// countShards is how many rows a client's count is split over, at most:
// how many of its first claims can count at once without waiting for
// each other.
const countShards = 16

// A client's count (Config.ClientKeys) is the sum of its rows in
// {{shards}} whose windows run. A claim statement counts in one of them,
// its slot: the first row of the client that no other statement holds
// (FOR UPDATE SKIP LOCKED, which never waits), or else a new row, the one
// after the last its snapshot shows (past the last shard, the one its
// backend's pid names, which it may then wait for). It reads the other
// rows as its snapshot shows them (others), and its slot as it is once
// locked. A claim is admitted while its slot's count plus the others' is
// below the bound. The others it reads may miss the claims of the same
// client that commit meanwhile, each of which misses it in turn: claims
// of one client that run at once can overshoot the bound by their number
// less one, never more (a claim admitted past the bound missed a count,
// and only a claim that ran at the same time can have made it). Claims
// of one client one after the other are held to it exactly.

// fastClaimCountedSQL is fastClaimSQL for a claim whose client is
// bounded (Config.ClientKeys): $5 the client, $6 the bound, $7 the window
// in microseconds. When the snapshot shows no row for the key, bump
// counts the claim in its slot (inserting the row, or starting a new
// window there if the last has ended) unless the count is at the bound,
// and reads back the slot's count before (prev). The key is inserted
// only if prev plus the others' count was below the bound; otherwise the
// statement returns one more kind of row: acquired false, token -1 (never
// a token: they are positive), and the microseconds until the first of
// the client's windows that holds a count ends. A row found for the key
// is answered as fastClaimSQL does, whatever the count, and no count row
// is read, locked or written: replays and duplicates are never refused,
// and never counted. A new key whose insert meets a row committed after
// the snapshot (the race of two first claims) stays counted: the count
// errs on the strict side.
const fastClaimCountedSQL = `
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
WHERE bump.prev + others.n >= $6::integer`

// batchClaimCountedSQL is batchClaimSQL for a batch with claims of bounded
// clients: $5 the clients (” for a claim without one, never bounded), $6
// the bound, $7 the window in microseconds. The requests of bounded
// clients for keys the snapshot shows no row for (fresh) are ranked
// within their client, in request order (place). Each such client gets a
// slot, as in fastClaimCountedSQL, and bump adds to it the client's fresh
// requests that the bound leaves room for, in client order. A request is
// inserted only while its client's count before the batch (its slot's
// prev plus the others') plus its place stays within the bound; a refused
// one gets the row fastClaimCountedSQL returns for one: token -1 and the
// microseconds until the first of the client's windows that holds a count
// ends.
const batchClaimCountedSQL = `
WITH req AS MATERIALIZED (
    SELECT r.key, r.fingerprint, r.us, r.token, r.client, r.i
    FROM unnest($1::text[], $2::bytea[], $3::bigint[], $4::bigint[], $5::text[]) WITH ORDINALITY AS r(key, fingerprint, us, token, client, i)
), cur AS MATERIALIZED (
    SELECT req.i, k.token, k.fingerprint, k.status, k.header, k.body, k.expires_at
    FROM req JOIN {{table}} k ON k.key = req.key
), fresh AS MATERIALIZED (
    SELECT req.i, req.client, row_number() OVER (PARTITION BY req.client ORDER BY req.i) AS place
    FROM req
    WHERE req.client <> '' AND NOT EXISTS (SELECT FROM cur WHERE cur.i = req.i)
), want AS MATERIALIZED (
    SELECT fresh.client, count(*)::integer AS k FROM fresh GROUP BY fresh.client
), live AS MATERIALIZED (
    SELECT c.client, c.shard, c.n, c.window_end
    FROM {{shards}} c JOIN want ON want.client = c.client
), pick AS MATERIALIZED (
    SELECT want.client, p.shard
    FROM want, LATERAL (
        SELECT c.shard FROM {{shards}} c
        WHERE c.client = want.client
        ORDER BY c.shard
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS p
), slot AS MATERIALIZED (
    SELECT want.client, want.k, coalesce(pick.shard,
           CASE WHEN coalesce(m.next, 0) < {{nshards}} THEN coalesce(m.next, 0) ELSE pg_backend_pid() % {{nshards}} END)::smallint AS shard
    FROM want
        LEFT JOIN pick ON pick.client = want.client
        LEFT JOIN (SELECT live.client, max(live.shard) + 1 AS next FROM live GROUP BY live.client) AS m ON m.client = want.client
), others AS MATERIALIZED (
    SELECT slot.client, slot.shard, slot.k,
           coalesce(sum(live.n) FILTER (WHERE live.shard <> slot.shard AND live.window_end > clock_timestamp()), 0)::integer AS n,
           min(live.window_end) FILTER (WHERE live.shard <> slot.shard AND live.window_end > clock_timestamp() AND live.n > 0) AS window_end
    FROM slot LEFT JOIN live ON live.client = slot.client
    GROUP BY slot.client, slot.shard, slot.k
), bump AS MATERIALIZED (
    INSERT INTO {{shards}} AS c (client, shard, n, prev, window_end)
    SELECT others.client, others.shard, least(others.k, greatest($6::integer - others.n, 0)), 0,
           clock_timestamp() + $7::bigint * interval '1 microsecond'
    FROM others
    ORDER BY others.client
    ON CONFLICT (client, shard) DO UPDATE SET
        prev       = CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END,
        n          = CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END
                     + (SELECT least(o.k, greatest($6::integer - o.n - CASE WHEN c.window_end > clock_timestamp() THEN c.n ELSE 0 END, 0))
                        FROM others o WHERE o.client = excluded.client),
        window_end = CASE WHEN c.window_end > clock_timestamp() THEN c.window_end ELSE excluded.window_end END
    RETURNING c.client, c.prev, c.n, c.window_end
), counted AS MATERIALIZED (
    SELECT bump.client, bump.prev + others.n AS before,
           least(others.window_end, CASE WHEN bump.n > 0 THEN bump.window_end END) AS frees
    FROM bump JOIN others ON others.client = bump.client
), ok AS MATERIALIZED (
    SELECT req.i FROM req
    WHERE NOT EXISTS (SELECT FROM cur WHERE cur.i = req.i) AND req.client = ''
    UNION ALL
    SELECT fresh.i FROM fresh JOIN counted ON counted.client = fresh.client
    WHERE counted.before + fresh.place <= $6::integer
), ins AS (
    INSERT INTO {{table}} (key, fingerprint, token, expires_at)
    SELECT req.key, req.fingerprint, req.token, clock_timestamp() + req.us * interval '1 microsecond'
    FROM req JOIN ok ON ok.i = req.i
    ORDER BY req.key
    ON CONFLICT (key) DO NOTHING
    RETURNING key, token
)
SELECT req.i, ins.token IS NOT NULL, false,
       CASE WHEN refused.i IS NOT NULL THEN -1 ELSE COALESCE(ins.token, cur.token, 0) END,
       cur.fingerprint, cur.status, cur.header, cur.body,
       CASE WHEN refused.i IS NOT NULL
           THEN (extract(epoch FROM refused.frees - clock_timestamp()) * 1000000)::bigint
           ELSE COALESCE((extract(epoch FROM cur.expires_at - clock_timestamp()) * 1000000)::bigint, 0) END
FROM req LEFT JOIN ins ON ins.key = req.key LEFT JOIN cur ON cur.i = req.i
    LEFT JOIN (
        SELECT fresh.i, counted.frees FROM fresh JOIN counted ON counted.client = fresh.client
        WHERE counted.before + fresh.place > $6::integer
    ) AS refused ON refused.i = req.i`

// pruneClientsSQL deletes the counts whose window ended more than the
// grace ago: $1 grace in microseconds. pruneShardsSQL does the same for
// the counts' rows of schema version 6; pruneClientsSQL, for those that
// processes of an earlier version keep.
const (
	pruneClientsSQL = `
DELETE FROM {{clients}} WHERE window_end < now() - $1::bigint * interval '1 microsecond'`
	pruneShardsSQL = `
DELETE FROM {{shards}} WHERE window_end < now() - $1::bigint * interval '1 microsecond'`
)

// takeoverSQL is claimSQL's judgement, inside ON CONFLICT DO UPDATE, of the
// row k that a Claim with the token excluded.token met: it takes the row
// over when it was released, or its lease or retention ended at clk,
// unless the token is fenced (a Release of it; a row released before
// schema version 4 names its releaser only in token). A released row is
// taken over whatever its expires_at: a fence row inserted for an absent
// key (see releaseSQL) after this statement read clk, which its insert then
// met, ends after clk.
const takeoverSQL = `((k.released OR k.expires_at <= (SELECT ts FROM clk))
        AND NOT (excluded.token = ANY(coalesce(k.fenced, '{}')) OR (k.released AND k.token = excluded.token)))`

// claimSQL is Claim in one statement, run when fastClaimSQL did not settle
// it. $1 key, $2 fingerprint, $3 lease in microseconds, $4 the caller's
// token. It always returns exactly one row: acquired, took_over, token,
// fingerprint, status, header, body, remaining (microseconds).
//
// clk fixes one instant of the database clock for every judgement the
// statement makes. cur reads the key under the statement's snapshot: a live
// row (lease or retention running) is the answer, with no write and no row
// lock, so replays of a hot key never queue behind each other; a live
// in-flight row of the caller's own token is its Claim repeated, acquired.
// Only when the snapshot shows no live row does ins run. Its insert either
// creates the row, or meets the row that is there now (possibly committed
// after the snapshot was taken, or being changed by a transaction that it
// then waits for) and updates it: if takeoverSQL holds, the update takes
// it over with the caller's token; if not, the update writes the row back
// unchanged and RETURNING reports it, so a concurrent first claim that
// lost the race still sees the winner's row in this same statement, and a
// fenced token sees a row it did not acquire, released or its lease ended
// (remaining zero or less), which Claim reports as ErrLeaseLost.
const claimSQL = `
WITH clk AS MATERIALIZED (
    SELECT clock_timestamp() AS ts
), cur AS MATERIALIZED (
    SELECT k.token, k.fingerprint, k.status, k.header, k.body, k.expires_at - clk.ts AS remaining
    FROM {{table}} k, clk
    WHERE k.key = $1::text AND k.expires_at > clk.ts
), ins AS (
    INSERT INTO {{table}} AS k (key, fingerprint, token, expires_at)
    SELECT $1::text, $2::bytea, $4::bigint, clock_timestamp() + $3::bigint * interval '1 microsecond'
    WHERE NOT EXISTS (SELECT FROM cur)
    ON CONFLICT (key) DO UPDATE SET
        fingerprint = CASE WHEN {{takeover}} THEN excluded.fingerprint ELSE k.fingerprint END,
        token       = CASE WHEN {{takeover}} THEN excluded.token       ELSE k.token       END,
        expires_at  = CASE WHEN {{takeover}} THEN excluded.expires_at  ELSE k.expires_at  END,
        took_over   = CASE WHEN {{takeover}} THEN k.status IS NULL AND NOT k.released ELSE k.took_over END,
        released    = CASE WHEN {{takeover}} THEN false                ELSE k.released    END,
        status      = CASE WHEN {{takeover}} THEN NULL                 ELSE k.status      END,
        header      = CASE WHEN {{takeover}} THEN NULL                 ELSE k.header      END,
        body        = CASE WHEN {{takeover}} THEN NULL                 ELSE k.body        END
    RETURNING k.token, k.took_over, k.released, k.fingerprint, k.status, k.header, k.body, k.expires_at
)
SELECT ins.token = $4::bigint AND NOT ins.released AND ins.status IS NULL AND ins.expires_at > (SELECT ts FROM clk),
       ins.took_over, ins.token, ins.fingerprint, ins.status, ins.header, ins.body,
       CASE WHEN ins.released THEN 0
           ELSE (extract(epoch FROM ins.expires_at - (SELECT ts FROM clk)) * 1000000)::bigint END
FROM ins
UNION ALL
SELECT cur.token = $4::bigint AND cur.status IS NULL, false, cur.token, cur.fingerprint, cur.status, cur.header, cur.body,
       (extract(epoch FROM cur.remaining) * 1000000)::bigint
FROM cur`

// The fenced statements: each changes the row only while token holds the key
// (in flight, same token, lease running by the database clock), so zero rows
// affected means the lease is lost. clock_timestamp(), not now(): inside a
// long transaction now() is the transaction's start.
//
// Each also matches, and leaves as it is, the row that token itself has
// already completed (Extend, and Complete with the same record) or released
// (Release), so that a repeat of an applied operation succeeds. Being
// single UPDATEs, they judge the row as it is after any transaction they
// waited for: an Extend that waits on the row lock of its own request's
// CompleteTx sees the committed record, not the in-flight row of its
// snapshot.

// extendSQL: $1 key, $2 token, $3 lease in microseconds. It returns one
// row if it matched: the lease that remained before the extension, in
// microseconds, and whether the key was in flight (false: completed by the
// token, left as it is).
const extendSQL = `
UPDATE {{table}} AS k SET expires_at = CASE WHEN k.status IS NULL
        THEN clock_timestamp() + $3::bigint * interval '1 microsecond' ELSE k.expires_at END
FROM (SELECT o.expires_at FROM {{table}} o WHERE o.key = $1::text) AS old
WHERE k.key = $1::text AND k.token = $2::bigint AND NOT k.released AND k.expires_at > clock_timestamp()
RETURNING (extract(epoch FROM old.expires_at - clock_timestamp()) * 1000000)::bigint, k.status IS NULL`

// completeSQL: $1 key, $2 token, $3 status, $4 header (see encodeHeader), $5 body, $6
// retention in microseconds. A repeat by the completing token matches when
// its record equals the stored one, a nil header (NULL) equal to an empty
// one ('\x00', zero fields) and a nil body (NULL) to an empty one; the
// repeat leaves the stored record as it is.
const completeSQL = `
UPDATE {{table}} SET status = $3::integer,
    header = CASE WHEN status IS NULL THEN $4::bytea ELSE header END,
    body = CASE WHEN status IS NULL THEN $5::bytea ELSE body END,
    expires_at = CASE WHEN status IS NULL
        THEN clock_timestamp() + $6::bigint * interval '1 microsecond' ELSE expires_at END
WHERE key = $1::text AND token = $2::bigint AND NOT released AND expires_at > clock_timestamp()
    AND (status IS NULL OR (status = $3::integer
        AND coalesce(header, '\x00'::bytea) = coalesce($4::bytea, '\x00'::bytea)
        AND coalesce(body, ''::bytea) = coalesce($5::bytea, ''::bytea)))`

// completeHeldSQL is completeSQL for the row the token holds, in flight
// with its lease running, the row of every first completion, with the
// same parameters: it changes only that row, and so needs neither the
// comparison of a stored record nor the CASE expressions that leave one
// as it is, which the database sets up on every run of completeSQL. A
// completion it did not apply runs completeSQL, which applies it to the
// row if the token holds it by then, or matches the row the token has
// already completed with the same record (a repeat).
const completeHeldSQL = `
UPDATE {{table}} SET status = $3::integer, header = $4::bytea, body = $5::bytea,
    expires_at = clock_timestamp() + $6::bigint * interval '1 microsecond'
WHERE key = $1::text AND token = $2::bigint AND status IS NULL AND NOT released
    AND expires_at > clock_timestamp()`

// batchCompleteSQL is completeSQL for several keys at once, all different:
// $1 keys, $2 tokens, $3 statuses, $4 headers, $5 bodies, $6 retentions in
// microseconds, arrays of one element per request. It returns the number
// (1 for the first element) of each request whose row it changed or
// matched. The keys come in their order, which the rows are locked in.
const batchCompleteSQL = `
UPDATE {{table}} AS k SET status = r.status,
    header = CASE WHEN k.status IS NULL THEN r.header ELSE k.header END,
    body = CASE WHEN k.status IS NULL THEN r.body ELSE k.body END,
    expires_at = CASE WHEN k.status IS NULL
        THEN clock_timestamp() + r.us * interval '1 microsecond' ELSE k.expires_at END
FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::bytea[], $5::bytea[], $6::bigint[])
    WITH ORDINALITY AS r(key, token, status, header, body, us, i)
WHERE k.key = r.key AND k.token = r.token AND NOT k.released AND k.expires_at > clock_timestamp()
    AND (k.status IS NULL OR (k.status = r.status
        AND coalesce(k.header, '\x00'::bytea) = coalesce(r.header, '\x00'::bytea)
        AND coalesce(k.body, ''::bytea) = coalesce(r.body, ''::bytea)))
RETURNING r.i`

// releaseSQL: $1 key, $2 token. The row the token holds (in flight, its
// lease running) is released: its lease ends now and it is marked
// released; Claim takes it over without TookOver, Prune deletes it. The
// statement returns true then, and for the row the token released before
// (a repeat). Whatever the row (in flight for another token, or for this
// one with its lease ended, released, a record, live or not), the token
// joins its fenced ones, once, and fenced_at is set to now; a key with no
// row gets a released row of token 0 (never issued) that fences it. No
// Claim with the token takes the key afterwards (see takeoverSQL), not
// even after the record's retention ends or the key is claimed and
// released again, and Prune keeps the row for its grace after fenced_at.
// Everything else about a row that the token does not hold (a live
// record, another token's lease) is left as it is. The statement returns
// false for all those.
const releaseSQL = `
INSERT INTO {{table}} AS k (key, fingerprint, token, expires_at, released, fenced, fenced_at)
VALUES ($1::text, ''::bytea, 0, clock_timestamp(), true, ARRAY[$2::bigint], clock_timestamp())
ON CONFLICT (key) DO UPDATE SET
    released   = k.released OR (k.token = $2::bigint AND k.status IS NULL AND k.expires_at > clock_timestamp()),
    expires_at = CASE WHEN k.token = $2::bigint AND k.status IS NULL AND NOT k.released AND k.expires_at > clock_timestamp()
        THEN clock_timestamp() ELSE k.expires_at END,
    fenced     = CASE WHEN $2::bigint = ANY(coalesce(k.fenced, '{}')) THEN k.fenced
        ELSE array_append(coalesce(k.fenced, '{}'), $2::bigint) END,
    fenced_at  = clock_timestamp()
RETURNING k.token = $2::bigint AND k.released`

// pruneSQL deletes one batch of rows that expired, and last fenced a
// token (releaseSQL), more than the grace ago, oldest first along the
// expiry index, skipping rows that another transaction has locked (a
// completion about to commit, or another replica's janitor). $1 batch
// size, $2 grace in microseconds. now() is right here: the statement is
// its own transaction, and a stable cutoff lets the index bound the scan.
const pruneSQL = `
DELETE FROM {{table}}
WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM {{table}}
        WHERE expires_at < now() - $2::bigint * interval '1 microsecond'
            AND (fenced_at IS NULL OR fenced_at < now() - $2::bigint * interval '1 microsecond')
        ORDER BY expires_at
        LIMIT $1::integer
        FOR UPDATE SKIP LOCKED))
    AND expires_at < now() - $2::bigint * interval '1 microsecond'
    AND (fenced_at IS NULL OR fenced_at < now() - $2::bigint * interval '1 microsecond')`

// Migration bookkeeping. $1 of lockSQL is the advisory lock key.
const (
	lockSQL     = `SELECT pg_advisory_xact_lock($1::bigint)`
	versionsSQL = `CREATE TABLE IF NOT EXISTS {{versions}} (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)`
	currentSQL = `SELECT coalesce(max(version), 0) FROM {{versions}}`
	recordSQL  = `INSERT INTO {{versions}} (version) VALUES ($1::integer)`
)

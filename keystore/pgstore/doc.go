// Package pgstore is a [keystore.Store] on PostgreSQL, through a pgx v5
// [pgxpool.Pool], whose keys can be completed inside the handler's own
// database transaction.
//
// Every replica of a receiving service that shares the database shares the
// keys, so a retry that lands on another replica is still replayed, and a
// replica that crashes mid-request leaves a lease that the next claim takes
// over when it ends.
//
// # Transactional completion
//
// For a handler that writes to the same database, the write and the key's
// record can commit in one transaction: a crash between "written" and
// "recorded" can then neither lose the answer nor apply the write twice. Call
// [Store.InTx] in the handler, behind the geoidem middleware:
//
//	func (h *ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
//		hold, _ := middleware.HoldFromContext(r.Context())
//		rec, err := h.store.InTx(r.Context(), hold, func(tx pgx.Tx) (Record, error) {
//			if _, err := tx.Exec(r.Context(), upsertFeature, id, geometry); err != nil {
//				return Record{}, err
//			}
//			return Record{StatusCode: http.StatusCreated, Body: body}, nil
//		})
//		switch {
//		case pgstore.Transient(err): // a lost connection, a deadlock, a failover: the retry may succeed
//			problem.Write(w, problem.Details{Status: http.StatusServiceUnavailable,
//				Type: typeUnavailable, Title: "Feature store unavailable", RetryAfter: time.Second})
//			return
//		case err != nil: // the feature's own fault (a refused geometry, a constraint): no retry can fix it
//			problem.Write(w, problem.Details{Status: http.StatusUnprocessableEntity,
//				Type: typeRejected, Title: "Feature rejected"})
//			return
//		}
//		w.WriteHeader(rec.StatusCode)
//		w.Write(rec.Body)
//	}
//
// InTx takes the request's [keystore.Hold], which the middleware hands the
// handler in the request's context, runs the function in a transaction,
// records the returned response in that transaction, fenced by the hold's
// token ([Store.CompleteTx]), commits, and marks the
// hold completed, so that the middleware does not record the response a
// second time. If the function fails, or the connection drops, nothing is
// written and nothing recorded; the handler answers 5xx if [Transient] says
// a retry may succeed (the middleware releases the key and the sender's
// retry runs the handler again), and 4xx otherwise (recorded, so the
// sender stops instead of retrying what no retry can fix). If the
// request outlived its lease and another request took the key over, the late
// transaction is refused with [keystore.ErrLeaseLost] and rolled back
// instead of writing twice. Handlers that manage their transaction
// themselves call CompleteTx just before the commit, and commit through
// [keystore.Hold.Commit], which marks the hold completed once the commit
// succeeded and keeps the middleware from stopping the handler meanwhile.
//
// # The database clock
//
// Leases and retention are judged by the database server's clock
// (clock_timestamp()), never by the application servers', and the remaining
// lease that Claim reports is computed in SQL. Replicas whose clocks disagree
// by seconds therefore still agree on whether a lease has ended: no replica
// takes over a lease that is still running because its own clock runs fast,
// and an owner whose lease has ended is fenced even if nobody took its key
// over yet. The database host must slew its clock, never step it: a step
// forward ends running leases early (see the middleware's documentation,
// "The store's clock"). Extend returns the lease it found remaining, so
// that the middleware detects such a step.
//
// # Statements
//
// Each operation is one statement, but for the rarer claims and
// completions. Claim inserts an absent key, or reports the live entry, in
// one statement, a call of the function Table+"_claim": a read of the key,
// then, only when it found no row, an INSERT … ON CONFLICT DO NOTHING. A
// first delivery costs two statements (Claim and Complete, or Claim and
// CompleteTx inside the handler's transaction), and a replay one, which is
// a plain index read: it takes no row lock, nor the table's ROW EXCLUSIVE
// lock of a statement that may insert, and writes nothing, so replays of
// one hot key run in parallel, and cost the database a read. A first
// completion is an UPDATE of the row its token holds in flight; only when
// that changed no row (a repeated completion, or a lease lost) does a
// second UPDATE match the row the token already completed with an equal
// record. A claim that takes over an expired lease or record (or a released
// key), or that lost the race for a new key to a claim committed after its
// read, runs a second statement: an INSERT … ON CONFLICT DO UPDATE that
// takes the key over or reports the winner's entry. Extend, Complete and
// Release each change the row only where the key, the token and a running
// lease all match, and report [keystore.ErrLeaseLost] when no row matched.
// Each also accepts, changing nothing, the row its own token has already
// completed (Extend; Complete with an equal record) or released (Release; a
// released row is kept until Prune deletes it, and Claim takes it over
// without TookOver). Being single statements (Complete's second, when it
// runs, judges anew), they judge the row as it is after any transaction
// they waited for: a lease renewal that waits on the row lock of its own
// request's CompleteTx and then meets the committed record succeeds.
// Release is an INSERT … ON CONFLICT DO UPDATE, so that it also fences its
// token where it holds nothing (see Fencing tokens).
//
// Claims and completions from many goroutines share statements when the
// pool is busy: while half the pool's connections run claim statements
// (or, counted apart, completions on the pool), further ones wait, and
// those that gathered go together, in one statement, as soon as one in
// flight ends (at most 64 keys; the statement takes the keys in key order,
// so that batches never wait for each other in a cycle). A claim of a key
// of which four claims are in flight already waits for the next statement
// even when the pool has room, so that the concurrent replays and
// duplicates of one hot key from many clients are answered by one read a
// round trip. A lone client, or a few of them on one key, never waits.
// Each call gets the answer it would get alone; one whose context ends
// while it waits for its batch returns the context's error, and its claim
// or completion may or may not have happened, as when a statement is
// interrupted. CompleteTx, in the caller's transaction, is never batched.
// Batching needs the statements' parameter types, which pgx learns by
// describing them: it is on when the pool's DefaultQueryExecMode is
// QueryExecModeCacheStatement (pgx's default) or QueryExecModeCacheDescribe.
//
// # Per-client bound
//
// With [Config.ClientKeys] set, a Claim for a client (the middleware's
// Config.Client) is counted against the client's bound, in the same one
// statement. The count lives in the unlogged table Table+"_client_shards"
// (schema version 6), split over at most 16 rows per client, each holding
// the count of a window that started with its first counted key; the
// client's count is the sum of the rows whose windows run. When the claim
// finds no row for its key, the statement takes one of the client's count
// rows that no other statement holds (or starts a new one), reads the
// others as its snapshot shows them, adds the claim unless the count is at
// the bound, and inserts the key only if there was room; past the bound
// the Claim fails with a [*keystore.FullError] whose Client is set,
// inserting nothing, and whose RetryAfter is when the first of the
// client's windows that holds a count ends. A claim that finds its key's
// row (a replay, a duplicate in flight) reads, locks and writes no count:
// it is never counted, never refused, and is one statement. Batched claims
// count per client, each within the batch in turn.
//
// So the first claims of one client that run at once do not wait for
// each other on its count (up to 16 at once; claims of different clients
// never do), at a stated price: each reads the others' counts before it
// inserts, so claims of one client that run at once can overshoot the
// bound by their number less one (a batch's claims count as many), and
// never more; claims one after the other are held to it exactly. A client
// that overshoots is refused until enough of its windows end.
// BenchmarkFirstCall measures the worst case, every claim for one client,
// 64 at once: on a loaded two-core machine (-benchtime 3000x, two rounds),
// 0.82 and 0.93 ms a first call against 0.39 to 0.60 ms unbounded, where
// one count row per client took 1.25 and 1.38 ms. A bounded claim costs
// the client nothing more: as many allocations as an unbounded one, and
// one statement. A claim
// whose client is "" is never bounded: have the middleware's
// Config.Client return "" for the senders you trust (a verified webhook
// signature), and bound the others. Two first
// claims of one key that race both count, while one acquires: the count
// errs on the strict side. The counts cost no WAL, and a crash of the
// database empties them (every window starts again); Prune deletes those
// whose window ended.
//
// # Bound on the whole table
//
// With [Config.MaxKeys] set, the Store refuses new keys, whoever the
// client, once the table holds that many rows (as the server's statistics
// count them, sampled at most once a second in the background of claims):
// a Claim of a key with no row fails with a [*keystore.FullError] whose
// Client is not set, inserting nothing, and whose RetryAfter is when the
// janitor can delete the earliest-ending row. Claims of keys with a row
// (replays, duplicates in flight) are answered as usual, after one read
// of the key while full; no claim counts or scans anything.
//
// # Fencing tokens
//
// A key is held by the token its Claim's caller chose
// ([keystore.ClaimArgs].Token, from keystore.NewToken: 63 random bits, so it
// fits the bigint token column; a larger one is refused with
// keystore.ErrInvalidClaim). Nothing the store or an operator does to the
// table can hand a stale owner's token back to its key: DELETE, TRUNCATE
// (with or without RESTART IDENTITY), Prune, pg_dump and restore. The
// sequence Table+"_token_seq", from which earlier versions drew tokens, is
// no longer used; it stays in the schema, owned by no column, and is
// dropped with the schema (not with the table).
//
// Release fences its token, whether it held the key or not (see package
// keystore, "Claims whose outcome is unknown"): the token joins the row's
// fenced tokens (a column of them), or, for a key with no row, a released
// row of token 0, which Admin reports as absent, is inserted to carry it.
// A Claim with a fenced token never acquires the key: it fails with
// keystore.ErrLeaseLost. This matters for a Claim that reaches the
// database after its caller gave up on it: a batch statement, which runs
// detached for up to a minute, or a statement the server still runs after
// its connection was cut. Prune keeps a row for a minute after the last
// token it fenced, as after its lease or retention. Admin's Free and Forget
// delete the row, fences and all.
//
// # Isolation
//
// The store's own statements work whatever default_transaction_isolation
// the pool's sessions use. Each runs as a transaction of its own; under
// REPEATABLE READ or SERIALIZABLE, claims of one key that race (and a fenced
// UPDATE that waited for another transaction on the row) can fail with a
// serialization failure, SQLSTATE 40001, which changed nothing: the store
// runs such a statement again with a fresh snapshot, up to eight times
// after short random pauses, so every caller gets its answer (acquired, in
// flight or completed) instead of an error the middleware would answer with
// 503. A batch of claims or completions still aborted after its retries
// runs each of its calls as a statement of its own, retried the same way:
// a larger statement meets more transactions it cannot be ordered with.
// InTx and Migrate begin their transactions at READ COMMITTED
// explicitly (Migrate must see, after waiting for its lock, what another
// replica's migration committed meanwhile); a
// transaction of your own that calls CompleteTx must be READ COMMITTED too,
// since a serialization failure inside it aborts it and cannot be retried
// by the store.
//
// # Schema and pruning
//
// [New] creates the table, its token sequence, an index on the expiry
// time and the function Table+"_claim" (a claim's first statement, whose
// read answers a replay without setting up the insert of a new key) with
// the type of its rows, Table+"_claim_row", from
// migrations embedded in the package ([Store.Migrate]), in one
// transaction under an advisory lock, so several replicas can start at once;
// the applied versions are kept in a table of their own, and the counts of
// Config.ClientKeys in Table+"_client_shards" (Table+"_clients", their
// table before schema version 6, stays for processes of earlier versions
// that share the table, and is pruned). The table name and
// schema are configurable ([Config]).
//
// Claim ignores expired rows; deleting them is the janitor's job: New starts
// one that runs [Store.Prune] every minute until [Store.Close]. Prune deletes
// rows that expired more than a minute ago in bounded batches along the
// expiry index, skipping rows locked by other transactions, so replicas can
// all run their janitors.
//
// # Retention
//
// Rows are pruned by DELETE, and the space they held is reclaimed by
// VACUUM: keep autovacuum on for the key table (PostgreSQL's default). At
// 5,000 new keys a second kept 24 hours, the table holds 432 M rows.
// Measured at 10 M rows (bench/REPORT.md, section 10: `go run ./bench -only
// retention`, three runs on a 2-core machine shared with other work, load
// averages 5 to 17): about 380 bytes per key for a small record (heap 234,
// primary key 125, expiry index 22), so about 153 GiB at 432 M keys; a new
// key's Claim and its Complete 0 to 15 % slower at the median than on an
// empty table, a replay 40 to 50 %, on a table that still fits in memory;
// and Prune's DELETEs with the VACUUM after them took 630, 854 and 1,400 ms
// of backend CPU per 100,000 rows, with a tenth of the table pruned per
// VACUUM: 3.1, 4.3 and 7.0 % of a core at 5,000 keys a second, the more
// the more loaded the machine; in the two runs that also measured the
// first calls, 2.5 and 2.6 % of the CPU that the Claim and Complete of
// those keys took (called one at a time).
//
// The key table is therefore not partitioned by time. A partitioned table
// cannot have a unique index on the key alone (PostgreSQL requires the
// partition key in every unique index), so the one-statement claim
// (INSERT … ON CONFLICT on the key), on which "one key, one holder" rests,
// would become a per-key lock and a look-up in every partition that may
// still hold the key: a cost on every first call, to save a fortieth of
// what the first calls cost. Not measured: a table larger than the
// server's memory, where each VACUUM reads the indexes (about 147 bytes
// per key, 59 GiB at 432 M keys) from disk; measure on the target hardware
// before running at that scale, and give autovacuum the I/O it needs there.
//
// # Standbys and failover
//
// A key is acknowledged only after its Complete committed, so what a
// promoted standby has is what keeps the guarantee. With a synchronous
// standby (synchronous_standby_names set, synchronous_commit on or
// remote_apply) a commit the primary acknowledged is on the standby's
// disk: promoting it loses no record. With asynchronous replication the
// commits not yet streamed are lost, and a retry of their requests runs the
// handler again. Measured with deliveries running (bench section 11, `go run
// ./bench -only clustered`: two receivers, 600 events per run, the primary
// stopped with -m immediate and the standby promoted): synchronous, no
// record lost in any run; asynchronous, 10 of 600 acknowledged records lost
// in one run of six. Give the pool every host with
// target_session_attrs=read-write (postgres://h1,h2/db?target_session_attrs=read-write):
// the receivers found the promoted standby within 0.2 to 1.3 s, the errors
// meanwhile being [Transient] (503, the key released).
package pgstore

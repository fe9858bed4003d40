// Package middleware makes an HTTP handler idempotent: each request that
// carries an Idempotency-Key runs the handler at most once per key, and every
// retry with the same key and payload receives the first response again.
//
//	store := new(memstore.Store)
//	idem, err := middleware.New(store, middleware.Config{})
//	if err != nil { … }
//	http.Handle("POST /features", idem.Handler(ingest))
//
// # What a request goes through
//
// For a covered method (POST and PATCH by default) the middleware:
//
//  1. parses the key (400 when missing, unless Config.KeyOptional, or
//     malformed) and reads the body up to Config.MaxBodyBytes (413);
//  2. computes the request's identity, once: the method in upper case,
//     the host of the http.ServeMux pattern that routed it (if any), the
//     [NormalizedPath], the parsed key; the scope ([DefaultScope], or
//     Config.Scope), the fingerprint, the stored key, the logs and the
//     geoidem command all read it. It then claims the key in the
//     [keystore.Store], before any other work, with a token of its own
//     (made as [keystore.NewToken] makes them), the request's client and
//     the room its record may need as the claim's arguments
//     ([keystore.ClaimArgs]). The stored key is [StoreKey] of the scope
//     and the key, so keys of different routes or tenants never meet,
//     spellings of one route that ServeMux routes alike (/features,
//     /%66eatures; POST, post) share theirs, and the store never sees raw
//     client input;
//  3. runs the Validator, if any, and then the handler, renewing the lease
//     while they run. From the claim on, the request runs to its end: the
//     handler's context does not end when the client leaves, only when the
//     lease is lost or Config.HandlerTimeout passes;
//  4. records the response (status, allow-listed headers, body) for
//     Config.Retention, or releases the claim when the response says "try
//     again".
//
// # The answers
//
//	situation                                        answer
//	method not covered                               passed through untouched
//	no key (key required)                            400 missing-key
//	malformed key, or more than one key header       400 malformed-key
//	body over Config.MaxBodyBytes, or over an        413 body-too-large; nothing claimed
//	http.MaxBytesReader the server put in front
//	headers refused by the Validator's CheckHeaders  its problem (geojson: 415), not recorded; nothing claimed
//	body could not be read (ReadTimeout, a reset     408 body-unreadable with Retry-After
//	mid-upload, truncated)                           (Config.RetryAfter); nothing claimed
//	store failed or slower than Config.StoreTimeout  503 store-unavailable with Retry-After; handler not
//	                                                 run; a claim that failed (a timeout, a reset, a
//	                                                 batch that outlived the call: it may have acquired
//	                                                 the key) is released at once, in the background,
//	                                                 by the token the middleware chose for it, so
//	                                                 retries do not meet 409 for the whole lease
//	store full (keystore.ErrStoreFull)               503 store-full with Retry-After from when the
//	                                                 store says room frees (keystore.FullError), at
//	                                                 least Config.RetryAfter; handler not run
//	the client past its bound on new keys            429 client-full (Outcome Limited) with
//	                                                 Retry-After from when the client may claim
//	(Config.Client; keystore.ClientBounded;          again, at least Config.RetryAfter; handler
//	a FullError with Client set)                     not run; a replay is never refused for it
//	request canceled (client gone) while its claim  the key is released at once (the claim runs under
//	was in flight                                    a context the client cannot cancel, bounded by
//	                                                 Config.StoreTimeout); 503; handler not run;
//	                                                 Outcome Canceled
//	new key                                          claim, validate, run the handler, record
//	validator rejected the body                      its problem (422 by default); not recorded:
//	                                                 the claim is released, and the same body
//	                                                 gets the same answer again (validated again)
//	same key and payload, original running           409 request-in-flight with Retry-After: the
//	                                                 holder's remaining lease, capped at Lease/6, at
//	                                                 least Config.RetryAfter (or, with
//	                                                 Config.WaitInFlight, wait and replay)
//	same key and payload, original finished          the recorded response, with Idempotent-Replayed: true
//	same key and payload, record's status outside    500 response-not-recorded (a replay never panics)
//	200–599
//	same key, different payload                      422 key-reused
//	handler answered 5xx, 408, 429, or 409 with a    passed on; the claim is released so a retry runs again
//	Retry-After a sender can read                    (the paired sender's retry rule: see docs/answers.md)
//	handler panicked before a final answer,          the claim is released; the panic propagates
//	or after a 5xx, 408, 429 or 409 with Retry-After
//	handler panicked after another final answer      the key is completed, never released: with the
//	(http.ErrAbortHandler included)                  response if its body is as long as its declared
//	                                                 Content-Length, else with a response-not-recorded
//	                                                 problem under the status sent; the panic propagates
//	handler returned without writing anything        net/http's implicit 200, recorded like any answer,
//	                                                 also when the client left meanwhile (the handler's
//	                                                 context does not end then); released only after
//	                                                 the lease was lost. To be retried, answer 5xx
//	Config.HandlerTimeout passed while the handler   its context ends with cause ErrHandlerTimeout; what
//	ran                                              it answers then is recorded or, if 5xx, released
//	handler answered 101 or hijacked the connection  the key is completed with a 422
//	                                                 response-not-replayable problem, never a fake 200
//	lease lost, or may have ended, while the         the handler's context is canceled (cause
//	handler ran                                      keystore.ErrLeaseLost); its late record is refused
//	store stalled or failed while recording          the handler's answer is sent; the record is
//	(or releasing) after the handler ran             retried in the background under the renewed lease
//	                                                 until written or the lease may have ended (see
//	                                                 "When the store fails after the handler ran")
//
// Every error the middleware itself writes is an RFC 9457 problem document
// (application/problem+json, Cache-Control: no-store) whose type is one of
// the Problem… constants.
//
// # Bounded in flight
//
// The front door (package frontdoor: frontdoor.New), in front of the
// middleware (and of anything that reads the body), bounds the requests
// and the request bytes in flight, with a share per client: a request over
// a bound is answered 503 server-busy, or 429 client-busy for a client
// over its share, with Retry-After, before anything is claimed. It also
// bounds the claims in flight, and so the room a bounded store reserves
// for them.
//
// # Replayed responses
//
// Only the headers in Config.ReplayHeaders are recorded and replayed;
// Set-Cookie, Authorization and hop-by-hop headers never are. A header in
// Config.ReplayHeaders that the handler sends as a trailer (declared in the
// Trailer header, or set with [http.TrailerPrefix]) is recorded as it stands
// when the handler returns and replayed as a trailer. A response whose
// record (status, recorded headers and trailers, and body, as the bytes
// the store is given) would be larger than
// Config.MaxRecordBytes is sent in full but recorded as a problem
// document saying it was too large, under the original status, so that a retry learns the outcome rather
// than running the handler twice. Every byte counts, on every path a
// response takes: headers alone (a 201 with a large Link, a 204), a flush,
// trailers; and each claim tells the store how much room its record may
// need (keystore.ClaimArgs.RecordBytes), so that a store that reserves room
// per claim always has it. The recording happens after the handler
// returns, even when the client has already hung up: the middleware cannot
// tell a handler that gave up from one that did its work and had nothing
// to say (net/http's implicit 200), so a handler that wants its work
// retried answers 5xx, 408, 429 (or 409 with Retry-After), or panics with
// http.ErrAbortHandler before writing.
//
// # Leases
//
// A claim holds its key, renewed every Lease/3 while the validator and the
// handler run. The middleware keeps its own conservative reckoning of the
// lease on the monotonic clock, from the time the last successful claim or
// extension was sent. When Config.Lease has passed since then without a
// successful renewal, whatever the store answered (errors, timeouts,
// nothing), the handler's context is canceled with cause
// [keystore.ErrLeaseLost]; a handler that writes must stop when its context
// is done. The store, though, is asked to hold the key for longer,
// [Middleware.StoreLease] (Lease + Lease/2 + StoreTimeout, 47 s with the
// defaults): another replica can take the key over only once that has
// passed, after the handler was stopped, and a store stall shorter than the
// lease ends while the key is still held, however long before it the last
// renewal succeeded, so the record retried after it is written (see below).
// StoreLease is also how long the keys of a crashed process stay in flight.
// [New] refuses a Config.StoreTimeout of Lease/3 or more, which would leave
// no room for a renewal inside the lease.
//
// # The store's clock
//
// The store judges leases by its own wall clock (Redis key expiry,
// PostgreSQL's clock_timestamp()), the middleware by its monotonic clock.
// Store hosts must slew their clocks, never step them, as Redis and
// PostgreSQL themselves assume: a step forward on the store host ends
// running leases early, and a duplicate sent then is answered by a second
// run of the handler alongside the first (on PostgreSQL the original's
// CompleteTx is then fenced and rolled back; on Redis both may answer
// 201). The middleware detects such a step after the fact: each renewal
// returns the lease the store found remaining ([keystore.Store.Extend]),
// and when that differs from the middleware's reckoning by more than
// StoreTimeout + Lease/10, the middleware logs an error and sets the
// request's Event.ClockStep.
//
// # When the store fails after the handler ran
//
// The handler's answer has been sent, and its work done, when the middleware
// records it. If that Complete fails (a store that stalls, a connection cut,
// a timeout) other than with [keystore.ErrLeaseLost], the middleware keeps
// trying in the background: with a backoff from 100 ms doubling to 2 s, each
// try bounded by Config.StoreTimeout and by the lease, fenced by the
// request's token, while the renewal goes on extending the lease (for one
// more Config.Lease at most, so that a store that refuses the record for
// good cannot block the key for ever). It stops when the record is stored,
// or when the lease is lost or may have ended by the middleware's own
// reckoning (see Leases): from then on another request may take the key
// over, and the store would refuse the token anyway. So a stall shorter than
// the lease loses no record: a duplicate sent after it is replayed, never
// executed again. A Release that fails (after a 5xx, or a handler that gave
// up) is retried the same way, without renewing the lease, so that the key
// is free again soon after the store is back rather than blocked (409) for
// the rest of its lease. The request's Event still reports the failure
// within the request (Outcome StoreError, with the error); the background
// logs its result. At most 1,024 records and releases are
// retried at once; beyond them, a failed record is given up at once, and a
// failed release is retried within its request, never forgotten.
//
// A process that exits must wait for this work: call
// [Middleware.Shutdown] after http.Server.Shutdown. Work still pending when
// its context ends is given up: such a key stays in flight until its lease
// ends, and the first retry after that runs the handler again. Shutdown
// then returns a [*ShutdownError] that says how many records and releases
// were given up, counting those given up earlier (a stall longer than the
// lease, a record beyond those 1,024): a process should log it and exit
// non-zero, since a record given up may run a handler twice.
//
// # The handler's ResponseWriter
//
// The handler writes through to the client: nothing is buffered. Its
// ResponseWriter is an [http.Flusher], and an [http.Hijacker] exactly when
// the server's writer (or one it unwraps to) is one; it unwraps to the
// server's writer, so [http.ResponseController] keeps working.
//
// # Fingerprints
//
// The store keeps a SHA-256 fingerprint of method, [NormalizedPath], query and body
// with each key; a retry must match it. With Config.CanonicalJSON the body's RFC 8785
// canonical form is hashed instead, so a sender that re-serialises its
// payload (from a dead-letter queue, say) still matches. A body that is not
// I-JSON is hashed by its bytes: among them, a body with a number that
// float64 does not represent exactly (9007199254740993) or a lone surrogate
// escape, which would otherwise share a canonical form with another payload.
//
// # The body and the decoded value in the handler
//
// The handler can read the request body again, in full: r.Body yields the
// bytes the middleware read and fingerprinted, and r.ContentLength is their
// length. When Config.Validator also implements [RequestDecoder] (package
// geojson's RequestValidator does), the body is parsed once, by the
// validator, and the handler gets the decoded value from its request
// context with [Decoded], instead of parsing the body a second time
// (possibly with a laxer parser than the validator's):
//
//	doc, ok := middleware.Decoded[*geojson.Document](r.Context())
//
// A Validator that implements [HeaderChecker] has its header checks run
// before the claim, so that a sender who fixes its Content-Type can retry
// with the same key.
//
// # Handlers that record their own response
//
// The handler finds its [keystore.Hold] in the request context
// ([HoldFromContext]). A handler that commits its write and the
// key's record in one database transaction (package pgstore) stores its
// record there (MaxRecordBytes holds there too) and commits
// through Hold.Commit, which marks the hold completed: the middleware then
// leaves the key alone. While that commit runs the transaction holds the
// key, and the middleware never stops the handler for a renewal that waits
// on it.
//
// # Observing the store
//
// Config.StoreObserver receives a [StoreCall] for every call the
// middleware makes of its store. Nothing wraps the store, so it keeps
// every capability it has ([keystore.Pinger], adminhttp's Admin).
package middleware

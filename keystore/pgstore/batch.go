package pgstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/geoidem/geoidem/keystore"
)

// Claims are batched the natural way, without timers: while fewer than
// Store.claims.limit claim statements are in flight, a claim runs its own
// statement at once; past that, it waits, and the claims that gathered
// meanwhile go together, in one statement (batchClaimSQL), as soon as one
// in flight ends. A lone client never waits; many clients share round
// trips, commits and the pool's connections.

// maxClaimBatch bounds the number of claims in one batch statement.
const maxClaimBatch = 64

// batchTimeout bounds a batch statement, which runs on behalf of callers
// that may each give up on their own.
const batchTimeout = time.Minute

// batchQueue holds the calls waiting for a batch statement: claims
// (Store.claims) or completions (Store.completes).
type batchQueue[W batchable] struct {
	limit    int // statements in flight at most; 0: no batching
	mu       sync.Mutex
	inflight int
	waiting  []W
}

// batchCall is what a claim and a completion waiting for a batch share.
type batchCall struct {
	ctx  context.Context
	key  string
	err  error
	done chan struct{} // closed once err and the outcome are set
}

func (c *batchCall) call() *batchCall { return c }

// batchable is a call that waits in a batchQueue: *claimWaiter or
// *completeWaiter.
type batchable interface{ call() *batchCall }

// next hands the slot of a statement that ended to the calls waiting, if
// any: it returns them, as one batch for the caller to run (which passes
// the slot on in turn); else it gives the slot up and returns nil.
func (q *batchQueue[W]) next() []W {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nextLocked()
}

// nextLocked is next with q.mu held.
func (q *batchQueue[W]) nextLocked() []W {
	if len(q.waiting) == 0 {
		q.inflight--
		return nil
	}
	n := min(len(q.waiting), maxClaimBatch)
	batch := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	return batch
}

// byKey ends the calls of batch whose callers have given up, with their
// context's error, and sorts the others by key, stably, into send. It
// splits send: uniq holds the first call of each key, dup the others, and
// first[i] the call of uniq with dup[i]'s key.
func byKey[W batchable](batch []W) (send, uniq, dup, first []W) {
	send = batch[:0:0]
	for _, w := range batch {
		c := w.call()
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		send = append(send, w)
	}
	slices.SortStableFunc(send, func(a, b W) int { return cmp.Compare(a.call().key, b.call().key) })
	uniq = make([]W, 0, len(send))
	for _, w := range send {
		if len(uniq) > 0 && w.call().key == uniq[len(uniq)-1].call().key {
			dup, first = append(dup, w), append(first, uniq[len(uniq)-1])
			continue
		}
		uniq = append(uniq, w)
	}
	return send, uniq, dup, first
}

// claimWaiter is one claim in a batch.
type claimWaiter struct {
	batchCall
	fp     keystore.Fingerprint
	us     int64
	token  int64
	client string // counted against the client's bound; "" for none
	r      claimRow
}

// deadlockDetected is SQLSTATE 40P01. Keys in a batch are locked in key
// order, but a batch may still meet an application's transaction; the
// statement that fails with it changed nothing.
const deadlockDetected = "40P01"

// fastClaim runs fastClaimSQL for one claim into r, alone or in a batch;
// fastClaimCountedSQL when client is not "" (args are then
// params.claimCounted's).
func (s *Store) fastClaim(ctx context.Context, r *claimRow, args []any, key string, fp keystore.Fingerprint, us, token int64, client string) error {
	sql := s.sql.fastClaim
	if client != "" {
		sql = s.sql.fastClaimCounted
	}
	q := &s.claims
	if q.limit == 0 {
		return s.queryClaim(ctx, sql, r, args)
	}
	q.mu.Lock()
	if q.inflight < q.limit && q.busy[key] < hotKeyClaims {
		q.inflight++
		q.mark(key)
		q.mu.Unlock()
		err := s.queryClaim(ctx, sql, r, args)
		s.nextClaimBatch(key, nil)
		return err
	}
	w := &claimWaiter{batchCall: batchCall{ctx: ctx, key: key, done: make(chan struct{})}, fp: fp, us: us, token: token, client: client}
	q.waiting = append(q.waiting, w)
	q.mu.Unlock()
	select {
	case <-w.done:
		*r = w.r
		return w.err
	case <-ctx.Done():
		// The batch may still claim the key: the outcome is unknown, as
		// for a statement interrupted in flight. The caller releases the
		// key by its token, which fences the token should the batch's
		// claim come later (see releaseSQL).
		return ctx.Err()
	}
}

// nextClaimBatch passes the slot of a claim statement that ended (of key,
// or of the claims of batch ended) on to the claims waiting, as one batch,
// if there are any.
func (s *Store) nextClaimBatch(key string, ended []*claimWaiter) {
	if batch := s.claims.next(key, ended); batch != nil {
		go s.runClaimBatch(batch)
	}
}

// runClaimBatch runs the claims of batch in one statement, then passes its
// slot on. A claim whose caller has given up is left out; a key that
// appears twice goes in once, the other claims of it getting no row (so
// that they run claimSQL after the batch, and find the key claimed).
func (s *Store) runClaimBatch(batch []*claimWaiter) {
	defer s.nextClaimBatch("", batch)
	send, uniq, dup, first := byKey(batch)
	switch len(uniq) {
	case 0:
	case 1:
		s.claimAlone(uniq[0])
	default:
		s.queryClaimBatch(uniq)
	}
	// A live entry read for the first claim of a key is the answer to the
	// others too (a hot key's replays); any other outcome (the first's
	// client refused included) leaves them to claimSQL.
	for i, w := range dup {
		f := first[i]
		switch {
		case f.err == nil && !f.r.acquired && f.r.remaining > 0 && f.r.token != -1:
			w.r = f.r
			w.r.body = bytes.Clone(f.r.body)
			w.r.header = f.r.header.Clone()
		case f.err == nil && f.r.token == -1 && w.client != "":
			// The first's client was refused, the key is still absent:
			// claimSQL would insert it uncounted, so the bounded claim
			// runs a statement of its own.
			s.claimAlone(w)
		}
	}
	for _, w := range send {
		close(w.done)
	}
}

// claimAlone runs w's claim in a statement of its own (fastClaimSQL, or
// fastClaimCountedSQL for a bounded client), setting its row and error.
func (s *Store) claimAlone(w *claimWaiter) {
	var p params
	if w.client != "" {
		w.err = s.queryClaim(w.ctx, s.sql.fastClaimCounted, &w.r, p.claimCounted(s.typedArgs, w.key, w.fp, w.us, w.token, w.client, s.clientKeys, s.clientWindow))
	} else {
		w.err = s.queryClaim(w.ctx, s.sql.fastClaim, &w.r, p.claim(s.typedArgs, w.key, w.fp, w.us, w.token))
	}
}

// queryClaimBatch runs batchClaimSQL for claims of different keys, setting
// each one's row and error. A batch that the database still aborts once
// its retries are spent (under REPEATABLE READ or SERIALIZABLE, a larger
// statement meets more concurrent transactions it cannot be ordered with)
// changed nothing: each of its claims then runs alone, retried the same
// way.
func (s *Store) queryClaimBatch(uniq []*claimWaiter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(uniq[0].ctx), batchTimeout)
	defer cancel()
	keys := make([]string, len(uniq))
	fps := make([][]byte, len(uniq))
	leases := make([]int64, len(uniq))
	tokens := make([]int64, len(uniq))
	var clients []string // with a bounded client among them
	for i, w := range uniq {
		keys[i], fps[i], leases[i] = w.key, w.fp[:], w.us
		tokens[i] = w.token
		if w.client != "" && clients == nil {
			clients = make([]string, len(uniq))
		}
	}
	sql, args := s.sql.batchClaim, []any{keys, fps, leases, tokens}
	if clients != nil {
		for i, w := range uniq {
			clients[i] = w.client
		}
		sql, args = s.sql.batchClaimCounted, append(args, clients, s.clientKeys, s.clientWindow)
	}
	err := retryAborted(ctx, func() error {
		for _, w := range uniq {
			w.r = claimRow{}
		}
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int64
			var r claimRow
			if err := r.scanRow(rows, &n); err != nil {
				return err
			}
			if n < 1 || n > int64(len(uniq)) {
				return errors.New("pgstore: claim batch returned a row for no request")
			}
			uniq[n-1].r = r
		}
		return rows.Err()
	})
	if aborted(err) {
		for _, w := range uniq {
			s.claimAlone(w)
		}
		return
	}
	for _, w := range uniq {
		w.err = err
	}
}

// retryAborted is retrySerialization for a statement that may also fail
// with a deadlock: either way it changed nothing and may run again.
func retryAborted(ctx context.Context, stmt func() error) error {
	err := stmt()
	for attempt := 1; attempt <= maxSerializationRetries && err != nil && aborted(err); attempt++ {
		if serializationPause(ctx, attempt) != nil {
			return err
		}
		err = stmt()
	}
	return err
}

func aborted(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == serializationFailure || pgErr.Code == deadlockDetected)
}

// Completions on the pool are batched the same way as claims, in
// Store.completes (batchCompleteSQL).

// completeWaiter is one completion in a batch.
type completeWaiter struct {
	batchCall
	token, us    int64
	status       int32
	header, body []byte
	applied      bool
	p            params // the arguments of a statement of its own
}

// completeOnPool runs completeSQL for one completion on the pool, alone or
// in a batch. It reports whether the statement changed (or matched) the
// row.
func (s *Store) completeOnPool(ctx context.Context, args []any, w *completeWaiter) (bool, error) {
	q := &s.completes
	if q.limit > 0 {
		q.mu.Lock()
		if q.inflight >= q.limit {
			w.ctx, w.done = ctx, make(chan struct{})
			q.waiting = append(q.waiting, w)
			q.mu.Unlock()
			select {
			case <-w.done:
				return w.applied, w.err
			case <-ctx.Done():
				// The batch may still complete the key: the outcome is
				// unknown, as for a statement interrupted in flight.
				return false, ctx.Err()
			}
		}
		q.inflight++
		q.mu.Unlock()
		defer s.nextCompleteBatch()
	}
	var applied bool
	err := retrySerialization(ctx, func() (err error) {
		applied, err = s.completeOn(ctx, s.pool, args)
		return err
	})
	return applied, err
}

// nextCompleteBatch is nextClaimBatch for completions.
func (s *Store) nextCompleteBatch() {
	if batch := s.completes.next(); batch != nil {
		go s.runCompleteBatch(batch)
	}
}

// runCompleteBatch runs the completions of batch, those of different keys
// in one statement, then the others of a key that appears twice one at a
// time, and passes its slot on.
func (s *Store) runCompleteBatch(batch []*completeWaiter) {
	defer s.nextCompleteBatch()
	send, uniq, dup, _ := byKey(batch)
	if len(uniq) > 1 {
		s.execCompleteBatch(uniq)
	} else {
		dup = send
	}
	for _, w := range uniq {
		if len(uniq) > 1 {
			close(w.done)
		}
	}
	for _, w := range dup {
		s.completeAlone(w)
		close(w.done)
	}
}

// completeAlone runs w's completion in statements of its own (see
// completeOn), setting its outcome.
func (s *Store) completeAlone(w *completeWaiter) {
	var p params
	args := p.complete(s.typedArgs, w.key, w.token, w.status, w.header, w.body, w.us)
	w.err = retrySerialization(w.ctx, func() (err error) {
		w.applied, err = s.completeOn(w.ctx, s.pool, args) // not applied when err
		return err
	})
}

// execCompleteBatch runs batchCompleteSQL for completions of different
// keys, setting each one's outcome. A batch still aborted once its
// retries are spent changed nothing: each completion then runs alone, as
// queryClaimBatch's claims do.
func (s *Store) execCompleteBatch(uniq []*completeWaiter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(uniq[0].ctx), batchTimeout)
	defer cancel()
	keys := make([]string, len(uniq))
	tokens := make([]int64, len(uniq))
	statuses := make([]int32, len(uniq))
	headers := make([][]byte, len(uniq))
	bodies := make([][]byte, len(uniq))
	retentions := make([]int64, len(uniq))
	for i, w := range uniq {
		keys[i], tokens[i], statuses[i], headers[i], bodies[i], retentions[i] = w.key, w.token, w.status, w.header, w.body, w.us
	}
	err := retryAborted(ctx, func() error {
		for _, w := range uniq {
			w.applied = false
		}
		rows, err := s.pool.Query(ctx, s.sql.batchComplete, keys, tokens, statuses, headers, bodies, retentions)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				return err
			}
			if n < 1 || n > int64(len(uniq)) {
				return errors.New("pgstore: complete batch returned a row for no request")
			}
			uniq[n-1].applied = true
		}
		return rows.Err()
	})
	if aborted(err) {
		for _, w := range uniq {
			s.completeAlone(w)
		}
		return
	}
	for _, w := range uniq {
		w.err = err
	}
}

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
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/geoidem/geoidem/keystore"
)

// Claims are batched the natural way, without timers: while fewer than
// claimQueue.limit claim statements are in flight, a claim runs its own
// statement at once; past that, it waits, and the claims that gathered
// meanwhile go together, in one statement (batchClaimSQL), as soon as one
// in flight ends. A lone client never waits; many clients share round
// trips, commits and the pool's connections.

// maxClaimBatch bounds the number of claims in one batch statement.
const maxClaimBatch = 64

// batchTimeout bounds a batch statement, which runs on behalf of callers
// that may each give up on their own.
const batchTimeout = time.Minute

// claimQueue holds the claims waiting for a batch.
type claimQueue struct {
	limit    int // claim statements in flight at most; 0: no batching
	mu       sync.Mutex
	inflight int
	waiting  []*claimWaiter
}

// claimWaiter is one claim in a batch.
type claimWaiter struct {
	ctx    context.Context
	key    string
	fp     keystore.Fingerprint
	us     int64
	chosen pgtype.Int8
	r      claimRow
	err    error
	done   chan struct{}
}

// deadlockDetected is SQLSTATE 40P01. Keys in a batch are locked in key
// order, but a batch may still meet an application's transaction; the
// statement that fails with it changed nothing.
const deadlockDetected = "40P01"

// fastClaim runs fastClaimSQL for one claim into r, alone or in a batch.
func (s *Store) fastClaim(ctx context.Context, r *claimRow, args []any, key string, fp keystore.Fingerprint, us int64, chosen pgtype.Int8) error {
	q := &s.claims
	if q.limit == 0 {
		return s.queryClaim(ctx, s.sql.fastClaim, r, args)
	}
	q.mu.Lock()
	if q.inflight < q.limit {
		q.inflight++
		q.mu.Unlock()
		err := s.queryClaim(ctx, s.sql.fastClaim, r, args)
		s.nextClaimBatch()
		return err
	}
	w := &claimWaiter{ctx: ctx, key: key, fp: fp, us: us, chosen: chosen, done: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	q.mu.Unlock()
	select {
	case <-w.done:
		*r = w.r
		return w.err
	case <-ctx.Done():
		// The batch may still claim the key: the outcome is unknown, as
		// for a statement interrupted in flight.
		return ctx.Err()
	}
}

// nextClaimBatch hands the slot of a claim statement that ended to the
// claims waiting, if any, as one batch.
func (s *Store) nextClaimBatch() {
	q := &s.claims
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.inflight--
		q.mu.Unlock()
		return
	}
	n := min(len(q.waiting), maxClaimBatch)
	batch := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	q.mu.Unlock()
	go s.runClaimBatch(batch)
}

// runClaimBatch runs the claims of batch in one statement, then passes its
// slot on. A claim whose caller has given up is left out; a key that
// appears twice goes in once, the other claims of it getting no row (so
// that they run claimSQL after the batch, and find the key claimed).
func (s *Store) runClaimBatch(batch []*claimWaiter) {
	defer s.nextClaimBatch()
	send := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			close(w.done)
			continue
		}
		send = append(send, w)
	}
	slices.SortStableFunc(send, func(a, b *claimWaiter) int { return cmp.Compare(a.key, b.key) })
	var dup []*claimWaiter // dup[i] claims the same key as first[i]
	var first []*claimWaiter
	uniq := make([]*claimWaiter, 0, len(send))
	for _, w := range send {
		if len(uniq) > 0 && w.key == uniq[len(uniq)-1].key {
			dup, first = append(dup, w), append(first, uniq[len(uniq)-1])
			continue
		}
		uniq = append(uniq, w)
	}
	switch len(uniq) {
	case 0:
	case 1:
		w := uniq[0]
		var p params
		w.err = s.queryClaim(w.ctx, s.sql.fastClaim, &w.r, p.claim(s.typedArgs, w.key, w.fp, w.us, w.chosen))
	default:
		s.queryClaimBatch(uniq)
	}
	// A live entry read for the first claim of a key is the answer to the
	// others too (a hot key's replays); any other outcome leaves them to
	// claimSQL.
	for i, w := range dup {
		if f := first[i]; f.err == nil && !f.r.acquired && f.r.remaining > 0 {
			w.r = f.r
			w.r.body = bytes.Clone(f.r.body)
			w.r.header = f.r.header.Clone()
		}
	}
	for _, w := range send {
		close(w.done)
	}
}

// queryClaimBatch runs batchClaimSQL for claims of different keys, setting
// each one's row and error.
func (s *Store) queryClaimBatch(uniq []*claimWaiter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(uniq[0].ctx), batchTimeout)
	defer cancel()
	keys := make([]string, len(uniq))
	fps := make([][]byte, len(uniq))
	leases := make([]int64, len(uniq))
	chosen := make([]pgtype.Int8, len(uniq))
	for i, w := range uniq {
		keys[i], fps[i], leases[i] = w.key, w.fp[:], w.us
		chosen[i] = w.chosen
	}
	err := retryAborted(ctx, func() error {
		for _, w := range uniq {
			w.r = claimRow{}
		}
		rows, err := s.pool.Query(ctx, s.sql.batchClaim, keys, fps, leases, chosen)
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
// completeQueue (batchCompleteSQL).

// completeQueue holds the completions waiting for a batch.
type completeQueue struct {
	limit    int // complete statements in flight at most; 0: no batching
	mu       sync.Mutex
	inflight int
	waiting  []*completeWaiter
}

// completeWaiter is one completion in a batch.
type completeWaiter struct {
	ctx          context.Context
	key          string
	token, us    int64
	status       int32
	header, body []byte
	done         chan struct{}
	applied      bool
	err          error
	p            params // the arguments of a statement of its own
	headerRoom   [128]byte
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
	var tag pgconn.CommandTag
	err := retrySerialization(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, s.sql.complete, args...)
		return err
	})
	return err == nil && tag.RowsAffected() > 0, err
}

// nextCompleteBatch hands the slot of a complete statement that ended to
// the completions waiting, if any, as one batch.
func (s *Store) nextCompleteBatch() {
	q := &s.completes
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.inflight--
		q.mu.Unlock()
		return
	}
	n := min(len(q.waiting), maxClaimBatch)
	batch := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	q.mu.Unlock()
	go s.runCompleteBatch(batch)
}

// runCompleteBatch runs the completions of batch, those of different keys
// in one statement, then the others of a key that appears twice one at a
// time, and passes its slot on.
func (s *Store) runCompleteBatch(batch []*completeWaiter) {
	defer s.nextCompleteBatch()
	send := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			close(w.done)
			continue
		}
		send = append(send, w)
	}
	slices.SortStableFunc(send, func(a, b *completeWaiter) int { return cmp.Compare(a.key, b.key) })
	var uniq, dup []*completeWaiter
	for _, w := range send {
		if len(uniq) > 0 && w.key == uniq[len(uniq)-1].key {
			dup = append(dup, w)
			continue
		}
		uniq = append(uniq, w)
	}
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
		var p params
		args := p.complete(s.typedArgs, w.key, w.token, w.status, w.header, w.body, w.us)
		var tag pgconn.CommandTag
		w.err = retrySerialization(w.ctx, func() (err error) {
			tag, err = s.pool.Exec(w.ctx, s.sql.complete, args...)
			return err
		})
		w.applied = w.err == nil && tag.RowsAffected() > 0
		close(w.done)
	}
}

// execCompleteBatch runs batchCompleteSQL for completions of different
// keys, setting each one's outcome.
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
	for _, w := range uniq {
		w.err = err
	}
}

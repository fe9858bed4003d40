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
	chosen *int64
	r      claimRow
	err    error
	done   chan struct{}
}

// deadlockDetected is SQLSTATE 40P01. Keys in a batch are locked in key
// order, but a batch may still meet an application's transaction; the
// statement that fails with it changed nothing.
const deadlockDetected = "40P01"

// fastClaim runs fastClaimSQL for one claim into r, alone or in a batch.
func (s *Store) fastClaim(ctx context.Context, r *claimRow, args []any, key string, fp keystore.Fingerprint, us int64, chosen *int64) error {
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
		if w.chosen != nil {
			chosen[i] = pgtype.Int8{Int64: *w.chosen, Valid: true}
		}
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

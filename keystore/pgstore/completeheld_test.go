package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// kindTracer records the kind (pgstore.StatementKinds) of each statement
// the store sends, "other" for any it does not name.
type kindTracer struct {
	mu    sync.Mutex
	kinds map[string]string
	sent  []string
}

func (k *kindTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	kind, ok := k.kinds[d.SQL]
	if !ok {
		kind = "other"
	}
	k.sent = append(k.sent, kind)
	return ctx
}

func (k *kindTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the kinds sent since the last take.
func (k *kindTracer) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	sent := k.sent
	k.sent = nil
	return sent
}

// A first completion, of the row the token holds in flight, is one
// statement that judges only that row (token, lease, in flight), not the
// one that compares a stored record with the new one, which a repeat of a
// completion needs: the record's comparison and its CASE expressions are
// planned and set up by the database on every run. A repeat with the same
// record still succeeds and one with another record still fails, by the
// statement that compares.
func TestCompleteOfHeldRowJudgesOnlyTheLease(t *testing.T) {
	tr := &kindTracer{}
	pool := newPool(t, 2, tr)
	s := newStore(t, pool, pgstore.Config{})
	tr.mu.Lock()
	tr.kinds = pgstore.StatementKinds(s)
	tr.mu.Unlock()
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	tr.take()

	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, want := tr.take(), []string{"complete (held)"}; !slices.Equal(got, want) {
		t.Errorf("first completion sent %q, want %q", got, want)
	}

	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Errorf("repeat with the same record: %v", err)
	}
	if got, want := tr.take(), []string{"complete (held)", "complete"}; !slices.Equal(got, want) {
		t.Errorf("repeated completion sent %q, want %q", got, want)
	}
	if err := s.Complete(ctx, key, c.Token, jsonBytes(`{"other":1}`), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("repeat with another record: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, key, c.Token+1, jsonBytes("{}"), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("completion by another token: %v, want ErrLeaseLost", err)
	}
	if got := claim(t, s, key, time.Minute, keystore.Completed); !bytes.Equal(got.Record, jsonBytes("{}")) {
		t.Errorf("replayed record %q, want the first completion's", got.Record)
	}
}

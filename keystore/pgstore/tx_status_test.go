package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A handler that forgets to set StatusCode (or sets one outside 200–599)
// gets an error wrapping keystore.ErrInvalidStatus from InTx: its writes roll
// back, nothing is recorded, the hold stays uncompleted and the key stays
// held, so the middleware can release it. Before, status 0 was recorded and
// every replay of the key failed for the whole retention.
func TestInTxRefusesInvalidStatus(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	for _, code := range []int{0, 101, 600} {
		key := keystoretest.Key(t)
		c := claim(t, s, key, time.Minute, acquire)
		ctx, hold := holdCtx(t, key, c)
		_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
			rec := jsonRecord(`{"ok":true}`)
			rec.StatusCode = code
			return rec, upsertFeature(ctx, tx, features, key, "x")
		})
		if !errors.Is(err, keystore.ErrInvalidStatus) {
			t.Errorf("InTx with a record of status %d: err = %v, want one wrapping keystore.ErrInvalidStatus", code, err)
		}
		if hold.Completed() {
			t.Errorf("status %d: hold marked completed", code)
		}
		if _, writes := feature(t, pool, features, key); writes != 0 {
			t.Errorf("status %d: the handler's write was committed", code)
		}
		claim(t, s, key, time.Minute, keystore.InFlight)
		if err := s.Release(ctx, key, c.Token); err != nil {
			t.Errorf("status %d: Release after the refused InTx: %v", code, err)
		}
	}
}

// CompleteTx refuses such a record too, before touching the row.
func TestCompleteTxRefusesInvalidStatus(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := s.CompleteTx(ctx, tx, &keystore.Hold{Key: key, Token: c.Token, Retention: time.Hour}, pgstore.Record{}); !errors.Is(err, keystore.ErrInvalidStatus) {
		t.Fatalf("CompleteTx with status 0: err = %v, want one wrapping keystore.ErrInvalidStatus", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit after the refused CompleteTx: %v (the transaction must not be aborted)", err)
	}
	claim(t, s, key, time.Minute, keystore.InFlight)
}

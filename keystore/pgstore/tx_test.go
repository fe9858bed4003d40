package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

func TestInTxCommitsWriteAndRecordTogether(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	key := keystoretest.Key(t)
	ctx, hold := holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
	want := jsonRecord(`{"stored":["f1"]}`)
	got, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		if err := upsertFeature(ctx, tx, features, "f1", "first"); err != nil {
			return pgstore.Record{}, err
		}
		// Until the commit, neither the write nor the record is visible.
		if props, _ := feature(t, pool, features, "f1"); props != "" {
			t.Errorf("feature visible before the commit")
		}
		claim(t, s, key, time.Minute, keystore.InFlight)
		return want, nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	if string(got.Body) != string(want.Body) {
		t.Errorf("InTx returned body %q, want %q", got.Body, want.Body)
	}
	if !hold.Completed() {
		t.Errorf("InTx did not mark the hold completed")
	}
	if props, writes := feature(t, pool, features, "f1"); props != "first" || writes != 1 {
		t.Errorf("feature f1 = %q written %d times, want \"first\" once", props, writes)
	}
	c := claim(t, s, key, time.Minute, keystore.Completed)
	if string(testkit.Decoded(c.Record).Body) != string(want.Body) || testkit.Decoded(c.Record).StatusCode != want.StatusCode || testkit.Decoded(c.Record).Header.Get("Content-Type") != "application/json" {
		t.Errorf("replayed record %+v, want %+v", c.Record, want)
	}
	// The hold is spent: a second InTx with it runs nothing.
	if _, err := s.InTx(ctx, hold, func(pgx.Tx) (pgstore.Record, error) {
		t.Error("fn ran on a completed hold")
		return want, nil
	}); err == nil {
		t.Errorf("InTx on a completed hold succeeded")
	}
}

func TestInTxHandlerErrorRollsBack(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	ctx, hold := holdCtx(t, key, c)
	errBoom := errors.New("boom")
	_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		if err := upsertFeature(ctx, tx, features, "f1", "x"); err != nil {
			return pgstore.Record{}, err
		}
		return pgstore.Record{}, errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("InTx = %v, want fn's error", err)
	}
	if hold.Completed() {
		t.Errorf("hold marked completed after a failed fn")
	}
	if _, writes := feature(t, pool, features, "f1"); writes != 0 {
		t.Errorf("the failed handler's write was committed")
	}
	// The key is still held, so the middleware can release it.
	claim(t, s, key, time.Minute, keystore.InFlight)
	if err := s.Release(ctx, key, c.Token); err != nil {
		t.Errorf("Release after a failed InTx: %v", err)
	}
}

func TestInTxWithoutHold(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	_, err := s.InTx(testCtx(t), nil, func(pgx.Tx) (pgstore.Record, error) {
		t.Error("fn ran without a hold")
		return pgstore.Record{}, nil
	})
	if err == nil {
		t.Errorf("InTx without a hold succeeded")
	}
}

// A handler whose lease ran out while its transaction was open, and whose key
// another request took over, finds its transaction refused: its write is
// rolled back, and the request that took over writes once.
func TestInTxTakeoverFencesLateTransaction(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	key := keystoretest.Key(t)
	ctxA, holdA := holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
	bDone := make(chan error, 1)
	_, err := s.InTx(ctxA, holdA, func(tx pgx.Tx) (pgstore.Record, error) {
		if err := upsertFeature(ctxA, tx, features, "f1", "late"); err != nil {
			return pgstore.Record{}, err
		}
		expireLease(t, pool, s, key)
		b := claim(t, s, key, time.Minute, acquire)
		if !b.TookOver {
			t.Errorf("the second request's claim does not report TookOver")
		}
		// B's write of the same feature waits for A's transaction.
		go func() {
			ctxB, holdB := holdCtx(t, key, b)
			_, err := s.InTx(ctxB, holdB, func(tx pgx.Tx) (pgstore.Record, error) {
				return jsonRecord(`"B"`), upsertFeature(ctxB, tx, features, "f1", "B")
			})
			if err == nil && !holdB.Completed() {
				err = errors.New("hold not marked completed")
			}
			bDone <- err
		}()
		return jsonRecord(`"A"`), nil
	})
	if !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("late InTx = %v, want ErrLeaseLost", err)
	}
	if holdA.Completed() {
		t.Errorf("late hold marked completed")
	}
	if err := <-bDone; err != nil {
		t.Fatalf("InTx of the request that took over: %v", err)
	}
	if props, writes := feature(t, pool, features, "f1"); props != "B" || writes != 1 {
		t.Errorf("feature f1 = %q written %d times, want \"B\" once", props, writes)
	}
	if c := claim(t, s, key, time.Minute, keystore.Completed); string(testkit.Decoded(c.Record).Body) != `"B"` {
		t.Errorf("replay body %q, want the second request's", testkit.Decoded(c.Record).Body)
	}
}

// A lease that ran out is fenced in the transaction even if nobody took the
// key over.
func TestInTxExpiredLeaseWithoutTakeover(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	key := keystoretest.Key(t)
	ctx, hold := holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
	_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		expireLease(t, pool, s, key)
		return jsonRecord("{}"), upsertFeature(ctx, tx, features, "f1", "x")
	})
	if !errors.Is(err, keystore.ErrLeaseLost) || hold.Completed() {
		t.Fatalf("InTx after the lease ended: %v (completed %v), want ErrLeaseLost", err, hold.Completed())
	}
	if _, writes := feature(t, pool, features, "f1"); writes != 0 {
		t.Errorf("write committed after the lease ended")
	}
	if got := claim(t, s, key, time.Minute, acquire); !got.TookOver {
		t.Errorf("the next claim does not report TookOver")
	}
}

// Once CompleteTx has run, the transaction holds the key: a claim that comes
// after the old lease ran out waits for it, then sees the key completed if
// it committed, or takes it over if it rolled back.
func TestCompleteTxHoldsKeyUntilTxEnds(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "Commit", false: "Rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			pool := newPool(t, 4, nil)
			schema := newSchema(t, pool)
			features := newFeatures(t, pool, schema)
			s := newStore(t, pool, pgstore.Config{Schema: schema})
			ctx := testCtx(t)

			key := keystoretest.Key(t)
			c := claim(t, s, key, time.Minute, acquire)
			// Shorten the lease so that it ends while the transaction is open.
			if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET expires_at = clock_timestamp() + interval '300 milliseconds' WHERE key = $1", key); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if err := upsertFeature(ctx, tx, features, "f1", "x"); err != nil {
				t.Fatal(err)
			}
			if err := s.CompleteTx(ctx, tx, &keystore.Hold{Key: key, Token: c.Token, Retention: time.Hour}, jsonRecord(`"x"`)); err != nil {
				t.Fatalf("CompleteTx: %v", err)
			}
			pid := tx.Conn().PgConn().PID()
			// Wait until, to everyone else, the old lease has ended.
			deadline := time.Now().Add(10 * time.Second)
			for {
				var ended bool
				if err := pool.QueryRow(ctx, "SELECT expires_at <= clock_timestamp() FROM "+s.Table()+" WHERE key = $1", key).Scan(&ended); err != nil {
					t.Fatal(err)
				}
				if ended {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the shortened lease never ended")
				}
				time.Sleep(20 * time.Millisecond)
			}
			type result struct {
				c   keystore.Claim
				err error
			}
			got := make(chan result, 1)
			go func() {
				c, err := s.Claim(ctx, key, args(time.Minute))
				got <- result{c, err}
			}()
			// The claim must be waiting for the transaction's row lock.
			for {
				var waiting int
				if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1::integer = ANY (pg_blocking_pids(pid))", pid).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					break
				}
				select {
				case r := <-got:
					t.Fatalf("claim did not wait for the completing transaction: %+v, %v", r.c, r.err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the claim never waited for the completing transaction")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			switch {
			case commit && (r.c.State != keystore.Completed || string(testkit.Decoded(r.c.Record).Body) != `"x"`):
				t.Errorf("claim after the commit: %+v, want the committed record", r.c)
			case !commit && (!r.c.Acquired || !r.c.TookOver):
				t.Errorf("claim after the rollback: %+v, want a takeover", r.c)
			}
			_, writes := feature(t, pool, features, "f1")
			if want := map[bool]int{true: 1, false: 0}[commit]; writes != want {
				t.Errorf("feature written %d times, want %d", writes, want)
			}
		})
	}
}

// A connection dropped in the middle of the transaction rolls back the write
// and the completion together; the retry then succeeds.
func TestInTxDroppedConnection(t *testing.T) {
	for _, when := range []string{"BeforeCompletion", "AfterCompletion"} {
		t.Run(when, func(t *testing.T) {
			pool := newPool(t, 4, nil)
			schema := newSchema(t, pool)
			features := newFeatures(t, pool, schema)
			s := newStore(t, pool, pgstore.Config{Schema: schema})

			key := keystoretest.Key(t)
			first := claim(t, s, key, time.Minute, acquire)
			ctx, hold := holdCtx(t, key, first)
			terminate := func(tx pgx.Tx) {
				var ok bool
				if err := pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", tx.Conn().PgConn().PID()).Scan(&ok); err != nil || !ok {
					t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
				}
			}
			var err error
			if when == "BeforeCompletion" {
				_, err = s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
					if err := upsertFeature(ctx, tx, features, "f1", "first"); err != nil {
						return pgstore.Record{}, err
					}
					terminate(tx)
					return jsonRecord(`"first"`), nil
				})
			} else {
				var tx pgx.Tx
				if tx, err = pool.Begin(ctx); err != nil {
					t.Fatal(err)
				}
				if err := upsertFeature(ctx, tx, features, "f1", "first"); err != nil {
					t.Fatal(err)
				}
				if err := s.CompleteTx(ctx, tx, &keystore.Hold{Key: key, Token: first.Token, Retention: time.Hour}, jsonRecord(`"first"`)); err != nil {
					t.Fatal(err)
				}
				terminate(tx)
				err = tx.Commit(ctx)
			}
			if err == nil || errors.Is(err, keystore.ErrLeaseLost) {
				t.Fatalf("transaction on a terminated connection: err = %v, want a connection error", err)
			}
			if hold.Completed() {
				t.Errorf("hold marked completed after a failed transaction")
			}
			if _, writes := feature(t, pool, features, "f1"); writes != 0 {
				t.Errorf("write survived the dropped connection")
			}
			claim(t, s, key, time.Minute, keystore.InFlight) // not completed

			// The handler answered 5xx, the middleware released the key, the
			// sender retried.
			if err := s.Release(testCtx(t), key, first.Token); err != nil {
				t.Fatalf("Release: %v", err)
			}
			ctx, hold = holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
			if _, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
				return jsonRecord(`"retry"`), upsertFeature(ctx, tx, features, "f1", "retry")
			}); err != nil || !hold.Completed() {
				t.Fatalf("retry InTx: %v", err)
			}
			if props, writes := feature(t, pool, features, "f1"); props != "retry" || writes != 1 {
				t.Errorf("feature f1 = %q written %d times, want \"retry\" once", props, writes)
			}
			if c := claim(t, s, key, time.Minute, keystore.Completed); string(testkit.Decoded(c.Record).Body) != `"retry"` {
				t.Errorf("replay body %q", testkit.Decoded(c.Record).Body)
			}
		})
	}
}

func TestCompleteTxCanceledContext(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	ctx, hold := holdCtx(t, key, c)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.InTx(canceled, hold, func(pgx.Tx) (pgstore.Record, error) { return jsonRecord("{}"), nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("InTx with a canceled context: %v", err)
	}
	if hold.Completed() {
		t.Errorf("hold completed")
	}
	claim(t, s, key, time.Minute, keystore.InFlight)
}

// The middleware cancels the handler's context with ErrLeaseLost as the
// cause when it cannot renew the lease; InTx reports the lost lease.
func TestInTxContextCanceledForLostLease(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})
	key := keystoretest.Key(t)
	hctx, hold := holdCtx(t, key, claim(t, s, key, time.Minute, acquire))
	ctx, cancel := context.WithCancelCause(hctx)
	_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		if err := upsertFeature(ctx, tx, features, "f1", "x"); err != nil {
			return pgstore.Record{}, err
		}
		cancel(keystore.ErrLeaseLost)
		return jsonRecord("{}"), nil
	})
	if !errors.Is(err, keystore.ErrLeaseLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("InTx after the middleware canceled for a lost lease: %v; want ErrLeaseLost and context.Canceled", err)
	}
	if hold.Completed() {
		t.Errorf("hold completed")
	}
	if _, writes := feature(t, pool, features, "f1"); writes != 0 {
		t.Errorf("write committed")
	}
}

// CompleteTx keeps a record over the MaxRecordBytes of the Hold of its key
// in its context as the too-large record of its status, as the middleware
// keeps a response it cannot record; with no bound it keeps the record.
func TestCompleteTxFitsTheHoldsBound(t *testing.T) {
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	big := jsonRecord(`{"x":"` + strings.Repeat("x", 2000) + `"}`)
	for _, limit := range []int{0, 1024} {
		key := keystoretest.Key(t)
		c := claim(t, s, key, time.Minute, acquire)
		ctx, hold := holdCtx(t, key, c)
		hold.MaxRecordBytes = limit
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteTx(ctx, tx, hold, big); err != nil {
			t.Fatalf("CompleteTx: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		got := testkit.Decoded(claim(t, s, key, time.Minute, keystore.Completed).Record)
		kept := bytes.Equal(got.Body, big.Body)
		if got.StatusCode != big.StatusCode || kept != (limit == 0) {
			t.Errorf("MaxRecordBytes %d, a record of %d body bytes: stored status %d, body of %d bytes; want status %d and the body kept only without a bound",
				limit, len(big.Body), got.StatusCode, len(got.Body), big.StatusCode)
		}
		if limit > 0 && !strings.Contains(string(got.Body), "response-not-recorded") {
			t.Errorf("MaxRecordBytes %d: stored %q, want the response-not-recorded problem", limit, got.Body)
		}
	}
}

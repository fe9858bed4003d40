package pgstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// Claims that arrive while the store's claim statements are all in flight
// go together in one statement, and each gets the answer it would get
// alone: two concurrent claims of each of 64 keys, completed, in flight,
// expired or absent, on a pool of two connections (one claim statement in
// flight at a time).
func TestClaimBatches(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 2, tr)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	const perKind = 16
	kinds := []string{"completed", "inFlight", "expired", "absent"}
	keys := map[string][]string{}
	for _, kind := range kinds {
		for i := range perKind {
			key := fmt.Sprintf("%s-%s-%d", keystoretest.Key(t)[:32], kind, i)
			keys[kind] = append(keys[kind], key)
			switch kind {
			case "completed":
				c := claim(t, s, key, time.Minute, acquire)
				if err := s.Complete(ctx, key, c.Token, jsonBytes(key), time.Hour); err != nil {
					t.Fatal(err)
				}
			case "inFlight":
				claim(t, s, key, time.Minute, acquire)
			case "expired":
				claim(t, s, key, time.Minute, acquire)
				expireLease(t, pool, s, key)
			}
		}
	}
	tr.take()

	type result struct {
		c   keystore.Claim
		err error
	}
	results := map[string][]result{}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for _, kind := range kinds {
		for _, key := range keys[kind] {
			for range 2 {
				wg.Go(func() {
					<-start
					c, err := s.Claim(ctx, key, args(time.Minute))
					mu.Lock()
					defer mu.Unlock()
					results[key] = append(results[key], result{c, err})
				})
			}
		}
	}
	close(start)
	wg.Wait()

	for _, kind := range kinds {
		for _, key := range keys[kind] {
			var acquired, inFlight, completed int
			for _, r := range results[key] {
				switch {
				case r.err != nil:
					t.Errorf("%s: %v", key, r.err)
				case r.c.Fingerprint != fp:
					t.Errorf("%s: fingerprint %x, want %x", key, r.c.Fingerprint, fp)
				case r.c.Acquired:
					acquired++
					if r.c.TookOver != (kind == "expired") {
						t.Errorf("%s: TookOver %v", key, r.c.TookOver)
					}
				case r.c.State == keystore.InFlight && r.c.LeaseRemaining > 0:
					inFlight++
				case r.c.State == keystore.Completed && string(testkit.Decoded(r.c.Record).Body) == key:
					completed++
				default:
					t.Errorf("%s: %+v", key, r.c)
				}
			}
			want := map[string][3]int{"completed": {0, 0, 2}, "inFlight": {0, 2, 0}, "expired": {1, 1, 0}, "absent": {1, 1, 0}}[kind]
			if got := [3]int{acquired, inFlight, completed}; got != want {
				t.Errorf("%s: %d acquired, %d in flight, %d completed; want %v", key, acquired, inFlight, completed, want)
			}
		}
	}
	var statements, batches int
	for _, q := range tr.take() {
		statements++
		if strings.Contains(q, "unnest(") {
			batches++
		}
	}
	// Alone, every claim would be one statement, and those of an expired
	// key or that lose a race two.
	if batches == 0 || statements >= 2*len(kinds)*perKind {
		t.Errorf("%d claims ran %d statements, %d of them batches; want fewer statements, in batches", 2*len(kinds)*perKind, statements, batches)
	}
	t.Logf("%d claims ran %d statements, %d of them batches", 2*len(kinds)*perKind, statements, batches)
}

// Completions that arrive while the store's complete statements are all in
// flight go together too, each with the outcome it would have alone: on a
// pool of two connections, 64 keys completed at once, some twice with the
// same record (both succeed), some also with a stale token (lease lost),
// some with a nil header and body.
func TestCompleteBatches(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 2, tr)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)

	const n = 64
	keys := make([]string, n)
	tokens := make([]keystore.Token, n)
	records := make([]record.Record, n)
	for i := range n {
		keys[i] = fmt.Sprintf("%s-%d", keystoretest.Key(t)[:32], i)
		tokens[i] = claim(t, s, keys[i], time.Minute, acquire).Token
		records[i] = record.Record(jsonRecord(keys[i]))
		if i%4 == 3 {
			records[i] = record.Record{StatusCode: 204}
		}
	}
	tr.take()
	type call struct {
		i     int
		token keystore.Token
		err   error
	}
	var calls []*call
	for i := range n {
		calls = append(calls, &call{i: i, token: tokens[i]})
		switch i % 4 {
		case 1:
			calls = append(calls, &call{i: i, token: tokens[i]})
		case 2:
			calls = append(calls, &call{i: i, token: keystore.NewToken()})
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range calls {
		wg.Go(func() {
			<-start
			c.err = s.Complete(ctx, keys[c.i], c.token, record.Append(nil, records[c.i]), time.Hour)
		})
	}
	close(start)
	wg.Wait()
	for _, c := range calls {
		stale := c.token != tokens[c.i]
		switch {
		case stale && !errors.Is(c.err, keystore.ErrLeaseLost):
			t.Errorf("%s: Complete with a stale token: %v, want the lease lost", keys[c.i], c.err)
		case !stale && c.err != nil:
			t.Errorf("%s: Complete: %v", keys[c.i], c.err)
		}
	}
	var statements, batches int
	for _, q := range tr.take() {
		statements++
		if strings.Contains(q, "unnest(") {
			batches++
		}
	}
	if batches == 0 || statements >= len(calls) {
		t.Errorf("%d completions ran %d statements, %d of them batches; want fewer statements, in batches", len(calls), statements, batches)
	}
	t.Logf("%d completions ran %d statements, %d of them batches", len(calls), statements, batches)
	for i, key := range keys {
		c := claim(t, s, key, time.Minute, keystore.Completed)
		want := records[i]
		if testkit.Decoded(c.Record).StatusCode != want.StatusCode || string(testkit.Decoded(c.Record).Body) != string(want.Body) ||
			(testkit.Decoded(c.Record).Header == nil) != (want.Header == nil) || testkit.Decoded(c.Record).Header.Get("Content-Type") != want.Header.Get("Content-Type") {
			t.Errorf("%s: recorded %+v, want %+v", key, c.Record, want)
		}
	}
}

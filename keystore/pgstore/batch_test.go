package pgstore_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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
				c := claim(t, s, key, time.Minute, keystore.Acquired)
				if err := s.Complete(ctx, key, c.Token, record(key), time.Hour); err != nil {
					t.Fatal(err)
				}
			case "inFlight":
				claim(t, s, key, time.Minute, keystore.Acquired)
			case "expired":
				claim(t, s, key, time.Minute, keystore.Acquired)
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
					c, err := s.Claim(ctx, key, fp, time.Minute)
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
				case r.c.State == keystore.Acquired:
					acquired++
					if r.c.TookOver != (kind == "expired") {
						t.Errorf("%s: TookOver %v", key, r.c.TookOver)
					}
				case r.c.State == keystore.InFlight && r.c.LeaseRemaining > 0:
					inFlight++
				case r.c.State == keystore.Completed && string(r.c.Record.Body) == key:
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

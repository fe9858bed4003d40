package memstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// A Claim that finds its key live changes nothing, so it shares the lock:
// replays of one key and the duplicates of an in-flight one do not queue
// behind one another (at 64 clients on one hot key they did, and a waiter
// the scheduler had not yet run held up every request behind it). A Claim
// of a new key changes the store and waits for the lock alone.
func TestLiveClaimSharesTheLock(t *testing.T) {
	ctx := context.Background()
	s := new(memstore.Store)
	done := claim(t, s, "done", time.Minute)
	enc := record.Append(nil, record.Record{StatusCode: 201, Header: http.Header{}, Body: []byte("{}")})
	if err := s.Complete(ctx, "done", done.Token, enc, time.Minute); err != nil {
		t.Fatal(err)
	}
	claim(t, s, "running", time.Minute)

	unlock := memstore.ReadLock(s)
	for key, want := range map[string]keystore.State{"done": keystore.Completed, "running": keystore.InFlight} {
		got := make(chan keystore.Claim, 1)
		go func() {
			c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: keystore.NewToken()})
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
		select {
		case c := <-got:
			if c.State != want || c.Acquired {
				t.Errorf("Claim(%q) under a shared lock: %v (acquired %v), want %v", key, c.State, c.Acquired, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Claim(%q) of a live key waited for a lock held shared", key)
		}
	}

	acquired := make(chan bool, 1)
	go func() {
		c, err := s.Claim(ctx, "new", keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: keystore.NewToken()})
		if err != nil {
			t.Error(err)
		}
		acquired <- c.Acquired
	}()
	select {
	case <-acquired:
		t.Fatal("Claim of a new key went on while the lock was held shared")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	if !<-acquired {
		t.Error("Claim of a new key after the unlock: not acquired")
	}
}

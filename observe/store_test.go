package observe_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/observe"
)

// waitingStore forwards to a memstore through the keystore.Store interface,
// as a networked store's client would: it is neither NonBlocking nor a
// Pinger.
type waitingStore struct{ keystore.Store }

// pingStore is a store that waits and answers Ping, as a networked one does.
type pingStore struct {
	keystore.Store
	pings int
}

func (s *pingStore) Ping(context.Context) error { s.pings++; return nil }

// pingMemStore is a NonBlocking store that also answers Ping.
type pingMemStore struct {
	*memstore.Store
	pings int
}

func (s *pingMemStore) Ping(context.Context) error { s.pings++; return nil }

func (s *pingMemStore) NonBlocking() keystore.Store { return s }

// TestStoreKeepsCapabilities: the wrapper is a keystore.Pinger iff the
// store is, and keystore.IsNonBlocking iff the store is.
func TestStoreKeepsCapabilities(t *testing.T) {
	report := func(observe.StoreCall) {}
	for _, c := range []struct {
		name                string
		store               keystore.Store
		pinger, nonBlocking bool
	}{
		{"memstore", new(memstore.Store), false, true},
		{"waiting", waitingStore{new(memstore.Store)}, false, false},
		{"pinger", &pingStore{Store: new(memstore.Store)}, true, false},
		{"pinging memstore", &pingMemStore{Store: new(memstore.Store)}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := c.store.(keystore.Pinger); ok != c.pinger || keystore.IsNonBlocking(c.store) != c.nonBlocking {
				t.Fatalf("test store: Pinger %v, NonBlocking %v; want %v, %v", ok, keystore.IsNonBlocking(c.store), c.pinger, c.nonBlocking)
			}
			s := observe.Store(c.store, report)
			p, ok := s.(keystore.Pinger)
			if ok != c.pinger {
				t.Errorf("observed store is a Pinger: %v, want %v", ok, c.pinger)
			}
			if got := keystore.IsNonBlocking(s); got != c.nonBlocking {
				t.Errorf("observed store IsNonBlocking: %v, want %v", got, c.nonBlocking)
			}
			if ok {
				if err := p.Ping(context.Background()); err != nil {
					t.Errorf("Ping: %v", err)
				}
				var pings int
				switch st := c.store.(type) {
				case *pingStore:
					pings = st.pings
				case *pingMemStore:
					pings = st.pings
				}
				if pings != 1 {
					t.Errorf("Ping reached the store %d times, want 1", pings)
				}
			}
		})
	}
}

// TestStoreReportsEveryCall: each operation is reported once, with its
// error and the caller's context.
func TestStoreReportsEveryCall(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []observe.StoreCall
	)
	s := observe.Store(new(memstore.Store), func(c observe.StoreCall) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	claim, err := s.Claim(ctx, "k", keystore.Fingerprint{1}, time.Minute)
	if err != nil || claim.State != keystore.Acquired {
		t.Fatalf("Claim: %+v, %v", claim, err)
	}
	if err := s.Extend(ctx, "k", claim.Token, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "k", claim.Token, keystore.Record{StatusCode: http.StatusOK}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "k", claim.Token+1); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Fatalf("Release with a stranger's token: %v, want ErrLeaseLost", err)
	}
	var ops []string
	for i, c := range calls {
		ops = append(ops, c.Op)
		if c.Context == nil || c.Context.Value(ctxKey{}) != "request" {
			t.Errorf("call %d (%s): not the caller's context", i, c.Op)
		}
		if c.Latency < 0 {
			t.Errorf("call %d (%s): latency %v", i, c.Op, c.Latency)
		}
		if wantErr := c.Op == observe.OpRelease; (c.Err != nil) != wantErr {
			t.Errorf("call %d (%s): error %v", i, c.Op, c.Err)
		}
	}
	if want := []string{observe.OpClaim, observe.OpExtend, observe.OpComplete, observe.OpRelease}; !slices.Equal(ops, want) {
		t.Errorf("reported %v, want %v", ops, want)
	}
	if !errors.Is(calls[len(calls)-1].Err, keystore.ErrLeaseLost) {
		t.Errorf("Release reported %v, want ErrLeaseLost", calls[len(calls)-1].Err)
	}
}

func TestStoreNilCallbackIsTheStore(t *testing.T) {
	s := new(memstore.Store)
	if got := observe.Store(s, nil); got != keystore.Store(s) {
		t.Errorf("Store(s, nil) = %T, want s itself", got)
	}
}

func TestAll(t *testing.T) {
	var got []string
	fn := observe.All(func(s string) { got = append(got, "a"+s) }, nil, func(s string) { got = append(got, "b"+s) })
	fn("1")
	fn("2")
	if want := []string{"a1", "b1", "a2", "b2"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

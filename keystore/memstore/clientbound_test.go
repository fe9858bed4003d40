package memstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// claimSmall claims key for client with a fresh token and a small
// record's reservation, so that keys in flight fill the store by their
// number, not their bytes.
func claimSmall(s *memstore.Store, client, key string, lease time.Duration) (keystore.Claim, keystore.Token, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(context.Background(), key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok, Client: client, RecordBytes: 64})
	return c, tok, err
}

// contend claims n keys without a client, held for a day: a store of 100
// keys holding more than 75 holds less free room than its headroom (a
// quarter of it), and is contended.
func contend(t *testing.T, s *memstore.Store, n int) {
	t.Helper()
	for i := range n {
		if c, _, err := claimSmall(s, "", "fill"+strconv.Itoa(i), 24*time.Hour); err != nil || !c.Acquired {
			t.Fatalf("fill key %d: %v %v", i+1, c.State, err)
		}
	}
}

// On a store with room to spare the bound never bites: a lone sender's
// 10,000 new keys in a row all go in, on the zero Store (its default
// bound, DefaultClientKeys a DefaultClientWindow) and on one that bounds
// each client to 8 keys an hour.
func TestClientBoundIdleStoreNeverRefuses(t *testing.T) {
	for _, s := range []*memstore.Store{new(memstore.Store), memstore.New(memstore.Config{ClientKeys: 8, ClientWindow: time.Hour})} {
		for i := range 10_000 {
			if c, _, err := claimSmall(s, "sender", "k"+strconv.Itoa(i), time.Hour); err != nil || !c.Acquired {
				t.Fatalf("ClientBound %+v: the lone sender's new key %d on an idle store: %v %v, want acquired", s.ClientBound(), i+1, c.State, err)
			}
		}
	}
	if b := new(memstore.Store).ClientBound(); b.Keys != memstore.DefaultClientKeys || b.Window != memstore.DefaultClientWindow {
		t.Fatalf("the zero Store's ClientBound() = %+v, want DefaultClientKeys a DefaultClientWindow", b)
	}
	if b := memstore.New(memstore.Config{ClientKeys: -1}).ClientBound(); b != (keystore.ClientBound{}) {
		t.Fatalf("ClientBound() with a negative ClientKeys = %+v, want none", b)
	}
}

// Under contention a client acquires ClientKeys new keys in a window that
// starts with its first: past them it is refused with a FullError that
// names the client and says when its window ends, while another client
// still claims, and a replay, a key in flight, and a key the client
// released are never refused. When its window ends, it claims again.
func TestClientBoundUnderContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 100, ClientKeys: 5, ClientWindow: time.Minute})
		ctx := context.Background()
		contend(t, s, 80)
		toks := map[string]keystore.Token{}
		for i := range 5 {
			key := "a" + strconv.Itoa(i)
			c, tok, err := claimSmall(s, "a", key, time.Hour)
			if err != nil || !c.Acquired {
				t.Fatalf("the client's new key %d of 5, under contention: %v %v", i+1, c.State, err)
			}
			toks[key] = tok
			time.Sleep(time.Second)
		}
		if err := s.Complete(ctx, "a0", toks["a0"], record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "a2", toks["a2"]); err != nil {
			t.Fatal(err)
		}
		_, _, err := claimSmall(s, "a", "a-more", time.Hour)
		var fe *keystore.FullError
		if !errors.As(err, &fe) || !errors.Is(err, keystore.ErrStoreFull) || !fe.Client || fe.RetryAfter != time.Minute-5*time.Second {
			t.Fatalf("a new key past ClientKeys, under contention: %v (%+v), want a client FullError with RetryAfter 55s (the end of the window)", err, fe)
		}
		for i := range 5 {
			if c, _, err := claimSmall(s, "b", "b"+strconv.Itoa(i), time.Hour); err != nil || !c.Acquired {
				t.Fatalf("another client's new key %d, while the first is refused: %v %v, want acquired", i+1, c.State, err)
			}
		}
		if c, _, err := claimSmall(s, "", "no-client", time.Hour); err != nil || !c.Acquired {
			t.Fatalf("a claim without a client: %v %v, want acquired", c.State, err)
		}
		for range 10 {
			if c, _, err := claimSmall(s, "a", "a0", time.Hour); err != nil || c.State != keystore.Completed {
				t.Fatalf("the client's replay past its bound: %v %v, want its record", c.State, err)
			}
			if c, _, err := claimSmall(s, "a", "a1", time.Hour); err != nil || c.Acquired || c.State != keystore.InFlight {
				t.Fatalf("the client's duplicate of its key in flight past its bound: %v %v", c.State, err)
			}
		}
		if c, _, err := claimSmall(s, "a", "a2", time.Hour); err != nil || !c.Acquired {
			t.Fatalf("the client's released key, claimed again past its bound: %v %v, want acquired", c.State, err)
		}
		time.Sleep(fe.RetryAfter)
		for i := range 5 {
			if c, _, err := claimSmall(s, "a", "a-next"+strconv.Itoa(i), time.Hour); err != nil || !c.Acquired {
				t.Fatalf("the client's new key %d of its next window: %v %v, want acquired", i+1, c.State, err)
			}
		}
		if _, _, err := claimSmall(s, "a", "a-past", time.Hour); !errors.As(err, &fe) || !fe.Client || fe.RetryAfter != time.Minute {
			t.Fatalf("past the bound of the next window: %v, want a client FullError with RetryAfter 1m", err)
		}
	})
}

// The count runs only under contention: the keys a client acquired while
// the store had room to spare do not count, and a client past its bound
// acquires new keys again as soon as the store is no longer contended.
func TestClientBoundOnlyUnderContention(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 100, ClientKeys: 2, ClientWindow: time.Hour})
	for i := range 70 {
		if c, _, err := claimSmall(s, "a", "idle"+strconv.Itoa(i), time.Hour); err != nil || !c.Acquired {
			t.Fatalf("the client's key %d on an idle store: %v %v", i+1, c.State, err)
		}
	}
	var fill []keystore.Token
	for i := range 10 {
		c, tok, err := claimSmall(s, "", "fill"+strconv.Itoa(i), time.Hour)
		if err != nil || !c.Acquired {
			t.Fatal(err)
		}
		fill = append(fill, tok)
	}
	for i := range 2 {
		if c, _, err := claimSmall(s, "a", "busy"+strconv.Itoa(i), time.Hour); err != nil || !c.Acquired {
			t.Fatalf("the client's new key %d of 2 under contention, after 70 on the idle store: %v %v, want acquired", i+1, c.State, err)
		}
	}
	var fe *keystore.FullError
	if _, _, err := claimSmall(s, "a", "busy-more", time.Hour); !errors.As(err, &fe) || !fe.Client {
		t.Fatalf("past the bound under contention: %v, want a client FullError", err)
	}
	for i, tok := range fill { // released: not held, the store is no longer contended
		if err := s.Release(context.Background(), "fill"+strconv.Itoa(i), tok); err != nil {
			t.Fatal(err)
		}
	}
	if c, _, err := claimSmall(s, "a", "busy-more", time.Hour); err != nil || !c.Acquired {
		t.Fatalf("the refused key, once the store holds 72 of 100 (and 10 released): %v %v, want acquired: released claims do not contend", c.State, err)
	}
}

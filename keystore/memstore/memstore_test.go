package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
)

func TestConformance(t *testing.T) {
	keystoretest.Run(t, func(t *testing.T) keystore.Store { return new(memstore.Store) })
}

// The conformance suite on a store small enough for its client bound to
// bite soon: 256 keys, each client held to 8 new keys an hour under
// contention. The keystore.ClientBounded rules contend the store first
// (see keystoretest.Run), as they do the zero Store in TestConformance.
func TestConformanceClientBound(t *testing.T) {
	keystoretest.Run(t, func(t *testing.T) keystore.Store {
		return memstore.New(memstore.Config{MaxEntries: 256, ClientKeys: 8, ClientWindow: time.Hour})
	})
}

func BenchmarkStore(b *testing.B) {
	// FirstCall keeps every record it makes: room for b.N of them, since a
	// full store refuses new keys rather than drop unexpired records.
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return memstore.New(memstore.Config{MaxEntries: 1 << 26, MaxBytes: 1 << 40})
	})
}

var fp = keystore.Fingerprint{1}

func claim(t *testing.T, s *memstore.Store, key string, lease time.Duration) testkit.Claimed {
	t.Helper()
	c, err := testkit.Claim(context.Background(), s, key, fp, lease)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	return c
}

func complete(t *testing.T, s *memstore.Store, key string, retention time.Duration, body string) {
	t.Helper()
	c := claim(t, s, key, time.Minute)
	if !c.Acquired {
		t.Fatalf("Claim(%q) = %v, want acquired", key, c.State)
	}
	if err := s.Complete(context.Background(), key, c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: []byte(body)}), retention); err != nil {
		t.Fatalf("Complete(%q): %v", key, err)
	}
}

func TestLeaseAndRetentionUseTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(memstore.Store)
		c := claim(t, s, "k", 10*time.Second)
		time.Sleep(9 * time.Second)
		if got := claim(t, s, "k", time.Minute); got.State != keystore.InFlight || got.LeaseRemaining != time.Second {
			t.Fatalf("at 9s of a 10s lease: %v with %v left, want in flight with 1s", got.State, got.LeaseRemaining)
		}
		time.Sleep(time.Second)
		got := claim(t, s, "k", time.Minute)
		if !got.Acquired || !got.TookOver {
			t.Fatalf("at the end of the lease: %v (took over %v), want acquired by takeover", got.State, got.TookOver)
		}
		if err := s.Complete(context.Background(), "k", c.Token, record.Append(nil, record.Record{StatusCode: 200}), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("old owner's Complete after takeover: %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(context.Background(), "k", got.Token, record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour - time.Nanosecond)
		if got := claim(t, s, "k", time.Minute); got.State != keystore.Completed || testkit.Decoded(got.Record).StatusCode != 201 {
			t.Fatalf("just before the end of retention: %v %d, want completed 201", got.State, testkit.Decoded(got.Record).StatusCode)
		}
		time.Sleep(time.Nanosecond)
		if got := claim(t, s, "k", time.Minute); !got.Acquired || got.TookOver {
			t.Fatalf("at the end of retention: %v (took over %v), want a fresh acquire", got.State, got.TookOver)
		}
	})
}

func TestExpiredEntriesAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(memstore.Store)
		for i := range 100 {
			complete(t, s, fmt.Sprint("done", i), time.Minute, "body")
			claim(t, s, fmt.Sprint("abandoned", i), time.Second)
		}
		if n := s.Stats().Entries; n != 200 {
			t.Fatalf("entries = %d, want 200", n)
		}
		time.Sleep(time.Minute + time.Second + time.Minute) // retention, lease, grace
		claim(t, s, "trigger", time.Minute)
		if st := s.Stats(); st.Entries != 1 || st.Refused != 0 {
			t.Fatalf("after expiry: %+v, want 1 entry (the new one) and no refusals", st)
		}
	})
}

func TestMaxEntriesDropsOnlyExpiredRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 3})
		complete(t, s, "long", 3*time.Hour, "a")
		complete(t, s, "short", time.Hour, "b")
		complete(t, s, "mid", 2*time.Hour, "c")
		if _, err := testkit.Claim(context.Background(), s, "new", fp, time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
			t.Fatalf("full of unexpired records: err = %v, want ErrStoreFull", err)
		}
		time.Sleep(time.Hour) // "short" reaches the end of its retention
		claim(t, s, "new", time.Minute)
		for key, want := range map[string]keystore.State{"long": keystore.Completed, "mid": keystore.Completed, "new": keystore.InFlight} {
			if got := claim(t, s, key, time.Minute); got.State != want {
				t.Errorf("%s: %v, want %v", key, got.State, want)
			}
		}
		if st := s.Stats(); st.Entries != 3 || st.Refused != 1 {
			t.Fatalf("stats %+v, want 3 entries and 1 refusal", st)
		}
	})
}

func TestNeverEvictsInFlight(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 2})
	a := claim(t, s, "a", time.Minute)
	claim(t, s, "b", time.Minute)
	if _, err := testkit.Claim(context.Background(), s, "c", fp, time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("claim with only in-flight keys held: err = %v, want ErrStoreFull", err)
	}
	for _, key := range []string{"a", "b"} {
		if got := claim(t, s, key, time.Minute); got.State != keystore.InFlight {
			t.Fatalf("%s: %v, want still in flight", key, got.State)
		}
	}
	if err := s.Release(context.Background(), "a", a.Token); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, "c", time.Minute); !got.Acquired {
		t.Fatalf("after a release: %v, want acquired", got.State)
	}
}

func TestMaxBytes(t *testing.T) {
	s := memstore.New(memstore.Config{MaxBytes: 64 << 10, ReserveBytes: 11 << 10})
	body := string(make([]byte, 10<<10))
	stored := 0
	for i := range 20 {
		key := fmt.Sprint("k", i)
		c, err := testkit.Claim(context.Background(), s, key, fp, time.Minute)
		if errors.Is(err, keystore.ErrStoreFull) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(context.Background(), key, c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: []byte(body)}), time.Duration(i+1)*time.Hour); err != nil {
			t.Fatalf("Complete of a record within its reservation: %v", err)
		}
		stored++
		if st := s.Stats(); st.Bytes > 64<<10 {
			t.Fatalf("after %d records: %d bytes held, over the 64 KiB budget", stored, st.Bytes)
		}
	}
	if st := s.Stats(); stored < 5 || stored > 6 || st.Entries != stored || st.Refused != uint64(20-stored) {
		t.Fatalf("stats %+v with %d stored: want 5 or 6 records of 10 KiB, the rest refused", st, stored)
	}
	for i := range stored {
		if got := claim(t, s, fmt.Sprint("k", i), time.Minute); got.State != keystore.Completed {
			t.Fatalf("k%d: %v, want its record kept", i, got.State)
		}
	}
	// A record bigger than the whole budget is refused and drops nothing.
	s = memstore.New(memstore.Config{MaxBytes: 64 << 10, ReserveBytes: 1 << 10})
	complete(t, s, "small", time.Hour, "x")
	c := claim(t, s, "huge", time.Minute)
	err := s.Complete(context.Background(), "huge", c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: make([]byte, 65<<10)}), time.Hour)
	if !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("Complete of a record over the budget: %v, want ErrStoreFull", err)
	}
	if got := claim(t, s, "small", time.Minute); got.State != keystore.Completed {
		t.Fatalf("a refused record dropped another: small is %v", got.State)
	}
	if got := claim(t, s, "huge", time.Minute); got.State != keystore.InFlight {
		t.Fatalf("after a refused Complete: %v, want still in flight (the owner may Release)", got.State)
	}
	if err := s.Release(context.Background(), "huge", c.Token); err != nil {
		t.Fatalf("Release after a refused Complete: %v", err)
	}
	if st := s.Stats(); st.Entries != 1 || st.Refused != 1 {
		t.Fatalf("stats %+v, want the small record and one refusal", st)
	}
}

// A claim is charged its reservation while in flight, so Complete with a
// record that fits the reservation succeeds even when the store has filled
// up in the meantime, and the reservation is returned at Complete.
func TestReservationKeepsRoomForTheRecord(t *testing.T) {
	const reserve = 16 << 10
	s := memstore.New(memstore.Config{MaxBytes: 64 << 10, ReserveBytes: reserve})
	var tokens []keystore.Token
	for i := range 3 {
		c := claim(t, s, fmt.Sprint("k", i), time.Minute)
		tokens = append(tokens, c.Token)
	}
	if st := s.Stats(); st.Bytes < 3*reserve {
		t.Fatalf("3 claims charged %d bytes, want at least 3 reservations of %d", st.Bytes, reserve)
	}
	if _, err := testkit.Claim(context.Background(), s, "k3", fp, time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("a fourth reservation of 16 KiB in 64 KiB: err = %v, want ErrStoreFull", err)
	}
	rec := record.Record{StatusCode: 201, Body: make([]byte, reserve-1<<10)}
	for i, tok := range tokens {
		if err := s.Complete(context.Background(), fmt.Sprint("k", i), tok, record.Append(nil, rec), time.Hour); err != nil {
			t.Fatalf("Complete of k%d within its reservation: %v", i, err)
		}
	}
	small := record.Record{StatusCode: 201, Body: []byte("ok")}
	before := s.Stats().Bytes
	c := claim(t, s, "k3", time.Minute)
	if err := s.Complete(context.Background(), "k3", c.Token, record.Append(nil, small), time.Hour); err != nil {
		t.Fatal(err)
	}
	if after := s.Stats().Bytes; after-before > 1<<10 {
		t.Fatalf("a 2-byte record still charged %d bytes after Complete: the reservation was not returned", after-before)
	}
}

func TestNonPositiveDurations(t *testing.T) {
	s := new(memstore.Store)
	if _, err := testkit.Claim(context.Background(), s, "k", fp, 0); err == nil {
		t.Error("Claim with a zero lease succeeded")
	}
	c := claim(t, s, "k", time.Minute)
	if _, err := s.Extend(context.Background(), "k", c.Token, -time.Second); err == nil {
		t.Error("Extend with a negative lease succeeded")
	}
	if err := s.Complete(context.Background(), "k", c.Token, record.Append(nil, record.Record{}), 0); err == nil {
		t.Error("Complete with a zero retention succeeded")
	}
}

// Run with -race: concurrent claims, completions and replays of shared keys
// and returned records that callers then modify.
func TestConcurrentUseIsRaceFree(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 50})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				key := fmt.Sprint("k", (g*7+i)%80)
				c, err := testkit.Claim(context.Background(), s, key, fp, time.Minute)
				if err != nil {
					if !errors.Is(err, keystore.ErrStoreFull) {
						t.Errorf("Claim: %v", err)
					}
					continue
				}
				switch {
				case c.Acquired:
					rec := record.Record{StatusCode: 200, Header: http.Header{"X": {"1"}}, Body: []byte("body")}
					if i%3 == 0 {
						_ = s.Release(context.Background(), key, c.Token)
					} else if err := s.Complete(context.Background(), key, c.Token, record.Append(nil, rec), time.Minute); err != nil && !errors.Is(err, keystore.ErrStoreFull) {
						t.Errorf("Complete: %v", err)
					}
					rec.Body[0] = 'B'
				case c.State == keystore.Completed:
					testkit.Decoded(c.Record).Body[0] = 'X'
					testkit.Decoded(c.Record).Header.Set("X", "2")
				}
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Entries > 50 {
		t.Fatalf("entries = %d, over MaxEntries 50", st.Entries)
	}
}

func ExampleStore() {
	s := new(memstore.Store) // the zero value is ready to use
	ctx := context.Background()
	fp := keystore.Fingerprint{0x2a}

	tok := keystore.NewToken() // the caller chooses the token its Claim holds the key by
	c, _ := s.Claim(ctx, "key-1", keystore.ClaimArgs{Fingerprint: fp, Lease: 30 * time.Second, Token: tok})
	fmt.Println("acquired:", c.Acquired)
	rec := record.Record{StatusCode: 201, Body: []byte(`{"ok":true}`)}
	_ = s.Complete(ctx, "key-1", tok, record.Append(nil, rec), 24*time.Hour)

	again, _ := s.Claim(ctx, "key-1", keystore.ClaimArgs{Fingerprint: fp, Lease: 30 * time.Second, Token: keystore.NewToken()})
	fmt.Println(again.State, testkit.Decoded(again.Record).StatusCode, string(testkit.Decoded(again.Record).Body))
	// Output:
	// acquired: true
	// completed 201 {"ok":true}
}

// Keys that differ only in the case of their hex digits, or that are not
// hex at all, are different keys.
func TestKeysAreDistinct(t *testing.T) {
	s := new(memstore.Store)
	lower := "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	for _, key := range []string{lower, strings.ToUpper(lower), lower[:63] + "g", lower[:63], "", "k"} {
		if c := claim(t, s, key, time.Minute); !c.Acquired {
			t.Errorf("Claim(%q) = %v: it collided with an earlier key", key, c.State)
		}
	}
}

// A released key is kept for a repeated Release, but it is not held: Stats
// does not count it, and it is charged only its key.
func TestReleasedKeyIsNotCounted(t *testing.T) {
	s := memstore.New(memstore.Config{})
	c := claim(t, s, "k", time.Minute)
	before := s.Stats()
	for range 2 {
		if err := s.Release(context.Background(), "k", c.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	if st := s.Stats(); st.Entries != 0 || st.Bytes > before.Bytes {
		t.Fatalf("after Release: %+v, want no entries and no more bytes than the claim's %d", st, before.Bytes)
	}
	if got := claim(t, s, "k", time.Minute); !got.Acquired || got.TookOver {
		t.Fatalf("claim after Release: %+v, want a fresh acquire", got)
	}
	if st := s.Stats(); st.Entries != 1 {
		t.Fatalf("after the new claim: %+v, want one entry", st)
	}
}

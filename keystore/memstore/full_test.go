package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// A store full of unexpired records refuses a new key instead of dropping
// one of them: the earlier keys still replay.
func TestFullStoreRefusesNewClaimsInsteadOfEvicting(t *testing.T) {
	s := memstore.New(memstore.Config{MaxEntries: 3})
	for _, key := range []string{"a", "b", "c"} {
		complete(t, s, key, time.Hour, "answer "+key)
	}
	if _, err := testkit.Claim(context.Background(), s, "d", fp, time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("Claim of a new key in a store full of unexpired records: err = %v, want ErrStoreFull", err)
	}
	for _, key := range []string{"a", "b", "c"} {
		if got := claim(t, s, key, time.Minute); got.State != keystore.Completed || string(testkit.Decoded(got.Record).Body) != "answer "+key {
			t.Errorf("retry of %s after the store filled: %v %q, want completed %q", key, got.State, testkit.Decoded(got.Record).Body, "answer "+key)
		}
	}
}

// The store-filling attack: requests with large answers fill the byte budget;
// an earlier client's retry must replay its answer, never run again, and the
// new keys that find no room are answered 503 with Retry-After.
func TestFullStoreThroughMiddlewareReplaysEarlierKeys(t *testing.T) {
	store := memstore.New(memstore.Config{MaxBytes: 4 << 20, ReserveBytes: 520 << 10})
	var runs atomic.Int64
	big := strings.Repeat("x", 512<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "run %d\n%s", n, big)
	})
	m, err := middleware.New(store, middleware.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := m.Handler(h)
	send := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"k":"`+key+`"}`))
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	first := send("victim")
	if first.Code != http.StatusCreated {
		t.Fatalf("first request: %d", first.Code)
	}
	refused := 0
	for i := range 20 { // 20 × 512 KiB answers: five times the budget
		w := send("flood-" + strconv.Itoa(i))
		switch w.Code {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			refused++
			if w.Header().Get("Retry-After") == "" {
				t.Fatalf("503 for a full store without Retry-After")
			}
		default:
			t.Fatalf("flood request %d: %d %s", i, w.Code, w.Body.String()[:min(200, w.Body.Len())])
		}
	}
	t.Logf("4 MiB store, 520 KiB reservations: %d of 20 answers of 512 KiB recorded, %d claims refused with 503", 20-refused, refused)
	before := runs.Load()
	again := send("victim")
	if runs.Load() != before {
		t.Fatalf("the victim's retry ran the handler again after %d large answers filled the store", 20-refused)
	}
	if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || !strings.HasPrefix(again.Body.String(), "run 1\n") {
		t.Fatalf("the victim's retry: %d replayed=%q %q, want the replay of run 1", again.Code, again.Header().Get("Idempotent-Replayed"), again.Body.String()[:min(20, again.Body.Len())])
	}
	if refused == 0 {
		t.Fatalf("20 answers of 512 KiB fit a 4 MiB store: no refusal")
	}
	if st := store.Stats(); st.Refused != uint64(refused) {
		t.Fatalf("Stats().Refused = %d, want the %d refused claims (no completion refused)", st.Refused, refused)
	}
}

// The zero Store reserves room for a record of the middleware's default
// MaxRecordBytes with every claim.
func TestZeroStoreReservesDefault(t *testing.T) {
	var s memstore.Store
	claim(t, &s, "k", time.Minute)
	if st := s.Stats(); st.Bytes < memstore.DefaultReserveBytes || memstore.DefaultReserveBytes < middleware.DefaultMaxRecordBytes {
		t.Fatalf("one claim charged %d bytes; want at least DefaultReserveBytes %d, itself at least the middleware's %d",
			st.Bytes, memstore.DefaultReserveBytes, middleware.DefaultMaxRecordBytes)
	}
}

// A record larger than its claim's reservation takes the difference from
// the free budget, and is refused, changing nothing, when there is none.
func TestRecordLargerThanReservation(t *testing.T) {
	s := memstore.New(memstore.Config{MaxBytes: 64 << 10, ReserveBytes: 1 << 10})
	ctx := context.Background()
	c := claim(t, s, "big", time.Minute)
	if err := s.Complete(ctx, "big", c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: make([]byte, 40<<10)}), time.Hour); err != nil {
		t.Fatalf("a 40 KiB record over a 1 KiB reservation, with room free: %v", err)
	}
	c = claim(t, s, "big2", time.Minute)
	err := s.Complete(ctx, "big2", c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: make([]byte, 40<<10)}), time.Hour)
	if !errors.Is(err, keystore.ErrStoreFull) {
		t.Fatalf("a second 40 KiB record in 64 KiB: %v, want ErrStoreFull", err)
	}
	if got := claim(t, s, "big", time.Minute); got.State != keystore.Completed || len(testkit.Decoded(got.Record).Body) != 40<<10 {
		t.Fatalf("the first record after the refusal: %v with %d bytes, want it kept", got.State, len(testkit.Decoded(got.Record).Body))
	}
	if err := s.Complete(ctx, "big2", c.Token, record.Append(nil, record.Record{StatusCode: 200, Body: []byte("small")}), time.Hour); err != nil {
		t.Fatalf("Complete with a small record after the refusal (the claim is still held): %v", err)
	}
	if st := s.Stats(); st.Refused != 1 || st.Entries != 2 || st.Bytes > 64<<10 {
		t.Fatalf("stats %+v, want 2 entries, 1 refusal, within 64 KiB", st)
	}
}

// A negative ReserveBytes reserves nothing: a claim costs its key and the
// entry's overhead only, and its record is charged at Complete.
func TestNegativeReserveReservesNothing(t *testing.T) {
	s := memstore.New(memstore.Config{ReserveBytes: -1})
	claim(t, s, "k", time.Minute)
	if st := s.Stats(); st.Bytes <= 0 || st.Bytes > 1<<10 {
		t.Fatalf("a claim without a reservation charged %d bytes, want its key and overhead only", st.Bytes)
	}
}

// The default reservation covers the largest record the middleware's
// defaults will store, headers included: with every other byte of the
// store taken by claims in flight, a handler that answers with the largest
// headers and body the middleware records completes its key, and its retry
// is replayed, not run again. Two answers: one whose record is exactly
// MaxRecordBytes (recorded in full), and one of a 1 MiB body and a 9 KB
// Link header (over the limit: recorded as a too-large problem).
func TestLargestRecordFitsAStoreFullOfClaims(t *testing.T) {
	link := "<https://example.com/features?page=2>; rel=\"next\", " + strings.Repeat("<https://example.com/x>; rel=\"item\", ", 250)
	header := http.Header{"Content-Type": {"application/geo+json"}, "Link": {link}, "Location": {"/features/" + strings.Repeat("f", 2000)}}
	exact := middleware.DefaultMaxRecordBytes - record.Len(record.Record{StatusCode: http.StatusCreated, Header: header})
	for _, c := range []struct {
		name     string
		bodyLen  int
		wantBody bool
	}{{"record of exactly MaxRecordBytes", exact, true}, {"1 MiB body and a 9 KB Link header", 1 << 20, false}} {
		store := new(memstore.Store) // the defaults
		m, err := middleware.New(store, middleware.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int64
		filled := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			var first testkit.Claimed
			for i := range 10_000 { // every other byte taken by claims in flight
				c, err := testkit.Claim(context.Background(), store, "fill-"+strconv.Itoa(i), fp, time.Hour)
				if errors.Is(err, keystore.ErrStoreFull) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				if filled == 0 {
					first = c
				}
				filled++
			}
			// and the bytes too few for another claim, by one record just
			// larger than its reservation
			free := memstore.DefaultMaxBytes - store.Stats().Bytes
			fill := int(memstore.DefaultReserveBytes+free) - record.Len(record.Record{StatusCode: http.StatusOK})
			if err := store.Complete(context.Background(), "fill-0", first.Token, record.Append(nil, record.Record{StatusCode: http.StatusOK, Body: make([]byte, fill)}), time.Hour); err != nil {
				t.Fatalf("filling the last %d bytes: %v", free, err)
			}
			if st := store.Stats(); st.Bytes != memstore.DefaultMaxBytes {
				t.Fatalf("store filled to %d bytes, want all %d", st.Bytes, memstore.DefaultMaxBytes)
			}
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(strings.Repeat("x", c.bodyLen)))
		})
		send := func() *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
			r.Header.Set("Idempotency-Key", "big")
			w := httptest.NewRecorder()
			m.Handler(h).ServeHTTP(w, r)
			return w
		}
		if w := send(); w.Code != http.StatusCreated || w.Body.Len() != c.bodyLen {
			t.Fatalf("%s: %d with %d body bytes, want 201 and the whole body", c.name, w.Code, w.Body.Len())
		}
		if filled == 0 {
			t.Fatalf("%s: no claim filled the store", c.name)
		}
		w := send()
		if runs.Load() != 1 || w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s, in a store full of %d claims: retry %d replayed=%q, runs %d; want the record replayed and one run",
				c.name, filled, w.Code, w.Header().Get("Idempotent-Replayed"), runs.Load())
		}
		if got := w.Body.Len() == c.bodyLen && w.Header().Get("Link") == link; got != c.wantBody {
			t.Errorf("%s: replayed the whole answer %v, want %v", c.name, got, c.wantBody)
		}
	}
}

package pgstore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

// The middleware in front of a handler that writes with InTx: the first call
// writes once and records its answer in the same transaction, a retry is
// replayed without running the handler, and a handler that outlived its
// lease while a retry took the key over has its transaction refused.
func TestBehindMiddleware(t *testing.T) {
	pool := newPool(t, 8, nil)
	schema := newSchema(t, pool)
	features := newFeatures(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})

	var (
		attempts atomic.Int32
		mu       sync.Mutex
		gates    = map[int32]chan string{} // attempt → where it reports its stored key and waits
		resume   = map[int32]chan struct{}{}
		outcomes []middleware.Outcome
	)
	gate := func(n int32) (chan string, chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		gates[n], resume[n] = make(chan string, 1), make(chan struct{})
		return gates[n], resume[n]
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := attempts.Add(1)
		id := r.URL.Query().Get("id")
		hold, _ := middleware.HoldFromContext(r.Context())
		rec, err := s.InTx(r.Context(), hold, func(tx pgx.Tx) (pgstore.Record, error) {
			if err := upsertFeature(r.Context(), tx, features, id, fmt.Sprint("attempt ", n)); err != nil {
				return pgstore.Record{}, err
			}
			mu.Lock()
			g, ok := gates[n]
			res := resume[n]
			mu.Unlock()
			if ok {
				g <- hold.Key
				<-res
			}
			return pgstore.Record{
				StatusCode: http.StatusCreated,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body:       fmt.Appendf(nil, `{"stored":%q,"attempt":%d}`, id, n),
			}, nil
		})
		switch {
		case errors.Is(err, keystore.ErrLeaseLost):
			http.Error(w, "superseded", http.StatusConflict)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", rec.Header.Get("Content-Type"))
		w.WriteHeader(rec.StatusCode)
		_, _ = w.Write(rec.Body)
	})
	m, err := middleware.New(s, middleware.Config{Observer: func(e middleware.Event) {
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, e.Outcome)
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(handler)
	post := func(key, id string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/features?id="+id, strings.NewReader(`{"type":"Feature"}`))
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	lastOutcome := func() middleware.Outcome {
		mu.Lock()
		defer mu.Unlock()
		return outcomes[len(outcomes)-1]
	}

	t.Run("FirstCallAndReplay", func(t *testing.T) {
		first := post("key-1", "f1")
		if first.Code != http.StatusCreated || lastOutcome() != middleware.Executed {
			t.Fatalf("first call: %d %s (%v)", first.Code, first.Body, lastOutcome())
		}
		if props, writes := feature(t, pool, features, "f1"); writes != 1 {
			t.Errorf("feature f1 = %q written %d times, want once", props, writes)
		}
		ran := attempts.Load()
		replay := post("key-1", "f1")
		if replay.Code != http.StatusCreated || replay.Body.String() != first.Body.String() ||
			replay.Header().Get("Idempotent-Replayed") != "true" || replay.Header().Get("Content-Type") != "application/json" {
			t.Errorf("replay: %d %q %v; want the first answer, %q, replayed", replay.Code, replay.Body, replay.Header(), first.Body)
		}
		if attempts.Load() != ran || lastOutcome() != middleware.Replayed {
			t.Errorf("the replay ran the handler (outcome %v)", lastOutcome())
		}
		if _, writes := feature(t, pool, features, "f1"); writes != 1 {
			t.Errorf("feature f1 written %d times after the replay, want once", writes)
		}
	})

	t.Run("LateTransactionFenced", func(t *testing.T) {
		base := attempts.Load()
		gateA, resumeA := gate(base + 1)
		gateB, resumeB := gate(base + 2)
		answers := make(chan [2]any, 2)
		go func() { w := post("key-2", "f2"); answers <- [2]any{"A", w} }()
		storedKey := <-gateA // A has written f2, uncommitted, and waits
		expireLease(t, pool, s, storedKey)
		go func() { w := post("key-2", "f2"); answers <- [2]any{"B", w} }()
		close(resumeB) // B may finish as soon as it gets f2's row
		select {
		case <-gateB:
			t.Fatal("B wrote f2 while A's transaction held it")
		default:
		}
		close(resumeA) // A's completion is refused and rolled back; then B writes
		got := map[string]*httptest.ResponseRecorder{}
		for range 2 {
			a := <-answers
			got[a[0].(string)] = a[1].(*httptest.ResponseRecorder)
		}
		if got["A"].Code != http.StatusConflict {
			t.Errorf("late request A answered %d %s, want 409 from its refused transaction", got["A"].Code, got["A"].Body)
		}
		want := fmt.Sprintf(`{"stored":"f2","attempt":%d}`, base+2)
		if got["B"].Code != http.StatusCreated || got["B"].Body.String() != want {
			t.Errorf("request B answered %d %s, want 201 %s", got["B"].Code, got["B"].Body, want)
		}
		if props, writes := feature(t, pool, features, "f2"); props != fmt.Sprint("attempt ", base+2) || writes != 1 {
			t.Errorf("feature f2 = %q written %d times, want B's write once", props, writes)
		}
		replay := post("key-2", "f2")
		if replay.Code != http.StatusCreated || replay.Body.String() != want || replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: %d %s, want B's answer replayed", replay.Code, replay.Body)
		}
	})
}

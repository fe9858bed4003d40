package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
)

// recordStore reports every key as completed with its record.
type recordStore struct {
	failingStore
	rec keystore.Record
}

func (s *recordStore) Claim(_ context.Context, _ string, fp keystore.Fingerprint, _ time.Duration) (keystore.Claim, error) {
	return keystore.Claim{State: keystore.Completed, Fingerprint: fp, Record: s.rec.Clone()}, nil
}

// A record whose status is outside 200–599 (a status 0 from a handler that
// recorded its own response without setting one, say) must never make a
// replay panic: the replay answers a problem instead.
func TestReplayOfInvalidStatusNeverPanics(t *testing.T) {
	for _, status := range []int{0, -1, 99, 100, 101, 199, 600, 1000} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var ev events
			store := &recordStore{rec: keystore.Record{StatusCode: status, Body: []byte("x")}}
			m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
			if p := serveRecovering(m.Handler(newCounter()), httptest.NewRecorder(), post("k1", feature)); p != nil {
				t.Fatalf("replay of a record with status %d panicked: %v", status, p)
			}
			w := serve(m.Handler(newCounter()), post("k1", feature))
			wantProblem(t, w, http.StatusInternalServerError, middleware.ProblemNotRecorded)
			if len(ev.all) == 0 || ev.all[len(ev.all)-1].Status != http.StatusInternalServerError {
				t.Errorf("events %+v, want the status answered, 500", ev.all)
			}
		})
	}
	// Every status in 200–599 is replayed as recorded.
	for _, status := range []int{200, 299, 304, 422, 599} {
		store := &recordStore{rec: keystore.Record{StatusCode: status}}
		m := newMiddleware(t, store, middleware.Config{})
		if w := serve(m.Handler(newCounter()), post("k1", feature)); w.Code != status {
			t.Errorf("replay of %d: %d", status, w.Code)
		}
	}
}

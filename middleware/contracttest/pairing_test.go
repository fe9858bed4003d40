package contracttest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestReleaseAndRetryRulesArePaired pins the middleware's release rule to
// the paired sender's retry rule, for every final status with no
// Retry-After, a valid one and one no sender can read: an answer is
// released exactly when the sender retries it, so that the retry runs the
// handler again instead of being replayed the answer it is retrying, and
// no released answer is dead-lettered after one attempt.
func TestReleaseAndRetryRulesArePaired(t *testing.T) {
	for status := 200; status <= 599; status++ {
		for _, ra := range []string{"", "1", "Wed, 21 Oct 2015 07:28:00 GMT", "soon"} {
			m, err := middleware.New(new(memstore.Store), middleware.Config{})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				w.WriteHeader(status)
			}))
			for range 2 {
				r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
				r.Header.Set("Idempotency-Key", "k")
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			released := runs == 2
			_, valid := client.ParseRetryAfter(ra, "", time.Now())
			retried := client.RetryableStatus(status, valid)
			if retried && !released {
				t.Errorf("status %d (Retry-After %q): the sender retries it, but the middleware recorded it: the retry is replayed the answer it retries", status, ra)
			}
			if released && !retried {
				t.Errorf("status %d (Retry-After %q): the middleware released it, but the sender gives up on it", status, ra)
			}
		}
	}
}

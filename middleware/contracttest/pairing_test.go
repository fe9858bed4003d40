package contracttest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestReleaseAndRetryRulesArePaired pins the middleware's release rule to
// the paired sender's retry rule, for every final status with and without
// Retry-After: every answer the sender retries (client.RetryableStatus) is
// one the middleware released, so that the retry runs the handler again
// instead of being replayed the answer it is retrying. The converse does
// not hold, on purpose: the middleware releases every 5xx (a failure is
// never an outcome to keep), while the sender gives up on those that no
// retry fixes (501, 505, 511…), and dead-letters them.
func TestReleaseAndRetryRulesArePaired(t *testing.T) {
	for status := 200; status <= 599; status++ {
		for _, ra := range []bool{false, true} {
			m, err := middleware.New(new(memstore.Store), middleware.Config{})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				if ra {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(status)
			}))
			for range 2 {
				r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
				r.Header.Set("Idempotency-Key", "k")
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			released := runs == 2
			retried := client.RetryableStatus(status, ra)
			if retried && !released {
				t.Errorf("status %d (Retry-After %v): the sender retries it, but the middleware recorded it: the retry is replayed the answer it retries", status, ra)
			}
			if released && !retried && status < 500 {
				t.Errorf("status %d (Retry-After %v): the middleware released it, but the sender gives up on it", status, ra)
			}
		}
	}
}

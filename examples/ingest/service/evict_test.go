package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Rotating addresses fill a memory store scaled down (40 keys): with
// eviction (a floor of a nanosecond, here) each new address still stores
// its key, the oldest records making room, and GET /metrics counts them;
// without it (a negative floor) the store, once full, refuses every new
// address 503 store-full.
func TestRotatingAddressesEvictOldRecords(t *testing.T) {
	for _, c := range []struct {
		evictAfter time.Duration
		evicts     bool
	}{{time.Nanosecond, true}, {-1, false}} {
		svc, err := New(context.Background(), Config{MaxKeys: 40, EvictAfter: c.evictAfter})
		if err != nil {
			t.Fatal(err)
		}
		h := svc.Handler()
		refused := 0
		for a := range 100 {
			w := postAs(h, fmt.Sprint("198.51.", a/250, ".", a%250+1), fmt.Sprint("rotate-", a))
			switch {
			case w.Code == http.StatusCreated:
			case !c.evicts && w.Code == http.StatusServiceUnavailable && strings.Contains(w.Body.String(), "store-full") && w.Header().Get("Retry-After") != "":
				refused++
			default:
				t.Fatalf("EvictAfter %v: address %d's new key: %d %s (Retry-After %q)", c.evictAfter, a+1, w.Code, w.Body, w.Header().Get("Retry-After"))
			}
		}
		m := httptest.NewRecorder()
		h.ServeHTTP(m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		svc.Close()
		want := "geoidem_store_evicted_total 0"
		if c.evicts {
			want = "geoidem_store_evicted_total 60"
		} else if refused != 60 {
			t.Errorf("without eviction: %d of 100 addresses refused, want the 60 past the store's 40 keys", refused)
		}
		if !strings.Contains(m.Body.String(), want) {
			t.Errorf("EvictAfter %v: metrics lack %q:\n%s", c.evictAfter, want, m.Body)
		}
	}
}

package middleware_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The {} flood of one client fills its share of the store, not the store:
// a second client's new keys still run. The first client is told the
// truth: 503 store-full with a Retry-After from when its room frees (the
// end of a retention), not 1 s.
func TestOneClientCannotDenyAnother(t *testing.T) {
	store := memstore.New(memstore.Config{MaxEntries: 400})
	m := newMiddleware(t, store, middleware.Config{Client: func(r *http.Request) string { return r.Header.Get("X-Client") }})
	h := m.Handler(newCounter())
	send := func(client, key string) (int, string, string) {
		r := post(key, "{}")
		r.Header.Set("X-Client", client)
		w := serve(h, r)
		var p problemDoc
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		return w.Code, w.Header().Get("Retry-After"), p.Type
	}
	var last int
	var retryAfter, typ string
	for i := range 400 {
		last, retryAfter, typ = send("attacker", "flood-"+strconv.Itoa(i))
	}
	if last != http.StatusServiceUnavailable || typ != middleware.ProblemStoreFull || retryAfter != strconv.Itoa(int(middleware.DefaultRetention.Seconds())) {
		t.Errorf("the flood's last request: %d %s Retry-After=%q, want 503 store-full with Retry-After %d (its first record's retention)",
			last, typ, retryAfter, int(middleware.DefaultRetention.Seconds()))
	}
	for i := range 20 {
		if code, ra, typ := send("other", "new-"+strconv.Itoa(i)); code != http.StatusCreated {
			t.Fatalf("a second client's new key during the flood: %d %s Retry-After=%q, want 201", code, typ, ra)
		}
	}
}

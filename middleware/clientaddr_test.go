package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// RemoteClient names a request's client by its remote address: an IPv4
// address, an IPv4-mapped IPv6 address as that IPv4 one, and an IPv6
// address by its /64, which one subscriber holds whole.
func TestRemoteClient(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:4321":                     "192.0.2.7",
		"[::ffff:192.0.2.7]:4321":            "192.0.2.7",
		"[2001:db8:1:2::7]:4321":             "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:1]:80": "2001:db8:1:2::/64",
		"[2001:db8:1:3::7]:4321":             "2001:db8:1:3::/64",
		"[fe80::1%eth0]:4321":                "fe80::/64",
		"not an address":                     "not an address",
	} {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = remote
		if got := middleware.RemoteClient(r); got != want {
			t.Errorf("RemoteClient(%q) = %q, want %q", remote, got, want)
		}
	}
}

// Admission's default client is RemoteClient: addresses of one IPv6 /64
// share one client's quarter, so that a subscriber cannot take every slot
// by sending from 2^64 addresses.
func TestAdmissionCountsAnIPv6SubnetAsOneClient(t *testing.T) {
	store := new(memstore.Store)
	g := newGate()
	m := newMiddleware(t, store, middleware.Config{})
	a, err := middleware.NewAdmission(middleware.AdmissionConfig{MaxInFlight: 8})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler(m.Handler(g))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(g.release)
	from := func(remote, key string) *http.Request {
		var read bool
		r := admissionRequest("", key, 10, &read)
		r.RemoteAddr = remote
		return r
	}
	for i := range 6 { // three quarters of 8, from six addresses of one /64
		r := from(fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1), fmt.Sprint("k", i))
		wg.Add(1)
		go func() { defer wg.Done(); serve(h, r) }()
		<-g.entered
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- serve(h, from("[2001:db8:1:2::99]:4000", "k99")) }()
	select {
	case w := <-done:
		wantProblem(t, w, http.StatusTooManyRequests, middleware.ProblemClientBusy)
	case <-g.entered:
		t.Fatal("a seventh request from the same /64 was admitted; want 429 client-busy")
	}
}

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/faultproxy"
)

// TestPathSpellings: with -path-spellings, the retries of one delivery
// reach the receiver, through the harness's fault proxy, under the five
// spellings of /features in turn, each routed to the same decoded path.
func TestPathSpellings(t *testing.T) {
	var (
		mu      sync.Mutex
		targets []string
		paths   []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		targets, paths = append(targets, r.RequestURI), append(paths, r.URL.Path)
		if len(targets) < len(pathSpellings) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	proxy, err := faultproxy.New(target, faultproxy.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxyURL, err := proxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	var tl tally
	ss, closeIdle, err := newSenders(1, len(pathSpellings), 1, &tl, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle()
	res, err := ss[0].Deliver(context.Background(), client.Delivery{URL: proxyURL + "/features", Key: "k", Body: []byte(`{}`)})
	if err != nil || res.Attempts != len(pathSpellings) {
		t.Fatalf("Deliver: %+v, %v; want success after %d attempts", res, err, len(pathSpellings))
	}
	mu.Lock()
	defer mu.Unlock()
	got := slices.Clone(targets)
	slices.Sort(got)
	want := slices.Clone(pathSpellings)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("request targets %q, want each of %q once", targets, pathSpellings)
	}
	for _, p := range paths {
		if p != "/features" {
			t.Errorf("decoded path %q, want /features", p)
		}
	}
}

package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// Config.MaxRecordBytes bounds every record, whatever path the response
// took: a response with no body whose recorded headers alone exceed it (a
// 201 with a Location and a large Link, a 204, a flushed header, a
// trailer) is recorded as a response-not-recorded problem under its
// status, never whole.
func TestRecordLimitOnEveryPath(t *testing.T) {
	const limit = 1024
	link := "<https://example.com/" + strings.Repeat("x", 2*limit) + ">; rel=next"
	for name, h := range map[string]http.HandlerFunc{
		"201 header only": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/features/f1")
			w.Header().Set("Link", link)
			w.WriteHeader(http.StatusCreated)
		},
		"204": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", link)
			w.WriteHeader(http.StatusNoContent)
		},
		"implicit 200": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", link)
		},
		"flushed": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", link)
			_ = http.NewResponseController(w).Flush()
		},
		"trailer": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "Link")
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("{}"))
			w.Header().Set("Link", link)
		},
		"headers and a small body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", link[:limit-20])
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"stored":["f1"]}`))
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := new(memstore.Store)
			m := newMiddleware(t, store, middleware.Config{MaxRecordBytes: limit})
			first := serve(m.Handler(h), post("k", feature))
			e, err := store.Inspect(context.Background(), middleware.StoreKey("POST /features", "k"))
			if err != nil || e.State != keystore.Completed {
				t.Fatalf("after the request the key is %v (%v), want completed", e.State, err)
			}
			if n := len(e.Record); n > limit {
				t.Errorf("the record is %d bytes, over MaxRecordBytes %d: %d header fields %q", n, limit, len(testkit.Decoded(e.Record).Header), keys(testkit.Decoded(e.Record).Header))
			}
			replay := serve(m.Handler(h), post("k", feature))
			if replay.Code != first.Code {
				t.Errorf("replay status %d, want the original %d", replay.Code, first.Code)
			}
			if replay.Header().Get("Link") != "" || replay.Header().Get("Trailer") != "" {
				t.Errorf("the replay carries the Link that did not fit")
			}
			if !strings.Contains(replay.Body.String(), "response-not-recorded") {
				t.Errorf("replay body %q, want a response-not-recorded problem", replay.Body)
			}
		})
	}
}

func keys(h http.Header) []string {
	var ks []string
	for k := range h {
		ks = append(ks, k)
	}
	return ks
}

// A memstore full of claims has reserved room for each claim's record
// (Config.MaxRecordBytes): a header-only response larger than that is
// recorded as the small too-large problem, within the reservation, so the
// record is written at once, not refused for want of room (which left the
// key in flight, and the retry after the lease ran the handler again).
func TestHeaderOnlyRecordFitsFullMemstore(t *testing.T) {
	const (
		limit  = 4096
		claims = 8
	)
	// Room for the claims in flight (each charged its key, an overhead of
	// under 200 bytes, and its reservation) and not one byte more.
	store := memstore.New(memstore.Config{MaxBytes: claims * (limit + 300), ReserveBytes: limit})
	m := newMiddleware(t, store, middleware.Config{MaxRecordBytes: limit})
	release := make(chan struct{})
	var holding, done sync.WaitGroup
	blocker := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		holding.Done()
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	for i := range claims - 1 {
		holding.Add(1)
		done.Go(func() { serve(m.Handler(blocker), post(fmt.Sprintf("blocker-%d", i), feature)) })
	}
	holding.Wait()
	defer func() { close(release); done.Wait() }()

	runs := 0
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Location", "/features/f1")
		w.Header().Set("Link", "<https://example.com/"+strings.Repeat("x", 3*limit/2)+">; rel=next")
		w.WriteHeader(http.StatusCreated)
	})
	if w := serve(m.Handler(big), post("big", feature)); w.Code != http.StatusCreated {
		t.Fatalf("status %d, want 201 (%s)", w.Code, w.Body)
	}
	e, err := store.Inspect(context.Background(), middleware.StoreKey("POST /features", "big"))
	if err != nil || e.State != keystore.Completed {
		t.Fatalf("in a store full of claims the header-only response's key is %v (%v), want completed at once (stats %+v)", e.State, err, store.Stats())
	}
	if w := serve(m.Handler(big), post("big", feature)); w.Header().Get("Idempotent-Replayed") != "true" || runs != 1 {
		t.Errorf("retry: replayed %q, runs %d; want a replay and one run", w.Header().Get("Idempotent-Replayed"), runs)
	}
}

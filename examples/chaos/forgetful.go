package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// forgetful is a receiver that acknowledges and then forgets: it records
// each key's answer and replays it, as the middleware does, except that
// every forgetEvery-th new event (each key at most once) is answered 201 and then dropped, its
// record and its feature write together (a store that acknowledges writes
// it then loses, a fsync that lied). A re-send of that key runs it again,
// and it is stored in the end: the harness must see, before any re-send,
// that an acknowledged event's effect is missing.
type forgetful struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	records map[string][32]byte // by key: the body answered 201
	n       map[string]int      // writes by feature id
	fresh   int                 // new valid events seen
	forgot  map[string]bool     // keys acknowledged and dropped, once each
}

// forgetEvery: one new valid event in this many is acknowledged and lost.
const forgetEvery = 7

func newForgetful() (*forgetful, error) {
	r := &forgetful{records: map[string][32]byte{}, n: map[string]int{}, forgot: map[string]bool{}}
	srv, u, err := server("127.0.0.1:0", http.HandlerFunc(r.serve))
	if err != nil {
		return nil, err
	}
	r.srv, r.url = srv, u
	return r, nil
}

func (r *forgetful) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	key, sum := req.Header.Get("Idempotency-Key"), sha256.Sum256(body)
	var f struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &f) != nil || f.ID == nil {
		http.Error(w, "a feature needs an id", http.StatusUnprocessableEntity)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.records[key]; ok {
		if s != sum {
			http.Error(w, "key reused with another payload", http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		return
	}
	r.fresh++
	if r.fresh%forgetEvery == 0 && !r.forgot[key] {
		r.forgot[key] = true // acknowledged, and neither recorded nor written
		w.WriteHeader(http.StatusCreated)
		return
	}
	r.records[key] = sum
	r.n[fmt.Sprint(f.ID)]++
	w.WriteHeader(http.StatusCreated)
}

func (r *forgetful) URL() string { return r.url }
func (r *forgetful) Writes(context.Context) (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n), nil
}

// Runs: the runs it kept, each once; those it forgot left no trace.
func (r *forgetful) Runs(context.Context) (runs, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return runs{Attempts: maps.Clone(r.n), Effects: maps.Clone(r.n)}, nil
}
func (r *forgetful) Outcomes() map[middleware.Outcome]int { return nil }
func (r *forgetful) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/middleware"
)

// receiver is the service under test, however it runs.
type receiver interface {
	// URL is the receiver's base URL, http://127.0.0.1:port.
	URL() string
	// Writes returns how many times each feature id was written.
	Writes(ctx context.Context) (map[string]int, error)
	// Runs returns the receiver's run counts: the handler runs that
	// reached the write (attempts) and the runs that took effect, per
	// feature id.
	Runs(ctx context.Context) (runs, error)
	// Outcomes returns the middleware's outcome counts, or nil when they
	// are not known (a child process that was killed took them along).
	Outcomes() map[middleware.Outcome]int
	Close()
}

// server serves h on a fresh 127.0.0.1 port.
func server(addr string, h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// inProcess is examples/ingest's service served in this process, its
// feature store wrapped by a runCounter.
type inProcess struct {
	svc *service.Service
	srv *http.Server
	url string
	// metrics has a registry per service started (redeploy starts
	// another): the outcomes are their sum.
	metrics []*prometheus.Registry
	counter *runCounter
	cfg     service.Config // without Metrics, which each start gets anew
	kind    storeKind
	// PostgreSQL: where the effects are read, the writes column of the
	// feature table (table "": not PostgreSQL).
	direct, table string
}

func newInProcess(ctx context.Context, st *storeSetup) (*inProcess, error) {
	r := &inProcess{counter: newRunCounter(nil, st.writeDelay), kind: st.kind}
	if st.kind == postgresStore {
		r.direct, r.table = st.direct, st.cfg.FeaturesTable
	}
	r.cfg = st.cfg
	inner := st.cfg.WrapFeatures // a test's feature store in place of the service's
	r.cfg.WrapFeatures = func(fs service.FeatureStore) service.FeatureStore {
		if inner != nil {
			fs = inner(fs)
		}
		return r.counter.wrap(fs)
	}
	if err := r.start(ctx, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	return r, nil
}

// start starts the service on addr, with a registry of its own.
func (r *inProcess) start(ctx context.Context, addr string) error {
	reg := prometheus.NewRegistry()
	cfg := r.cfg
	cfg.Metrics = reg
	svc, err := service.New(ctx, cfg)
	if err != nil {
		return err
	}
	srv, u, err := server(addr, svc.Handler())
	if err != nil {
		svc.Close()
		return err
	}
	r.svc, r.srv, r.url = svc, srv, u
	r.metrics = append(r.metrics, reg)
	return nil
}

func (r *inProcess) URL() string { return r.url }

// Writes: the features each run wrote (in memory), or the writes column.
func (r *inProcess) Writes(ctx context.Context) (map[string]int, error) {
	if r.table != "" {
		return pgWrites(ctx, r.direct, r.table)
	}
	_, _, writes := r.counter.counts()
	return writes, nil
}

func (r *inProcess) Runs(ctx context.Context) (runs, error) {
	attempts, effects, _ := r.counter.counts()
	if r.table != "" {
		var err error
		if effects, err = pgWrites(ctx, r.direct, r.table); err != nil {
			return runs{}, err
		}
	}
	return runs{Attempts: attempts, Effects: effects}, nil
}

// Outcomes sums the outcomes of every service started.
func (r *inProcess) Outcomes() map[middleware.Outcome]int {
	sum := map[middleware.Outcome]int{}
	for _, reg := range r.metrics {
		for o, n := range outcomes(reg) {
			sum[o] += n
		}
	}
	return sum
}

// Close shuts the server down gracefully and closes the service; a
// second Close does nothing.
func (r *inProcess) Close() {
	if r.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	r.svc.Close()
	r.srv, r.svc = nil, nil
}

// outcomes reads geoidem_requests_total back from reg, by outcome.
func outcomes(reg *prometheus.Registry) map[middleware.Outcome]int {
	byName := map[string]middleware.Outcome{}
	out := map[middleware.Outcome]int{}
	for _, o := range middleware.Outcomes() {
		byName[o.String()] = o
		out[o] = 0
	}
	families, _ := reg.Gather() // an error leaves the families it could gather
	for _, f := range families {
		if f.GetName() != "geoidem_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if o, ok := byName[l.GetValue()]; ok && l.GetName() == "outcome" {
					out[o] = int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// naive is a receiver without the middleware: it applies every request it
// gets, retries included. It exists to show that the harness catches a
// receiver that is not exactly-once.
type naive struct {
	srv *http.Server
	url string

	mu sync.Mutex
	n  map[string]int
}

func newNaive() (*naive, error) {
	r := &naive{n: map[string]int{}}
	srv, u, err := server("127.0.0.1:0", http.HandlerFunc(r.serve))
	if err != nil {
		return nil, err
	}
	r.srv, r.url = srv, u
	return r, nil
}

func (r *naive) serve(w http.ResponseWriter, req *http.Request) {
	var f struct {
		ID any `json:"id"`
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil || json.Unmarshal(body, &f) != nil || f.ID == nil {
		http.Error(w, "a feature needs an id", http.StatusUnprocessableEntity)
		return
	}
	r.mu.Lock()
	r.n[fmt.Sprint(f.ID)]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (r *naive) URL() string { return r.url }
func (r *naive) Writes(context.Context) (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n), nil
}

// Runs: every request with an id runs and writes.
func (r *naive) Runs(context.Context) (runs, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return runs{Attempts: maps.Clone(r.n), Effects: maps.Clone(r.n)}, nil
}
func (r *naive) Outcomes() map[middleware.Outcome]int { return nil }
func (r *naive) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

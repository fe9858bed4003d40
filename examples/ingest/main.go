// Command ingest is a runnable receiving service: GeoJSON features posted
// with an Idempotency-Key are stored exactly once, and every retry is
// answered with the first response.
//
//	go run ./examples/ingest [-addr 127.0.0.1:8080] [-store memory]
//
// Endpoints:
//
//	POST /features        a Feature or FeatureCollection (application/geo+json
//	                      or application/json), Idempotency-Key required;
//	                      upserts the features by id and answers 201
//	                      {"stored":[ids…]}
//	GET  /features/{id}   a stored feature
//	GET  /metrics         outcome counters, store latency histograms and lease
//	                      takeovers, in Prometheus text format
//	GET  /healthz         200 when the key store answers, 503 when it does not
//
// It prints the URL it serves and shuts down gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/geoidem/geoidem/internal/promtext"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// repository stores features. Its upsert completes the request's key itself
// when it can do so atomically with the write (PostGIS), and says so by
// marking the request's keystore.Hold completed.
type repository interface {
	upsert(ctx context.Context, fs []feature) error
	get(ctx context.Context, id string) (json.RawMessage, bool, error)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fl.SetOutput(stderr)
	addr := fl.String("addr", "127.0.0.1:8080", "listen address")
	storeURL := fl.String("store", "memory", "key store: memory")
	maxBody := fl.Int64("max-body", middleware.DefaultMaxBodyBytes, "largest request body, in bytes")
	verbose := fl.Bool("v", false, "log every outcome")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	store, repo, closeStore, err := open(ctx, *storeURL)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 2
	}
	defer closeStore()

	reg := new(promtext.Registry)
	metrics := newMetrics(reg)
	timed := newTimedStore(store, reg)
	idem, err := middleware.New(timed, middleware.Config{
		MaxBodyBytes: *maxBody,
		Logger:       log,
		Observer:     metrics.observe,
	})
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 2
	}

	mux := http.NewServeMux()
	mux.Handle("POST /features", idem.Handler(postFeatures(repo)))
	mux.Handle("GET /features/{id}", getFeature(repo))
	mux.Handle("GET /metrics", reg)
	mux.Handle("GET /healthz", health(timed))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 1
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second, // slow bodies end here, before anything is claimed
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "ingest: serving http://%s (store %s)\n", ln.Addr(), *storeURL)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "ingest: shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ingest: stopped")
	return 0
}

// open returns the key store and the feature repository named by a -store
// URL, and a function that closes them.
func open(_ context.Context, storeURL string) (keystore.Store, repository, func(), error) {
	switch storeURL {
	case "", "memory", "mem":
		return new(memstore.Store), newMemFeatures(), func() {}, nil
	}
	return nil, nil, nil, fmt.Errorf("-store %q: want memory", storeURL)
}

func postFeatures(repo repository) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body) // bounded by the middleware
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		fs, err := parseFeatures(body)
		if err != nil {
			writeProblem(w, http.StatusUnprocessableEntity, "Features not stored", err.Error())
			return
		}
		if err := repo.upsert(r.Context(), fs); err != nil {
			// 5xx: the middleware releases the key, so the sender's retry runs again.
			writeProblem(w, http.StatusServiceUnavailable, "Features not stored", "the feature store failed; retry with the same key")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(storedBody(fs))
	})
}

// storedBody is the 201 answer: the ids stored, in order.
func storedBody(fs []feature) []byte {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	b, _ := json.Marshal(map[string]any{"stored": ids})
	return b
}

func getFeature(repo repository) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok, err := repo.get(r.Context(), r.PathValue("id"))
		switch {
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, "Feature store unavailable", err.Error())
		case !ok:
			writeProblem(w, http.StatusNotFound, "No such feature", "no feature has the id "+r.PathValue("id"))
		default:
			w.Header().Set("Content-Type", "application/geo+json")
			_, _ = w.Write(f)
		}
	})
}

func writeProblem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
	_, _ = w.Write(b)
}

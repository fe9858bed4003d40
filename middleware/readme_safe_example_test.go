package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The safe wiring that README.md's "Wrap your handler, safely" quotes in
// two blocks, from `logger :=` to the ListenAndServe goroutine and from
// `ctx, cancel :=` to `idem.Shutdown`; keep the three in step. A GeoJSON
// validator, so that an unclosed ring is answered 422 and never reaches
// the handler (without one it would be stored and answered 201), a
// logger, and a graceful shutdown that first stops the server, then waits
// for the records still being retried after a store failure.
func Example_readmeSafe() {
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, _ := middleware.Decoded[*geojson.Document](r.Context()) // parsed once, by the validator
		var ids []string
		for _, f := range doc.Features {
			ids = append(ids, fmt.Sprint(f.ID))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string][]string{"stored": ids})
	})
	addr := "127.0.0.1:0" // yours: ":8080"

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	idem, err := middleware.New(new(memstore.Store), middleware.Config{
		Validator: geojson.RequestValidator{}, // RFC 7946: an unclosed ring is a 422, the handler never sees it
		Logger:    logger,                     // store failures, lost leases, refusals (at a bounded rate)
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", idem.Handler(ingest))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	for _, d := range []struct{ key, body string }{
		{`"evt-1"`, `{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`},
		{`"evt-2"`, `{"type":"Feature","id":"a1","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]},"properties":null}`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(d.body))
		r.Header.Set("Content-Type", "application/geo+json")
		r.Header.Set("Idempotency-Key", d.key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}

	// … until SIGTERM (signal.NotifyContext); then, within the grace the platform gives:
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil { // first stop taking requests
		logger.Error("server shutdown", "error", err)
	}
	if err := idem.Shutdown(ctx); err != nil { // then wait for records still being retried
		logger.Error("idempotency records still pending", "error", err)
	}

	fmt.Println("stopped")
	// Output:
	// 201 {"stored":["p1"]}
	// 422 {"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#invalid-geojson","title":"Invalid GeoJSON","status":422,"detail":"the body is not valid GeoJSON: 1 problem(s)","errors":[{"pointer":"/geometry/coordinates/0","rule":"ring-not-closed","detail":"the first and last positions of a linear ring must be identical"}]}
	// stopped
}

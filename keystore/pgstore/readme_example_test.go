package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// upsert is the handler's write.
const upsert = `INSERT INTO features (id, geometry) VALUES ($1, $2)
	ON CONFLICT (id) DO UPDATE SET geometry = excluded.geometry`

// featureOf decodes the request's feature: its id, its geometry and the
// body of the answer that reports it stored.
func featureOf(r *http.Request) (id string, geometry json.RawMessage, body []byte) {
	var f struct {
		ID       string          `json:"id"`
		Geometry json.RawMessage `json:"geometry"`
	}
	_ = json.NewDecoder(r.Body).Decode(&f) // the middleware's Validator has checked it
	body, _ = json.Marshal(map[string][]string{"stored": {f.ID}})
	return f.ID, f.Geometry, body
}

// The handler's write and the record of its answer commit in one
// transaction, behind the middleware; the retry is replayed with the
// recorded Content-Type. docs/stores.md describes it, and
// examples/ingest/service/postgis.go does the same with PostGIS.
func ExampleStore_InTx_middleware() {
	ctx := context.Background()
	pool, cleanup := examplePool(ctx) // the test database, on a schema of its own
	defer cleanup()
	if _, err := pool.Exec(ctx, `CREATE TABLE features (id text PRIMARY KEY, geometry jsonb)`); err != nil {
		log.Fatal(err)
	}

	store, err := pgstore.New(ctx, pool, pgstore.Config{}) // runs its embedded migrations
	if err != nil {
		log.Fatal(err)
	}
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, geometry, body := featureOf(r) // yours: the request's feature and the answer's body
		hold, _ := middleware.HoldFromContext(r.Context())
		rec, err := store.InTx(r.Context(), hold, func(tx pgx.Tx) (pgstore.Record, error) {
			if _, err := tx.Exec(r.Context(), upsert, id, geometry); err != nil {
				return pgstore.Record{}, err
			}
			return pgstore.Record{ // recorded in the same transaction, replayed to every retry
				StatusCode: http.StatusCreated,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body:       body,
			}, nil
		})
		switch { // not every error is "try again": see "Permanent or transient failures"
		case pgstore.Transient(err): // a lost connection, a deadlock, a failover, a bug: 503, the key is released
			problem.Write(w, problem.Details{Status: http.StatusServiceUnavailable, RetryAfter: time.Second})
			return
		case err != nil: // the feature's own fault (a refused geometry, a constraint): 422, recorded, the sender stops
			problem.Write(w, problem.Details{Status: http.StatusUnprocessableEntity, Detail: "feature refused"})
			return
		}
		maps.Copy(w.Header(), rec.Header)
		w.WriteHeader(rec.StatusCode)
		w.Write(rec.Body)
	})
	defer store.Close()

	idem, err := middleware.New(store, middleware.Config{})
	if err != nil {
		log.Fatal(err)
	}
	for range 2 { // a delivery and its retry
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`))
		r.Header.Set("Idempotency-Key", `"evt-1"`)
		w := httptest.NewRecorder()
		idem.Handler(ingest).ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Content-Type"), w.Body.String(), "replayed:", w.Header().Get("Idempotent-Replayed") == "true")
	}
	var geometry string
	if err := pool.QueryRow(ctx, `SELECT geometry::text FROM features WHERE id = 'p1'`).Scan(&geometry); err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", geometry)
	// Output:
	// 201 application/json {"stored":["p1"]} replayed: false
	// 201 application/json {"stored":["p1"]} replayed: true
	// stored: {"type": "Point", "coordinates": [13.4, 52.5]}
}

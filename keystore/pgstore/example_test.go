package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// The store is created once at startup, on the pool the service already uses.
// Several replicas may start at once: the migration is serialised.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://ingest@127.0.0.1:5432/ingest")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.Config{Table: "ingest_keys"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close() // stops the janitor
	// Hand store to middleware.New.
}

// An ingest handler behind the geoidem middleware upserts a feature and
// records its answer in one transaction: both commit, or neither does.
func ExampleStore_InTx() {
	var store *pgstore.Store // from pgstore.New

	ingest := func(w http.ResponseWriter, r *http.Request) {
		var f struct {
			ID       string          `json:"id"`
			Geometry json.RawMessage `json:"geometry"`
		}
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hold, _ := middleware.HoldFromContext(r.Context())
		rec, err := store.InTx(r.Context(), hold, func(tx pgx.Tx) (pgstore.Record, error) {
			_, err := tx.Exec(r.Context(), `
				INSERT INTO features (id, geom) VALUES ($1, ST_SetSRID(ST_GeomFromGeoJSON($2), 4326))
				ON CONFLICT (id) DO UPDATE SET geom = excluded.geom`, f.ID, string(f.Geometry))
			if err != nil {
				return pgstore.Record{}, err
			}
			body, _ := json.Marshal(map[string][]string{"stored": {f.ID}})
			return pgstore.Record{
				StatusCode: http.StatusCreated,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body:       body,
			}, nil
		})
		switch {
		case errors.Is(err, keystore.ErrLeaseLost):
			// Another delivery of this request took the key over; its work
			// stands and ours was rolled back.
			problem.Write(w, problem.Details{Status: http.StatusConflict, Title: "Superseded by a retry"})
			return
		case pgstore.Transient(err):
			// Nothing was written, and a retry may succeed (a lost
			// connection, a deadlock, a failover): a 5xx makes the
			// middleware release the key, so the sender's retry runs again.
			problem.Write(w, problem.Details{
				Type:  "https://example.com/problems/feature-store-unavailable",
				Title: "Feature store unavailable", Status: http.StatusServiceUnavailable,
				Detail: "Nothing was stored; retry with the same key.", RetryAfter: time.Second,
			})
			return
		case err != nil:
			// No retry can fix it (a geometry PostGIS refuses, a constraint,
			// a bug): a 422 is recorded and replayed, so the sender stops.
			problem.Write(w, problem.Details{
				Type:  "https://example.com/problems/feature-rejected",
				Title: "Feature rejected", Status: http.StatusUnprocessableEntity,
				Detail: "The database refused the feature.",
			})
			return
		}
		for k, vs := range rec.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.StatusCode)
		_, _ = w.Write(rec.Body)
	}
	http.HandleFunc("POST /features", ingest) // wrapped by the middleware in a real service
}

// A handler that runs its own transaction completes the key just before
// committing, and commits through the hold, which tells the middleware.
func ExampleStore_CompleteTx() {
	ctx := context.Background()
	pool, cleanup := examplePool(ctx) // the test database, on a schema of its own
	defer cleanup()
	store, err := pgstore.New(ctx, pool, pgstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE features (id text PRIMARY KEY); INSERT INTO features VALUES ('p1')`); err != nil {
		log.Fatal(err)
	}

	handler := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		hold, ok := middleware.HoldFromContext(ctx)
		if !ok {
			http.Error(w, "no idempotency key", http.StatusBadRequest)
			return
		}
		rec := pgstore.Record{StatusCode: http.StatusNoContent}
		err := func() error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after the commit
			if _, err := tx.Exec(ctx, `DELETE FROM features WHERE id = $1`, r.PathValue("id")); err != nil {
				return err
			}
			if err := store.CompleteTx(ctx, tx, hold, rec); err != nil {
				return err
			}
			// Commit marks the hold completed once the commit succeeded, and
			// keeps the middleware's lease renewal from stopping the handler
			// while the commit holds the key.
			return hold.Commit(func() error { return tx.Commit(ctx) })
		}()
		if err != nil {
			http.Error(w, "not deleted", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(rec.StatusCode)
	}
	// DELETE is not among the middleware's default methods (POST and
	// PATCH): without it here, the handler would run without a hold.
	idem, err := middleware.New(store, middleware.Config{Methods: []string{http.MethodDelete}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("DELETE /features/{id}", idem.Handler(http.HandlerFunc(handler)))

	for range 2 { // a delivery and its retry
		r := httptest.NewRequest(http.MethodDelete, "/features/p1", nil)
		r.Header.Set("Idempotency-Key", `"delete-p1"`)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d %q replayed: %v\n", w.Code, strings.TrimSpace(w.Body.String()), w.Header().Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// 204 "" replayed: false
	// 204 "" replayed: true
}

// examplePool connects to the test database (connString) with a search_path
// of a new schema, which cleanup drops.
func examplePool(ctx context.Context) (pool *pgxpool.Pool, cleanup func()) {
	admin, err := pgxpool.New(ctx, connString())
	if err != nil {
		log.Fatal(err)
	}
	schema := fmt.Sprintf("pgstore_example_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		log.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(connString())
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		log.Fatal(err)
	}
	return pool, func() {
		pool.Close()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			log.Print(err)
		}
		admin.Close()
	}
}

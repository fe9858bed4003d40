package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
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
		rec, err := store.InTx(r.Context(), func(tx pgx.Tx) (keystore.Record, error) {
			_, err := tx.Exec(r.Context(), `
				INSERT INTO features (id, geom) VALUES ($1, ST_SetSRID(ST_GeomFromGeoJSON($2), 4326))
				ON CONFLICT (id) DO UPDATE SET geom = excluded.geom`, f.ID, string(f.Geometry))
			if err != nil {
				return keystore.Record{}, err
			}
			body, _ := json.Marshal(map[string][]string{"stored": {f.ID}})
			return keystore.Record{
				StatusCode: http.StatusCreated,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body:       body,
			}, nil
		})
		switch {
		case errors.Is(err, keystore.ErrLeaseLost):
			// Another delivery of this request took the key over; its work
			// stands and ours was rolled back.
			http.Error(w, "superseded by a retry", http.StatusConflict)
			return
		case err != nil:
			// Nothing was written: a 5xx makes the middleware release the
			// key, so the sender's retry runs again.
			http.Error(w, "not stored", http.StatusServiceUnavailable)
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
// committing, and tells the middleware after the commit.
func ExampleStore_CompleteTx() {
	var (
		store *pgstore.Store
		pool  *pgxpool.Pool
	)
	handler := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		hold, ok := keystore.HoldFromContext(ctx)
		if !ok {
			http.Error(w, "no idempotency key", http.StatusBadRequest)
			return
		}
		rec := keystore.Record{StatusCode: http.StatusNoContent}
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM features WHERE id = $1`, r.PathValue("id")); err != nil {
				return err
			}
			return store.CompleteTx(ctx, tx, hold.Key, hold.Token, rec, hold.Retention)
		})
		if err != nil {
			http.Error(w, "not deleted", http.StatusServiceUnavailable)
			return
		}
		hold.MarkCompleted()
		w.WriteHeader(rec.StatusCode)
	}
	http.HandleFunc("DELETE /features/{id}", handler)
}

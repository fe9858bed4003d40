package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

func BenchmarkStore(b *testing.B) {
	pool := newPool(b, 16, nil)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, pool, pgstore.Config{})
	})
}

// BenchmarkStoreClientBound is BenchmarkStore with a bound on each
// client's new keys (never reached): FirstCallClient and ReplayClient
// run fastClaimCountedSQL, the others claim without a client.
func BenchmarkStoreClientBound(b *testing.B) {
	pool := newPool(b, 16, nil)
	keystoretest.RunBenchmarks(b, func(b *testing.B) keystore.Store {
		return newStore(b, pool, pgstore.Config{ClientKeys: 1 << 30})
	})
}

// benchClients are the numbers of concurrent clients each comparison runs at.
var benchClients = []int{16, 64}

// benchSeq numbers the new keys of every benchmark round.
var benchSeq atomic.Int64

// next returns a number never returned before in this process.
func next() int64 { return benchSeq.Add(1) }

// parallel runs body from clients goroutines (b.SetParallelism rounds up to
// a multiple of GOMAXPROCS; the metric reports the number used).
func parallel(b *testing.B, clients int, body func() error) {
	procs := runtime.GOMAXPROCS(0)
	p := (clients + procs - 1) / procs
	b.SetParallelism(p)
	b.ReportMetric(float64(p*procs), "clients")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := body(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

var benchRecord = record.Record{
	StatusCode: http.StatusCreated,
	Header:     http.Header{"Content-Type": {"application/json"}},
	Body:       []byte(`{"stored":["feature-1"]}`),
}

// benchEncoded is benchRecord encoded, as the middleware passes it to
// Complete.
var benchEncoded = record.Append(nil, benchRecord)

// benchPool is a pool with one connection per client.
func benchPool(b *testing.B, clients int) *pgxpool.Pool {
	return newPool(b, int32(clients), nil)
}

// BenchmarkFirstCall compares a first delivery (claim, then complete) done
// by pgstore with the same two statements written by hand with pgx.
func BenchmarkFirstCall(b *testing.B) {
	for _, clients := range benchClients {
		pool := benchPool(b, clients)
		s := newStore(b, pool, pgstore.Config{})
		claimSQL, completeSQL := pgstore.ClaimSQL(s), pgstore.CompleteSQL(s)
		header := pgstore.EncodeHeader(benchRecord.Header)
		prefix := keystoretest.Key(b)[:40]
		lease, retention := time.Minute.Microseconds(), time.Hour.Microseconds()

		b.Run(fmt.Sprintf("hand/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				key := prefix + "h" + strconv.FormatInt(next(), 10)
				var (
					acquired, tookOver bool
					token, remaining   int64
					fpb, hdr, body     []byte
					status             *int32
				)
				if err := pool.QueryRow(ctx, claimSQL, key, fp[:], lease, int64(keystore.NewToken())).Scan(&acquired, &tookOver, &token, &fpb, &status, &hdr, &body, &remaining); err != nil {
					return err
				}
				if !acquired {
					return fmt.Errorf("not acquired")
				}
				tag, err := pool.Exec(ctx, completeSQL, key, token, int32(benchRecord.StatusCode), header, benchRecord.Body, retention)
				if err == nil && tag.RowsAffected() != 1 {
					err = fmt.Errorf("not completed")
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("pgstore/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				key := prefix + "s" + strconv.FormatInt(next(), 10)
				a := args(time.Minute)
				if _, err := s.Claim(ctx, key, a); err != nil {
					return err
				}
				return s.Complete(ctx, key, a.Token, benchEncoded, time.Hour)
			})
		})
		// Every claim for one bounded client (the worst case of
		// Config.ClientKeys): its claims count in up to 16 rows of its
		// own, each taken by one statement at a time.
		bounded := newStore(b, pool, pgstore.Config{ClientKeys: 1 << 30})
		b.Run(fmt.Sprintf("pgstore-clientbound/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				key := prefix + "c" + strconv.FormatInt(next(), 10)
				a := args(time.Minute)
				a.Client = "bench-client"
				if _, err := bounded.Claim(ctx, key, a); err != nil {
					return err
				}
				return bounded.Complete(ctx, key, a.Token, benchEncoded, time.Hour)
			})
		})
	}
}

// BenchmarkFirstCallInTx compares a first delivery whose handler writes a
// PostGIS feature and completes the key in its own transaction: by hand
// (claim; begin, upsert, complete, commit) and with pgstore (Claim, InTx).
func BenchmarkFirstCallInTx(b *testing.B) {
	for _, clients := range benchClients {
		pool := benchPool(b, clients)
		schema := newSchema(b, pool)
		features := newFeatures(b, pool, schema)
		s := newStore(b, pool, pgstore.Config{Schema: schema})
		claimSQL, completeSQL := pgstore.ClaimSQL(s), pgstore.CompleteSQL(s)
		header := pgstore.EncodeHeader(benchRecord.Header)
		prefix := keystoretest.Key(b)[:40]
		lease, retention := time.Minute.Microseconds(), time.Hour.Microseconds()

		b.Run(fmt.Sprintf("hand/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				id := "h" + strconv.FormatInt(next(), 10)
				key := prefix + id
				var (
					acquired, tookOver bool
					token, remaining   int64
					fpb, hdr, body     []byte
					status             *int32
				)
				if err := pool.QueryRow(ctx, claimSQL, key, fp[:], lease, int64(keystore.NewToken())).Scan(&acquired, &tookOver, &token, &fpb, &status, &hdr, &body, &remaining); err != nil {
					return err
				}
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if err := upsertFeature(ctx, tx, features, id, "x"); err != nil {
						return err
					}
					tag, err := tx.Exec(ctx, completeSQL, key, token, int32(benchRecord.StatusCode), header, benchRecord.Body, retention)
					if err == nil && tag.RowsAffected() != 1 {
						err = fmt.Errorf("not completed")
					}
					return err
				})
			})
		})
		b.Run(fmt.Sprintf("pgstore/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				id := "s" + strconv.FormatInt(next(), 10)
				key := prefix + id
				a := args(time.Minute)
				if _, err := s.Claim(ctx, key, a); err != nil {
					return err
				}
				hold := &keystore.Hold{Key: key, Token: a.Token, Retention: time.Hour}
				_, err := s.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
					return pgstore.Record(benchRecord), upsertFeature(ctx, tx, features, id, "x")
				})
				return err
			})
		})
	}
}

// BenchmarkHotKeyReplay replays one completed key from many clients with
// pgstore, against two baselines: a plain SELECT of the row (the floor), and
// the INSERT … ON CONFLICT DO UPDATE … WHERE false that a claim without the
// snapshot read would run, which locks the row and so serialises the
// replays.
func BenchmarkHotKeyReplay(b *testing.B) {
	for _, clients := range benchClients {
		pool := benchPool(b, clients)
		s := newStore(b, pool, pgstore.Config{})
		key := keystoretest.Key(b)
		c := claim(b, s, key, time.Minute, acquire)
		if err := s.Complete(context.Background(), key, c.Token, benchEncoded, time.Hour); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("pgstore/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			parallel(b, clients, func() error {
				c, err := s.Claim(ctx, key, args(time.Minute))
				if err == nil && c.State != keystore.Completed {
					err = fmt.Errorf("state %v", c.State)
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("select/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			q := "SELECT fingerprint, status, header, body FROM " + s.Table() + " WHERE key = $1 AND expires_at > clock_timestamp()"
			parallel(b, clients, func() error {
				var (
					fpb, hdr, body []byte
					status         *int32
				)
				return pool.QueryRow(ctx, q, key).Scan(&fpb, &status, &hdr, &body)
			})
		})
		b.Run(fmt.Sprintf("lockingUpsert/clients=%d", clients), func(b *testing.B) {
			ctx := b.Context()
			q := "INSERT INTO " + s.Table() + ` AS k (key, fingerprint, token, expires_at) VALUES ($1, $2, 0, clock_timestamp())
				ON CONFLICT (key) DO UPDATE SET token = k.token WHERE k.expires_at <= clock_timestamp()`
			parallel(b, clients, func() error {
				_, err := pool.Exec(ctx, q, key, fp[:])
				return err
			})
		})
	}
}

// BenchmarkHandler compares, per HTTP request of a first delivery, an ingest
// handler that does the claim and the in-transaction completion itself with
// pgx (the same statements), and the same handler written with InTx behind
// the geoidem middleware on pgstore. Requests go straight to ServeHTTP: the
// ceiling is the database's commit rate, not HTTP.
func BenchmarkHandler(b *testing.B) {
	for _, clients := range benchClients {
		pool := benchPool(b, clients)
		schema := newSchema(b, pool)
		features := newFeatures(b, pool, schema)
		s := newStore(b, pool, pgstore.Config{Schema: schema})
		claimSQL, completeSQL := pgstore.ClaimSQL(s), pgstore.CompleteSQL(s)
		body := []byte(`{"type":"Feature","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{}}`)
		respond := func(w http.ResponseWriter, rec pgstore.Record) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.StatusCode)
			_, _ = w.Write(rec.Body)
		}
		response := func(id string) pgstore.Record {
			return pgstore.Record{StatusCode: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"stored":["` + id + `"]}`)}
		}

		hand := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			payload, _ := io.ReadAll(r.Body)
			sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.Path+"\n"), payload...))
			key := r.Header.Get("Idempotency-Key")
			id := r.URL.Query().Get("id")
			var (
				acquired, tookOver bool
				token, remaining   int64
				fpb, hdr, rbody    []byte
				status             *int32
			)
			if err := pool.QueryRow(ctx, claimSQL, key, sum[:], time.Minute.Microseconds(), int64(keystore.NewToken())).Scan(&acquired, &tookOver, &token, &fpb, &status, &hdr, &rbody, &remaining); err != nil || !acquired {
				http.Error(w, "claim", http.StatusServiceUnavailable)
				return
			}
			rec := response(id)
			header := pgstore.EncodeHeader(rec.Header)
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := upsertFeature(ctx, tx, features, id, "x"); err != nil {
					return err
				}
				tag, err := tx.Exec(ctx, completeSQL, key, token, int32(rec.StatusCode), header, rec.Body, time.Hour.Microseconds())
				if err == nil && tag.RowsAffected() != 1 {
					err = keystore.ErrLeaseLost
				}
				return err
			})
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			respond(w, rec)
		})
		m, err := middleware.New(s, middleware.Config{})
		if err != nil {
			b.Fatal(err)
		}
		wrapped := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.URL.Query().Get("id")
			hold, _ := middleware.HoldFromContext(r.Context())
			rec, err := s.InTx(r.Context(), hold, func(tx pgx.Tx) (pgstore.Record, error) {
				return response(id), upsertFeature(r.Context(), tx, features, id, "x")
			})
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			respond(w, rec)
		}))

		for _, h := range []struct {
			name    string
			handler http.Handler
		}{{"hand", hand}, {"pgstore+middleware", wrapped}} {
			b.Run(fmt.Sprintf("%s/clients=%d", h.name, clients), func(b *testing.B) {
				// A cancelable context, as net/http gives every request.
				ctx := b.Context()
				parallel(b, clients, func() error {
					id := strconv.FormatInt(next(), 10)
					r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/features?id="+id, bytes.NewReader(body))
					r.Header.Set("Idempotency-Key", "bench-"+id)
					w := httptest.NewRecorder()
					h.handler.ServeHTTP(w, r)
					if w.Code != http.StatusCreated {
						return fmt.Errorf("%s: %d %s", h.name, w.Code, w.Body)
					}
					return nil
				})
			})
		}
	}
}

// BenchmarkSharedPool is the store's part of bench/'s HTTP comparison: one
// pool of 16 connections, 1 or 64 clients, first calls (a new key each) and
// replays (one completed key), pgstore against that section's baseline by
// hand, an INSERT … ON CONFLICT DO NOTHING claim that also reads an
// existing row, and an UPDATE completion, on a table of key, expires_at,
// status and body with an index on expires_at.
func BenchmarkSharedPool(b *testing.B) {
	stmts := new(statementCount)
	pool := newPool(b, 16, stmts)
	schema := newSchema(b, pool)
	s := newStore(b, pool, pgstore.Config{Schema: schema})
	hand := pgx.Identifier{schema, "hand"}.Sanitize()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+hand+` (key text COLLATE "C" PRIMARY KEY, expires_at timestamptz NOT NULL, status integer, body bytea)`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX ON `+hand+` (expires_at)`); err != nil {
		b.Fatal(err)
	}
	claimSQL := `WITH ins AS (
		INSERT INTO ` + hand + ` (key, expires_at) VALUES ($1, now() + interval '30 seconds')
		ON CONFLICT DO NOTHING RETURNING true)
	SELECT EXISTS (SELECT 1 FROM ins), b.status, b.body
	FROM (VALUES (1)) one LEFT JOIN ` + hand + ` b ON b.key = $1`
	completeSQL := `UPDATE ` + hand + ` SET status = $2, body = $3, expires_at = now() + interval '24 hours' WHERE key = $1`
	prefix := keystoretest.Key(b)[:40]
	byHand := func(ctx context.Context, key string, replay bool) error {
		var (
			acquired bool
			status   *int32
			stored   []byte
		)
		if err := pool.QueryRow(ctx, claimSQL, key).Scan(&acquired, &status, &stored); err != nil {
			return err
		}
		switch {
		case replay && (acquired || status == nil):
			return fmt.Errorf("not replayed")
		case replay:
			return nil
		case !acquired:
			return fmt.Errorf("not acquired")
		}
		_, err := pool.Exec(ctx, completeSQL, key, http.StatusCreated, benchRecord.Body)
		return err
	}
	withStore := func(ctx context.Context, key string, replay bool) error {
		a := args(time.Minute)
		c, err := s.Claim(ctx, key, a)
		switch {
		case err != nil:
			return err
		case replay && c.State != keystore.Completed:
			return fmt.Errorf("not replayed: %v", c.State)
		case replay:
			return nil
		case !c.Acquired:
			return fmt.Errorf("not acquired: %v", c.State)
		}
		return s.Complete(ctx, key, a.Token, benchEncoded, time.Hour)
	}
	handlers := []struct {
		name string
		call func(context.Context, string, bool) error
	}{{"hand", byHand}, {"pgstore", withStore}}
	for _, h := range handlers {
		if err := h.call(ctx, prefix+"hot-"+h.name, false); err != nil {
			b.Fatal(err)
		}
	}
	for _, clients := range []int{1, 64} {
		for _, mode := range []string{"first", "replay"} {
			for _, h := range handlers {
				b.Run(fmt.Sprintf("%s/%s/clients=%d", mode, h.name, clients), func(b *testing.B) {
					ctx := b.Context()
					before := stmts.n.Load()
					defer func() { b.ReportMetric(float64(stmts.n.Load()-before)/float64(b.N), "stmts/op") }()
					call := func() error {
						if mode == "replay" {
							return h.call(ctx, prefix+"hot-"+h.name, true)
						}
						return h.call(ctx, prefix+h.name+strconv.FormatInt(next(), 10), false)
					}
					if clients == 1 {
						for b.Loop() {
							if err := call(); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					parallel(b, clients, call)
				})
			}
		}
	}
}

// statementCount is a pgx.QueryTracer that counts the statements run.
type statementCount struct{ n atomic.Int64 }

func (c *statementCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

package pgstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/middleware"
)

// BenchmarkServe measures one request served in process (no HTTP client or
// server around it) by a handler wrapped with the middleware on pgstore,
// first calls and replays, next to the same two statements made by hand
// with pgx: what the middleware and the store add to a request, in
// allocations and instructions, without the loopback's noise.
func BenchmarkServe(b *testing.B) {
	pool := benchPool(b, 1)
	s := newStore(b, pool, pgstore.Config{Schema: newSchema(b, pool)})
	const feature = `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{}}`
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"stored":["f1"],"bytes":`+strconv.Itoa(len(body))+`}`)
	})
	m, err := middleware.New(s, middleware.Config{})
	if err != nil {
		b.Fatal(err)
	}
	wrapped := m.Handler(ingest)
	claimSQL, completeSQL := pgstore.ClaimSQL(s), pgstore.CompleteSQL(s)
	header := pgstore.EncodeHeader(http.Header{"Content-Type": {"application/json"}})
	lease, retention := time.Minute.Microseconds(), time.Hour.Microseconds()
	hand := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := "hand:" + r.Header.Get("Idempotency-Key")
		var (
			acquired, tookOver bool
			token, remaining   int64
			fpb, hdr, body     []byte
			status             *int32
		)
		fp := keystore.Fingerprint{1}
		if err := pool.QueryRow(ctx, claimSQL, key, fp[:], lease, int64(keystore.NewToken())).Scan(&acquired, &tookOver, &token, &fpb, &status, &hdr, &body, &remaining); err != nil || !acquired {
			http.Error(w, fmt.Sprint("refused: ", err), http.StatusConflict)
			return
		}
		rec := httptest.NewRecorder()
		ingest(rec, r)
		if _, err := pool.Exec(ctx, completeSQL, key, token, int32(rec.Code), header, rec.Body.Bytes(), retention); err != nil {
			b.Errorf("complete: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	prefix := keystoretest.Key(b)[:40]
	post := func(h http.Handler, key string) int {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(feature))
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := post(wrapped, prefix+"hot"); code != http.StatusCreated {
		b.Fatalf("warm-up: status %d", code)
	}
	for _, v := range []struct {
		name string
		h    http.Handler
		key  func(n int) string
	}{
		{"Hand", hand, func(n int) string { return prefix + "k" + strconv.Itoa(n) }},
		{"FirstCall", wrapped, func(n int) string { return prefix + "k" + strconv.Itoa(n) }},
		{"Replay", wrapped, func(int) string { return prefix + "hot" }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				if code := post(v.h, v.key(n)); code != http.StatusCreated {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}

package middleware_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestEncodedRecordMatchesRecord checks that a response recorded straight
// into its encoding (memstore takes encoded records) is stored as the
// record built the usual way (the same store behind a wrapper, which
// hides the capability) would be: header fields, values, trailers, sizes.
func TestEncodedRecordMatchesRecord(t *testing.T) {
	handlers := map[string]http.HandlerFunc{
		"headers and body": func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Link", "</a>")
			h.Add("Link", "</b>")
			h["Etag"] = []string{`"1"`} // not canonical: not recorded
			h.Set("ETag", `"2"`)
			h.Set("Content-Type", "application/json")
			h.Set("Set-Cookie", "a=b") // never recorded
			h["Location"] = []string{}
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":`)
			w.Write([]byte(`1}`))
		},
		"nothing written": func(w http.ResponseWriter, r *http.Request) {},
		"headers only":    func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Location", "/x") },
		"no content":      func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
		"declared trailer": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "ETag")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "body")
			w.Header().Set("ETag", `"t"`)
		},
		"prefixed trailer": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "body")
			w.Header().Set(http.TrailerPrefix+"Last-Modified", "now")
		},
		"too large": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("x", 600))
			io.WriteString(w, strings.Repeat("y", 600))
		},
		"large": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for range 3 {
				io.WriteString(w, strings.Repeat("x", 300))
			}
		},
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			var recs [2]keystore.Record
			for i, store := range []keystore.Store{new(memstore.Store), &spyStore{}} {
				if _, ok := keystore.CompletesEncoded(store); ok != (i == 0) {
					t.Fatalf("store %d: CompletesEncoded = %v", i, ok)
				}
				m := newMiddleware(t, store, middleware.Config{MaxRecordBytes: 1024})
				r := post("k", `{}`)
				if w := serve(m.Handler(h), r); w.Code >= 500 {
					t.Fatalf("store %d: status %d", i, w.Code)
				}
				c, err := store.Claim(context.Background(), middleware.StoreKey("POST /features", "k"), keystore.Fingerprint{}, time.Minute)
				if err != nil || c.State != keystore.Completed {
					t.Fatalf("store %d: %v, %v; want completed", i, c.State, err)
				}
				recs[i] = c.Record
			}
			if !reflect.DeepEqual(recs[0], recs[1]) {
				t.Errorf("recorded encoded:\n%+v\nrecorded as a Record:\n%+v", recs[0], recs[1])
			}
		})
	}
}

package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// upperDecoder is a Validator with the RequestDecoder capability: it
// decodes a body into its upper-case text.
type upperDecoder struct{ validated, decoded int }

func (d *upperDecoder) ValidateRequest(r *http.Request, body []byte) error {
	d.validated++
	return nil
}

func (d *upperDecoder) DecodeRequest(r *http.Request, body []byte) (any, error) {
	d.decoded++
	if strings.Contains(string(body), "bad") {
		return nil, errors.New("the body says bad")
	}
	return strings.ToUpper(string(body)), nil
}

// A Validator that can decode is asked to decode, once, and its value
// reaches the handler, next to the hold; the body can still be read.
func TestDecodedValueReachesHandler(t *testing.T) {
	d := &upperDecoder{}
	var got string
	var ok, holdOK bool
	var read []byte
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = middleware.Decoded[string](r.Context())
		_, holdOK = middleware.HoldFromContext(r.Context())
		read, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
	})
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Validator: d})
	if w := serve(m.Handler(h), post("k1", "abc")); w.Code != http.StatusCreated {
		t.Fatalf("status %d %s", w.Code, w.Body)
	}
	if !ok || got != "ABC" || !holdOK || string(read) != "abc" {
		t.Errorf("handler saw decoded %q (ok %v), hold %v, body %q; want \"ABC\", a hold and the body again", got, ok, holdOK, read)
	}
	if d.decoded != 1 || d.validated != 0 {
		t.Errorf("DecodeRequest ran %d times and ValidateRequest %d; want 1 and 0", d.decoded, d.validated)
	}
	if _, ok := middleware.Decoded[int](t.Context()); ok {
		t.Error("Decoded found a value in a context without one")
	}
	wantProblem(t, serve(m.Handler(h), post("k2", "bad")), http.StatusUnprocessableEntity, middleware.ProblemInvalid)
}

// geojson's RequestValidator hands the handler its *geojson.Document.
func TestGeoJSONDocumentReachesHandler(t *testing.T) {
	var doc *geojson.Document
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, _ = middleware.Decoded[*geojson.Document](r.Context())
		w.WriteHeader(http.StatusCreated)
	})
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Validator: geojson.RequestValidator{}})
	serve(m.Handler(h), post("k1", feature))
	if doc == nil || len(doc.Features) != 1 || doc.Features[0].ID != "f1" || string(doc.Features[0].Raw) != feature {
		t.Fatalf("handler got document %+v", doc)
	}
}

// A request refused for its headers (415) is answered before the claim and
// not recorded: the corrected retry, with the same key and body, runs.
func TestHeaderCheckBeforeClaim(t *testing.T) {
	store := &spyStore{}
	h := newCounter()
	m := newMiddleware(t, store, middleware.Config{Validator: geojson.RequestValidator{}})
	r := post("k1", feature)
	r.Header.Set("Content-Type", "text/plain")
	w := serve(m.Handler(h), r)
	if w.Code != http.StatusUnsupportedMediaType || w.Header().Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(w.Body.String(), geojson.ProblemTypeUnsupportedMediaType) {
		t.Fatalf("text/plain: %d %s, want the 415 problem", w.Code, w.Body)
	}
	if store.completes.Load() != 0 || store.releases.Load() != 0 {
		t.Errorf("the 415 touched the store: %d completes, %d releases; want nothing claimed", store.completes.Load(), store.releases.Load())
	}
	w = serve(m.Handler(h), post("k1", feature))
	if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" || h.total.Load() != 1 {
		t.Fatalf("corrected retry: %d replayed=%q runs=%d; want the handler run once, 201", w.Code, w.Header().Get("Idempotent-Replayed"), h.total.Load())
	}
}

// A HeaderChecker's error without its own problem is answered 400
// invalid-headers, before the claim.
func TestHeaderCheckerPlainError(t *testing.T) {
	v := struct {
		middleware.ValidatorFunc
		headerFunc
	}{
		middleware.ValidatorFunc(func(*http.Request, []byte) error { return nil }),
		headerFunc(func(r *http.Request) error {
			if r.Header.Get("X-Tenant") == "" {
				return errors.New("X-Tenant is required")
			}
			return nil
		}),
	}
	h := newCounter()
	m := newMiddleware(t, &spyStore{}, middleware.Config{Validator: v})
	p := wantProblem(t, serve(m.Handler(h), post("k1", feature)), http.StatusBadRequest, middleware.ProblemInvalidHeaders)
	if p.Detail != "X-Tenant is required" {
		t.Errorf("detail %q", p.Detail)
	}
	r := post("k1", feature)
	r.Header.Set("X-Tenant", "a")
	if w := serve(m.Handler(h), r); w.Code != http.StatusCreated {
		t.Fatalf("corrected retry: %d", w.Code)
	}
}

type headerFunc func(r *http.Request) error

func (f headerFunc) CheckHeaders(r *http.Request) error { return f(r) }

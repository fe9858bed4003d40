package service

import (
	"context"

	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/middleware"
)

func postTo(h http.Handler, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// When the in-memory feature store is full, a new write is answered 507
// (no room frees by itself, so no Retry-After) and its key released: the
// sender retries later, and nothing stored is evicted to make room.
func TestFullFeatureStoreAnswers507(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc, err := New(context.Background(), Config{MaxFeatures: 2, MaxFeatureBytes: 1 << 20, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	f := func(id string) string {
		return `{"type":"Feature","id":"` + id + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
	}
	for i, id := range []string{"a", "b"} {
		if w := postTo(h, "k"+strconv.Itoa(i), f(id)); w.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", id, w.Code, w.Body)
		}
	}
	for range 2 { // the retry runs again: the key was released, not recorded
		w := postTo(h, "k-full", f("c"))
		if w.Code != http.StatusInsufficientStorage || w.Header().Get("Retry-After") != "" ||
			!strings.Contains(w.Body.String(), "docs/problems.md#feature-store-full") || w.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("POST into a full store: %d %s Retry-After=%q; want 507 feature-store-full without Retry-After, not a replay",
				w.Code, w.Body, w.Header().Get("Retry-After"))
		}
	}
	if n := outcomes(t, reg)[middleware.Released.String()]; n != 2 {
		t.Errorf("%d released outcomes, want 2", n)
	}
	for _, id := range []string{"a", "b"} {
		r := httptest.NewRequest(http.MethodGet, "/features/"+id, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.String() != f(id) {
			t.Errorf("GET %s after the refusal: %d %s", id, w.Code, w.Body)
		}
	}
}

// With a Validator that does not decode, the handler decodes the body
// itself with geojson's strict parser: still case-sensitive.
func TestHandlerDecodesWithoutDecodingValidator(t *testing.T) {
	svc, err := New(context.Background(), Config{Validator: middleware.ValidatorFunc(func(*http.Request, []byte) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	body := `{"type":"Feature","id":"real","ID":"spoof","geometry":null,"properties":null}`
	if w := postTo(h, "k1", body); w.Code != http.StatusCreated || w.Body.String() != `{"stored":["real"]}` {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	if w := postTo(h, "k2", `{"type":`); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "malformed-json") {
		t.Fatalf("malformed body: %d %s, want geojson's 400", w.Code, w.Body)
	}
}

// The router's own errors are problem documents too: 404 for an unknown
// path, 405 (with Allow) for a known path with another method.
func TestRouterErrorsAreProblems(t *testing.T) {
	svc, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, c := range []struct {
		method, path string
		status       int
		typ, allow   string
	}{
		{http.MethodGet, "/nope", http.StatusNotFound, "not-found", ""},
		{http.MethodDelete, "/features", http.StatusMethodNotAllowed, "method-not-allowed", "POST"},
	} {
		w := httptest.NewRecorder()
		svc.Handler().ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.status || w.Header().Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(w.Body.String(), `"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#`+c.typ+`"`) ||
			w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %q %s Allow=%q; want %d %s", c.method, c.path, w.Code, w.Header().Get("Content-Type"), w.Body, w.Header().Get("Allow"), c.status, c.typ)
		}
	}
	w := httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusOK {
		t.Errorf("GET /healthz through the router: %d", w.Code)
	}
}

// The 201 names the ids as they are, not HTML-escaped: an id of 1,000
// '<' is 1,000 bytes in the answer, not 6,000.
func TestStoredIDsNotEscaped(t *testing.T) {
	svc, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	id := strings.Repeat("<", 1000) + "&>"
	w := postTo(svc.Handler(), "k", `{"type":"Feature","id":"`+id+`","geometry":null,"properties":null}`)
	if w.Code != http.StatusCreated || w.Body.String() != `{"stored":["`+id+`"]}` {
		t.Errorf("201 of %d bytes: %.80s…, want {\"stored\":[\"%.20s…\"]} unescaped", w.Body.Len(), w.Body.String(), id)
	}
}

// A full in-memory feature store never frees room by itself (it evicts
// nothing): it says so, 507 feature-store-full without a Retry-After
// that would promise room after a second.
func TestFullFeatureStoreSaysItStaysFull(t *testing.T) {
	svc, err := New(context.Background(), Config{MaxFeatures: 1, MaxFeatureBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	if w := postTo(h, "k1", `{"type":"Feature","id":"a","geometry":null,"properties":null}`); w.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	w := postTo(h, "k2", `{"type":"Feature","id":"b","geometry":null,"properties":null}`)
	if w.Code != http.StatusInsufficientStorage || w.Header().Get("Retry-After") != "" || !strings.Contains(w.Body.String(), "#feature-store-full") {
		t.Errorf("full store: %d Retry-After=%q %s; want 507 feature-store-full, no Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
}

// outcomes reads geoidem_requests_total back from reg, by outcome.
func outcomes(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "geoidem_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// GET /metrics counts the features of the committed writes by what the
// newest rule did with them.
func TestMetricsCountFeaturesWritten(t *testing.T) {
	svc, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	obs := func(id string, s int) string {
		return `{"type":"Feature","id":"` + id + `","geometry":null,"properties":{"observation_time":"2026-03-01T10:00:0` + strconv.Itoa(s) + `Z"}}`
	}
	for i, body := range []string{obs("a", 5), obs("a", 3), `{"type":"Feature","id":"a","geometry":null,"properties":null}`, obs("b", 1)} {
		if w := postTo(h, "m"+strconv.Itoa(i), body); w.Code/100 != 2 {
			t.Fatalf("POST %s: %d %s", body, w.Code, w.Body)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`geoidem_features_total{result="stored"} 2`, `geoidem_features_total{result="stale"} 1`, `geoidem_features_total{result="unstamped"} 1`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, w.Body)
		}
	}
}

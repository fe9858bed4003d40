package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

func Example() {
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// … store the feature …
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"stored":["f1"]}`)
	})
	idem, err := middleware.New(new(memstore.Store), middleware.Config{})
	if err != nil {
		panic(err)
	}
	h := idem.Handler(ingest)

	for range 2 { // a delivery and its retry
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`))
		r.Header.Set("Idempotency-Key", `"delivery-42"`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Body.String(), "replayed:", w.Header().Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// 201 {"stored":["f1"]} replayed: false
	// 201 {"stored":["f1"]} replayed: true
}

func ExampleConfig_scope() {
	// Scope keys by the authenticated caller as well as method and path, so
	// that one tenant can never be answered with another's response. The
	// path is the normalised one, as in the default scope: spellings that
	// http.ServeMux routes to the same handler (/features, /%66eatures)
	// share a scope, so one delivery runs once.
	cfg := middleware.Config{
		Scope: func(r *http.Request) string {
			tenant, _, _ := r.BasicAuth() // or the identity your auth middleware put in the context
			return tenant + " " + middleware.DefaultScope(r)
		},
	}
	_, err := middleware.New(new(memstore.Store), cfg)
	fmt.Println(err)
	// Output: <nil>
}

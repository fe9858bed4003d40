package middleware_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// tenantOf is the caller your authentication established; here, the user
// name of HTTP Basic authentication.
func tenantOf(r *http.Request) string {
	tenant, _, _ := r.BasicAuth()
	return tenant
}

// Wrapping a handler, with keys scoped by tenant: two tenants that happen to
// send the same key each have their request run, and each retry is replayed
// its own tenant's answer. docs/receiving.md's "Scoping keys, and what is
// recorded" quotes this example from `store :=` to `mux.Handle`; keep the
// two in step.
func Example_tenantScope() {
	mux := http.NewServeMux()
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"stored_for":"`+tenantOf(r)+`"}`)
	})

	store := new(memstore.Store) // in-process; see below for Redis and PostgreSQL
	idem, err := middleware.New(store, middleware.Config{
		// Scope keys by the authenticated caller (tenantOf is yours), so one tenant can never replay another's response.
		// DefaultScope: one scope per route (method, host pattern, every spelling of the path).
		Scope: func(r *http.Request) string { return tenantOf(r) + " " + middleware.DefaultScope(r) },
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("POST /features", idem.Handler(ingest))

	for _, tenant := range []string{"acme", "globex", "acme"} {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`))
		r.SetBasicAuth(tenant, "secret")
		r.Header.Set("Idempotency-Key", `"delivery-1"`)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(tenant, w.Code, w.Body.String(), "replayed:", w.Header().Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// acme 201 {"stored_for":"acme"} replayed: false
	// globex 201 {"stored_for":"globex"} replayed: false
	// acme 201 {"stored_for":"acme"} replayed: true
}

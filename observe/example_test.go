package observe_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe"
)

// Feed two observers (here the application's own; promobserve's and
// otelobserve's in a service) from one middleware and one store.
func ExampleAll() {
	outcomes := func(ev middleware.Event) { fmt.Println("request:", ev.Outcome, ev.Status) }
	claims := func(c middleware.StoreCall) {
		if c.Op == middleware.OpClaim {
			fmt.Println("store:", c.Op, c.Err)
		}
	}
	count := 0
	counter := func(middleware.Event) { count++ }

	idem, err := middleware.New(new(memstore.Store), middleware.Config{
		Observer:      observe.All(outcomes, counter),
		StoreObserver: observe.All(claims),
	})
	if err != nil {
		panic(err)
	}
	h := idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range 2 { // a delivery and its retry
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`))
		r.Header.Set("Idempotency-Key", `"delivery-42"`)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	fmt.Println("events:", count)
	// Output:
	// store: claim <nil>
	// request: executed 201
	// store: claim <nil>
	// request: replayed 201
	// events: 2
}

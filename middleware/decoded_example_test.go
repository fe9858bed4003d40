package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The handler works from the document the validator decoded: the body is
// parsed once, by the same strict parser that validated it.
func ExampleDecoded() {
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, _ := middleware.Decoded[*geojson.Document](r.Context())
		for _, f := range doc.Features {
			fmt.Printf("id %v, %T with layout %v, properties %s\n", f.ID, f.Geometry, f.Geometry.Layout(), f.Properties)
		}
		w.WriteHeader(http.StatusCreated)
	})
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Validator: geojson.RequestValidator{}})
	if err != nil {
		panic(err)
	}
	body := `{"type":"Feature","id":"real","ID":"spoof","geometry":{"type":"Point","coordinates":[13.4,52.5,34]},"properties":{"s":"a\u0000b"}}`
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	r.Header.Set("Idempotency-Key", `"delivery-7"`)
	idem.Handler(ingest).ServeHTTP(httptest.NewRecorder(), r)
	// Output:
	// id real, *geom.Point with layout XYZ, properties {"s":"a\u0000b"}
}

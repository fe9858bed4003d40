package geojson_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The wiring of a receiving service (examples/ingest's, without its
// metrics): RFC 7946 validation runs in the idempotency middleware, after
// the key is claimed and before the handler, which receives the decoded
// document. A valid feature runs the handler once and its retry is
// replayed; an invalid one is answered 422 with the validator's problem
// document and never reaches the handler. The 422 is not recorded (the
// same body always gets the same answer): its retry is validated again.
func ExampleRequestValidator() {
	runs := 0
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		doc, _ := middleware.Decoded[*geojson.Document](r.Context())
		var ids []string
		for _, f := range doc.Features {
			ids = append(ids, fmt.Sprint(f.ID))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string][]string{"stored": ids})
	})
	idem, err := middleware.New(new(memstore.Store), middleware.Config{
		Validator: geojson.RequestValidator{}, // Options{} by default: RFC 7946 with the default limits
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /features", idem.Handler(ingest))

	deliver := func(key, body string) {
		r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/geo+json")
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Content-Type"), "replayed:", w.Header().Get("Idempotent-Replayed") == "true")
		fmt.Println(strings.TrimSpace(w.Body.String()))
	}
	valid := `{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`
	deliver(`"evt-1"`, valid)
	deliver(`"evt-1"`, valid) // the sender's retry
	bowtie := `{"type":"Feature","id":"b1","geometry":{"type":"Polygon","coordinates":[[[0,0],[2,2],[2,0],[0,2],[0,0]]]},"properties":null}`
	deliver(`"evt-2"`, bowtie)
	deliver(`"evt-2"`, bowtie) // its retry
	fmt.Println("handler runs:", runs)
	// Output:
	// 201 application/json replayed: false
	// {"stored":["p1"]}
	// 201 application/json replayed: true
	// {"stored":["p1"]}
	// 422 application/problem+json replayed: false
	// {"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#invalid-geojson","title":"Invalid GeoJSON","status":422,"detail":"the body is not valid GeoJSON: 1 problem(s)","errors":[{"pointer":"/geometry/coordinates/0/2","rule":"ring-self-intersection","detail":"the ring crosses itself"}]}
	// 422 application/problem+json replayed: false
	// {"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#invalid-geojson","title":"Invalid GeoJSON","status":422,"detail":"the body is not valid GeoJSON: 1 problem(s)","errors":[{"pointer":"/geometry/coordinates/0/2","rule":"ring-self-intersection","detail":"the ring crosses itself"}]}
	// handler runs: 1
}

package geofeature_test

import (
	"fmt"
	"time"

	"github.com/geoidem/geoidem/examples/internal/geofeature"
)

func ExampleStampObservationTime() {
	raw := []byte(`{"type": "Feature", "geometry": {"type": "Point", "coordinates": [13.4, 52.5]}, "properties": {"speed": 3}}`)
	ingested := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	body, _ := geofeature.StampObservationTime(raw, ingested)
	fmt.Println(string(body))
	// A retry an hour later sends the same bytes.
	again, _ := geofeature.StampObservationTime(body, ingested.Add(time.Hour))
	fmt.Println(string(again) == string(body))
	// Output:
	// {"type":"Feature","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"speed":3,"observation_time":"2026-03-01T12:00:00Z"}}
	// true
}

func ExampleKey() {
	a, _ := geofeature.Key([]byte(`{"type":"Feature","geometry":null,"properties":null}`))
	b, _ := geofeature.Key([]byte("{\n  \"type\": \"Feature\",\n  \"geometry\": null,\n  \"properties\": null\n}"))
	fmt.Println(a == b, len(a))
	// Output: true 64
}

package geofeature_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/geofeature"
)

// epoch is the ingestion time the tests stamp.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestStampObservationTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	const stamp = `"observation_time":"2026-03-01T11:00:00.123456789Z"`
	for _, tc := range []struct{ name, in, want string }{
		{"no properties",
			`{"type":"Feature","geometry":{"type":"Point","coordinates":[1.0000000000000001,2e0]}}`,
			`{"type":"Feature","geometry":{"type":"Point","coordinates":[1.0000000000000001,2e0]},"properties":{` + stamp + `}}`},
		{"null properties",
			`{ "properties" : null , "type" : "Feature", "geometry": null }`,
			`{"properties":{` + stamp + `},"type":"Feature","geometry":null}`},
		{"properties without it",
			"{\"type\":\"Feature\",\"id\":7,\"geometry\":null,\"properties\":{\"z\":1,\"a\":\"<&>\"}}\n",
			`{"type":"Feature","id":7,"geometry":null,"properties":{"z":1,"a":"<&>",` + stamp + `}}`},
		{"already stamped: kept",
			`{"type":"Feature","geometry":null,"properties":{"observation_time":"2020-01-01T00:00:00Z"}}`,
			`{"type":"Feature","geometry":null,"properties":{"observation_time":"2020-01-01T00:00:00Z"}}`},
		{"already stamped, any value: kept",
			`{"type":"Feature","geometry":null,"properties":{"observation_time":null}}`,
			`{"type":"Feature","geometry":null,"properties":{"observation_time":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geofeature.StampObservationTime([]byte(tc.in), now)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			again, err := geofeature.StampObservationTime(got, now.Add(time.Hour))
			if err != nil || string(again) != string(got) {
				t.Errorf("a second stamp changed the feature: %s, %v", again, err)
			}
		})
	}
	for _, bad := range []string{
		``, `[]`, `"Feature"`, `{"type":"FeatureCollection","features":[]}`,
		`{"geometry":null}`, `{"type":1}`,
		`{"type":"Feature","properties":[]}`,
		`{"type":"Feature","properties":"x"}`,
		`{"type":"Feature","type":"Feature"}`,
		`{"type":"Feature"} {}`,
		`{"type":"Feature"`,
	} {
		if _, err := geofeature.StampObservationTime([]byte(bad), now); !errors.Is(err, geofeature.ErrNotFeature) {
			t.Errorf("StampObservationTime(%q) err = %v, want ErrNotFeature", bad, err)
		}
		if _, err := geofeature.Key([]byte(bad)); !errors.Is(err, geofeature.ErrNotFeature) {
			t.Errorf("FeatureKey(%q) err = %v, want ErrNotFeature", bad, err)
		}
	}
}

func TestFeatureKey(t *testing.T) {
	compact := `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1}}`
	pretty := "{\n  \"type\": \"Feature\",\n  \"id\": \"f1\",\n  \"geometry\": {\"type\": \"Point\", \"coordinates\": [1, 2]},\n  \"properties\": {\"a\": 1}\n}"
	moved := `{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[1,3]},"properties":{"a":1}}`
	k1, err := geofeature.Key([]byte(compact))
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := geofeature.Key([]byte(pretty))
	k3, _ := geofeature.Key([]byte(moved))
	if k1 != k2 {
		t.Errorf("whitespace changed the key: %s vs %s", k1, k2)
	}
	if k1 == k3 {
		t.Error("two observations of feature f1 share a key")
	}
	if len(k1) != 64 || strings.Trim(k1, "0123456789abcdef") != "" {
		t.Errorf("key %q is not 64 hex digits", k1)
	}
	if enc, err := client.EncodeKey(k1); err != nil || enc != k1 {
		t.Errorf("the key is not sent bare: %q, %v", enc, err)
	}

	d, err := geofeature.NewDelivery("http://r.test/features", []byte(pretty), epoch)
	if err != nil {
		t.Fatal(err)
	}
	if d.Key != k1 || d.ContentType != "application/geo+json" || d.URL != "http://r.test/features" {
		t.Errorf("delivery = %+v", d)
	}
	var f struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(d.Body, &f); err != nil || f.Properties["observation_time"] != "2026-03-01T12:00:00Z" || f.Properties["a"] != 1.0 {
		t.Errorf("body %s, %v", d.Body, err)
	}
	if _, err := geofeature.NewDelivery("u", []byte(`{}`), epoch); !errors.Is(err, geofeature.ErrNotFeature) {
		t.Errorf("NewDelivery of {}: %v", err)
	}
}

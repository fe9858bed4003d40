package geofeature_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/geoidem/geoidem/examples/internal/geofeature"
)

func FuzzStampObservationTime(f *testing.F) {
	for _, s := range []string{
		`{"type":"Feature","geometry":null,"properties":null}`,
		`{"type":"Feature","geometry":null}`,
		`{"type":"Feature","geometry":null,"properties":{"a":[1,{"b":"<"}]}}`,
		`{"type":"Feature","properties":{"observation_time":1}}`,
		`{"type":"FeatureCollection"}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := geofeature.StampObservationTime(in, now)
		if err != nil {
			return
		}
		var v struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.Type != "Feature" || v.Properties[geofeature.ObservationTimeProperty] == nil {
			t.Fatalf("StampObservationTime(%s) = %s: %v", in, out, err)
		}
		again, err := geofeature.StampObservationTime(out, now.Add(time.Hour))
		if err != nil || string(again) != string(out) {
			t.Fatalf("restamping %s gave %s, %v", out, again, err)
		}
		if _, err := geofeature.Key(in); err != nil {
			t.Fatalf("Key rejects what StampObservationTime accepts: %v", err)
		}
	})
}

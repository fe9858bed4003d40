package client_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// unquote parses an RFC 9651 sf-string, as the receiver does.
func unquote(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c == '\\' {
			i++
			if i >= len(v)-1 || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			c = v[i]
		} else if c == '"' {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

func FuzzEncodeKey(f *testing.F) {
	for _, s := range []string{"k", "a b", `"q"`, `\`, "é", "", " x ", "urn:a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		v, err := client.EncodeKey(key)
		if err != nil {
			if !errors.Is(err, client.ErrNoKey) && !errors.Is(err, client.ErrInvalidKey) {
				t.Fatalf("EncodeKey(%q): unexpected error %v", key, err)
			}
			return
		}
		if strings.TrimSpace(v) != v {
			t.Fatalf("EncodeKey(%q) = %q: a header value would lose its spaces", key, v)
		}
		if v[0] != '"' {
			if v != key {
				t.Fatalf("bare EncodeKey(%q) = %q", key, v)
			}
			return
		}
		back, ok := unquote(v)
		if !ok || back != key {
			t.Fatalf("EncodeKey(%q) = %q, which parses back to %q, %v", key, v, back, ok)
		}
	})
}

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
		out, err := client.StampObservationTime(in, now)
		if err != nil {
			return
		}
		var v struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.Type != "Feature" || v.Properties[client.ObservationTimeProperty] == nil {
			t.Fatalf("StampObservationTime(%s) = %s: %v", in, out, err)
		}
		again, err := client.StampObservationTime(out, now.Add(time.Hour))
		if err != nil || string(again) != string(out) {
			t.Fatalf("restamping %s gave %s, %v", out, again, err)
		}
		if _, err := client.FeatureKey(in); err != nil {
			t.Fatalf("FeatureKey rejects what StampObservationTime accepts: %v", err)
		}
	})
}

package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

// `keys get -json` and `keys stats -json` print exactly what they printed
// when the entry's and the summary's JSON were types of their own.
func TestKeysJSONOutput(t *testing.T) {
	e := adminhttp.Entry{State: keystore.Completed, Fingerprint: keystore.Fingerprint{0: 0xab}, Token: 42,
		Record: record.Append(nil, record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"<f1>"}`)}), RetentionRemaining: time.Hour}
	var out bytes.Buffer
	for _, v := range []any{
		keyEntry{"k1", "POST /features", "POST /features k1", e},
		keyEntry{"", "", "raw<>", adminhttp.Entry{}},
		adminhttp.Summary{InFlight: 1, Oldest: "a&b", OldestState: keystore.InFlight, OldestRemaining: time.Second},
	} {
		if code := printJSON(&out, &out, v); code != 0 {
			t.Fatalf("printJSON(%+v): %d\n%s", v, code, out.String())
		}
	}
	const want = "{\n  \"key\": \"k1\",\n  \"scope\": \"POST /features\",\n  \"stored_key\": \"POST /features k1\",\n  \"state\": \"completed\",\n  \"fingerprint\": \"ab00000000000000000000000000000000000000000000000000000000000000\",\n  \"token\": 42,\n  \"status\": 201,\n  \"header\": {\n    \"Content-Type\": [\n      \"application/json\"\n    ]\n  },\n  \"body\": \"eyJpZCI6IjxmMT4ifQ==\",\n  \"retention_remaining_ns\": 3600000000000\n}\n{\n  \"stored_key\": \"raw\\u003c\\u003e\",\n  \"state\": \"absent\"\n}\n{\n  \"in_flight\": 1,\n  \"lease_run_out\": 0,\n  \"completed\": 0,\n  \"bytes\": 0,\n  \"oldest\": \"a\\u0026b\",\n  \"oldest_state\": \"in flight\",\n  \"oldest_remaining_ns\": 1000000000\n}\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

package main

import (
	"strings"
	"testing"
)

// failuresInput holds a feature the receiver takes, one it refuses (422
// invalid-geojson, with two pointers) and one it cannot take for now
// (503).
const failuresInput = `{"type":"Feature","id":"ok","geometry":null,"properties":null}
{"type":"Feature","id":"bad","geometry":null,"properties":{"mode":"bad"}}
{"type":"Feature","id":"down","geometry":null,"properties":{"mode":"down"}}
`

// TestRunFailureShowsPointers: a 422's problem detail
// and JSON pointers were only in the dead-letter file; the failure line
// now shows them.
func TestRunFailureShowsPointers(t *testing.T) {
	rv := newReceiver()
	srv := newServer(t, rv)
	r := runApp(t, app{hc: srv.Client()}, "-url", srv.URL, "-attempts", "1", writeFile(t, "in.ndjson", failuresInput))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"in.ndjson:2: ",
		"Invalid geometry: the body is not valid GeoJSON: 2 problem(s)\n",
		"\nsender:   /geometry/coordinates: a position needs at least two numbers (position)\n",
		"\nsender:   /geometry/type: unknown geometry type \"Pointe\" (geometry-type)\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

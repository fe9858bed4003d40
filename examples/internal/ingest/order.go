package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/newest"
)

// DefaultOrderProperty is the Feature property that orders the updates of
// one feature id by default: the observation_time the paired sender
// stamps (client.ObservationTimeProperty).
const DefaultOrderProperty = client.ObservationTimeProperty

// problemObservationTime is the 422 for an order property that is not an
// RFC 3339 date-time.
const problemObservationTime = middleware.ProblemTypeBase + "observation-time-invalid" // 422

// observationTimeError is an order property present but not an RFC 3339
// date-time string: Pointer is its JSON pointer in the body.
type observationTimeError struct {
	Pointer, Detail string
}

func (e *observationTimeError) Error() string { return e.Pointer + ": " + e.Detail }

// observedAt returns when feature i of the body was observed: its property
// prop parsed by newest.Parse, or the zero time when the feature has no such
// property (properties null, or the member absent). Any other value, null
// included, is an *observationTimeError: never a silent default.
func observedAt(f geojson.RawFeature, prop string, inCollection bool, i int) (time.Time, error) {
	props := bytes.TrimSpace(f.Properties)
	if len(props) == 0 || props[0] != '{' ||
		!bytes.Contains(props, []byte(prop)) && !bytes.Contains(props, []byte{'\\'}) {
		return time.Time{}, nil // a name spelled with escapes is found by the decoding below
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(props, &members); err != nil {
		return time.Time{}, err // validated GeoJSON: not reached
	}
	v, ok := members[prop]
	if !ok {
		return time.Time{}, nil
	}
	pointer := "/properties/" + pointerToken(prop)
	if inCollection {
		pointer = "/features/" + strconv.Itoa(i) + pointer
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return time.Time{}, &observationTimeError{pointer, shorten(v) + " is not a string holding an RFC 3339 date-time"}
	}
	t, err := newest.Parse(s)
	if err != nil {
		return time.Time{}, &observationTimeError{pointer, shorten(v) + " is not an RFC 3339 date-time (like 2026-03-01T10:00:05Z)"}
	}
	return t, nil
}

// shorten cuts a JSON value for a problem's detail.
func shorten(v []byte) string {
	if len(v) > 80 {
		return string(v[:80]) + "…"
	}
	return string(v)
}

// pointerToken escapes a member name for a JSON pointer (RFC 6901).
func pointerToken(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// writeObservationTimeProblem answers 422 observation-time-invalid, naming
// the property by its pointer in an errors member shaped like
// invalid-geojson's.
func writeObservationTimeProblem(w http.ResponseWriter, e *observationTimeError, prop string) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnprocessableEntity)
	type entry struct {
		Pointer string `json:"pointer"`
		Detail  string `json:"detail"`
	}
	b, _ := json.Marshal(struct {
		Type   string  `json:"type"`
		Title  string  `json:"title"`
		Status int     `json:"status"`
		Detail string  `json:"detail"`
		Errors []entry `json:"errors"`
	}{problemObservationTime, "Observation time invalid", http.StatusUnprocessableEntity,
		"The property " + strconv.Quote(prop) + " orders the updates of a feature: when present it must be an RFC 3339 date-time string.",
		[]entry{{e.Pointer, e.Detail}}})
	_, _ = w.Write(b)
}

// isObservationTimeError unwraps err to an *observationTimeError.
func isObservationTimeError(err error) (*observationTimeError, bool) {
	var e *observationTimeError
	return e, errors.As(err, &e)
}

// answerFor returns the answer to a write of fs of which stale[i] were left
// out as older than what is stored: 201 {"stored":[ids…]} when anything was
// stored, with "stale":[ids…] added when some were not, and 200
// {"stored":[],"stale":[ids…]} when nothing was (the update is acknowledged,
// so the sender stops, and changes nothing).
func answerFor(fs []feature, stale []bool) keystore.Record {
	stored, old := make([]string, 0, len(fs)), []string(nil)
	for i, f := range fs {
		if stale[i] {
			old = append(old, f.ID)
		} else {
			stored = append(stored, f.ID)
		}
	}
	status := http.StatusCreated
	if len(stored) == 0 && len(old) > 0 {
		status = http.StatusOK
	}
	b := marshal(struct { // ids as they are: not HTML-escaped (an id of '<' would be six times its size)
		Stored []string `json:"stored"`
		Stale  []string `json:"stale,omitempty"`
	}{stored, old})
	return keystore.Record{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

package service

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/geoidem/geoidem/examples/internal/geofeature"
	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
	"github.com/geoidem/geoidem/problem"
)

// DefaultOrderProperty is the Feature property that orders the updates of
// one feature id by default: the observation_time the paired sender
// stamps (geofeature.ObservationTimeProperty in examples/internal).
const DefaultOrderProperty = geofeature.ObservationTimeProperty

// DefaultFeaturesTable is the PostGIS feature table (Config.FeaturesTable).
const DefaultFeaturesTable = "features"

// Feature is one GeoJSON Feature as the service stores it.
type Feature struct {
	// ID is the feature's id as text: the string as written, or the
	// number's text as written ("12.50" stays "12.50").
	ID string
	// Raw is the Feature's bytes exactly as received. It points into the
	// request body, which the server reuses once the handler returns: a
	// store copies what it keeps.
	Raw []byte
	// Geometry is the geometry as the validator decoded it (nil for a null
	// geometry).
	Geometry geom.T
	// Observed is when the feature was observed: its order property, zero
	// when it has none.
	Observed time.Time
}

// Observation is f as package newest compares it.
func (f Feature) Observation() newest.Observation {
	return newest.Observation{Time: f.Observed, Bytes: f.Raw}
}

// A FeatureStore keeps features by id: the newest observation of each, by
// the rule of package newest.
//
// Upsert writes each feature of fs that supersedes what is stored under its
// id (or what a feature before it in fs left there), and leaves out the
// others; verdicts[i] says what newest.Decide ruled for fs[i]. It returns
// answer(verdicts), the response to send. A store in the key store's own
// database records that response as the key's inside the transaction of
// its write (pgstore.Store.InTx with hold, the request's hold on its key,
// which it marks completed); the others ignore hold and return the
// response for the middleware to record. The
// write is all or nothing: on error nothing of fs is stored.
//
// Its error decides the answer, so a store must not guess: an error
// wrapping a [*RefusedError] is the features' own fault, which no retry
// fixes (422, recorded); a [*ConflictError] is the state of other data,
// which another write can lift (409 with Retry-After, released);
// [ErrStoreFull] means no room (507, released);
// any other error is transient (503 with Retry-After, released), unknown
// errors included.
//
// Get returns the bytes stored under id.
type FeatureStore interface {
	Upsert(ctx context.Context, hold *keystore.Hold, fs []Feature, answer func(verdicts []newest.Verdict) Answer) (Answer, error)
	Get(ctx context.Context, id string) (feature []byte, ok bool, err error)
}

// Answer is the response an Upsert records for its delivery: its status,
// headers and body. It has pgstore.Record's fields, so that the PostGIS
// store hands it to pgstore.InTx as it is.
type Answer struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// ErrStoreFull reports a feature store with no room now for a write; it
// evicts nothing to make some.
var ErrStoreFull = errors.New("the feature store is full")

// A RefusedError is a feature store's refusal of a request for the
// features' own fault: a value of theirs that the store can never take.
// The service answers it 422 feature-rejected and the answer is recorded.
type RefusedError struct {
	// Index is the feature refused, in the request's order; -1 is the
	// request as a whole.
	Index int
	// Pointer is where in the feature (a JSON pointer relative to it,
	// "/geometry" say), "" for the whole feature.
	Pointer string
	// Detail says why, for the answer; Err is the store's error, logged.
	Detail string
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Index < 0 {
		return "features refused: " + e.Detail
	}
	return "feature " + strconv.Itoa(e.Index) + " refused: " + e.Detail
}

func (e *RefusedError) Unwrap() error { return e.Err }

// featuresOf returns the features of a decoded Feature or
// FeatureCollection, without copying their bytes, each observation time
// read from the property prop (newest.FromProperties, no decoding of the
// rest) and checked by policy. A document the service cannot store is a
// 422 problem naming every offending member by its JSON pointer: a bare
// geometry (not-features), features without an id (feature-id-missing),
// observation times that are not RFC 3339 date-times
// (observation-time-invalid). Observation times too far ahead, and nothing
// else wrong, are a 503 observation-time-ahead with RetryAfter when the
// receiver's clock will have caught up with the latest of them: a refusal
// of the clock's, not the input's, which the same bytes pass then.
func featuresOf(doc *geojson.Document, prop string, policy newest.Policy) ([]Feature, *problem.Details) {
	if doc.Type != "Feature" && doc.Type != "FeatureCollection" {
		return nil, &problem.Details{Type: problemNotFeatures, Title: "Not a Feature or FeatureCollection", Status: http.StatusUnprocessableEntity,
			Detail: "The body is valid GeoJSON, but a bare geometry: post a Feature or a FeatureCollection.",
			Errors: []problem.Error{{Pointer: "/type", Detail: strconv.Quote(doc.Type) + " is a geometry type"}}}
	}
	at := func(i int) string { // the feature's pointer
		if doc.Type == "FeatureCollection" {
			return "/features/" + strconv.Itoa(i)
		}
		return ""
	}
	out := make([]Feature, len(doc.Features))
	var noID, badTime, ahead []problem.Error
	var wait time.Duration // until the latest time ahead is within the skew
	for i, f := range doc.Features {
		var id string
		switch v := f.ID.(type) {
		case string:
			id = v
		case json.Number:
			id = string(v)
		}
		if id == "" {
			noID = append(noID, problem.Error{Pointer: at(i) + "/id", Detail: `the feature has no "id" (a non-empty string or a number)`})
			continue
		}
		t, ok, err := newest.FromProperties(f.Properties, prop)
		if err == nil && ok {
			err = policy.Check(t)
		}
		var te *newest.TimeError
		switch {
		case err != nil && errors.Is(err, newest.ErrAhead) && errors.As(err, &te):
			ahead = append(ahead, problem.Error{Pointer: at(i) + "/properties/" + pointerToken(prop), Detail: err.Error()})
			wait = max(wait, te.Time.Sub(te.Bound))
			continue
		case err != nil:
			badTime = append(badTime, problem.Error{Pointer: at(i) + "/properties/" + pointerToken(prop), Detail: err.Error()})
			continue
		}
		out[i] = Feature{ID: id, Raw: f.Raw, Geometry: f.Geometry, Observed: t}
	}
	switch {
	case noID != nil:
		return nil, &problem.Details{Type: problemIDMissing, Title: "Feature id missing", Status: http.StatusUnprocessableEntity,
			Detail: `Every feature needs an "id", a non-empty string or a number, to be upserted by.`, Errors: noID}
	case badTime != nil:
		return nil, &problem.Details{Type: problemObservationTime, Title: "Observation time invalid", Status: http.StatusUnprocessableEntity,
			Detail: "The property " + strconv.Quote(prop) + " orders the updates of a feature: when present it must be an RFC 3339 date-time string, " +
				"no further ahead of the receiver's clock than it allows.",
			Errors: badTime}
	case ahead != nil:
		return nil, &problem.Details{Type: problemObservationAhead, Title: "Observation time ahead", Status: http.StatusServiceUnavailable,
			Detail: "The property " + strconv.Quote(prop) + " is further ahead of the receiver's clock than it allows; nothing was stored. " +
				"Send the same request again, same key, after Retry-After: the receiver's clock will have caught up.",
			Errors: ahead, RetryAfter: max(wait, time.Second)}
	}
	return out, nil
}

// pointerToken escapes a member name for a JSON pointer (RFC 6901).
func pointerToken(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// answerFor returns the answer to a write of fs with verdicts: 201
// {"stored":[ids…]} when anything was stored, with "stale":[ids…] (a newer
// observation is stored) and "unstamped":[ids…] (no time, and a stamped
// observation is stored) added when some were not, and 200 with "stored"
// empty when nothing was (the update is acknowledged, so the sender stops,
// and changes nothing).
func answerFor(fs []Feature, verdicts []newest.Verdict) Answer {
	stored := make([]string, 0, len(fs))
	var stale, unstamped []string
	for i, f := range fs {
		switch verdicts[i] {
		case newest.Replace:
			stored = append(stored, f.ID)
		case newest.Unstamped:
			unstamped = append(unstamped, f.ID)
		default:
			stale = append(stale, f.ID)
		}
	}
	status := http.StatusCreated
	if len(stored) == 0 && len(fs) > 0 {
		status = http.StatusOK
	}
	b := marshal(struct { // ids as they are: not HTML-escaped (an id of '<' would be six times its size)
		Stored    []string `json:"stored"`
		Stale     []string `json:"stale,omitempty"`
		Unstamped []string `json:"unstamped,omitempty"`
	}{stored, stale, unstamped})
	return Answer{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

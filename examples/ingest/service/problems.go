package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// The problem types the ingest service answers with, listed in
// docs/problems.md. Every error it writes is one of these, the
// middleware's, the verifier's or package geojson's: never about:blank.
// Its 422s carry an errors member naming each offending value by its JSON
// pointer (problem.Details.Errors), as the validator's do.
const (
	problemIDMissing        = problem.TypeBase + "feature-id-missing"        // 422
	problemNotFeatures      = problem.TypeBase + "not-features"              // 422
	problemObservationTime  = problem.TypeBase + "observation-time-invalid"  // 422
	problemObservationAhead = problem.TypeBase + "observation-time-ahead"    // 503, until the clock catches up
	problemRejected         = problem.TypeBase + "feature-rejected"          // 422, the features' own fault
	problemConflict         = problem.TypeBase + "feature-conflict"          // 409 with Retry-After, other rows' state
	problemStoreUnavailable = problem.TypeBase + "feature-store-unavailable" // 503, transient
	problemStoreFull        = problem.TypeBase + "feature-store-full"        // 507: room does not free by itself
	problemNotFound         = problem.TypeBase + "feature-not-found"         // 404
	problemBodyUnreadable   = middleware.ProblemBodyUnreadable               // 408
	problemNoRoute          = problem.TypeBase + "not-found"                 // 404
	problemMethodNotAllowed = problem.TypeBase + "method-not-allowed"        // 405
)

// writeError answers an error that carries its own problem document
// (package geojson's), or a 422 feature-rejected one.
func writeError(w http.ResponseWriter, err error) {
	var hp middleware.HTTPProblem
	if !errors.As(err, &hp) {
		problem.Write(w, problem.Details{Type: problemRejected, Title: "Features refused", Status: http.StatusUnprocessableEntity,
			Errors: []problem.Error{{Pointer: "", Detail: err.Error()}}})
		return
	}
	w.Header().Set("Content-Type", problem.MediaType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(hp.HTTPStatus())
	_, _ = w.Write(hp.ProblemJSON())
}

// marshal is json.Marshal without HTML escaping: ids go out as they are,
// not six times their size.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

package geojson

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// statusProblem is what the middleware looks for in an error.
type statusProblem interface {
	HTTPStatus() int
	ProblemJSON() []byte
}

func TestRequestValidator(t *testing.T) {
	good := pt2(`[1,2]`)
	bad := `{"type":"FeatureCollection","features":[` + feature(poly(`[[0,0],[2,2],[2,0],[0,2],[0,0]]`), "") + `,` + feature(pt2(`[1,null]`), "") + `]}`
	cases := []struct {
		name, ct, body string
		status         int
		typ            string
	}{
		{"geo+json", "application/geo+json", good, 0, ""},
		{"json with charset", "application/json; charset=utf-8", good, 0, ""},
		{"upper case", "Application/GEO+JSON", good, 0, ""},
		{"text/plain", "text/plain", good, 415, ProblemTypeUnsupportedMediaType},
		{"no content type", "", good, 415, ProblemTypeUnsupportedMediaType},
		{"garbage content type", "application/json;;", good, 415, ProblemTypeUnsupportedMediaType},
		{"malformed", "application/json", `{"type":`, 400, ProblemTypeMalformedJSON},
		{"invalid", "application/geo+json", bad, 422, ProblemTypeInvalidGeoJSON},
	}
	var v RequestValidator
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
			if c.ct != "" {
				r.Header.Set("Content-Type", c.ct)
			}
			err := v.ValidateRequest(r, []byte(c.body))
			if c.status == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var sp statusProblem
			if !errors.As(err, &sp) {
				t.Fatalf("error %v (%T) lacks HTTPStatus and ProblemJSON", err, err)
			}
			if sp.HTTPStatus() != c.status {
				t.Errorf("status %d, want %d", sp.HTTPStatus(), c.status)
			}
			var doc struct {
				Type   string `json:"type"`
				Title  string `json:"title"`
				Status int    `json:"status"`
				Detail string `json:"detail"`
				Errors []struct {
					Pointer string `json:"pointer"`
					Rule    string `json:"rule"`
					Detail  string `json:"detail"`
				} `json:"errors"`
			}
			if err := json.Unmarshal(sp.ProblemJSON(), &doc); err != nil {
				t.Fatalf("problem document %s: %v", sp.ProblemJSON(), err)
			}
			if doc.Type != c.typ || doc.Status != c.status || doc.Title == "" || doc.Detail == "" {
				t.Errorf("problem document %s", sp.ProblemJSON())
			}
			if c.status == 422 {
				want := []string{"/features/0/geometry/coordinates/0/2 ring-self-intersection", "/features/1/geometry/coordinates/1 position-element"}
				if len(doc.Errors) != len(want) {
					t.Fatalf("errors %+v, want %v", doc.Errors, want)
				}
				for i, e := range doc.Errors {
					if e.Pointer+" "+e.Rule != want[i] || e.Detail == "" {
						t.Errorf("error %d = %+v, want %s", i, e, want[i])
					}
				}
			} else if doc.Errors != nil {
				t.Errorf("unexpected errors member in %s", sp.ProblemJSON())
			}
		})
	}
}

func TestRequestValidatorOptions(t *testing.T) {
	v := RequestValidator{Options: Options{StrictRightHandRule: true}}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Content-Type", "application/geo+json")
	err := v.ValidateRequest(r, []byte(poly(`[[0,0],[0,4],[4,4],[4,0],[0,0]]`)))
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Violations[0].Rule != RuleRightHandRule {
		t.Fatalf("got %v, want a right-hand-rule problem", err)
	}
}

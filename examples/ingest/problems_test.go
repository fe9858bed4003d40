package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/problem"
)

// answerProblem reads a problem document, failing the test when the
// answer is not one.
func answerProblem(t *testing.T, r *http.Response, body string) problem.Details {
	t.Helper()
	d, ok := problem.Parse(r.Header.Get("Content-Type"), []byte(body))
	if !ok {
		t.Fatalf("%d %q %s: not a problem document", r.StatusCode, r.Header.Get("Content-Type"), body)
	}
	return d
}

// pointers lists a problem's JSON pointers.
func pointers(d problem.Details) []string {
	var ps []string
	for _, e := range d.Errors {
		ps = append(ps, e.Pointer)
	}
	return ps
}

// Every 422 of the service's own is a problem.Details whose errors member
// names what is refused with a JSON pointer, as the validator's 422 does,
// so that a sender (and the paired sender's dead letters) can tell which
// feature of a collection to fix.
func TestIngestRefusalsNamePointers(t *testing.T) {
	url := start(t, "-max-feature-bytes", "400")
	for _, c := range []struct {
		name, body, typ string
		pointers        []string
	}{
		{"features without an id", `{"type":"FeatureCollection","features":[` +
			`{"type":"Feature","id":"a","geometry":null,"properties":null},` +
			`{"type":"Feature","geometry":null,"properties":null},` +
			`{"type":"Feature","id":"","geometry":null,"properties":null}]}`,
			"feature-id-missing", []string{"/features/1/id", "/features/2/id"}},
		{"a Feature without an id", `{"type":"Feature","geometry":null,"properties":null}`, "feature-id-missing", []string{"/id"}},
		{"a bare geometry", `{"type":"Point","coordinates":[1,2]}`, "not-features", []string{"/type"}},
		{"larger than the whole feature store", `{"type":"Feature","id":"big","geometry":null,"properties":{"s":"` + strings.Repeat("x", 500) + `"}}`,
			"feature-rejected", []string{""}},
	} {
		r, b := do(t, http.MethodPost, url+"/features", "ptr-"+c.name, c.body)
		d := answerProblem(t, r, b)
		if r.StatusCode != http.StatusUnprocessableEntity || d.Name() != c.typ || fmt.Sprintf("%q", pointers(d)) != fmt.Sprintf("%q", c.pointers) {
			t.Errorf("%s: %d %s; want 422 %s with pointers %q", c.name, r.StatusCode, b, c.typ, c.pointers)
		}
		for _, e := range d.Errors {
			if e.Detail == "" {
				t.Errorf("%s: error %q without a detail", c.name, e.Pointer)
			}
		}
	}
}

// A PostgreSQL refusal of one feature of a collection (a CHECK on its id)
// names that feature; the whole request is rolled back and recorded.
func TestIngestPostgresRefusalNamesTheFeature(t *testing.T) {
	url, table, conn := pgService(t)
	if _, err := conn.Exec(context.Background(), `ALTER TABLE `+table+` ADD CONSTRAINT no_forbidden CHECK (id <> 'forbidden')`); err != nil {
		t.Fatal(err)
	}
	body := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","id":"fine","geometry":{"type":"Point","coordinates":[1,2]},"properties":null},` +
		`{"type":"Feature","id":"forbidden","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}]}`
	r, b := do(t, http.MethodPost, url+"/features", "coll", body)
	d := answerProblem(t, r, b)
	if r.StatusCode != http.StatusUnprocessableEntity || d.Name() != "feature-rejected" || fmt.Sprintf("%q", pointers(d)) != `["/features/1"]` ||
		!strings.Contains(d.Errors[0].Detail, "23514") {
		t.Fatalf("%d %s; want 422 feature-rejected naming /features/1 and SQLSTATE 23514", r.StatusCode, b)
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows (%v), want none: the request is refused whole", n, err)
	}
}

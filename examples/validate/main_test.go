package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.geojson", `{"type":"Point","coordinates":[1,2]}`)
	bad := write("bad.geojson", `{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[[1,2],[500,null]]}}`)
	malformed := write("malformed.geojson", `{"type":`)
	cw := write("cw.geojson", `{"type":"Polygon","coordinates":[[[0,0],[0,1],[1,1],[1,0],[0,0]]]}`)
	missing := filepath.Join(dir, "missing.geojson")

	cases := []struct {
		name   string
		args   []string
		stdin  string
		status int
		out    []string // expected stdout lines
		errSub string   // substring expected on stderr
	}{
		{"valid file", []string{good}, "", 0, nil, ""},
		{"valid stdin", nil, `{"type":"Point","coordinates":[1,2]}`, 0, nil, ""},
		{"invalid file", []string{good, bad}, "", 1, []string{
			bad + ": /geometry/coordinates/1/1: position-element: null is not a number (go-geom would silently read it as 0)",
		}, ""},
		{"invalid stdin", nil, `[1]`, 1, []string{"<stdin>: (root): root-not-object: a GeoJSON document must be an object, not an array"}, ""},
		{"malformed", []string{malformed}, "", 1, []string{malformed + ": (root): malformed-json: unexpected end of input at offset 8"}, ""},
		{"lenient winding", []string{cw}, "", 0, nil, ""},
		{"strict winding", []string{"-strict-rhr", cw}, "", 1, []string{
			cw + ": /coordinates/0: right-hand-rule: an exterior ring must be counterclockwise (RFC 7946 section 3.1.6)",
		}, ""},
		{"missing file", []string{good, missing}, "", 2, nil, "missing.geojson"},
		{"bad flag", []string{"-nope"}, "", 2, nil, "usage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(c.args, strings.NewReader(c.stdin), &stdout, &stderr)
			if status != c.status {
				t.Errorf("status %d, want %d (stderr %q)", status, c.status, stderr.String())
			}
			var lines []string
			if s := strings.TrimSuffix(stdout.String(), "\n"); s != "" {
				lines = strings.Split(s, "\n")
			}
			if strings.Join(lines, "\n") != strings.Join(c.out, "\n") {
				t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(c.out, "\n"))
			}
			if !strings.Contains(stderr.String(), c.errSub) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.errSub)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	status := run([]string{"-json"}, strings.NewReader(`{"type":"Point","coordinates":[1,2,3,4]}`), &stdout, &stderr)
	if status != 1 {
		t.Fatalf("status %d, stderr %s", status, stderr.String())
	}
	var line struct {
		File    string `json:"file"`
		Problem struct {
			Type   string `json:"type"`
			Status int    `json:"status"`
			Errors []struct {
				Pointer, Rule, Detail string
			} `json:"errors"`
		} `json:"problem"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &line); err != nil {
		t.Fatalf("%s: %v", stdout.String(), err)
	}
	if line.File != "<stdin>" || line.Problem.Status != 422 || len(line.Problem.Errors) != 1 ||
		line.Problem.Errors[0].Rule != "position-length" || line.Problem.Errors[0].Pointer != "/coordinates" {
		t.Errorf("got %+v", line)
	}
	stdout.Reset()
	if status := run([]string{"-json"}, strings.NewReader(`{`), &stdout, &stderr); status != 1 || !strings.Contains(stdout.String(), "malformed-json") {
		t.Errorf("malformed: status %d, output %s", status, stdout.String())
	}
}

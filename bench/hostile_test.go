package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileSection runs section 6 alone in the tiny mode and checks its
// table, headline and figures, and that it states its allocation bound
// with a verdict. (Whether the bound is met at 1 MiB is geojson's
// TestHostileAllocationPerByte; in the tiny mode the problem document's
// fixed cost, some 0.5 MB, is 7× a 64 KiB circle's warm allocation.)
func TestHostileSection(t *testing.T) {
	md, out := runSection(t, "hostile")
	for _, want := range []string{"## 6. Hostile inputs", "| problem document, 64 KiB body |", "| 1000 holes |",
		"| circle of 1000 vertices at 1e-200 |", "| MultiPoint of [], 64 KiB |", "| overlapping triangles, 64 KiB |", "| FeatureCollection of null-geometry Features, 64 KiB |", "hostile inputs", "hostile-time.svg", "hostile-alloc.svg",
		"**Allocation bound**: at most 5× the bytes allocated per input byte of a valid circle of the input's size, cold and warm: **", "(bound 5×)", "; bound 5×: "} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"hostile-time.svg", "hostile-alloc.svg"} {
		checkSVG(t, filepath.Join(out, f))
	}
}

// runSection runs the section name alone in the tiny mode, fails t unless
// it ran to its end, and returns the report it wrote and the directory
// it wrote it and its figures to.
func runSection(t *testing.T, name string) (md, out string) {
	t.Helper()
	o := tinyOptions(t)
	o.only = map[string]bool{name: true}
	start := time.Now()
	rep, err := run(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("section %s took %v", name, time.Since(start))
	b, err := os.ReadFile(rep.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.failed) > 0 {
		t.Fatalf("sections failed: %v\n%s", rep.failed, b)
	}
	return string(b), o.out
}

package problem_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/problem"
)

var (
	// A problem type in Go source: the whole URI written out, or a
	// fragment appended to problem.TypeBase.
	typeURI      = regexp.MustCompile(regexp.QuoteMeta(strings.TrimSuffix(problem.TypeBase, "#")) + `#([^"\s]*)"`)
	typeFragment = regexp.MustCompile(`TypeBase\s*\+\s*"([^"]*)"`)
	// An anchor in docs/problems.md: an HTML anchor, or a heading (GitHub
	// makes its text, lower-cased, spaces to hyphens, the fragment).
	htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	heading    = regexp.MustCompile(`(?m)^#+ +(.+)$`)
)

// TestEveryProblemTypeHasAnAnchor: every problem type URI the code of the
// repository writes (the library, the examples and the benchmarks) is
// docs/problems.md with a fragment, and that page has an anchor of that
// name, so that the link in a problem document lands on the type's row.
func TestEveryProblemTypeHasAnAnchor(t *testing.T) {
	root := ".."
	page, err := os.ReadFile(filepath.Join(root, "docs", "problems.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range htmlAnchor.FindAllStringSubmatch(string(page), -1) {
		anchors[m[1]] = true
	}
	for _, m := range heading.FindAllStringSubmatch(string(page), -1) {
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z':
				return r
			}
			return -1
		}, strings.ToLower(strings.TrimSpace(m[1])))
		anchors[slug] = true
	}

	written := map[string][]string{} // fragment -> files
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, re := range []*regexp.Regexp{typeURI, typeFragment} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				written[m[1]] = append(written[m[1]], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must see the code: the middleware's and the examples' types
	// at least (a regexp that matched nothing would pass every page).
	for _, frag := range []string{"missing-key", "webhook-signature-invalid", "invalid-geojson", "feature-rejected"} {
		if len(written[frag]) == 0 {
			t.Errorf("the walk of %s found no problem type %q; the test no longer sees the code", root, frag)
		}
	}
	frags := make([]string, 0, len(written))
	for f := range written {
		frags = append(frags, f)
	}
	sort.Strings(frags)
	for _, frag := range frags {
		if frag == "" {
			continue // TypeBase itself, in a doc comment or a prefix check
		}
		if !anchors[frag] {
			t.Errorf("problem type %q (written in %s) has no anchor in docs/problems.md; add <a id=%q></a> to its row", frag, strings.Join(written[frag], ", "), frag)
		}
	}
	t.Logf("%d problem types, each with its anchor", len(frags))
}

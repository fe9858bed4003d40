package readme_test

import (
	"regexp"
	"strings"
	"testing"
)

// testName matches a test function a page names: TestX, or TestX{A,B} for
// TestXA and TestXB.
var testName = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*(\{[A-Za-z0-9_,]+\})?`)

// TestNamedTestsExist fails for every Test function that README.md or a
// page of docs/ names (as evidence of a figure or of a bug class the tests
// guard against) and that no *_test.go file of the repository defines.
func TestNamedTestsExist(t *testing.T) {
	have := map[string]bool{}
	for _, f := range exampleFunctions(t) {
		_, name, _ := strings.Cut(f.name, " ")
		have[name] = true
	}
	for _, p := range pages(t) {
		for n, line := range strings.Split(string(p.text), "\n") {
			for _, m := range testName.FindAllString(line, -1) {
				for _, name := range expand(m) {
					if !have[name] {
						t.Errorf("%s:%d: names %s, which no *_test.go defines", p.name, n+1, name)
					}
				}
			}
		}
	}
}

// expand returns the names Name{A,B} stands for; a name without braces
// stands for itself.
func expand(s string) []string {
	base, alts, ok := strings.Cut(s, "{")
	if !ok {
		return []string{s}
	}
	var out []string
	for a := range strings.SplitSeq(strings.TrimSuffix(alts, "}"), ",") {
		out = append(out, base+a)
	}
	return out
}

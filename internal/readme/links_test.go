package readme_test

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link matches a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchorID matches an HTML anchor a page declares: id="name".
var anchorID = regexp.MustCompile(`id="([^"]+)"`)

// TestLinksResolve fails for every relative link of README.md and
// docs/*.md, outside code, that names a file or directory the repository
// lacks, or an anchor (#name) that the Markdown page it names has neither
// as a heading nor as an id. Links to other sites are not checked.
func TestLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{} // page -> its anchors
	for _, p := range pages(t) {
		for _, l := range links(p.text) {
			n, target := l.line, l.to
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := p.name
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(p.name), file))
			}
			if strings.HasPrefix(dest, "../") {
				t.Errorf("%s:%d: %s points outside the repository", p.name, n, target)
				continue
			}
			if _, err := os.Stat(root + "/" + dest); err != nil {
				t.Errorf("%s:%d: %s: the repository has no %s", p.name, n, target, dest)
				continue
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			a, ok := anchors[dest]
			if !ok {
				b, err := os.ReadFile(root + "/" + dest)
				if err != nil {
					t.Fatal(err)
				}
				a = pageAnchors(b)
				anchors[dest] = a
			}
			if !a[frag] {
				t.Errorf("%s:%d: %s: %s has no heading or id %q", p.name, n, target, dest, frag)
			}
		}
	}
}

// target is one link's target and the line it is on.
type target struct {
	line int
	to   string
}

// links returns the targets of a page's links outside fenced blocks and
// inline code.
func links(text []byte) []target {
	var out []target
	fenced := false
	for i, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for j, part := range strings.Split(line, "`") {
			if j%2 == 1 {
				continue // inline code
			}
			for _, m := range link.FindAllStringSubmatch(part, -1) {
				out = append(out, target{i + 1, m[1]})
			}
		}
	}
	return out
}

// pageAnchors returns the anchors of a Markdown page: GitHub's slug of
// each heading and every id="…".
func pageAnchors(text []byte) map[string]bool {
	a := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		if h, ok := strings.CutPrefix(line, "#"); ok {
			a[slug(strings.TrimLeft(h, "#"))] = true
		}
		for _, m := range anchorID.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
	}
	return a
}

// slug is GitHub's anchor for a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces turned into hyphens, the rest
// dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlug checks the anchors of a few headings as GitHub writes them.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		" The classes of bugs the tests guard against": "the-classes-of-bugs-the-tests-guard-against",
		" 4. The key stores and their contract":        "4-the-key-stores-and-their-contract",
		" Checking any receiver: `geoidem contract`":   "checking-any-receiver-geoidem-contract",
		" Sending: the paired sender":                  "sending-the-paired-sender",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

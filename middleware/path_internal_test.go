package middleware

import (
	"net/url"
	"strings"
	"testing"
)

// muxSegments splits an escaped path as http.ServeMux matches it: at each
// '/', each segment percent-decoded when all its encodings are valid. A
// segment "." or ".." is marked by whether it was written literally, since
// the mux cleans only literal ones.
func muxSegments(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		d, err := url.PathUnescape(seg)
		if err != nil {
			d = seg
		}
		if (d == "." || d == "..") && seg != d {
			d = "encoded " + d
		}
		out = append(out, d)
	}
	return out
}

// FuzzNormalizedPath checks that normalizing is idempotent and keeps each
// path in its ServeMux route class: the same segments, decoded alike, and
// a result that is a valid escaped path.
func FuzzNormalizedPath(f *testing.F) {
	for _, s := range []string{"/features", "/%66eatures", "/a%2Fb", "/a/b", "/%2e/x", "/./x", "/%25", "/%zz", "/%41%zz",
		"/a b", "/%e2%82%AC", "//x/", "/x?y", "/%3F%23", "/~user/%7Euser", "/[1]", "/%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n := normalizePath(p)
		if again := normalizePath(n); again != n {
			t.Fatalf("normalizePath(%q) = %q, and normalizing that gives %q", p, n, again)
		}
		if a, b := muxSegments(p), muxSegments(n); strings.Join(a, "\x00/") != strings.Join(b, "\x00/") || len(a) != len(b) {
			t.Fatalf("normalizePath(%q) = %q: segments %q, want %q", p, n, b, a)
		}
		if !strings.HasPrefix(n, "/") {
			return
		}
		if u, err := url.Parse("http://h" + n); err != nil || u.EscapedPath() != n {
			t.Fatalf("normalizePath(%q) = %q, not an escaped path as url.URL keeps it (%v)", p, n, err)
		}
	})
}

// A path already normal is returned as is, without allocating.
func TestNormalPathDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = normalizePath("/acct/x-1/close") }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

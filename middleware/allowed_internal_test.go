package middleware

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
)

// TestAllowedWalkOrLookup checks that the recorder finds the same allowed
// fields, and encodes them the same, whether it walks a small header map
// or looks up each allowed name in a large one, and that hasTrailers
// answers alike both ways.
func TestAllowedWalkOrLookup(t *testing.T) {
	allow := []string{"Content-Location", "Content-Type", "Etag", "Last-Modified", "Link", "Location"}
	trailerKeys := make([]string, len(allow))
	for i, name := range allow {
		trailerKeys[i] = http.TrailerPrefix + name
	}
	fields := http.Header{"Location": {"/f/1"}, "Content-Type": {"application/json"}, "Etag": {`"x"`}}
	encode := func(extra int, trailer string) ([]byte, []int, bool) {
		w := httptest.NewRecorder()
		for k, vs := range fields {
			w.Header()[k] = vs
		}
		for i := range extra { // fields not allowed, to pass the walk's bound
			w.Header()["X-Extra-"+strconv.Itoa(i)] = []string{"v"}
		}
		if trailer != "" {
			w.Header()[trailer] = []string{"t"}
		}
		w.Header()["Content-Length"] = []string{"12"}
		r := &recorder{w: w, allow: allow, trailerKeys: trailerKeys, limit: 1 << 10}
		r.snapshot()
		found, cl, tr := r.allowed(w.Header(), &[maxWalked]allowedField{})
		var indexes []int
		for _, f := range found {
			indexes = append(indexes, f.i)
			if !slices.Equal(f.values, w.Header()[allow[f.i]]) {
				t.Errorf("%d extra fields: %s: %q, want %q", extra, allow[f.i], f.values, w.Header()[allow[f.i]])
			}
		}
		if r.declared != 12 || !slices.Equal(cl, []string{"12"}) || tr != nil {
			t.Errorf("%d extra fields: Content-Length %q (declared %d), Trailer %q", extra, cl, r.declared, tr)
		}
		return bytes.Clone(r.enc), indexes, r.hasTrailers(w.Header())
	}
	walkedEnc, walked, walkedTr := encode(0, "")
	for _, extra := range []int{len(allow), maxWalked + 1} {
		enc, looked, tr := encode(extra, "")
		if !bytes.Equal(enc, walkedEnc) || !slices.Equal(looked, walked) || tr != walkedTr {
			t.Errorf("%d extra fields: encoding %q, indexes %v, trailers %v; walked: %q, %v, %v", extra, enc, looked, tr, walkedEnc, walked, walkedTr)
		}
	}
	if want := []int{1, 2, 5}; !slices.Equal(walked, want) {
		t.Errorf("allowed fields at %v, want %v", walked, want)
	}
	for _, c := range []struct {
		trailer string
		want    bool
	}{{http.TrailerPrefix + "Link", true}, {http.TrailerPrefix + "X-Not-Allowed", false}} {
		for _, extra := range []int{0, maxWalked + 1} {
			if _, _, got := encode(extra, c.trailer); got != c.want {
				t.Errorf("%d extra fields and %s: hasTrailers %v, want %v", extra, c.trailer, got, c.want)
			}
		}
	}
}

// searchName finds what slices.BinarySearch finds.
func TestSearchName(t *testing.T) {
	names := []string{"Content-Location", "Content-Type", "Etag", "Last-Modified", "Link", "Location"}
	for _, n := range []int{0, 1, 2, len(names)} {
		for _, name := range append(slices.Clone(names), "", "A", "Content-Q", "Etag0", "Z") {
			wi, wok := slices.BinarySearch(names[:n], name)
			if i, ok := searchName(names[:n], name); i != wi || ok != wok {
				t.Errorf("searchName(%q, %q) = %d, %v; want %d, %v", names[:n], name, i, ok, wi, wok)
			}
		}
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
)

// -url naming the endpoint itself, with no -path, is delivered to that
// endpoint (not to it with a slash added), and the rule lines carry a
// title a team without Go reads.
func TestGeoidemContractURLIsTheEndpoint(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("POST /features", wrap(t, new(memstore.Store), new(feature)))
	url := serve(t, mux) + "/features"
	code, out, errs := geoidem(t, "", "contract", "-url", url)
	if code != 0 {
		t.Fatalf("-url %s: exit %d, want 0\n%s%s", url, code, out, errs)
	}
	if !strings.Contains(out, "9 rules against "+url+": ") {
		t.Errorf("the summary does not name %s\n%s", url, out)
	}
	if !strings.Contains(out, "MissingKeyIs400 (missing key is 400)") {
		t.Errorf("no readable rule title\n%s", out)
	}
}

// Every answer 404, or 401: the output says the URL, or the credentials,
// are likely wrong.
func TestGeoidemContractDiagnosis(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusNotFound, "the URL is likely wrong"},
		{http.StatusUnauthorized, "the credentials are likely missing or wrong"},
	} {
		url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tc.status) }))
		code, out, errs := geoidem(t, "", "contract", "-url", url+"/features", "-lease", "1s")
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("every answer %d: exit %d, want 1 and %q\n%s%s", tc.status, code, tc.want, out, errs)
		}
	}
}

// Against a receiver that answers 201 to everything, the rules only the
// paired sender could break are inconclusive, not pass.
func TestGeoidemContractInconclusive(t *testing.T) {
	url := serve(t, new(feature))
	code, out, errs := geoidem(t, "", "contract", "-url", url, "-lease", "1s")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	got := outcomes(out)
	for _, name := range []string{"RetryAfterIsHonoured", "BlockedKeyIsDelivered"} {
		if got[name] != "inconclusive" {
			t.Errorf("%s: %q, want inconclusive\n%s", name, got[name], out)
		}
	}
	if !strings.Contains(out, "0 pass, 7 fail, 0 not applicable, 2 inconclusive") {
		t.Errorf("summary\n%s", out)
	}
}

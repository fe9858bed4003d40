package contracttest_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/middleware/contracttest"
)

// A Target.URL with a path and no Target.Path names the endpoint itself:
// http://host/features is delivered to /features, not /features/.
func TestCheckURLWithPathIsTheEndpoint(t *testing.T) {
	h := &ingest{}
	mux := http.NewServeMux()
	mux.Handle("POST /features", wrapped(t, newStore(), h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rep, err := contracttest.Check(t.Context(), contracttest.Target{URL: srv.URL + "/features", Executions: h.executions})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || count(rep, contracttest.Pass) != 9 {
		t.Fatalf("against %s/features: %d passed, %d failed, want 9 passed: %+v", srv.URL, count(rep, contracttest.Pass), count(rep, contracttest.Fail), rep.Rules)
	}
	if rep.Endpoint != srv.URL+"/features" {
		t.Errorf("Endpoint = %q, want %q", rep.Endpoint, srv.URL+"/features")
	}
	// A Path is still appended to the URL's own path.
	rep, err = contracttest.Check(t.Context(), contracttest.Target{URL: srv.URL + "/", Path: "/features"})
	if err != nil || !rep.OK() || rep.Endpoint != srv.URL+"/features" {
		t.Fatalf("URL %s/ with Path /features: %v, ok %t, endpoint %q", srv.URL, err, rep.OK(), rep.Endpoint)
	}
}

// When every answer is 404, or 401/403, the report says the URL or the
// credentials are likely wrong; a receiver that answers other things
// gets no such diagnosis.
func TestCheckDiagnosesWrongURLOrCredentials(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status []int // answered in turn
		want   string
	}{
		{"404", []int{404}, "URL"},
		{"401", []int{401}, "credentials"},
		{"403-and-401", []int{403, 401}, "credentials"},
		{"404-and-403", []int{404, 403}, "URL or the credentials"},
		{"404-and-201", []int{404, 201}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status[int(n.Add(1))%len(tc.status)])
			}))
			t.Cleanup(srv.Close)
			rep, err := contracttest.Check(t.Context(), contracttest.Target{URL: srv.URL, Path: "/features", Lease: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && rep.Diagnosis != "":
				t.Errorf("Diagnosis %q, want none", rep.Diagnosis)
			case tc.want != "" && !strings.Contains(rep.Diagnosis, tc.want):
				t.Errorf("Diagnosis %q, want one naming the %s", rep.Diagnosis, tc.want)
			}
		})
	}
}

// Against a receiver that answers 201 to everything, the rules that only
// the paired sender could break (the receiver never holds or replays a
// key) are inconclusive, not passed.
func TestCheckInconclusiveAgainstAlways201(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	rep, err := contracttest.Check(t.Context(), contracttest.Target{URL: srv.URL, Path: "/features", Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	outcome := map[string]contracttest.RuleResult{}
	for _, r := range rep.Rules {
		outcome[r.Name] = r
	}
	for _, name := range []string{"RetryAfterIsHonoured", "BlockedKeyIsDelivered"} {
		if r := outcome[name]; r.Outcome != contracttest.Inconclusive || r.Reason == "" {
			t.Errorf("%s: %q (reason %q), want inconclusive with a reason", name, r.Outcome, r.Reason)
		}
	}
	if count(rep, contracttest.Inconclusive) != 2 || count(rep, contracttest.Pass) != 0 {
		t.Errorf("report: %d passed, %d inconclusive, want 0 and 2", count(rep, contracttest.Pass), count(rep, contracttest.Inconclusive))
	}
	// Against a receiver that does replay, the same rules pass.
	h := &ingest{}
	rep, err = contracttest.Check(t.Context(), contracttest.Target{Handler: wrapped(t, newStore(), h), Executions: h.executions})
	if err != nil || count(rep, contracttest.Inconclusive) != 0 || count(rep, contracttest.Pass) != 9 {
		t.Fatalf("against a correct receiver: %v, %d passed, %d inconclusive", err, count(rep, contracttest.Pass), count(rep, contracttest.Inconclusive))
	}
}

// ReplayCarriesNoSetCookie can fail only against a receiver whose
// original answer sets a cookie: against one that sets none it is
// inconclusive, with the reason, not passed.
func TestCheckNoSetCookieInconclusiveWithoutCookies(t *testing.T) {
	h := &ingest{noCookie: true}
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: wrapped(t, newStore(), h), Executions: h.executions})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rules {
		if r.Name == "ReplayCarriesNoSetCookie" && (r.Outcome != contracttest.Inconclusive || !strings.Contains(r.Reason, "cookie")) {
			t.Errorf("ReplayCarriesNoSetCookie against a receiver that sets no cookie: %s (reason %q), want inconclusive naming the cookie", r.Outcome, r.Reason)
		}
	}
	if !rep.OK() || count(rep, contracttest.Pass) != 8 || count(rep, contracttest.Inconclusive) != 1 {
		t.Errorf("report: %d passed, %d failed, %d inconclusive, want 8, 0 and 1", count(rep, contracttest.Pass), count(rep, contracttest.Fail), count(rep, contracttest.Inconclusive))
	}
}

// A plain JSON 400 (not a problem document) satisfies MissingKeyIs400: a
// receiver in another language answers a missing key its own way.
func TestMissingKeyPlainJSON400(t *testing.T) {
	inner := wrapped(t, newStore(), &ingest{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Idempotency-Key")) == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"Idempotency-Key header is required"}`)
			return
		}
		inner.ServeHTTP(w, r)
	})
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rules {
		if r.Name == "MissingKeyIs400" && r.Outcome != contracttest.Pass {
			t.Errorf("MissingKeyIs400: %s %q, want pass", r.Outcome, r.Failures)
		}
	}
	// A 400 that is neither a problem document nor JSON still fails.
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Idempotency-Key")) == 0 {
			http.Error(w, "missing key", http.StatusBadRequest)
			return
		}
		inner.ServeHTTP(w, r)
	})
	if rep, err = contracttest.Check(t.Context(), contracttest.Target{Handler: h}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rules {
		if r.Name == "MissingKeyIs400" && r.Outcome != contracttest.Fail {
			t.Errorf("MissingKeyIs400 against a text/plain 400: %s, want fail", r.Outcome)
		}
	}
}

// A plain JSON 400 satisfies MalformedKeyIs400 too, as it does
// MissingKeyIs400: a receiver in another language refuses every bad key
// its own way. Here the middleware's 400s are rewritten so; a text/plain
// 400 still fails.
func TestMalformedKeyPlainJSON400(t *testing.T) {
	inner := wrapped(t, newStore(), &ingest{})
	own400 := func(contentType, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r)
			if rec.Code == http.StatusBadRequest {
				w.Header().Set("Content-Type", contentType)
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, body)
				return
			}
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	}
	for _, c := range []struct {
		contentType, body string
		want              contracttest.Outcome
	}{
		{"application/json", `{"error":"invalid Idempotency-Key"}`, contracttest.Pass},
		{"text/plain; charset=utf-8", "invalid Idempotency-Key\n", contracttest.Fail},
	} {
		rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: own400(c.contentType, c.body)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rules {
			if (r.Name == "MalformedKeyIs400" || r.Name == "MissingKeyIs400") && r.Outcome != c.want {
				t.Errorf("%s against a %s 400: %s %q, want %s", r.Name, c.contentType, r.Outcome, r.Failures, c.want)
			}
		}
	}
}

// Every rule has a title a team without Go reads: lower case words, no
// Go identifier.
func TestRuleTitles(t *testing.T) {
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: wrapped(t, newStore(), &ingest{})})
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, r := range rep.Rules {
		titles[r.Name] = r.Title
		if r.Title == "" || strings.Contains(r.Title, r.Name) {
			t.Errorf("%s: title %q", r.Name, r.Title)
		}
	}
	if got := titles["MissingKeyIs400"]; got != "missing key is 400" {
		t.Errorf("MissingKeyIs400's title %q, want %q", got, "missing key is 400")
	}
}

// own422 is a receiver that answers a reused key with its own 422, as a
// receiver in another language does: the middleware's answer otherwise.
func own422(t *testing.T, contentType, body string) http.Handler {
	inner := wrapped(t, newStore(), &ingest{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		if rec.Code == http.StatusUnprocessableEntity && strings.Contains(rec.Body.String(), "key-reused") {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, body)
			return
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestKeyReuseOwn422: a reused key answered 422 in plain JSON, or with an
// RFC 9457 problem document of the receiver's own type, keeps the rule; a
// 422 in plain text, or a problem document that is not one, breaks it.
func TestKeyReuseOwn422(t *testing.T) {
	for _, c := range []struct {
		contentType, body string
		want              contracttest.Outcome
	}{
		{"application/json", `{"error":"Idempotency-Key reused with another payload"}`, contracttest.Pass},
		{"application/problem+json", `{"type":"https://receiver.example/problems/idempotency-key-reused","title":"Key reused","status":422}`, contracttest.Pass},
		{"application/problem+json", `{"title":"Key reused","status":422}`, contracttest.Pass}, // no type: about:blank (RFC 9457, 3.1.1)
		{"application/problem+json", `{"type":"https://receiver.example/problems/reused","title":"Key reused","status":400}`, contracttest.Fail},
		{"text/plain; charset=utf-8", "Idempotency-Key reused\n", contracttest.Fail},
	} {
		rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: own422(t, c.contentType, c.body)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rules {
			if r.Name == "KeyReuseWithAnotherPayloadIs422" && r.Outcome != c.want {
				t.Errorf("%s against a 422 %s %s: %s %q, want %s", r.Name, c.contentType, c.body, r.Outcome, r.Failures, c.want)
			}
		}
		if c.want == contracttest.Pass && !rep.OK() {
			t.Errorf("a 422 %s %s: %d rule(s) failed: %+v", c.contentType, c.body, count(rep, contracttest.Fail), rep.Rules)
		}
	}
}

// bareKeys is a receiver that takes the Idempotency-Key field as written,
// a bare key, as most receivers in other languages do: a field that is not
// an RFC 9651 string is its own key, quotes and all. It refuses, 400 in
// plain JSON, only what no reading makes a key (empty, control or
// non-ASCII characters, over 255 characters, two fields).
func bareKeys(t *testing.T) (http.Handler, *ingest) {
	h := &ingest{}
	inner := wrapped(t, newStore(), h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs := r.Header.Values("Idempotency-Key")
		if len(vs) == 1 {
			if _, err := middleware.ParseKey(vs[0]); err != nil && len(vs[0]) <= 255 && strings.TrimSpace(vs[0]) != "" && !strings.ContainsFunc(vs[0], func(c rune) bool { return c < 0x21 || c > 0x7e }) {
				// Quoted as an RFC 9651 string for the middleware:
				// the key is the field as written.
				r.Header.Set("Idempotency-Key", `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(vs[0])+`"`)
			}
		}
		inner.ServeHTTP(w, r)
	}), h
}

// TestBareKeyReceiver: a receiver that takes keys bare passes every rule:
// the quoted spellings that are malformed RFC 9651 strings are keys of
// their own to it, each run once, and the rule counts them so.
func TestBareKeyReceiver(t *testing.T) {
	h, in := bareKeys(t)
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: h, Executions: in.executions})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("a receiver of bare keys: %d rule(s) failed: %+v", count(rep, contracttest.Fail), rep.Rules)
	}
}

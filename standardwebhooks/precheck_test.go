package standardwebhooks_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// junkHeaders are requests whose headers alone show they cannot verify,
// each with the error CheckHeaders wraps. Each is otherwise correctly
// signed now under the fixture's secret, so only what the case changes
// can make it fail.
var junkHeaders = []struct {
	name   string
	mutate func(f *handlerFixture, r *http.Request)
	want   error
}{
	{"signature not versioned", setSig("garbage"), standardwebhooks.ErrInvalidSignature},
	{"empty v1 signature", setSig("v1,"), standardwebhooks.ErrInvalidSignature},
	{"v1 signature not base64", setSig("v1," + strings.Repeat("!", 44)), standardwebhooks.ErrInvalidSignature},
	{"v1 signature of the wrong length", setSig("v1,c2hvcnQ="), standardwebhooks.ErrInvalidSignature},
	{"v1 signature one character short", func(f *handlerFixture, r *http.Request) {
		sig := r.Header.Get(standardwebhooks.HeaderSignature)
		r.Header.Set(standardwebhooks.HeaderSignature, sig[:len(sig)-1])
	}, standardwebhooks.ErrInvalidSignature},
	{"only an unknown version", setSig("v2," + vectorWrongSignature[3:]), standardwebhooks.ErrInvalidSignature},
	{"only v1a, and the verifier has no public key", setSig("v1a," + strings.Repeat("A", 86) + "=="), standardwebhooks.ErrInvalidSignature},
	{"several junk signatures", setSig("v1, v1a,abc v2,xyz garbage"), standardwebhooks.ErrInvalidSignature},
	{"webhook-id longer than MaxIDLen", signedID(strings.Repeat("m", standardwebhooks.MaxIDLen+1)), standardwebhooks.ErrMalformedHeaders},
	{"webhook-id with a control byte", signedID("msg\x01"), standardwebhooks.ErrMalformedHeaders},
	{"webhook-id with a tab", signedID("msg\t1"), standardwebhooks.ErrMalformedHeaders},
	{"webhook-id not ASCII", signedID("msg_é"), standardwebhooks.ErrMalformedHeaders},
	{"unsigned", func(_ *handlerFixture, r *http.Request) { r.Header.Del(standardwebhooks.HeaderSignature) }, standardwebhooks.ErrMissingHeaders},
	{"timestamp malformed", func(_ *handlerFixture, r *http.Request) { r.Header.Set(standardwebhooks.HeaderTimestamp, "soon") }, standardwebhooks.ErrMalformedHeaders},
	{"stale", func(f *handlerFixture, _ *http.Request) { f.clock.Advance(time.Hour) }, standardwebhooks.ErrTimestampOutOfTolerance},
}

func setSig(sig string) func(*handlerFixture, *http.Request) {
	return func(_ *handlerFixture, r *http.Request) { r.Header.Set(standardwebhooks.HeaderSignature, sig) }
}

// signedID re-signs the request for id, so that the signature is right for
// the id sent.
func signedID(id string) func(*handlerFixture, *http.Request) {
	return func(f *handlerFixture, r *http.Request) {
		now := f.clock.Now()
		r.Header.Set(standardwebhooks.HeaderID, id)
		r.Header.Set(standardwebhooks.HeaderSignature, standardwebhooks.Sign(f.secret, id, now, body))
	}
}

func problemFor(err error) (int, string) {
	switch {
	case errors.Is(err, standardwebhooks.ErrMissingHeaders):
		return http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing
	case errors.Is(err, standardwebhooks.ErrTimestampOutOfTolerance):
		return http.StatusUnauthorized, standardwebhooks.ProblemTimestampOutOfTolerance
	}
	return http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid
}

// TestHandlerRefusesJunkHeadersBeforeReadingBody: a request whose headers
// cannot verify (no well-formed signature of a version the verifier has a
// key for, an id the middleware would refuse, a stale timestamp) is
// answered from its headers alone: not a byte of its body is read, so a
// sender of junk with a slow body costs only its rejection.
func TestHandlerRefusesJunkHeadersBeforeReadingBody(t *testing.T) {
	for _, tc := range junkHeaders {
		t.Run(tc.name, func(t *testing.T) {
			f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
			r := f.signed("msg_1", body)
			tc.mutate(f, r)
			cr := &countingReader{r: r.Body}
			r.Body = io.NopCloser(cr)
			status, typ := problemFor(tc.want)
			checkProblem(t, f.serve(r), status, typ)
			if cr.n != 0 {
				t.Errorf("%d body bytes read before rejecting on the headers", cr.n)
			}
			if f.next.calls != 0 {
				t.Errorf("next ran %d times", f.next.calls)
			}
		})
	}
}

// TestCheckHeaders: the header-only check a service runs before it reads
// the body reports each case with the sentinel Verify would, and passes
// the headers of a correctly signed request, whose body it never sees.
func TestCheckHeaders(t *testing.T) {
	for _, tc := range junkHeaders {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
		r := f.signed("msg_1", body)
		tc.mutate(f, r)
		if err := v.CheckHeaders(r.Header); !errors.Is(err, tc.want) {
			t.Errorf("%s: CheckHeaders: %v, want an error wrapping %v", tc.name, err, tc.want)
		}
		if err := v.Verify(r.Header, body); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify: %v, want an error wrapping %v", tc.name, err, tc.want)
		}
	}
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
	r := f.signed("msg_1", body)
	if err := v.CheckHeaders(r.Header); err != nil {
		t.Errorf("CheckHeaders of a correctly signed request: %v", err)
	}
	// The headers of a signature that will not match pass: only the body
	// can tell.
	r.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature+" v1a,abc v2,xyz")
	if err := v.CheckHeaders(r.Header); err != nil {
		t.Errorf("CheckHeaders of a well-formed v1 signature: %v", err)
	}
	// A junk token beside a well-formed signature is ignored, as Verify
	// ignores it.
	r = f.signed("msg_1", body)
	r.Header.Set(standardwebhooks.HeaderSignature, "v1, garbage "+r.Header.Get(standardwebhooks.HeaderSignature))
	if err := v.CheckHeaders(r.Header); err != nil {
		t.Errorf("CheckHeaders with a junk token beside a good one: %v", err)
	}
	if err := v.Verify(r.Header, body); err != nil {
		t.Errorf("Verify with a junk token beside a good one: %v", err)
	}
}

// TestPrecheckAnswersAsTheHandler: Precheck answers every request that
// the Handler would refuse before reading its body exactly as the Handler
// does, reading no body, and passes the others on untouched.
func TestPrecheckAnswersAsTheHandler(t *testing.T) {
	cases := append([]struct {
		name   string
		mutate func(f *handlerFixture, r *http.Request)
		want   error
	}{{"query", func(_ *handlerFixture, r *http.Request) { withQuery(r, "x=1") }, nil}}, junkHeaders...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
			v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
			inner := &downstream{}
			pre := v.Precheck(inner)
			r := f.signed("msg_1", body)
			tc.mutate(f, r)
			cr := &countingReader{r: r.Body}
			r.Body = io.NopCloser(cr)
			w := httptest.NewRecorder()
			pre.ServeHTTP(w, r)

			r2 := f.signed("msg_1", body) // the same request, for the Handler
			tc.mutate(f, r2)
			hw := f.serve(r2)
			if w.Code != hw.Code || w.Body.String() != hw.Body.String() || w.Header().Get("WWW-Authenticate") != hw.Header().Get("WWW-Authenticate") {
				t.Errorf("Precheck answered %d %s, the Handler %d %s", w.Code, w.Body, hw.Code, hw.Body)
			}
			if w.Code == http.StatusOK || inner.calls != 0 || cr.n != 0 {
				t.Errorf("Precheck: status %d, next ran %d times, %d body bytes read; want a refusal, no run, nothing read", w.Code, inner.calls, cr.n)
			}
		})
	}
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
	var seen *http.Request
	pre := v.Precheck(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r }))
	r := f.signed("msg_1", body)
	r.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature) // well formed: only the body can tell
	pre.ServeHTTP(httptest.NewRecorder(), r)
	if seen != r {
		t.Error("Precheck did not pass a request with well-formed headers on, as it came")
	}
}

// TestPrecheckKeepsJunkOutOfAdmission: put in front of the front door
// (which holds a request's declared bytes while its body arrives, and a
// work slot while the verifier and what is behind it run), Precheck
// answers junk before it is admitted, so a flood of junk with slow bodies
// takes none of the room.
func TestPrecheckKeepsJunkOutOfAdmission(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{f.secret}, Now: f.clock.Now})
	door, err := frontdoor.New(frontdoor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ingest := &downstream{}
	h := v.Precheck(door.Handler(v.Handler(ingest)))
	for _, tc := range junkHeaders {
		r := f.signed("msg_1", body)
		tc.mutate(f, r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusAccepted {
			t.Errorf("%s: passed", tc.name)
		}
		f.clock.Advance(-f.clock.Now().Sub(time.Unix(1_800_000_000, 0))) // undo "stale"
	}
	if s := door.Stats(); s.PeakSlots != 0 || s.Bytes != 0 || ingest.calls != 0 {
		t.Errorf("junk reached the front door (peak %d work slots) or ingest (%d runs)", s.PeakSlots, ingest.calls)
	}
	r := f.signed("msg_1", body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted || door.Stats().PeakSlots != 1 || !bytes.Equal(ingest.body, body) {
		t.Errorf("a signed request: %d, peak %d, ingest saw %d bytes; want 202 through the front door with the body", w.Code, door.Stats().PeakSlots, len(ingest.body))
	}
}

package standardwebhooks_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// downstream records what the wrapped handler saw.
type downstream struct {
	calls         int
	body          []byte
	contentLength int64
	getBody       []byte
	rawQuery      string
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.calls++
	d.body, _ = io.ReadAll(r.Body)
	d.contentLength = r.ContentLength
	d.rawQuery = r.URL.RawQuery
	if r.GetBody != nil {
		if rc, err := r.GetBody(); err == nil {
			d.getBody, _ = io.ReadAll(rc)
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func checkProblem(t *testing.T, w *httptest.ResponseRecorder, status int, typ string) problemDoc {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		t.Error("a 401 without WWW-Authenticate")
	}
	var p problemDoc
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	if p.Type != typ || p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v, want type %s, status %d, a title and a detail", p, typ, status)
	}
	return p
}

type handlerFixture struct {
	secret standardwebhooks.Secret
	clock  *fakeClock
	next   *downstream
	h      http.Handler
	logs   *bytes.Buffer
}

func newHandlerFixture(t *testing.T, cfg standardwebhooks.VerifierConfig) *handlerFixture {
	f := &handlerFixture{secret: rawSecret(t, 'k', 32), clock: newClock(time.Unix(1_800_000_000, 0)), next: &downstream{}, logs: &bytes.Buffer{}}
	cfg.Secrets = []standardwebhooks.Secret{f.secret}
	cfg.Now = f.clock.Now
	cfg.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.h = newVerifier(t, cfg).Handler(f.next)
	return f
}

// signed returns a request for body signed now under the fixture's secret.
func (f *handlerFixture) signed(id string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
	now := f.clock.Now()
	r.Header.Set(standardwebhooks.HeaderID, id)
	r.Header.Set(standardwebhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	r.Header.Set(standardwebhooks.HeaderSignature, standardwebhooks.Sign(f.secret, id, now, body))
	return r
}

func (f *handlerFixture) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestHandlerPassesAuthenticRequestWithFullBody(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	big := bytes.Repeat(body, 2000) // ~200 KB, more than any internal buffer hint
	w := f.serve(f.signed("msg_1", big))
	if w.Code != http.StatusAccepted || f.next.calls != 1 {
		t.Fatalf("status %d, next ran %d times; want 202 and once", w.Code, f.next.calls)
	}
	if !bytes.Equal(f.next.body, big) || f.next.contentLength != int64(len(big)) || !bytes.Equal(f.next.getBody, big) {
		t.Errorf("next saw a body of %d bytes (ContentLength %d, GetBody %d), want %d", len(f.next.body), f.next.contentLength, len(f.next.getBody), len(big))
	}
	if !strings.Contains(f.logs.String(), "webhook verified") {
		t.Errorf("no debug record of the verified request: %s", f.logs)
	}
}

func TestHandlerPassesEmptyBody(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	r := f.signed("msg_1", nil)
	r.Body = http.NoBody
	if w := f.serve(r); w.Code != http.StatusAccepted || f.next.calls != 1 {
		t.Fatalf("status %d, next ran %d times; want 202 and once", w.Code, f.next.calls)
	}
}

func TestHandlerRejectsWithoutRunningNext(t *testing.T) {
	tests := []struct {
		name    string
		request func(f *handlerFixture) *http.Request
		status  int
		typ     string
	}{
		{"unsigned", func(f *handlerFixture) *http.Request {
			return httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing},
		{"no signature header", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Header.Del(standardwebhooks.HeaderSignature)
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing},
		{"forged signature", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid},
		{"signed with another secret", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Header.Set(standardwebhooks.HeaderSignature, standardwebhooks.Sign(rawSecret(t, 'z', 32), "msg_1", f.clock.Now(), body))
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid},
		{"tampered body", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Body = io.NopCloser(bytes.NewReader(bytes.Replace(body, []byte("13.4"), []byte("13.5"), 1)))
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid},
		{"another id under the same signature", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Header.Set(standardwebhooks.HeaderID, "msg_2")
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid},
		{"malformed timestamp", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Header.Set(standardwebhooks.HeaderTimestamp, "soon")
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid},
		{"stale", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			f.clock.Advance(6 * time.Minute)
			return r
		}, http.StatusUnauthorized, standardwebhooks.ProblemTimestampOutOfTolerance},
		{"from the future", func(f *handlerFixture) *http.Request {
			f.clock.Advance(6 * time.Minute)
			r := f.signed("msg_1", body)
			f.clock.Advance(-6 * time.Minute)
			return r
		}, http.StatusServiceUnavailable, standardwebhooks.ProblemTimestampAhead},
		{"body over the limit", func(f *handlerFixture) *http.Request {
			return f.signed("msg_1", bytes.Repeat([]byte("x"), 1001))
		}, http.StatusRequestEntityTooLarge, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-too-large"},
		{"body over the limit, length unknown", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", bytes.Repeat([]byte("x"), 1001))
			r.Body = io.NopCloser(io.MultiReader(r.Body)) // hides the length
			r.ContentLength = -1
			return r
		}, http.StatusRequestEntityTooLarge, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-too-large"},
		{"body over an upstream MaxBytesReader", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", bytes.Repeat([]byte("x"), 500))
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 100)
			r.ContentLength = -1
			return r
		}, http.StatusRequestEntityTooLarge, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-too-large"},
		{"body shorter than its Content-Length", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.ContentLength = int64(len(body)) + 1
			return r
		}, http.StatusRequestTimeout, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-unreadable"},
		{"body unreadable", func(f *handlerFixture) *http.Request {
			r := f.signed("msg_1", body)
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:10]), errReader{}))
			r.ContentLength = -1
			return r
		}, http.StatusRequestTimeout, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHandlerFixture(t, standardwebhooks.VerifierConfig{MaxBodyBytes: 1000})
			w := f.serve(tt.request(f))
			checkProblem(t, w, tt.status, tt.typ)
			if f.next.calls != 0 {
				t.Errorf("next ran %d times for a rejected request", f.next.calls)
			}
			if !strings.Contains(f.logs.String(), "level=WARN msg=\"webhook rejected\"") {
				t.Errorf("no warning logged: %s", f.logs)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestHandlerChecksHeadersBeforeReadingBody(t *testing.T) {
	for name, mutate := range map[string]func(*handlerFixture, *http.Request){
		"unsigned": func(_ *handlerFixture, r *http.Request) { r.Header.Del(standardwebhooks.HeaderSignature) },
		"stale":    func(f *handlerFixture, _ *http.Request) { f.clock.Advance(time.Hour) },
	} {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
		r := f.signed("msg_1", body)
		cr := &countingReader{r: r.Body}
		r.Body = io.NopCloser(cr)
		mutate(f, r)
		if w := f.serve(r); w.Code != http.StatusUnauthorized {
			t.Fatalf("%s: status %d, want 401", name, w.Code)
		}
		if cr.n != 0 {
			t.Errorf("%s: %d body bytes read before rejecting on the headers", name, cr.n)
		}
	}
}

func TestHandlerRejectsADeclaredOversizeBodyWithoutReadingIt(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{MaxBodyBytes: 1000})
	big := bytes.Repeat([]byte("x"), 1001)
	r := f.signed("msg_1", big)
	cr := &countingReader{r: r.Body}
	r.Body = io.NopCloser(cr)
	checkProblem(t, f.serve(r), http.StatusRequestEntityTooLarge, "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#body-too-large")
	if cr.n != 0 {
		t.Errorf("read %d bytes of a body whose Content-Length is over the limit", cr.n)
	}
}

// TestHandlerMemoryFollowsBytesReceived: a request that declares a large
// Content-Length and sends a few bytes costs about what it sent, far less
// than what it declared.
func TestHandlerMemoryFollowsBytesReceived(t *testing.T) {
	for _, declared := range []int64{64 << 10, 1 << 20} {
		f := newHandlerFixture(t, standardwebhooks.VerifierConfig{MaxBodyBytes: 1 << 20})
		least := uint64(math.MaxUint64)
		for range 5 {
			r := f.signed("msg_1", body)
			r.ContentLength = declared
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f.serve(r)
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if least > uint64(declared)/2 {
			t.Errorf("a request declaring %d bytes and sending %d allocated %d bytes, want at most %d", declared, len(body), least, declared/2)
		}
	}
}

func TestHandlerRejectsWhateverTheMethod(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		w := f.serve(httptest.NewRequest(m, "/webhooks", nil))
		checkProblem(t, w, http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing)
	}
	if f.next.calls != 0 {
		t.Errorf("next ran %d times", f.next.calls)
	}
}

func TestHandlerProblemDetails(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	r := f.signed("msg_1", body)
	f.clock.Advance(7 * time.Minute)
	p := checkProblem(t, f.serve(r), http.StatusUnauthorized, standardwebhooks.ProblemTimestampOutOfTolerance)
	if !strings.Contains(p.Detail, "7m0s in the past") || !strings.Contains(p.Detail, "5m0s") {
		t.Errorf("detail %q does not say how stale the timestamp is and what is accepted", p.Detail)
	}
	r = httptest.NewRequest(http.MethodPost, "/webhooks", nil)
	r.Header.Set(standardwebhooks.HeaderID, "msg_1")
	p = checkProblem(t, f.serve(r), http.StatusUnauthorized, standardwebhooks.ProblemSignatureMissing)
	if !strings.Contains(p.Detail, "webhook-timestamp or webhook-signature") || strings.HasPrefix(p.Detail, "standardwebhooks:") {
		t.Errorf("detail %q does not name exactly the missing headers, or carries the Go error prefix", p.Detail)
	}
}

func TestHandlerNeverLogsSecretsOrSignatures(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	good := f.signed("msg_1", body)
	sig := good.Header.Get(standardwebhooks.HeaderSignature)
	f.serve(good)
	bad := f.signed("msg_2", body)
	bad.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
	f.serve(bad)
	logs := f.logs.String()
	for _, s := range []string{sig[3:], vectorWrongSignature[3:], f.secret.Encode()[6:]} {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains %q:\n%s", s, logs)
		}
	}
	msg2 := sha256.Sum256([]byte("msg_2"))
	if !strings.Contains(logs, "webhook_id_sha256="+hex.EncodeToString(msg2[:])) || !strings.Contains(logs, "reason=signature_invalid") {
		t.Errorf("the rejection record lacks the id or the reason:\n%s", logs)
	}
}

package contracttest

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// defaultContentType is the Content-Type of the suite's deliveries when
// Target.ContentType is empty.
const defaultContentType = "application/geo+json"

// Target is the receiver under test and what the suite must know about it.
// Exactly one of Handler and URL must be set; every other zero field means
// the documented default.
type Target struct {
	// Handler is the receiving handler, wrapped by the middleware as it is
	// in production. The suite serves it on a loopback httptest.Server of
	// its own.
	Handler http.Handler

	// URL is the base URL of a running receiver, e.g.
	// "http://127.0.0.1:8080"; Path is appended to it. A URL with a path
	// and no Path names the ingest endpoint itself:
	// "http://127.0.0.1:8080/features" is the same as that base URL with
	// Path "/features". The suite opens at
	// most six connections to it at once, as one sender under
	// the front door's default bound of eight per host, so a receiver
	// behind a front door takes the suite as it is.
	URL string

	// Path is the ingest path, e.g. "/features" (default: URL's own path,
	// else "/").
	Path string

	// NewPayload returns a valid payload, different for every n, that the
	// receiver accepts with a 2xx answer. The suite calls it with
	// n = 1, 2, 3, … over one Run. Default: a GeoJSON Feature with a Point
	// geometry and an id unique to the Run and n.
	NewPayload func(n int) []byte

	// InvalidPayload is a body the receiver must reject with 422 (and the
	// sender must never retry). Default: a GeoJSON Feature whose Polygon
	// ring is not closed.
	InvalidPayload []byte

	// SkipInvalidGeometry skips InvalidGeometryIs422AndNotRetried, for a
	// receiver that has no validator yet. The subtest then reports itself
	// skipped, so the gap stays visible.
	SkipInvalidGeometry bool

	// ContentType is the Content-Type of every request (default
	// "application/geo+json").
	ContentType string

	// Header holds extra headers sent with every request, e.g. the
	// credentials that the receiver's Config.Scope reads.
	Header http.Header

	// Lease is how long a key can stay in flight at the receiver when the
	// request holding it will never finish it: the lease its store grants,
	// [middleware.Middleware.StoreLease]. Default that of the default
	// middleware.Config, 47 s (DefaultLease + DefaultLease/2 +
	// DefaultStoreTimeout).
	Lease time.Duration

	// Sign, if set, signs every request the suite sends, after its
	// headers are set and before it goes out, with the idempotency key
	// (empty for a request sent without one) and the exact body: for a
	// receiver that verifies Standard Webhooks, a
	// standardwebhooks.Signer's SignRequest. The receiver then takes its
	// key from the signed message id, so MissingKeyIs400 and
	// MalformedKeyIs400 do not apply, and report so.
	Sign func(req *http.Request, key string, body []byte) error

	// Executions, if set, returns how many times the ingest handler behind
	// the middleware has run so far, for all keys together. The suite reads
	// it before and after each rule and checks the difference. It must be
	// safe to call from the test goroutine while the receiver serves.
	Executions func() int
}

// Run checks every rule of the contract against target, each in a subtest
// of t named after the rule (see the package documentation). It fails t at
// once when target is unusable: neither or both of Handler and URL, or a
// URL that is not an absolute http URL.
//
// Run and [Check] run the same rules, from one list: Run reports them to t,
// Check in a [Report].
func Run(t *testing.T, target Target) {
	t.Helper()
	s, err := newSuite(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	var passedOnSender []string
	for _, r := range s.rules() {
		if t.Run(r.name, func(t *testing.T) { r.fn(testingT{t}) }) && r.needsReplays {
			passedOnSender = append(passedOnSender, r.name)
		}
	}
	if len(passedOnSender) > 0 && !s.seen.replayed() {
		t.Logf("inconclusive: %s: %s", strings.Join(passedOnSender, ", "), noReplays)
	}
	if d := s.seen.diagnosis(); d != "" {
		t.Log(d)
	}
}

// rule is one rule of the contract: its name, its title for readers
// without Go, and its check.
type rule struct {
	name  string
	title string
	fn    func(t tester)
	// needsReplays: the rule shows something of the receiver only if the
	// receiver holds and replays keys; against one that never answers as
	// a replay, only the paired sender could break it, and a pass is
	// inconclusive.
	needsReplays bool
}

// rules lists the contract's rules in the order they run.
func (s *suite) rules() []rule {
	return []rule{
		{"LostAcknowledgementIsReplayed", "lost acknowledgement is replayed", s.testLostAcknowledgement, false},
		{"ConcurrentDuplicatesExecuteOnce", "concurrent duplicates execute once", s.testConcurrentDuplicates, false},
		{"KeyReuseWithAnotherPayloadIs422", "key reused with another payload is 422", s.testKeyReuse, false},
		{"InvalidGeometryIs422AndNotRetried", "invalid geometry is 422 and not retried", s.testInvalidGeometry, false},
		{"RetryAfterIsHonoured", "Retry-After is honoured", s.testRetryAfter, true},
		{"MissingKeyIs400", "missing key is 400", s.testMissingKey, false},
		{"MalformedKeyIs400", "malformed key is 400", s.testMalformedKey, false},
		{"ReplayCarriesNoSetCookie", "replay carries no Set-Cookie", s.testNoSetCookie, false},
		{"BlockedKeyIsDelivered", "blocked key is delivered", s.testBlockedKey, true},
	}
}

// noReplays is why a needsReplays rule that passed is inconclusive.
const noReplays = "the receiver never answered as a replay (Idempotent-Replayed: true) in this run, " +
	"so it held no key for the rule to test: it passed on the paired sender's behaviour alone"

// suite is one Run: the resolved target and the state shared by its rules.
type suite struct {
	base        string // base URL, without a trailing slash
	path        string
	newPayload  func(n int) []byte
	invalid     []byte
	skipInvalid bool
	contentType string
	header      http.Header
	sign        func(req *http.Request, key string, body []byte) error
	executions  func() int
	lease       time.Duration
	close       func() // stops the suite's own server, if any
	seen        *seen  // what the receiver answered

	run      string // random id of this Run, in every key and default payload
	payloads atomic.Int64
	keys     atomic.Int64
}

func newSuite(target Target) (*suite, error) {
	switch {
	case target.Handler == nil && target.URL == "":
		return nil, errors.New("contracttest: Target needs a Handler or a URL")
	case target.Handler != nil && target.URL != "":
		return nil, errors.New("contracttest: Target has both a Handler and a URL; set one")
	}
	run, err := randomID()
	if err != nil {
		return nil, err
	}
	s := &suite{
		path:        target.Path,
		newPayload:  target.NewPayload,
		invalid:     target.InvalidPayload,
		skipInvalid: target.SkipInvalidGeometry,
		contentType: target.ContentType,
		header:      target.Header.Clone(),
		sign:        target.Sign,
		executions:  target.Executions,
		lease:       target.Lease,
		close:       func() {},
		run:         run,
	}
	if s.lease <= 0 {
		s.lease = middleware.DefaultLease + middleware.DefaultLease/2 + middleware.DefaultStoreTimeout
	}
	if s.path != "" && !strings.HasPrefix(s.path, "/") {
		s.path = "/" + s.path
	}
	if s.contentType == "" {
		s.contentType = defaultContentType
	}
	if s.newPayload == nil {
		s.newPayload = s.defaultPayload
	}
	if s.invalid == nil {
		s.invalid = []byte(`{"type":"Feature","id":"contracttest-` + s.run + `-invalid","geometry":{"type":"Polygon","coordinates":[[[13.0,52.0],[14.0,52.0],[14.0,53.0],[13.0,53.0]]]},"properties":{"why":"the ring is not closed"}}`)
	}
	if target.Handler != nil {
		srv := httptest.NewServer(target.Handler)
		s.close = srv.Close
		s.base = srv.URL
	} else {
		u, err := url.Parse(target.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("contracttest: Target.URL %q is not an absolute http URL", target.URL)
		}
		s.base = strings.TrimRight(target.URL, "/")
		if s.path == "" && strings.Trim(u.Path, "/") != "" {
			// The URL names the endpoint itself: keep its path as given
			// (a trailing slash too), never one added to it.
			u.Fragment, u.RawFragment = "", ""
			s.path = u.RequestURI()
			s.base = u.Scheme + "://" + u.Host
		}
	}
	if s.path == "" {
		s.path = "/"
	}
	bu, _ := url.Parse(s.base)
	s.seen = newSeen(bu.Host)
	return s, nil
}

// endpoint is the URL the deliveries go to.
func (s *suite) endpoint() string { return s.ingestURL(s.base) }

func randomID() (string, error) {
	var b [6]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", fmt.Errorf("contracttest: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (s *suite) defaultPayload(n int) []byte {
	return fmt.Appendf(nil, `{"type":"Feature","id":"contracttest-%s-%d","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":%d}}`, s.run, n, n)
}

// payload returns the next valid payload.
func (s *suite) payload() []byte { return s.newPayload(int(s.payloads.Add(1))) }

// key returns a new key, never used before by any Run: a token, so the
// sender sends it bare.
func (s *suite) key(t tester) string {
	name := t.Name()
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, name)
	return fmt.Sprintf("contracttest-%s-%s-%d", s.run, name, s.keys.Add(1))
}

// ingestURL is the URL deliveries go to at base (the target's, or a proxy's).
func (s *suite) ingestURL(base string) string { return base + s.path }

// count reads Target.Executions; ok is false without it.
func (s *suite) count() (n int, ok bool) {
	if s.executions == nil {
		return 0, false
	}
	return s.executions(), true
}

// expectExecutions returns a function that, called at the end of a rule,
// checks that the ingest handler ran want times since.
func (s *suite) expectExecutions(t tester, rule string) func(want int) {
	before, ok := s.count()
	return func(want int) {
		t.Helper()
		if !ok {
			return
		}
		after, _ := s.count()
		if got := after - before; got != want {
			t.Errorf("%s\n\tthe ingest handler ran %d times during this rule (Target.Executions went from %d to %d), want %d", rule, got, before, after, want)
		}
	}
}

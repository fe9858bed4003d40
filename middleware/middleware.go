package middleware

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/jcs"
	"github.com/geoidem/geoidem/keystore"
)

// Defaults for the zero fields of Config.
const (
	DefaultKeyHeader      = "Idempotency-Key"
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxRecordBytes = 1 << 20
	DefaultLease          = 30 * time.Second
	DefaultRetention      = 24 * time.Hour
	DefaultStoreTimeout   = 2 * time.Second
	DefaultRetryAfter     = time.Second
)

// DefaultMethods are the methods the middleware covers by default.
var DefaultMethods = []string{http.MethodPost, http.MethodPatch}

// DefaultReplayHeaders are the response headers recorded and replayed by
// default. Set-Cookie, hop-by-hop and authentication headers are never
// recorded, whatever the configuration.
var DefaultReplayHeaders = []string{"Content-Type", "Content-Location", "Location", "ETag", "Last-Modified", "Link"}

// neverReplayed are headers that Config.ReplayHeaders may not name: they
// carry one client's session or credentials, or describe one connection.
var neverReplayed = map[string]bool{
	"Set-Cookie": true, "Authorization": true, "Proxy-Authorization": true, "Www-Authenticate": true,
	"Proxy-Authenticate": true, "Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Idempotent-Replayed": true,
}

// A Validator checks a request body after its key is claimed and before the
// handler runs. A non-nil error is the final answer for that payload: it is
// recorded and replayed like a handler's response, so it must not depend on
// anything that could change on a retry. When the error implements
// HTTPProblem, its status and problem document are the answer; otherwise
// the answer is 422 with the error's text as the detail.
//
// Package geojson's RequestValidator satisfies Validator.
type Validator interface {
	ValidateRequest(r *http.Request, body []byte) error
}

// ValidatorFunc adapts a function to Validator.
type ValidatorFunc func(r *http.Request, body []byte) error

// ValidateRequest calls f(r, body).
func (f ValidatorFunc) ValidateRequest(r *http.Request, body []byte) error { return f(r, body) }

// Config configures a Middleware. Zero fields mean the documented defaults.
type Config struct {
	// Methods are the request methods the middleware covers, matched
	// case-insensitively ("post" is covered by POST); requests with other
	// methods pass through untouched. Default DefaultMethods.
	Methods []string

	// KeyHeader is the request header that carries the key. Default
	// DefaultKeyHeader ("Idempotency-Key").
	KeyHeader string

	// KeyOptional lets requests without a key pass through untouched instead
	// of being answered 400. A malformed key is answered 400 either way.
	KeyOptional bool

	// Scope returns the scope of a request's key: requests share a stored key
	// only when both their scope and their key are equal. Default: the method
	// and the escaped URL path (URL.EscapedPath: /a%2Fb and /a/b are
	// different routes for http.ServeMux, so they are different scopes).
	// Include the caller's authenticated identity, so that one tenant can
	// never replay another's response.
	Scope func(r *http.Request) string

	// CanonicalJSON fingerprints a JSON body by its RFC 8785 canonical form
	// instead of its bytes, so a payload re-serialised with another member
	// order or whitespace still matches. Bodies that are not I-JSON are
	// fingerprinted by their bytes: among them, bodies with a number that
	// float64 does not represent exactly (9007199254740993) or a lone
	// surrogate escape ("\ud800"), whose canonical forms would otherwise
	// equal those of other payloads.
	CanonicalJSON bool

	// Validator, if set, checks each body after the claim and before the
	// handler.
	Validator Validator

	// MaxBodyBytes bounds request bodies; larger ones are answered 413 before
	// anything is claimed. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// MaxRecordBytes bounds the response body recorded for replay. A larger
	// response is still sent in full, but what is recorded, and replayed, is a
	// problem document under the same status saying it was too large, so that
	// the request is never silently executed twice. Default
	// DefaultMaxRecordBytes.
	MaxRecordBytes int

	// ReplayHeaders are the response headers recorded and replayed; those
	// the handler sends as trailers are replayed as trailers. Default
	// DefaultReplayHeaders. Naming Set-Cookie, a hop-by-hop header or an
	// authentication header is an error, and so is a name that is not a
	// header field name (such as "Trailer:X", net/http's TrailerPrefix form).
	ReplayHeaders []string

	// Lease is how long a claim holds its key without renewal; the
	// middleware renews it every Lease/3 while the handler runs, so it only
	// bounds how long a crashed process blocks its keys. If no renewal
	// succeeds, the handler's context is canceled, with cause
	// keystore.ErrLeaseLost, once Lease has passed since the last successful
	// claim or extension was sent (see the package documentation, "Leases").
	// Default DefaultLease.
	Lease time.Duration

	// Retention is how long a response is kept for replay. It must outlast
	// the sender's whole retry window. Default DefaultRetention.
	Retention time.Duration

	// StoreTimeout bounds each store operation; a store slower than this is
	// treated as unavailable (503, handler not run). It must be less than
	// Lease/3, so that a renewal sent at Lease/3 can be answered well inside
	// the lease. Default: DefaultStoreTimeout, or Lease/4 if that is less.
	StoreTimeout time.Duration

	// RetryAfter is the Retry-After sent with 503 (store unavailable), and
	// the least sent with 409 (in flight), whose Retry-After is otherwise
	// the holder's remaining lease, capped at Lease/6. Default
	// DefaultRetryAfter.
	RetryAfter time.Duration

	// WaitInFlight, when positive, makes a duplicate of a request that is
	// still running wait up to this long for the original to finish and then
	// replay its answer, instead of answering 409 at once.
	WaitInFlight time.Duration

	// Logger receives warnings (store failures, lost leases) and debug
	// records of each outcome. Keys are logged hashed, never raw. Default:
	// no logging.
	Logger *slog.Logger

	// Observer, if set, is called synchronously with each request's outcome.
	// It must be fast and safe for concurrent use.
	Observer func(Event)
}

// Middleware makes a handler idempotent: see the package documentation.
type Middleware struct {
	store         keystore.Store
	nonBlocking   bool // the store never waits: no timeouts needed around it
	methods       map[string]bool
	keyHeader     string
	keyOptional   bool
	scope         func(*http.Request) string
	canonical     bool
	validator     Validator
	decoder       RequestDecoder // validator, when it can decode
	headers       HeaderChecker  // validator, when it checks headers before the claim
	maxBody       int64
	maxRecord     int
	replayHeaders []string
	lease         time.Duration
	retention     time.Duration
	storeTimeout  time.Duration
	retryAfter    time.Duration
	waitInFlight  time.Duration
	log           *slog.Logger
	observe       func(Event)
	bg            background // records and releases retried after their requests
}

// New returns a Middleware that keeps its keys in store. It returns an error
// for a nil store or an invalid Config.
func New(store keystore.Store, cfg Config) (*Middleware, error) {
	if store == nil {
		return nil, errors.New("middleware: nil store")
	}
	nonBlocking := keystore.IsNonBlocking(store)
	m := &Middleware{
		store:        store,
		nonBlocking:  nonBlocking,
		methods:      map[string]bool{},
		keyHeader:    http.CanonicalHeaderKey(orDefault(cfg.KeyHeader, DefaultKeyHeader)),
		keyOptional:  cfg.KeyOptional,
		scope:        cfg.Scope,
		canonical:    cfg.CanonicalJSON,
		validator:    cfg.Validator,
		maxBody:      orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		maxRecord:    orDefault(cfg.MaxRecordBytes, DefaultMaxRecordBytes),
		lease:        orDefault(cfg.Lease, DefaultLease),
		retention:    orDefault(cfg.Retention, DefaultRetention),
		storeTimeout: orDefault(cfg.StoreTimeout, DefaultStoreTimeout),
		retryAfter:   orDefault(cfg.RetryAfter, DefaultRetryAfter),
		waitInFlight: cfg.WaitInFlight,
		log:          cfg.Logger,
		observe:      cfg.Observer,
	}
	for _, d := range []struct {
		name string
		v    int64
	}{
		{"MaxBodyBytes", m.maxBody}, {"MaxRecordBytes", int64(m.maxRecord)}, {"Lease", int64(m.lease)},
		{"Retention", int64(m.retention)}, {"StoreTimeout", int64(m.storeTimeout)},
		{"RetryAfter", int64(m.retryAfter)}, {"WaitInFlight", int64(m.waitInFlight) + 1},
	} {
		if d.v <= 0 {
			return nil, fmt.Errorf("middleware: Config.%s must not be negative", d.name)
		}
	}
	if m.lease < 3*time.Millisecond {
		return nil, errors.New("middleware: Config.Lease must be at least 3ms")
	}
	if cfg.StoreTimeout == 0 {
		m.storeTimeout = min(DefaultStoreTimeout, m.lease/4)
	}
	if m.storeTimeout >= m.lease/3 {
		return nil, fmt.Errorf("middleware: Config.StoreTimeout (%v) must be less than Lease/3 (%v), so that a renewal fits inside the lease", m.storeTimeout, m.lease/3)
	}
	methods := cfg.Methods
	if len(methods) == 0 {
		methods = DefaultMethods
	}
	for _, meth := range methods {
		m.methods[strings.ToUpper(meth)] = true
	}
	headers := cfg.ReplayHeaders
	if headers == nil {
		headers = DefaultReplayHeaders
	}
	for _, h := range headers {
		if !isToken(h) {
			return nil, fmt.Errorf("middleware: Config.ReplayHeaders names %q, which is not a header field name", h)
		}
		c := http.CanonicalHeaderKey(h)
		if neverReplayed[c] {
			return nil, fmt.Errorf("middleware: Config.ReplayHeaders names %s, which is never replayed", c)
		}
		m.replayHeaders = append(m.replayHeaders, c)
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.decoder, _ = cfg.Validator.(RequestDecoder)
	m.headers, _ = cfg.Validator.(HeaderChecker)
	return m, nil
}

// isToken reports whether s is an RFC 9110 token, as a field name must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Handler wraps next so that each covered request runs it at most once per
// key: see the package documentation for every answer it gives.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.methods[r.Method] && !m.methods[strings.ToUpper(r.Method)] {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	reject := func(status int, typ, title, detail string) {
		writeProblem(w, status, problemJSON(typ, title, status, detail), 0)
		m.done(r.Context(), Event{Outcome: Rejected, Status: status}, start)
	}

	fields := r.Header.Values(m.keyHeader)
	switch {
	case len(fields) == 0 && m.keyOptional:
		next.ServeHTTP(w, r)
		return
	case len(fields) == 0:
		reject(http.StatusBadRequest, ProblemMissingKey, "Idempotency key required",
			"This request must carry an "+m.keyHeader+" header; send the same key with every retry of it.")
		return
	case len(fields) > 1:
		reject(http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key",
			"The request carries more than one "+m.keyHeader+" header.")
		return
	}
	key, err := ParseKey(fields[0])
	if err != nil {
		reject(http.StatusBadRequest, ProblemMalformedKey, "Malformed idempotency key", m.keyHeader+": "+err.Error()+".")
		return
	}

	if m.refuseHeaders(w, r, start) {
		return
	}
	body, err := m.readBody(r)
	if errors.Is(err, errBodyTooLarge) {
		reject(http.StatusRequestEntityTooLarge, ProblemBodyTooLarge, "Request body too large",
			fmt.Sprintf("The request body is larger than %d bytes.", m.maxBody))
		return
	} else if err != nil {
		reject(http.StatusBadRequest, ProblemBodyUnreadable, "Request body unreadable",
			"The request body could not be read in full; nothing was claimed, so retry with the same key.")
		return
	}

	var storeKey string
	if m.scope == nil { // the default scope, without building its string
		storeKey = storeKey3(r.Method, " ", r.URL.EscapedPath(), key)
	} else {
		storeKey = StoreKey(m.scope(r), key)
	}
	fp := m.fingerprint(r, body)
	claim, sent, err := m.claim(r.Context(), storeKey, fp)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, problemJSON(ProblemStoreDown, "Idempotency store unavailable", http.StatusServiceUnavailable,
			"The request was not executed; retry later with the same key."), m.retryAfter)
		m.log.LogAttrs(r.Context(), slog.LevelWarn, "idempotency store unavailable", slog.String("key", storeKey), slog.Any("error", err))
		m.done(r.Context(), Event{Outcome: StoreError, Key: storeKey, Status: http.StatusServiceUnavailable, Err: err}, start)
		return
	}

	if claim.State != keystore.Acquired && claim.Fingerprint != fp {
		status := http.StatusUnprocessableEntity
		writeProblem(w, status, problemJSON(ProblemKeyReused, "Idempotency key reused", status,
			"This key was first used with a different request payload; use a new key for a new request."), 0)
		m.done(r.Context(), Event{Outcome: Mismatch, Key: storeKey, Status: status}, start)
		return
	}
	if claim.State == keystore.Acquired && r.Context().Err() != nil {
		m.abandon(w, r, storeKey, claim, start)
		return
	}
	switch claim.State {
	case keystore.InFlight:
		writeProblem(w, http.StatusConflict, problemJSON(ProblemInFlight, "Request in flight", http.StatusConflict,
			"A request with this key is still being processed; retry later with the same key to receive its response."), m.inFlightRetryAfter(claim.LeaseRemaining))
		m.done(r.Context(), Event{Outcome: InFlight, Key: storeKey, Status: http.StatusConflict}, start)
		return
	case keystore.Completed:
		status := m.replay(r.Context(), w, storeKey, claim.Record)
		m.done(r.Context(), Event{Outcome: Replayed, Key: storeKey, Status: status}, start)
		return
	}
	m.execute(w, r, next, body, storeKey, claim, sent, start)
}

// fingerprint hashes what must match between a request and its retries:
// the method, the path, the query and the body (or the body's canonical
// form). The query is included so that, say, ?dry-run=1 and a real run
// under one key are a mismatch, not a replay of each other.
func (m *Middleware) fingerprint(r *http.Request, body []byte) keystore.Fingerprint {
	content := body
	if m.canonical && len(body) > 0 {
		if c, err := jcs.Canonicalize(body); err == nil {
			content = c
		}
	}
	const prefix = "geoidem fingerprint v1\x00"
	path := r.URL.EscapedPath() // /a%2Fb and /a/b may be different routes
	var stack [4096]byte        // small requests hash from the stack, without allocating
	if n := len(prefix) + len(r.Method) + len(path) + len(r.URL.RawQuery) + 3 + len(content); n <= len(stack) {
		b := append(stack[:0], prefix...)
		b = append(append(b, r.Method...), 0)
		b = append(append(b, path...), 0)
		b = append(append(b, r.URL.RawQuery...), 0)
		return sha256.Sum256(append(b, content...))
	}
	h := hashers.Get().(hash.Hash)
	defer hashers.Put(h)
	h.Reset()
	io.WriteString(h, prefix)
	io.WriteString(h, r.Method)
	h.Write([]byte{0})
	io.WriteString(h, path)
	h.Write([]byte{0})
	io.WriteString(h, r.URL.RawQuery)
	h.Write([]byte{0})
	h.Write(content)
	var fp keystore.Fingerprint
	h.Sum(fp[:0])
	return fp
}

var hashers = sync.Pool{New: func() any { return sha256.New() }}

// claim claims key, and, with WaitInFlight, waits for an in-flight original
// with the same fingerprint to finish. It also returns when the last Claim
// was sent: an acquired lease may end at that time plus the lease.
func (m *Middleware) claim(ctx context.Context, key string, fp keystore.Fingerprint) (keystore.Claim, time.Time, error) {
	var deadline time.Time
	if m.waitInFlight > 0 {
		deadline = time.Now().Add(m.waitInFlight)
	}
	pause := 10 * time.Millisecond
	for {
		sent := time.Now()
		c, err := m.storeClaim(ctx, key, fp)
		if err != nil || c.State != keystore.InFlight || c.Fingerprint != fp {
			return c, sent, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return c, sent, nil
		}
		t := time.NewTimer(min(pause, left, c.LeaseRemaining))
		select {
		case <-ctx.Done():
			t.Stop()
			return c, sent, nil
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// storeClaim runs one Claim under a context the client cannot cancel
// (bounded by Config.StoreTimeout): a claim canceled by a client that left
// may commit in the store while its reply is lost, leaving the key in
// flight for the whole lease. See abandon for what follows.
func (m *Middleware) storeClaim(ctx context.Context, key string, fp keystore.Fingerprint) (keystore.Claim, error) {
	ctx, cancel := m.storeContext(context.WithoutCancel(ctx))
	defer cancel()
	return m.store.Claim(ctx, key, fp, m.lease)
}

// abandon releases at once a key acquired for a request whose context was
// done before its claim returned (the client left, or the server gave up):
// the handler does not run, and a retry finds the key free rather than in
// flight for the whole lease. A release that fails is retried in the
// background, as after a handler's 5xx.
func (m *Middleware) abandon(w http.ResponseWriter, r *http.Request, key string, claim keystore.Claim, start time.Time) {
	hold := &keystore.Hold{Key: key, Token: claim.Token, Retention: m.retention}
	rn := new(renewal)
	rn.start(m, r.Context(), hold, func(error) {}, start)
	m.release(r.Context(), hold, rn)
	writeProblem(w, http.StatusServiceUnavailable, problemJSON(ProblemStoreDown, "Idempotency store unavailable", http.StatusServiceUnavailable,
		"The request was canceled before it ran; it was not executed, so retry with the same key."), m.retryAfter)
	m.done(r.Context(), Event{Outcome: Canceled, Key: key, Status: http.StatusServiceUnavailable, TookOver: claim.TookOver, Err: context.Cause(r.Context())}, start)
}

// inFlightRetryAfter is the Retry-After of a 409: what the store knows,
// the holder's remaining lease, capped at Lease/6 and never below
// Config.RetryAfter. A holder that is alive renews its lease, so its
// remaining lease says little and the cap keeps the wait short; a holder
// that is gone (a crash, a release that failed) frees the key when its
// lease ends, and the sender comes back about then rather than polling.
func (m *Middleware) inFlightRetryAfter(remaining time.Duration) time.Duration {
	return max(m.retryAfter, min(remaining, m.lease/6))
}

// storeContext bounds one store operation by Config.StoreTimeout, unless
// the store is keystore.NonBlocking and needs no bound.
func (m *Middleware) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.nonBlocking {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, m.storeTimeout)
}

// exchange is the state of one request that acquired its key, allocated
// in one piece.
type exchange struct {
	hold    keystore.Hold
	rec     hijacker
	body    bodyReader
	renewal renewal
}

// bodyReader is the request body the handler reads: the bytes the
// middleware has already read and fingerprinted.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// execute runs the validator and the handler for an acquired claim, renews
// the lease while they run, and records or releases afterwards.
func (m *Middleware) execute(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, key string, claim keystore.Claim, sent, start time.Time) {
	x := &exchange{
		hold: keystore.Hold{Key: key, Token: claim.Token, Retention: m.retention},
		rec:  hijacker{recorder{w: w, allow: m.replayHeaders, limit: m.maxRecord}},
	}
	hold, rec := &x.hold, &x.rec.recorder
	rw := x.rec.writer()
	ctx, cancel := context.WithCancelCause(keystore.ContextWithHold(r.Context(), hold))
	defer cancel(nil)
	x.renewal.start(m, ctx, hold, cancel, sent)

	r2 := r.WithContext(ctx)
	x.body.Reset(body)
	r2.Body = &x.body
	r2.ContentLength = int64(len(body))

	// If the validator or the handler panics before a final answer that is
	// not retryable was sent, release the claim, so that a retry can run
	// again; after such an answer, the work is done: record that it was
	// interrupted, never release. Either way the panic goes on to
	// net/http's recovery.
	finished := false
	defer func() {
		if !finished {
			m.settlePanic(r.Context(), hold, &x.renewal, rec, claim.TookOver, start)
		}
	}()

	outcome := Executed
	var verr error
	if m.validator != nil {
		r2, verr = m.validate(r2, body)
	}
	if verr != nil {
		outcome = Invalid
		status, doc := http.StatusUnprocessableEntity, []byte(nil)
		var hp HTTPProblem
		if errors.As(verr, &hp) {
			status, doc = hp.HTTPStatus(), hp.ProblemJSON()
		} else {
			doc = problemJSON(ProblemInvalid, "Invalid request", status, verr.Error())
		}
		writeProblem(rec, status, doc, 0)
		rec.keepNoStore()
	} else {
		next.ServeHTTP(rw, r2)
	}
	finished = true
	// The renewal goes on until the response is recorded or released: if
	// the store fails now, the record is retried in the background under
	// the same lease.
	gaveUp := rec.status == 0 && rec.size == 0 && !rec.hijacked && ctx.Err() != nil
	if rec.status == 0 && !rec.hijacked {
		rec.snapshot() // headers set without a write are still sent
	}

	ev := Event{Outcome: outcome, Key: key, Status: rec.finalStatus(), TookOver: claim.TookOver, Err: verr}
	switch {
	case hold.Completed():
		// The handler recorded its response itself, in its own transaction.
		x.renewal.stop()
	case gaveUp:
		// The handler returned without a word because its request was
		// canceled (the client left) or its lease was lost: it did no work
		// that could be replayed, so a retry must run it again.
		ev.Outcome = Released
		m.release(r.Context(), hold, &x.renewal)
	case retryable(ev.Status) && rec.replayable():
		ev.Outcome = Released
		m.release(r.Context(), hold, &x.renewal)
	default:
		m.record(r.Context(), hold, &x.renewal, rec.record(), &ev)
	}
	m.done(r.Context(), ev, start)
}

// retryable reports whether a status tells the sender to try again, so the
// response must not be recorded.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// settlePanic settles a hold whose validator or handler panicked. Before a
// final status, or after a retryable one, the claim is released. After a
// final status that is not retryable, the client has its answer and the
// work may have taken effect, so the key is completed (see
// recorder.interrupted): a retry learns the outcome and never runs the
// handler again. The observer
// reports the status actually sent (500 when none was).
func (m *Middleware) settlePanic(ctx context.Context, hold *keystore.Hold, rn *renewal, rec *recorder, tookOver bool, start time.Time) {
	ev := Event{Outcome: Released, Key: hold.Key, Status: rec.status, TookOver: tookOver, Err: ErrHandlerPanicked}
	switch {
	case hold.Completed():
		rn.stop()
		ev.Outcome = Executed
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after recording its response", slog.String("key", hold.Key))
	case !rec.hijacked && (rec.status == 0 || retryable(rec.status)):
		if ev.Status == 0 {
			ev.Status = http.StatusInternalServerError
		}
		m.release(ctx, hold, rn)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked; idempotency claim released", slog.String("key", hold.Key))
	default:
		ev.Outcome = Executed
		m.record(ctx, hold, rn, rec.interrupted(), &ev)
		m.log.LogAttrs(ctx, slog.LevelError, "handler panicked after its answer was sent; idempotency key completed, not released", slog.String("key", hold.Key), slog.Int("status", rec.status))
	}
	m.done(ctx, ev, start)
}

// ErrHandlerPanicked is the Event.Err of a request whose validator or
// handler panicked.
var ErrHandlerPanicked = errors.New("middleware: handler panicked")

// record completes hold with rec and reports a failure in ev. When the
// store fails (other than with a lost lease), the record is handed to the
// background (completeLater), which keeps rn renewing the lease while it
// tries again; otherwise rn is stopped.
func (m *Middleware) record(ctx context.Context, hold *keystore.Hold, rn *renewal, rec keystore.Record, ev *Event) {
	err := m.complete(ctx, hold, rec)
	if err == nil {
		rn.stop()
		return
	}
	ev.Err = err
	if errors.Is(err, keystore.ErrLeaseLost) {
		rn.stop()
		ev.Outcome = LeaseLost
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency lease lost before the response was recorded", slog.String("key", hold.Key))
		return
	}
	ev.Outcome = StoreError
	if errors.Is(err, keystore.ErrInvalidStatus) { // no retry can fix it
		rn.stop()
		m.log.LogAttrs(ctx, slog.LevelError, "idempotency record refused by the store; a retry after the lease ends will run the handler again",
			slog.String("key", hold.Key), slog.Any("error", err))
		return
	}
	m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency record not written within the request; retrying in the background while the lease holds",
		slog.String("key", hold.Key), slog.Any("error", err))
	m.completeLater(ctx, hold, rec, rn)
}

// complete records rec, once, within the request. It runs even when the
// client has gone: the work is done and its answer must be kept for the
// client's retry.
func (m *Middleware) complete(ctx context.Context, hold *keystore.Hold, rec keystore.Record) error {
	cctx, cancel := m.storeContext(context.WithoutCancel(ctx))
	defer cancel()
	return m.store.Complete(cctx, hold.Key, hold.Token, rec, m.retention)
}

// release gives up hold's claim and stops rn. When the store fails (other
// than with a lost lease), the release is retried in the background
// (releaseLater) until the lease may have ended.
func (m *Middleware) release(ctx context.Context, hold *keystore.Hold, rn *renewal) {
	rn.stop()
	rctx, cancel := m.storeContext(context.WithoutCancel(ctx))
	defer cancel()
	if err := m.store.Release(rctx, hold.Key, hold.Token); err != nil && !errors.Is(err, keystore.ErrLeaseLost) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency claim not released within the request; retrying in the background while the lease holds",
			slog.String("key", hold.Key), slog.Any("error", err))
		m.releaseLater(ctx, hold, rn)
	}
}

// replay writes a recorded response, marked as a replay, and returns its
// status. Only allow-listed headers are replayed, even from a record that a
// handler wrote itself (keystore.Hold), so Set-Cookie and its kind can never
// be replayed. A record whose status is outside 200–599 cannot be a final
// answer (net/http would panic on some): it is answered 500 with a
// response-not-recorded problem instead, never a panic.
func (m *Middleware) replay(ctx context.Context, w http.ResponseWriter, key string, rec keystore.Record) int {
	if rec.StatusCode < 200 || rec.StatusCode > 599 {
		m.log.LogAttrs(ctx, slog.LevelError, "idempotency record has an invalid status; answered 500", slog.String("key", key), slog.Int("status", rec.StatusCode))
		status := http.StatusInternalServerError
		w.Header().Set("Idempotent-Replayed", "true")
		writeProblem(w, status, problemJSON(ProblemNotRecorded, "Recorded response unusable", status,
			fmt.Sprintf("The request was executed once, but the response recorded for it has status %d, which cannot be replayed.", rec.StatusCode)), 0)
		return status
	}
	h := w.Header()
	for _, k := range m.replayHeaders {
		if vs, ok := rec.Header[k]; ok {
			h[k] = append([]string(nil), vs...)
		}
	}
	if vs, ok := rec.Header["Cache-Control"]; ok && len(vs) == 1 && vs[0] == "no-store" {
		h.Set("Cache-Control", "no-store") // the middleware's own problem documents
	}
	h.Set("Idempotent-Replayed", "true")
	var trailers []string // recorded under http.TrailerPrefix; sent as trailers, so chunked
	for _, k := range m.replayHeaders {
		if _, ok := rec.Header[http.TrailerPrefix+k]; ok {
			trailers = append(trailers, k)
			h.Add("Trailer", k)
		}
	}
	if trailers == nil {
		h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	}
	w.WriteHeader(rec.StatusCode)
	_, _ = w.Write(rec.Body)
	for _, k := range trailers {
		h[k] = append([]string(nil), rec.Header[http.TrailerPrefix+k]...)
	}
	return rec.StatusCode
}

func (m *Middleware) done(ctx context.Context, ev Event, start time.Time) {
	ev.Latency = time.Since(start)
	ev.Context = ctx
	if m.observe != nil {
		m.observe(ev)
	}
	if m.log.Enabled(context.Background(), slog.LevelDebug) {
		m.log.LogAttrs(context.Background(), slog.LevelDebug, "idempotency outcome",
			slog.String("outcome", ev.Outcome.String()), slog.String("key", ev.Key), slog.Int("status", ev.Status), slog.Duration("latency", ev.Latency))
	}
}

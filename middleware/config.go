package middleware

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/ratelog"
	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
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
	// only when both their scope and their key are equal. Default:
	// [DefaultScope], one scope per route of http.ServeMux (the method in
	// any case, the host of a host pattern, the path in every spelling the
	// mux routes alike), when the middleware wraps a route's handler.
	// Include the caller's authenticated identity, so that one tenant can
	// never replay another's response, and build the rest on DefaultScope
	// (tenantOf(r) + " " + middleware.DefaultScope(r)), or on a route's own
	// identity where another router routes by more than the method and the
	// path. A scope that tells apart what the router merges (r.Method as
	// sent, r.URL.EscapedPath, r.RequestURI) runs one delivery once per
	// spelling, and one that merges routes the router tells apart (r.Host
	// ignored behind host patterns, r.URL.Path, which merges /a%2Fb with
	// /a/b) replays one route's answer to the other.
	Scope func(r *http.Request) string

	// Client, if set, names the client of a request: its claim is made
	// for that client (keystore.ClaimArgs.Client), and a store with a
	// bound on each client's new keys (keystore.ClientBounded: the
	// ClientKeys per ClientWindow of memstore, under contention, of
	// redisstore and of pgstore) counts them, so that one client cannot
	// fill the store and deny the others. Replays are never counted nor
	// refused. Use an identity the client cannot choose: an
	// authenticated tenant, the verified sender of a Standard Webhook (set
	// in the request context by code after the verifier), or the remote
	// address. Default: none.
	Client func(r *http.Request) string

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

	// MaxRecordBytes bounds the record kept for replay: the whole record as
	// the store is given it (the length of the record's bytes: status,
	// recorded headers and trailers, and body), whatever path the response took (a body, headers
	// alone, a flush, trailers). Each claim tells the store
	// (keystore.ClaimArgs.RecordBytes), so that a store that reserves room
	// per claim (memstore) always has room for the record. A larger
	// response is still sent in full, but what is recorded, and replayed,
	// is a problem document (of about 400 bytes)
	// under the same status saying it was too large, so that the request is
	// never silently executed twice. A handler that records its own
	// response (keystore.Hold, pgstore's InTx and CompleteTx) is held to
	// it too (Hold.MaxRecordBytes). At least 1 KiB (1024), room for that
	// problem document. Default DefaultMaxRecordBytes.
	MaxRecordBytes int

	// ReplayHeaders are the response headers recorded and replayed; those
	// the handler sends as trailers are replayed as trailers. Default
	// DefaultReplayHeaders. Naming Set-Cookie, a hop-by-hop header or an
	// authentication header is an error, and so is a name that is not a
	// header field name (such as "Trailer:X", net/http's TrailerPrefix form).
	ReplayHeaders []string

	// Lease is how long the middleware lets a handler run without a
	// successful renewal of its claim: the middleware renews the claim
	// every Lease/3 while the handler runs, and if no renewal succeeds, the
	// handler's context is canceled, with cause keystore.ErrLeaseLost, once
	// Lease has passed since the last successful claim or extension was
	// sent. The store itself holds the key a little longer,
	// [Middleware.StoreLease] (Lease + Lease/2 + StoreTimeout), so that a
	// store stall shorter than Lease loses no record; that is how long a
	// crashed process blocks its keys (see the package documentation,
	// "Leases"). Default DefaultLease.
	Lease time.Duration

	// Retention is how long a response is kept for replay. It must outlast
	// the sender's whole retry window. Default DefaultRetention.
	Retention time.Duration

	// StoreTimeout bounds each store operation; a store slower than this is
	// treated as unavailable (503, handler not run). It must be less than
	// Lease/3, so that a renewal sent at Lease/3 can be answered well inside
	// the lease. Default: DefaultStoreTimeout, or Lease/4 if that is less.
	// From 10 ms up, the calls of one Middleware share one timer: a call's
	// context ends when StoreTimeout has passed or up to a millisecond
	// before.
	StoreTimeout time.Duration

	// RetryAfter is the Retry-After sent with 503 (store unavailable), and
	// the least sent with 409 (in flight), whose Retry-After is otherwise
	// the holder's remaining lease, capped at Lease/6. Default
	// DefaultRetryAfter.
	RetryAfter time.Duration

	// HandlerTimeout, when positive, bounds how long the validator and the
	// handler run: then their context ends, with cause ErrHandlerTimeout.
	// Their context does not end when the client leaves (once the key is
	// claimed, the request runs to its end and its answer is recorded), only
	// when the lease is lost or this deadline passes. A handler stopped by it
	// that wants its work retried must answer 5xx (or panic with
	// http.ErrAbortHandler) before writing anything else: an implicit 200 is
	// recorded like any answer. Default: none.
	HandlerTimeout time.Duration

	// WaitInFlight, when positive, makes a duplicate of a request that is
	// still running wait up to this long for the original to finish and then
	// replay its answer, instead of answering 409 at once.
	WaitInFlight time.Duration

	// Logger receives warnings (store failures, lost leases) and debug
	// records of each outcome. Keys are logged hashed, never raw. Refusals
	// a flood can repeat (the store unavailable or full) are logged at most
	// 10 a minute; the next record written carries
	// the number not written as "suppressed". Default: no logging.
	Logger *slog.Logger

	// Observer, if set, is called synchronously with the outcome of each
	// request of a covered method, including one refused for a missing or
	// malformed key (Rejected; see Event). It must be fast and safe for
	// concurrent use.
	Observer func(Event)

	// StoreObserver, if set, is called synchronously after each call the
	// middleware makes of its store (Claim, Extend, Complete, Release),
	// in the request or in the background, with the operation, its latency
	// and its error. It must be fast and safe for concurrent use. (Records a
	// handler commits itself, with pgstore's InTx or CompleteTx, are
	// reported by pgstore's own Config.Observer.)
	StoreObserver func(StoreCall)
}

// Middleware makes a handler idempotent: see the package documentation.
type Middleware struct {
	sched         timerSchedule  // the renewals' ticks
	deadlines     sharedDeadline // the store calls' StoreTimeout
	store         keystore.Store
	nonBlocking   bool // the store never waits (inProcess): no timeouts needed around it
	methods       map[string]bool
	keyHeader     string
	keyOptional   bool
	scope         func(*http.Request) string
	client        func(*http.Request) string
	canonical     bool
	validator     Validator
	decoder       RequestDecoder // validator, when it can decode
	headers       HeaderChecker  // validator, when it checks headers before the claim
	maxBody       int64
	maxRecord     int
	replayHeaders []string
	recordHeaders []string // replayHeaders sorted, each once: the recorder's order
	trailerKeys   []string // http.TrailerPrefix + each of recordHeaders
	lease         time.Duration
	storeLease    time.Duration // what the store grants: see StoreLease
	retention     time.Duration
	storeTimeout  time.Duration
	retryAfter    time.Duration
	waitInFlight  time.Duration
	handlerTime   time.Duration // Config.HandlerTimeout; 0: none
	log           *slog.Logger
	refusals      *ratelog.Logger // log, at a bounded rate, for refusals a flood can repeat
	observe       func(Event)
	observeStore  func(StoreCall)
	bg            background // records and releases retried after their requests
}

// inProcess reports whether store is a *memstore.Store: the one store
// whose calls never wait (they run in process, under a lock held for the
// call only), so that they need no bound by Config.StoreTimeout and cost
// a request no context of their own. The test is of the concrete type, so
// a type that embeds a *memstore.Store, and may add waits of its own, is
// bounded as every other store is.
func inProcess(store keystore.Store) bool {
	_, ok := store.(*memstore.Store)
	return ok
}

// New returns a Middleware that keeps its keys in store. It returns an error
// for a nil store or an invalid Config.
func New(store keystore.Store, cfg Config) (*Middleware, error) {
	if store == nil {
		return nil, errors.New("middleware: nil store")
	}
	nonBlocking := inProcess(store)
	m := &Middleware{
		store:        store,
		nonBlocking:  nonBlocking,
		methods:      map[string]bool{},
		keyHeader:    http.CanonicalHeaderKey(orDefault(cfg.KeyHeader, DefaultKeyHeader)),
		keyOptional:  cfg.KeyOptional,
		scope:        cfg.Scope,
		client:       cfg.Client,
		canonical:    cfg.CanonicalJSON,
		validator:    cfg.Validator,
		maxBody:      orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		maxRecord:    orDefault(cfg.MaxRecordBytes, DefaultMaxRecordBytes),
		lease:        orDefault(cfg.Lease, DefaultLease),
		retention:    orDefault(cfg.Retention, DefaultRetention),
		storeTimeout: orDefault(cfg.StoreTimeout, DefaultStoreTimeout),
		retryAfter:   orDefault(cfg.RetryAfter, DefaultRetryAfter),
		waitInFlight: cfg.WaitInFlight,
		handlerTime:  cfg.HandlerTimeout,
		log:          cfg.Logger,
		observe:      cfg.Observer,
		observeStore: cfg.StoreObserver,
	}
	for _, d := range []struct {
		name string
		v    int64
	}{
		{"MaxBodyBytes", m.maxBody}, {"MaxRecordBytes", int64(m.maxRecord)}, {"Lease", int64(m.lease)},
		{"Retention", int64(m.retention)}, {"StoreTimeout", int64(m.storeTimeout)},
		{"RetryAfter", int64(m.retryAfter)}, {"WaitInFlight", int64(m.waitInFlight) + 1},
		{"HandlerTimeout", int64(m.handlerTime) + 1},
	} {
		if d.v <= 0 {
			return nil, fmt.Errorf("middleware: Config.%s must not be negative", d.name)
		}
	}
	if m.maxRecord < record.MinBytes {
		return nil, fmt.Errorf("middleware: Config.MaxRecordBytes (%d) must be at least record.MinBytes (%d), room for the record kept in place of a larger response", m.maxRecord, record.MinBytes)
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
	m.storeLease = m.lease + m.lease/2 + m.storeTimeout
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
	m.recordHeaders = slices.Compact(slices.Sorted(slices.Values(m.replayHeaders)))
	if len(m.recordHeaders) >= 0x80 {
		return nil, fmt.Errorf("middleware: Config.ReplayHeaders names %d headers; at most 127", len(m.recordHeaders))
	}
	for _, name := range m.recordHeaders {
		m.trailerKeys = append(m.trailerKeys, http.TrailerPrefix+name)
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.refusals = ratelog.New(m.log, 0, 0)
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

// StoreLease is the lease the middleware asks the store for with each
// claim and extension: Config.Lease + Config.Lease/2 + Config.StoreTimeout,
// 47 s with the defaults. It is how long a key stays in flight (409) after
// the process holding it crashed or lost its link to the store. It is
// longer than Config.Lease so that the store still holds the key when a
// stall shorter than Config.Lease ends, however long before the stall the
// last renewal (every Lease/3, within StoreTimeout) succeeded: the record
// retried after the stall then finds the key held, and no retry runs the
// handler again.
func (m *Middleware) StoreLease() time.Duration { return m.storeLease }

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

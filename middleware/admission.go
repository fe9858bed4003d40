package middleware

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/problem"
	"github.com/geoidem/geoidem/internal/ratelog"
)

// Defaults for the zero fields of AdmissionConfig.
const (
	DefaultMaxInFlight      = 64
	DefaultMaxInFlightBytes = 16 << 20
)

// AdmissionConfig configures an Admission. Zero fields mean the defaults.
type AdmissionConfig struct {
	// MaxInFlight bounds the requests in flight at once. Default
	// DefaultMaxInFlight (64).
	MaxInFlight int

	// MaxInFlightBytes bounds the bytes of the bodies in flight at once,
	// each charged by its Content-Length, or MaxBodyBytes when the length
	// is unknown (chunked). Default DefaultMaxInFlightBytes (16 MiB).
	MaxInFlightBytes int64

	// MaxBodyBytes is what a body of unknown length is charged, and the
	// most a body is charged: the middleware's Config.MaxBodyBytes.
	// Default DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// Client returns the identity of a request's client. A client's share
	// is a quarter of MaxInFlight and of MaxInFlightBytes; it may hold more
	// only while the server holds less than three quarters of either, so
	// the last quarter is always left to the other clients. It
	// runs before the body is read, so it can use only what is known
	// then: an authenticated tenant (from a token checked in front), or
	// the remote address. Default: the remote address's host (behind a
	// proxy, every client is the proxy: set Client).
	Client func(r *http.Request) string

	// RetryAfter is the least Retry-After sent with a refusal. Default
	// DefaultRetryAfter.
	RetryAfter time.Duration

	// Logger receives a Warn record per refusal, at most 10 a minute (the
	// next record written counts those not written). Default: none.
	Logger *slog.Logger
}

// An Admission bounds the requests and the request bytes in flight, as
// HTTP middleware in front of the idempotency middleware (and of anything
// that reads the body, such as a signature verifier). A request over a
// bound is answered before its body is read and before anything is
// claimed:
//
//	situation                                        answer
//	the client holds its share (a quarter) of the    429 client-busy with Retry-After
//	requests or bytes in flight, and the server
//	three quarters of either
//	the server holds MaxInFlight requests or         503 server-busy with Retry-After
//	MaxInFlightBytes bytes in flight; or the body
//	is large (over 1/64 of MaxInFlightBytes) and
//	large bodies hold three quarters of either
//	bound already
//
// So a burst of large bodies leaves room for small requests, one client's
// burst leaves room for the others, and the key store's reservations (one
// per claim in flight) are bounded by MaxInFlight. The Retry-After is the
// time admitted requests have been taking (a moving average), rounded up
// to whole seconds and at least AdmissionConfig.RetryAfter: about when the
// requests now in flight will have made room. Nothing is claimed, so the
// sender's retry with the same key runs.
type Admission struct {
	maxN, maxClientN     int
	maxBytes, maxClientB int64
	large                int64 // a body charged more than this is large
	maxLargeN            int
	maxLargeB            int64
	crowdedN             int   // past this many requests, a client keeps to its share
	crowdedB             int64 // and past this many bytes
	maxBody              int64
	client               func(*http.Request) string
	retryAfter           time.Duration
	refusals             *ratelog.Logger
	mu                   sync.Mutex
	n, largeN            int
	bytes, largeB        int64
	clients              map[string]*load
	avg                  time.Duration // moving average of the time admitted requests take
	refused              uint64
	peakN                int
	peakBytes            int64
}

// load is what one client holds in flight.
type load struct {
	n     int
	bytes int64
}

// AdmissionStats is a snapshot of an Admission.
type AdmissionStats struct {
	InFlight      int    // requests in flight
	InFlightBytes int64  // bytes charged for them
	Peak          int    // the most requests in flight at once so far
	PeakBytes     int64  // the most bytes charged at once so far
	Refused       uint64 // requests answered 429 or 503
}

// NewAdmission returns an Admission, or an error for a negative bound.
func NewAdmission(cfg AdmissionConfig) (*Admission, error) {
	a := &Admission{
		maxN:       orDefault(cfg.MaxInFlight, DefaultMaxInFlight),
		maxBytes:   orDefault(cfg.MaxInFlightBytes, DefaultMaxInFlightBytes),
		maxBody:    orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		client:     cfg.Client,
		retryAfter: orDefault(cfg.RetryAfter, DefaultRetryAfter),
		refusals:   ratelog.New(cfg.Logger, 0, 0),
		clients:    map[string]*load{},
	}
	if a.maxN < 0 || a.maxBytes < 0 || a.maxBody < 0 || a.retryAfter < 0 {
		return nil, errors.New("middleware: AdmissionConfig bounds must not be negative")
	}
	if a.client == nil {
		a.client = remoteHost
	}
	a.maxClientN, a.maxClientB = max(1, a.maxN/4), max(1, a.maxBytes/4)
	a.maxLargeN, a.maxLargeB = max(1, a.maxN*3/4), a.maxBytes*3/4
	a.crowdedN, a.crowdedB = a.maxLargeN, a.maxLargeB
	a.large = a.maxBytes / 64
	return a, nil
}

// remoteHost is the default client identity: the remote address's host.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// Handler wraps next so that it runs only for requests admitted.
func (a *Admission) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size < 0 || size > a.maxBody {
			size = a.maxBody
		}
		id := a.client(r)
		status, retryAfter := a.admit(id, size)
		switch status {
		case http.StatusTooManyRequests:
			problem.Write(w, status, problem.JSON(problem.Doc{Type: ProblemClientBusy, Title: "Too many requests in flight from this client", Status: status,
				Detail: "This client already has its share of the requests or bytes in flight; nothing was read or claimed. Retry after Retry-After with the same key."}), retryAfter)
			a.refusals.Warn(r.Context(), "request refused: the client has its share in flight", slog.Int64("bytes", size))
			return
		case http.StatusServiceUnavailable:
			problem.Write(w, status, problem.JSON(problem.Doc{Type: ProblemServerBusy, Title: "Server busy", Status: status,
				Detail: "The server has as many requests or bytes in flight as it takes; nothing was read or claimed. Retry after Retry-After with the same key."}), retryAfter)
			a.refusals.Warn(r.Context(), "request refused: too much in flight", slog.Int64("bytes", size))
			return
		}
		start := time.Now()
		defer a.done(id, size, start)
		next.ServeHTTP(w, r)
	})
}

// admit charges a request of client id with size bytes, or returns the
// status that refuses it and its Retry-After.
func (a *Admission) admit(id string, size int64) (int, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[id]
	if c == nil {
		c = &load{}
	}
	large := size > a.large
	status := 0
	switch {
	case (c.n+1 > a.maxClientN || c.bytes+size > a.maxClientB) && (a.n+1 > a.crowdedN || a.bytes+size > a.crowdedB):
		status = http.StatusTooManyRequests
	case a.n+1 > a.maxN || a.bytes+size > a.maxBytes,
		large && (a.largeN+1 > a.maxLargeN || a.largeB+size > a.maxLargeB):
		status = http.StatusServiceUnavailable
	}
	if status != 0 {
		a.refused++
		ra := (max(a.avg, a.retryAfter) + time.Second - 1).Truncate(time.Second)
		return status, ra
	}
	c.n++
	c.bytes += size
	a.clients[id] = c
	a.n++
	a.bytes += size
	if large {
		a.largeN++
		a.largeB += size
	}
	a.peakN, a.peakBytes = max(a.peakN, a.n), max(a.peakBytes, a.bytes)
	return 0, 0
}

// done gives back what admit charged and folds the request's duration
// into the moving average.
func (a *Admission) done(id string, size int64, start time.Time) {
	took := time.Since(start)
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[id]
	c.n--
	c.bytes -= size
	if c.n == 0 {
		delete(a.clients, id)
	}
	a.n--
	a.bytes -= size
	if size > a.large {
		a.largeN--
		a.largeB -= size
	}
	a.avg += (took - a.avg) / 8
}

// Stats returns a snapshot of what the Admission holds and has refused.
func (a *Admission) Stats() AdmissionStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdmissionStats{InFlight: a.n, InFlightBytes: a.bytes, Peak: a.peakN, PeakBytes: a.peakBytes, Refused: a.refused}
}

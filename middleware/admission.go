package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/clientaddr"
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
	// the remote address. Default: RemoteClient, the remote address's
	// IPv4 host or IPv6 /64 (behind a proxy, every client is the proxy:
	// set Client).
	Client func(r *http.Request) string

	// RetryAfter is the least Retry-After sent with a refusal. Default
	// DefaultRetryAfter.
	RetryAfter time.Duration

	// BodyDeadline, when set, returns the time by which a request's body
	// will have arrived in full or been cut off, or the zero time when it
	// cannot tell: frontdoor.BodyDeadline, with a frontdoor.BodyRate in
	// front of the Admission. A refusal's Retry-After counts on it for
	// requests that have run longer than requests take (slow bodies), which
	// would otherwise be guessed to run as long again. Default: none.
	BodyDeadline func(r *http.Request) time.Time

	// CutBody, when set, cuts off the body of a request in flight that is
	// still arriving and reports whether it did: frontdoor.CutBody, with a
	// frontdoor.BodyRate in front of the Admission (which answers the
	// request cut off 408 and closes its connection). With it, a request
	// that finds the server full is admitted when room can be made for it:
	// the oldest body still arriving of the client that holds the most
	// requests in flight, at least two more than the request's own client,
	// is cut off, and so on until the request fits, with at most an eighth
	// of MaxInFlight cut off and not yet gone at once (they are not counted
	// against the bounds: the Admission may hold that many more for the
	// moments they take to end). A body cut off was never read in full, so
	// nothing was claimed for it, and its sender retries. So a few clients'
	// slow bodies cannot hold every slot against a client that holds less;
	// many clients holding one each still can. Default: none.
	CutBody func(r *http.Request) bool

	// Logger receives a Warn record per refusal, at most 10 a minute (the
	// next record written counts those not written). Default: none.
	Logger *slog.Logger
}

// An Admission bounds the requests and the request bytes in flight, as
// HTTP middleware in front of the idempotency middleware (and of anything
// that reads the body, such as a signature verifier). It admits a request
// before its body is read, so a body still arriving holds its slot;
// frontdoor.New builds a front door that admits work only once the body
// has arrived, and is what a public receiver should wire. A request over
// a bound is answered before its body is read and before anything is
// claimed:
//
//	situation                                        answer
//	the client holds its share (a quarter) of the    429 client-busy with Retry-After
//	requests or bytes in flight, and the server
//	three quarters of either
//	the server holds MaxInFlight requests or         503 server-busy with Retry-After
//	MaxInFlightBytes bytes in flight (and no room
//	can be made, see AdmissionConfig.CutBody); or
//	the body is large (over 1/64 of
//	MaxInFlightBytes) and large bodies hold three
//	quarters of either bound already
//
// So a burst of large bodies leaves room for small requests, one client's
// burst leaves room for the others, and the key store's reservations (one
// per claim in flight) are bounded by MaxInFlight. Nothing is claimed, so
// the sender's retry with the same key runs.
//
// The Retry-After says when a slot that the refused request could take
// frees: the earliest expected end among the requests in flight that hold
// it (the client's own for a 429, the large bodies for a 503 refusing a
// large body, all of them otherwise), in whole seconds rounded up, at
// least AdmissionConfig.RetryAfter. A request is expected to take what
// admitted requests have been taking (a moving average of their
// durations); one that has run longer is expected to end by its body's
// deadline (AdmissionConfig.BodyDeadline) when that is still ahead, else to
// run as long again as it has. So 64 slow bodies that hold every slot
// until a 30 s read timeout are answered with the time to the first
// timeout, not with the second that fast requests take.
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
	bodyDeadline         func(*http.Request) time.Time
	cutBody              func(*http.Request) bool
	maxCutN              int // bodies cut off and not yet gone, at most
	retryAfter           time.Duration
	refusals             *ratelog.Logger
	mu                   sync.Mutex
	n, largeN            int
	bytes, largeB        int64
	clients              map[string]*load
	cutN                 int           // requests in flight whose bodies were cut off
	cutB                 int64         // and their bytes
	flights              []flight      // the requests in flight, in slots reused
	free                 []int         // the free slots of flights
	avg                  time.Duration // moving average of the time admitted requests take
	refused              uint64
	cuts                 uint64
	peakN                int
	peakBytes            int64
}

// load is what one client holds in flight.
type load struct {
	n     int
	bytes int64
	cut   int // of its n, those whose bodies were cut off
}

// flight is one request in flight: what admit charged it, when it began,
// and when its body must have arrived (zero: unknown).
type flight struct {
	client   string
	size     int64
	start    time.Time
	deadline time.Time
	used     bool
	r        *http.Request // for CutBody; nil without it
	cut      bool          // its body was cut off (CutBody)
	arrived  bool          // CutBody refused to cut it: its body has arrived, for good
}

// AdmissionStats is a snapshot of an Admission.
type AdmissionStats struct {
	InFlight      int    // requests in flight
	InFlightBytes int64  // bytes charged for them
	Peak          int    // the most requests in flight at once so far
	PeakBytes     int64  // the most bytes charged at once so far
	Refused       uint64 // requests answered 429 or 503
	Cut           uint64 // bodies cut off to make room (AdmissionConfig.CutBody)
}

// NewAdmission returns an Admission, or an error for a negative bound.
func NewAdmission(cfg AdmissionConfig) (*Admission, error) {
	a := &Admission{
		maxN:         orDefault(cfg.MaxInFlight, DefaultMaxInFlight),
		maxBytes:     orDefault(cfg.MaxInFlightBytes, DefaultMaxInFlightBytes),
		maxBody:      orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		client:       cfg.Client,
		bodyDeadline: cfg.BodyDeadline,
		cutBody:      cfg.CutBody,
		retryAfter:   orDefault(cfg.RetryAfter, DefaultRetryAfter),
		refusals:     ratelog.New(cfg.Logger, 0, 0),
		clients:      map[string]*load{},
	}
	if a.maxN < 0 || a.maxBytes < 0 || a.maxBody < 0 || a.retryAfter < 0 {
		return nil, errors.New("middleware: AdmissionConfig bounds must not be negative")
	}
	if a.client == nil {
		a.client = RemoteClient
	}
	a.maxClientN, a.maxClientB = max(1, a.maxN/4), max(1, a.maxBytes/4)
	a.maxLargeN, a.maxLargeB = max(1, a.maxN*3/4), a.maxBytes*3/4
	a.crowdedN, a.crowdedB = a.maxLargeN, a.maxLargeB
	a.large = a.maxBytes / 64
	a.maxCutN = max(1, a.maxN/8)
	return a, nil
}

// RemoteClient names r's client by its remote address, as every bound on
// clients in this module counts them (frontdoor's connections per host
// too): an IPv4 address ("192.0.2.7"; an IPv4-mapped IPv6 address as that
// IPv4 one), or an IPv6 /64 ("2001:db8:1:2::/64"), since one subscriber
// is given a /64 and may send from any address in it; but a site is
// delegated a /56 or a /48, and a /48 counts as four clients at most (its
// first two /64s, then the rest of their /56, then the rest of the /48:
// "2001:db8:1::/48"). It is Admission's default Client, and what
// Config.Client should return for a public receiver without authenticated
// senders. Behind a reverse proxy every request's remote address is the
// proxy's: name clients by frontdoor.Clients there.
func RemoteClient(r *http.Request) string { return clientaddr.Name(r.RemoteAddr) }

// Handler wraps next so that it runs only for requests admitted.
func (a *Admission) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size < 0 || size > a.maxBody {
			size = a.maxBody
		}
		id := a.client(r)
		var deadline time.Time
		if a.bodyDeadline != nil {
			deadline = a.bodyDeadline(r)
		}
		slot, status, retryAfter := a.admit(r, id, size, time.Now(), deadline)
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
		defer a.done(slot)
		next.ServeHTTP(w, r)
	})
}

// admit charges r, a request of client id with size bytes, begun at now
// with its body due by deadline, and returns its slot; or returns the
// status that refuses it and its Retry-After.
func (a *Admission) admit(r *http.Request, id string, size int64, now, deadline time.Time) (int, int, time.Duration) {
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
	case large && (a.largeN+1 > a.maxLargeN || a.largeB+size > a.maxLargeB):
		status = http.StatusServiceUnavailable
	case !a.fits(size):
		if a.cutBody == nil || !a.makeRoom(c, size) {
			status = http.StatusServiceUnavailable
		}
	}
	if status != 0 {
		a.refused++
		holds := func(f *flight) bool { return true }
		switch {
		case status == http.StatusTooManyRequests:
			holds = func(f *flight) bool { return f.client == id }
		case large && !(a.n+1 > a.maxN || a.bytes+size > a.maxBytes):
			holds = func(f *flight) bool { return f.size > a.large }
		}
		wait := max(a.firstEnd(now, holds), a.retryAfter)
		return -1, status, (wait + time.Second - 1).Truncate(time.Second)
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
	var slot int
	if n := len(a.free); n > 0 {
		slot, a.free = a.free[n-1], a.free[:n-1]
	} else {
		slot = len(a.flights)
		a.flights = append(a.flights, flight{})
	}
	a.flights[slot] = flight{client: id, size: size, start: now, deadline: deadline, used: true}
	if a.cutBody != nil {
		a.flights[slot].r = r
	}
	return slot, 0, 0
}

// fits reports whether a request of size bytes fits the bounds, not
// counting the requests whose bodies were cut off (they are ending).
func (a *Admission) fits(size int64) bool {
	return a.n-a.cutN+1 <= a.maxN && a.bytes-a.cutB+size <= a.maxBytes
}

// makeRoom cuts off bodies still arriving (CutBody) until a request of
// size bytes from client c fits, and reports whether it does. Each body
// cut off is the oldest still arriving of the client that holds the most
// requests in flight, at least two more than c (not counting those cut
// off), so that no client is left holding less than c then holds; at most
// maxCutN are cut off and not yet gone at once.
func (a *Admission) makeRoom(c *load, size int64) bool {
	for !a.fits(size) {
		if a.cutN >= a.maxCutN {
			return false
		}
		victim, most := -1, 0
		for i := range a.flights {
			f := &a.flights[i]
			if !f.used || f.cut || f.arrived {
				continue
			}
			l := a.clients[f.client]
			held := l.n - l.cut
			if held < c.n-c.cut+2 {
				continue
			}
			if victim < 0 || held > most || held == most && f.start.Before(a.flights[victim].start) {
				victim, most = i, held
			}
		}
		if victim < 0 {
			return false
		}
		f := &a.flights[victim]
		if !a.cutBody(f.r) {
			f.arrived = true // a body that has arrived stays so: never asked again
			continue
		}
		f.cut = true
		a.cuts++
		a.cutN++
		a.cutB += f.size
		a.clients[f.client].cut++
	}
	return true
}

// firstEnd returns how long from now until the first of the requests in
// flight that holds (as the refusal has it) is expected to end: a request
// that has not yet run as long as requests take (the moving average) is
// expected to end then; one that has, by its body's deadline when that is
// ahead, else after as long again as it has run. With none in flight that
// holds, the moving average.
func (a *Admission) firstEnd(now time.Time, holds func(*flight) bool) time.Duration {
	var first time.Time
	for i := range a.flights {
		f := &a.flights[i]
		if !f.used || !holds(f) {
			continue
		}
		end := f.start.Add(a.avg)
		if !end.After(now) {
			if f.deadline.After(now) {
				end = f.deadline
			} else {
				end = now.Add(now.Sub(f.start))
			}
		}
		if first.IsZero() || end.Before(first) {
			first = end
		}
	}
	if first.IsZero() {
		return a.avg
	}
	return first.Sub(now)
}

// done gives back what admit charged the request in slot and folds its
// duration into the moving average.
func (a *Admission) done(slot int) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	f := &a.flights[slot]
	id, size, took, cut := f.client, f.size, now.Sub(f.start), f.cut
	*f = flight{}
	a.free = append(a.free, slot)
	c := a.clients[id]
	c.n--
	c.bytes -= size
	if cut {
		c.cut--
		a.cutN--
		a.cutB -= size
	}
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
	return AdmissionStats{InFlight: a.n, InFlightBytes: a.bytes, Peak: a.peakN, PeakBytes: a.peakBytes, Refused: a.refused, Cut: a.cuts}
}

package frontdoor

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/httpbody"
	"github.com/geoidem/geoidem/internal/ratelog"
)

// Defaults for the zero fields of Config; each is documented on its field.
const (
	defaultMaxInFlight    = 64
	defaultMaxBytes       = 16 << 20
	defaultMaxBodyBytes   = 1 << 20
	defaultWait           = 5 * time.Second
	defaultMinWriteRate   = 1024 // bytes a second
	defaultMaxAnswerBytes = 128 << 10
	defaultKnownFor       = time.Hour
	defaultRetryAfter     = time.Second
)

// Config configures a Door. Zero fields mean the defaults; a negative bound
// means none.
type Config struct {
	// MaxConns bounds the connections open at once, one of them kept for
	// the connection being accepted. While fewer are open, every
	// connection is accepted, however many its host holds. At the bound
	// (contention) a new connection takes the place of one open: the
	// connection that has waited longest for a request first, else a busy
	// one of the host holding the most (more than the newcomer's host
	// would), never one whose request has arrived whole (it may hold a
	// claimed key); when none can go, the new one waits (Accept waits)
	// until one closes, or is refused (see MaxConnsPerHost). Keep it under
	// the process's file descriptor limit (ulimit -n). Zero means 1024:
	// at the 20–35 KB a connection of net/http costs, some 36 MB.
	MaxConns int

	// MaxConnsPerHost bounds, under contention only, the connections of
	// the host holding the most: a new connection of a host that holds at
	// least this many, and at least as many as any other host, is closed as
	// soon as it is accepted, with a reset (no goroutine, no buffer, no
	// TIME_WAIT), rather than wait for room. A host is an IPv4 address or
	// an IPv6 /64 (an IPv6 /48 counts as four hosts at most). Zero means
	// 8. A trusted proxy's host (TrustedProxies) is never refused for it.
	MaxConnsPerHost int

	// MaxIdle bounds the connections waiting for a request: new ones that
	// have not sent a whole request header yet, and keep-alive ones
	// between requests. Past it the one that has waited longest is closed.
	// It must be under MaxConns. Zero means 256.
	MaxIdle int

	// MinBodyRate is the least rate, in bytes a second, at which a body
	// must arrive after BodyGrace: its n-th byte must have arrived
	// BodyGrace + n/MinBodyRate after the request began (its header was
	// read), else it is cut off and answered 408 [ProblemSlowBody]. Zero
	// means 1 KiB/s: a sender's 1 MiB body over a 64 kbit/s link keeps to
	// it; a byte every 2 s does not. Negative turns the rate off
	// (BodyTimeout only).
	MinBodyRate int64

	// BodyGrace is how long a body may take before it must keep to
	// MinBodyRate. Zero means 5 s.
	BodyGrace time.Duration

	// BodyTimeout bounds a body's whole time, however fast it arrives: the
	// server's ReadTimeout ([Door.Server]). Zero means 30 s.
	BodyTimeout time.Duration

	// MaxInFlight bounds the work slots: the requests whose bodies have
	// arrived (and verified, with Verify) and whose handlers run. A
	// client holds at most a quarter of them once three quarters are
	// held and another client holds some. Zero means 64.
	MaxInFlight int

	// MaxBytes bounds the bytes of the bodies held at once: arriving
	// (charged by their Content-Length, or MaxBodyBytes when unknown) and
	// read, until their handler returns. Bodies over 1/64 of it are large
	// and hold at most three quarters of it; a client holds at most a
	// quarter once three quarters are held and another client holds
	// some. Zero means 16 MiB.
	MaxBytes int64

	// MaxBodyBytes is the largest body the Door reads; a larger one is
	// passed on unread, holding nothing, for the handler to refuse (413).
	// Zero means 1 MiB: the middleware's MaxBodyBytes.
	MaxBodyBytes int64

	// Wait is how long a request waits for room (bytes for its body, then
	// a work slot) before it is refused 503 server-busy (or 429
	// client-busy past its client's share), with a Retry-After that says
	// when room frees. Zero means 5 s.
	Wait time.Duration

	// MinWriteRate is the least rate, in bytes a second, at which a client
	// must take an answer, after the body's grace: a client that reads
	// slower has its connection closed. Zero means 1 KiB/s.
	MinWriteRate int64

	// MaxAnswerBytes bounds the answer the Door keeps while the handler
	// writes it, so that the work slot is given back before the answer
	// goes out; a longer answer (or one the handler flushes) is written
	// through while the slot is held. Zero means 128 KiB.
	MaxAnswerBytes int

	// TrustedProxies are the networks of the reverse proxies in front of
	// the server (netip.ParsePrefix, or netip.PrefixFrom(a, a.BitLen())
	// for one address). A request's client is its remote address or, from
	// a trusted proxy, the right-most address of ForwardedHeader that is
	// not a trusted proxy's; and a trusted proxy's connections, which
	// carry many clients' requests, are never refused for MaxConnsPerHost
	// (they wait for room instead). Default: none, and every client is its
	// remote address: trust only proxies that overwrite or append to the
	// header, or a client names itself.
	TrustedProxies []netip.Prefix

	// ForwardedHeader is the header the trusted proxies append the
	// client's address to: "X-Forwarded-For" (default) or "Forwarded"
	// (RFC 7239, its for=).
	ForwardedHeader string

	// Client, when set, names a request's client for every share instead
	// of the remote or forwarded address (KnownNetworks still match that
	// address).
	Client func(r *http.Request) string

	// KnownNetworks are the networks of known senders (a provider's
	// published ranges): a request from one is never cut off and may use
	// the quarter of the slots and bytes reserved for known senders.
	KnownNetworks []netip.Prefix

	// Verify, when set, checks a body that has arrived against its
	// request's headers (standardwebhooks.Verifier.Verify): a client whose
	// body verified is a known sender for KnownFor from then on. A body
	// that does not verify earns nothing; what answers it is the handler's
	// business.
	Verify func(h http.Header, body []byte) error

	// KnownFor is how long a client stays known after a body of its
	// verified. Zero means 1 h.
	KnownFor time.Duration

	// RetryAfter is the least Retry-After of a refusal. Zero means 1 s.
	RetryAfter time.Duration

	// Logger receives a Warn record per refusal or cut, at most 10 a
	// minute each. Default: none.
	Logger *slog.Logger
}

// A Door is a service's front door, built in one piece by [New]: its
// connections ([Door.Listener], [Door.Server]), the rate of request bodies,
// and the admission of work ([Door.Handler]), in that order, with one
// notion of a client.
//
// Work is admitted, waiting is not. A request's body is read in full
// before the request takes a work slot: while it arrives it holds its
// bytes (bounded by MaxBytes), its connection (bounded by MaxConns) and a
// goroutine, and it keeps to the body rate or is cut off (408). When the
// bytes are short, a request waits a quarter of a second for room, then
// makes it by cutting off the slowest body still arriving of a client
// with more bodies arriving than its own, never a known sender's. Once
// arrived (and verified, with Verify), it waits for a work slot, which it
// holds while its handler runs; the handler's answer is kept and written
// after the slot is given back, at MinWriteRate or the connection closed.
// So slow bodies and slow readers hold connections and bytes, never a
// work slot.
//
// Known senders (KnownNetworks, or a verified body) have a quarter of the
// slots and bytes reserved, when any can be known, and are never cut off.
type Door struct {
	conns *connBounds
	rate  *bodyRate

	maxN, reservedN, maxClientN, crowdedN int
	maxB, reservedB, maxClientB, crowdedB int64
	large, maxLargeB, maxBody             int64
	wait, cutAfter, knownFor, retryAfter  time.Duration
	minWrite                              int64
	writeGrace, bodyTimeout               time.Duration
	maxAnswer, maxCut                     int
	client                                func(*http.Request) string
	names                                 *clientNames
	networks                              []netip.Prefix
	verify                                func(http.Header, []byte) error
	refusals, cuts                        *ratelog.Logger

	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, whenever room frees
	held    map[*entry]struct{}
	clients map[string]*share
	known   map[string]time.Time // clients known by a verified body, until
	n       int                  // work slots held
	knownN  int                  // of them, by known senders
	b       int64                // bytes held, bodies cut off not counted
	knownB  int64                // of them, by known senders
	largeB  int64                // of them, by large bodies
	cutN    int                  // bodies cut off and not yet gone
	avg     time.Duration        // moving average of a work slot's time
	stats   Stats
}

// share is what one client holds. It is kept while any request of its
// client is under the Door (entries), whatever that request holds: a
// request with an empty body holds no bytes, and one between its body and
// its work slot holds neither.
type share struct {
	n        int   // work slots
	b        int64 // bytes
	arriving int   // bodies arriving
	entries  int   // requests of the client under the Door
}

// entry is one request under the Door, from the moment its bytes are
// charged until its handler returns.
type entry struct {
	g          *guard // its body's guard, for cuts; nil without a rate
	client     string
	size       int64
	start      time.Time
	known      bool
	arriving   bool
	cut        bool
	working    bool
	workStart  time.Time
	uncuttable bool // a cut found its body ended
	released   bool
	stop       *time.Timer // watch's, while the body arrives
}

// Stats is a snapshot of a Door. The counters of connections refused or
// closed are by reason: each is what a metric of connections closed by the
// front door counts under its reason ([Stats.Series]).
type Stats struct {
	Conns           int    // connections open
	PeakConns       int    // the most open at once so far
	IdleConns       int    // connections waiting for a request
	HeldConns       int    // connections whose request has arrived whole
	WaitingConns    int    // new connections waiting for room (0 or 1 per listener)
	ConnsRefused    uint64 // new connections reset at accept under contention: their host held the most, at MaxConnsPerHost or more
	ConnsClosedIdle uint64 // idle connections closed to make room for a new one under contention
	ConnsClosedBusy uint64 // busy connections (request not arrived whole) of the host holding the most, closed to make room
	ConnsEvicted    uint64 // idle connections closed to keep to MaxIdle
	ConnsWaited     uint64 // new connections that waited for room

	Arriving      int    // bodies arriving
	Bytes         int64  // bytes held by bodies arriving or in work
	Slots         int    // work slots held
	PeakSlots     int    // the most held at once so far
	KnownSlots    int    // work slots held by known senders
	Answering     int    // answers being written, holding no slot
	CutSlow       uint64 // bodies cut off for falling behind the rate (408)
	CutForRoom    uint64 // bodies cut off to make room for another client (408)
	CutStalled    uint64 // bodies cut off for stalling while the connections are crowded (408)
	RefusedBusy   uint64 // requests refused 503 server-busy
	RefusedClient uint64 // requests refused 429 client-busy
	KnownAdmitted uint64 // work slots given to known senders
	AnswersCut    uint64 // answers whose client read slower than MinWriteRate
}

// New returns a Door, or an error for a setting that cannot be met.
func New(cfg Config) (*Door, error) {
	d := &Door{
		maxN:        orDefault(cfg.MaxInFlight, defaultMaxInFlight),
		maxB:        orDefault(cfg.MaxBytes, defaultMaxBytes),
		maxBody:     orDefault(cfg.MaxBodyBytes, defaultMaxBodyBytes),
		wait:        orDefault(cfg.Wait, defaultWait),
		minWrite:    orDefault(cfg.MinWriteRate, defaultMinWriteRate),
		maxAnswer:   orDefault(cfg.MaxAnswerBytes, defaultMaxAnswerBytes),
		knownFor:    orDefault(cfg.KnownFor, defaultKnownFor),
		retryAfter:  orDefault(cfg.RetryAfter, defaultRetryAfter),
		writeGrace:  orDefault(cfg.BodyGrace, defaultGrace),
		bodyTimeout: cfg.BodyTimeout,
		cutAfter:    250 * time.Millisecond,
		client:      cfg.Client,
		networks:    cfg.KnownNetworks,
		verify:      cfg.Verify,
		refusals:    ratelog.New(cfg.Logger, 0, 0),
		cuts:        ratelog.New(cfg.Logger, 0, 0),
		changed:     make(chan struct{}),
		held:        map[*entry]struct{}{},
		clients:     map[string]*share{},
		known:       map[string]time.Time{},
	}
	if d.maxBody < 0 || d.wait < 0 || d.minWrite < 0 || d.maxAnswer < 0 || d.knownFor < 0 || d.retryAfter < 0 {
		return nil, errors.New("frontdoor: Config settings other than the bounds must not be negative")
	}
	var err error
	if d.names, err = newClients(clientsConfig{TrustedProxies: cfg.TrustedProxies, Header: cfg.ForwardedHeader}); err != nil {
		return nil, err
	}
	if d.client == nil {
		d.client = d.names.Client
	}
	d.conns, err = newConns(connsConfig{MaxConns: cfg.MaxConns, MaxConnsPerHost: cfg.MaxConnsPerHost, MaxIdle: cfg.MaxIdle,
		TrustedProxies: cfg.TrustedProxies, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if cfg.MinBodyRate >= 0 {
		d.rate, err = newBodyRate(bodyRateConfig{Grace: cfg.BodyGrace, MinRate: cfg.MinBodyRate, Timeout: cfg.BodyTimeout, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
	}
	reserve := len(d.networks) > 0 || d.verify != nil
	if d.maxN > 0 {
		d.maxClientN, d.crowdedN, d.maxCut = max(1, d.maxN/4), max(1, d.maxN*3/4), max(8, d.maxN/8)
		if reserve {
			d.reservedN = d.maxN / 4
		}
	} else {
		d.maxCut = 8
	}
	if d.maxB > 0 {
		d.maxClientB, d.crowdedB = max(1, d.maxB/4), d.maxB*3/4
		d.large, d.maxLargeB = d.maxB/64, d.maxB*3/4
		if reserve {
			d.reservedB = d.maxB / 4
		}
	}
	return d, nil
}

// Listener returns ln bounded by the Door's connection bounds (MaxConns,
// MaxConnsPerHost). Serve the Door's [Door.Server] on it.
func (d *Door) Listener(ln net.Listener) net.Listener { return d.conns.Listener(ln) }

// Client names r's client as the Door's shares count it: give it to the
// idempotency middleware (middleware.Config.Client), so that the key
// store's bounds count the same clients.
func (d *Door) Client(r *http.Request) string { return d.client(r) }

// Server returns the http.Server to serve h with: the Door's ConnState,
// its timeouts (a request header within 5 s, a body within BodyTimeout,
// a keep-alive connection closed after 30 s idle), and h wrapped so that
// an answer that did not need the request's body (a refusal, GET /healthz
// sent with a body) is not held waiting for a body that is not coming:
// when the answer's header goes out before the body was read to its end,
// the connection is closed after the answer (Connection: close) rather
// than kept by reading the rest. Set its ErrorLog (or change any other
// field), and serve it on [Door.Listener].
func (d *Door) Server(h http.Handler) *http.Server {
	timeout := orDefault(d.bodyTimeout, defaultBodyTimeout)
	return &http.Server{
		Handler:           answerWithoutBody(h),
		ConnState:         d.conns.ConnState,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       timeout, // what the body rate does not read ends here
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       defaultIdleTimeout,
		MaxHeaderBytes:    16 << 10,
	}
}

// Handler wraps next, the route of work (the idempotency middleware and
// what is behind it), so that it runs only for requests whose bodies have
// arrived, each holding a work slot while it runs; see [Door]. next reads
// the body from memory (Body, ContentLength and GetBody over the bytes
// read). A body over MaxBodyBytes, or one that failed to arrive for
// another reason than the rate, is passed on as it is (its bytes read so
// far first), holding nothing, for next to refuse.
//
// The request's connection is held once its body has arrived whole
// (see [Door]): from then on it may hold a claimed key, and it is never
// closed to make room for another connection.
func (d *Door) Handler(next http.Handler) http.Handler {
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { d.serve(w, r, next) }))
	if d.rate != nil {
		h = d.rate.Handler(h)
	}
	return d.conns.Hold(h)
}

func (d *Door) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.ContentLength > d.maxBody {
		next.ServeHTTP(w, r)
		return
	}
	e := &entry{client: d.client(r), start: time.Now(), size: r.ContentLength}
	if r.ContentLength < 0 {
		e.size = d.maxBody
	}
	if g, ok := r.Body.(*body); ok {
		e.g = (*guard)(g)
	}
	e.known = d.knownAt(r, e.client, e.start)
	if status, wait := d.arrive(r, e); status != 0 {
		if status > 0 { // else the client went away
			d.refuse(w, r, status, wait)
		}
		return
	}
	defer d.release(e)
	body, rest, err := d.read(r)
	if d.ended(e) && err == nil {
		err = errSlowBody // cut off as its last bytes arrived: the bodyRate answers 408
	}
	if err != nil {
		if errors.Is(err, errSlowBody) {
			return // the bodyRate answers 408
		}
		r.Body = io.NopCloser(rest)
		d.release(e)
		next.ServeHTTP(w, r)
		return
	}
	if d.verify != nil && d.verify(r.Header, body) == nil {
		d.remember(e)
	}
	r.Body = httpbody.NewBuffered(body)
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return httpbody.NewBuffered(body), nil }
	if status, wait := d.work(r, e); status != 0 {
		if status > 0 {
			d.refuse(w, r, status, wait)
		}
		return
	}
	a := &answer{w: w, max: d.maxAnswer}
	func() {
		defer d.release(e)
		next.ServeHTTP(a, r)
	}()
	d.deliver(a)
}

// read reads r's body in full, at most MaxBodyBytes of it, its memory
// following the bytes received (httpbody.Read). On an error it returns a
// reader that fails as the body did (a body too large, as an
// http.MaxBytesReader fails), for the handler behind to answer.
func (d *Door) read(r *http.Request) ([]byte, io.Reader, error) {
	body, err := httpbody.Read(r, d.maxBody)
	switch {
	case errors.Is(err, httpbody.ErrTooLarge):
		return nil, errReader{&http.MaxBytesError{Limit: d.maxBody}}, err
	case err != nil:
		return nil, errReader{err}, err
	}
	return body, nil, nil
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

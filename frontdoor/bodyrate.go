package frontdoor

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/internal/ratelog"
)

// Defaults for the zero fields of bodyRateConfig.
const (
	defaultGrace       = 5 * time.Second
	defaultMinRate     = 1024 // bytes a second
	defaultBodyTimeout = 30 * time.Second
)

// errSlowBody is the error with which a request body that fell behind the
// minimum rate ends. A handler behind a Door need not tell it apart: the
// bodyRate answers 408 itself, whatever the handler made of the failed
// read.
var errSlowBody = errors.New("frontdoor: request body arrived too slowly")

// bodyRateConfig configures a bodyRate. Zero fields mean the defaults.
type bodyRateConfig struct {
	// Grace is how long a body may take before it must keep to MinRate:
	// its n-th byte must have arrived Grace + n/MinRate after the request
	// began (its header was read). Zero means 5 s.
	Grace time.Duration

	// MinRate is the least rate, in bytes a second, at which a body must
	// arrive after the Grace. Zero means 1 KiB/s: a sender's 1 MiB body
	// over a 64 kbit/s link keeps to it; a byte every 2 s does not.
	MinRate int64

	// Timeout bounds a body's whole time, however fast it arrives. The
	// per-read deadlines replace http.Server.ReadTimeout's while a body is
	// read: set Timeout where you would have set ReadTimeout. Zero means
	// 30 s.
	Timeout time.Duration

	// Logger receives a Warn record per body cut off, at most 10 a minute
	// (the next record written counts those not written). Default: none.
	Logger *slog.Logger
}

// A bodyRate holds request bodies to a minimum rate after a grace, as HTTP
// middleware: a body that falls behind is cut off (its read fails with
// errSlowBody, the connection's read deadline having passed), and the
// request is answered 408 [ProblemSlowBody], whatever the handlers inside
// made of the failed read, and the connection closed. So a slow body holds
// what it holds (an admission slot, a goroutine, a connection) for Grace +
// its length / MinRate at most, not for the server's ReadTimeout.
//
// It enforces the rate with a read deadline before each read of the body
// (http.ResponseController.SetReadDeadline), which it clears once the body
// has ended; a request without a body passes untouched, and so does one
// whose writer has no read deadlines (http.ErrNotSupported).
//
// Put it outside everything that holds something while a body arrives:
// outside anything that bounds the requests in flight (whose Retry-After
// can count on [bodyDeadline]) and the idempotency middleware, which reads the body
// before it claims the key, so that a body cut off claims nothing.
type bodyRate struct {
	grace, timeout time.Duration
	rate           int64
	cuts           *ratelog.Logger
	cut            atomic.Uint64
}

// bodyRateStats is a snapshot of a bodyRate.
type bodyRateStats struct {
	Cut uint64 // bodies cut off, for falling behind or by cutBody, answered 408
}

// newBodyRate returns a bodyRate, or an error for a negative setting.
func newBodyRate(cfg bodyRateConfig) (*bodyRate, error) {
	b := &bodyRate{
		grace:   orDefault(cfg.Grace, defaultGrace),
		rate:    orDefault(cfg.MinRate, defaultMinRate),
		timeout: orDefault(cfg.Timeout, defaultBodyTimeout),
		cuts:    ratelog.New(cfg.Logger, 0, 0),
	}
	if b.grace < 0 || b.rate < 0 || b.timeout < 0 {
		return nil, errors.New("frontdoor: Config.BodyGrace and BodyTimeout must not be negative")
	}
	return b, nil
}

// Stats returns a snapshot of the bodies cut off.
func (b *bodyRate) Stats() bodyRateStats { return bodyRateStats{Cut: b.cut.Load()} }

// Handler wraps next so that the bodies it reads keep to the rate.
func (b *bodyRate) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		g := &guard{rate: b, w: w, ctl: http.NewResponseController(w), src: r.Body, start: time.Now(), length: r.ContentLength}
		r = r.WithContext(r.Context()) // net/http keeps reading its own request's Body (see answerWithoutBody)
		r.Body = (*body)(g)
		next.ServeHTTP(writerFor(g), r)
		if g.tripped.Load() {
			(*writer)(g).answer() // unless the handler's answer was out before the cut
			b.cut.Add(1)
			why := "request body cut off: it fell behind the minimum rate"
			if g.state.Load() == makeRoom {
				why = "request body cut off to make room for another client (cutBody)"
			}
			b.cuts.Warn(r.Context(), why,
				slog.String("remote", r.RemoteAddr), slog.Int64("received", g.got.Load()), slog.Int64("declared", r.ContentLength))
		}
	})
}

// bodyDeadline returns the time by which r's body must have arrived in
// full under the bodyRate that r passed through (Grace + length / MinRate
// after the request began, no later than Timeout), or the zero time when
// no bodyRate guards r's body (or not directly: something in between
// replaced r.Body): by then a slot held by a slow body has been given
// back.
func bodyDeadline(r *http.Request) time.Time {
	g, ok := r.Body.(*body)
	if !ok {
		return time.Time{}
	}
	return (*guard)(g).deadline()
}

// deadline is the time by which g's body must have arrived in full.
func (g *guard) deadline() time.Time {
	if g.length < 0 {
		return g.start.Add(g.rate.timeout)
	}
	return g.start.Add(g.rate.allowance(g.length))
}

// allowance is how long after a request began its n-th body byte may
// arrive: Grace + n/MinRate, at most Timeout.
func (b *bodyRate) allowance(n int64) time.Duration {
	if b.rate == 0 {
		return b.timeout
	}
	d := b.grace + time.Duration(float64(n)/float64(b.rate)*float64(time.Second))
	return min(d, b.timeout)
}

func (b *bodyRate) String() string {
	return fmt.Sprintf("%d bytes/s after %v, at most %v", b.rate, b.grace, b.timeout)
}

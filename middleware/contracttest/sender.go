package contracttest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/senderclock"
)

// attempts records the sender's attempts (Config.OnAttempt).
type attempts struct {
	mu   sync.Mutex
	list []client.Attempt
}

func (a *attempts) observe(at client.Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, at)
}

func (a *attempts) all() []client.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]client.Attempt(nil), a.list...)
}

func (a *attempts) String() string {
	var b strings.Builder
	for _, at := range a.all() {
		fmt.Fprintf(&b, "\n\t\tattempt %d: status %d replayed=%t retryable=%t delay=%v fromRetryAfter=%t err=%v",
			at.Number, at.StatusCode, at.Replayed, at.Retryable, at.Delay, at.FromRetryAfter, at.Err)
	}
	return b.String()
}

// scaledClock is the sender's clock (set with senderclock.Set): real time, but every Sleep
// is recorded as requested and waited a fiftieth of it (at least 1 ms, at
// most 20 ms), so a Retry-After of one second costs 20 ms and the receiver
// still gets real time to finish an in-flight original.
type scaledClock struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *scaledClock) Now() time.Time { return time.Now() }

func (c *scaledClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(min(max(d/50, time.Millisecond), 20*time.Millisecond))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

func (c *scaledClock) requested() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Backoff of the suite's senders: short, so the suite is fast.
var backoff = client.Backoff{Base: 5 * time.Millisecond, Cap: 50 * time.Millisecond}

// sender is a paired sender for one rule, with its own connections, clock
// and attempt log.
type sender struct {
	*client.Sender
	hc       *http.Client
	clock    *scaledClock
	attempts *attempts
	suite    *suite
}

func (s *suite) sender(t tester, maxAttempts int) *sender {
	t.Helper()
	snd := &sender{hc: newClient(t, s.seen), clock: new(scaledClock), attempts: new(attempts), suite: s}
	cfg := client.Config{
		Backoff:        backoff,
		MaxAttempts:    maxAttempts,
		AttemptTimeout: 10 * time.Second,
		Rand:           rand.NewPCG(6, 7),
		OnAttempt:      snd.attempts.observe,
		PrepareAttempt: s.prepareAttempt(),
	}
	senderclock.Set(&cfg, snd.clock)
	var err error
	snd.Sender, err = client.New(snd.hc, cfg)
	if err != nil {
		t.Fatalf("contracttest: client.New: %v", err)
	}
	return snd
}

// prepareAttempt signs every attempt with Target.Sign, or is nil.
func (s *suite) prepareAttempt() func(*http.Request, client.Attempt) error {
	if s.sign == nil {
		return nil
	}
	return func(req *http.Request, a client.Attempt) error { return s.sign(req, a.Key, a.Body) }
}

// maxConns is the most connections the suite opens to the receiver at
// once, from each of its senders and its proxy: under frontdoor's default
// bound per host (frontdoor.Config.MaxConnsPerHost, 8), with room for the
// team's own Executions, so that a receiver behind a front door takes
// the suite as it takes one well-behaved sender. Deliveries past it queue
// for a connection in the sender's transport.
const maxConns = 6

// newClient returns an http.Client with connections of its own, at most
// maxConns to a host, closed at the end of t, that counts the receiver's
// answers in seen.
func newClient(t tester, seen *seen) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost = maxConns
	tr.MaxIdleConnsPerHost = maxConns
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: recording{rt: tr, seen: seen}}
}

// warm opens n connections to base (at most maxConns) and leaves them
// idle in the sender's pool, so that deliveries started together reach the
// receiver together rather than one connection set-up apart. Each connection carries a
// request with an empty key and no body, which the middleware answers 400
// without claiming or running anything (even with Config.KeyOptional).
func (snd *sender) warm(t tester, base string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range min(n, maxConns) {
		wg.Go(func() {
			<-gate
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, snd.suite.ingestURL(base), http.NoBody)
			if err != nil {
				return
			}
			for k, vs := range snd.suite.header {
				req.Header[k] = append([]string(nil), vs...)
			}
			req.Header.Set("Idempotency-Key", "")
			if resp, err := snd.hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	close(gate)
	wg.Wait()
}

// deliver delivers body under key to the ingest path at base.
func (snd *sender) deliver(t tester, base, key string, body []byte) (client.Result, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return snd.Deliver(ctx, client.Delivery{
		URL:         snd.suite.ingestURL(base),
		Key:         key,
		Body:        body,
		ContentType: snd.suite.contentType,
		Header:      snd.suite.header,
	})
}

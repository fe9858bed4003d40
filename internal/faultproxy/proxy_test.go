package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// backend is an httptest receiver that counts the requests it gets and the
// answers it finished writing.
type backend struct {
	srv      *httptest.Server
	got      atomic.Int64  // requests received (body read)
	answered atomic.Int64  // answers written in full
	bodies   chan []byte   // every received body
	finished chan struct{} // one per answer written in full
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{bodies: make(chan []byte, 1024), finished: make(chan struct{}, 1024)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		b.got.Add(1)
		b.bodies <- body
		w.Header().Set("X-Backend", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte("echo:"), body...))
		b.answered.Add(1)
		b.finished <- struct{}{}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) url(t *testing.T) *url.URL {
	t.Helper()
	u, err := url.Parse(b.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// start returns a started proxy in front of b, closed at cleanup.
func start(t *testing.T, b *backend, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(b.url(t), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u, err := p.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p, u
}

// freshClient opens a new connection for every request, so that net/http
// never re-sends a request on its own and every fault reaches the caller.
func freshClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func post(c *http.Client, u, body string) (*http.Response, []byte, error) {
	return postContext(context.Background(), c, u, body)
}

// postContext is post under ctx: canceling ctx is the sender giving up.
func postContext(ctx context.Context, c *http.Client, u, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/features", bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Idempotency-Key", "k-"+body)
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	return res, got, err
}

// isReset reports whether err is a connection reset, or the end of a
// connection closed before any answer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func TestNonePassesThrough(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{})
	res, body, err := post(freshClient(t, 5*time.Second), u, "a")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || string(body) != "echo:a" || res.Header.Get("X-Backend") != "yes" {
		t.Errorf("got %d %q %v, want the backend's 201 echo:a", res.StatusCode, body, res.Header)
	}
	if res.Header.Get(HeaderFault) != "" {
		t.Errorf("clean answer carries %s: %q", HeaderFault, res.Header.Get(HeaderFault))
	}
	_ = p.Close()
	want := Stats{Requests: 1, None: 1, Forwarded: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

func TestLostAck(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{Schedule: map[uint64]Fault{1: LostAck}})
	c := freshClient(t, 5*time.Second)

	res, _, err := post(c, u, "a")
	if err == nil {
		t.Fatalf("LostAck: got a response %d, want a connection error", res.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("LostAck: err = %v, want a connection reset", err)
	}
	if got, ans := b.got.Load(), b.answered.Load(); got != 1 || ans != 1 {
		t.Errorf("backend got %d and answered %d, want the request received and answered in full once", got, ans)
	}

	// The proxy goes on: request 2 is not scheduled.
	if res, _, err := post(c, u, "b"); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("after LostAck: %v, %v; want 201", res, err)
	}
	_ = p.Close()
	want := Stats{Requests: 2, None: 1, LostAck: 1, Forwarded: 2}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// TestLostAckResentOnReusedConn pins down what the package doc warns of:
// on a reused keep-alive connection, net/http re-sends a POST carrying
// Idempotency-Key after the reset, and the proxy sees a third request.
func TestLostAckResentOnReusedConn(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{Schedule: map[uint64]Fault{2: LostAck}})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}

	for _, body := range []string{"a", "b"} {
		res, _, err := post(c, u, body)
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %v, %v; want 201 (the second one re-sent by net/http)", body, res, err)
		}
	}
	_ = p.Close()
	st := p.Stats()
	if st.Requests != 3 || st.LostAck != 1 || st.None != 2 || st.Forwarded != 3 || b.got.Load() != 3 {
		t.Errorf("Stats = %+v, backend got %d; want 3 requests (one re-sent), 1 lost ack, 3 forwarded", st, b.got.Load())
	}
}

func TestInjectRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 55, 0, 200e6, time.UTC)
	for _, tc := range []struct {
		fault Fault
		code  int
		form  RetryAfterForm
		want  string
	}{
		{Inject503, http.StatusServiceUnavailable, RetryAfterSeconds, "2"},
		{Inject503, http.StatusServiceUnavailable, RetryAfterDate, "Wed, 02 Dec 2026 16:55:02 GMT"},
		{Inject429, http.StatusTooManyRequests, RetryAfterSeconds, "2"},
		{Inject429, http.StatusTooManyRequests, RetryAfterDate, "Wed, 02 Dec 2026 16:55:02 GMT"},
	} {
		t.Run(fmt.Sprintf("%v/%d", tc.fault, tc.form), func(t *testing.T) {
			b := newBackend(t)
			p, u := start(t, b, Config{
				Schedule:       map[uint64]Fault{1: tc.fault},
				RetryAfter:     1500 * time.Millisecond, // rounded up
				RetryAfterForm: tc.form,
				Now:            func() time.Time { return now },
			})
			res, _, err := post(freshClient(t, 5*time.Second), u, "a")
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.code {
				t.Errorf("status %d, want %d", res.StatusCode, tc.code)
			}
			if got := res.Header.Get(HeaderFault); got != tc.fault.String() {
				t.Errorf("%s = %q, want %q", HeaderFault, got, tc.fault)
			}
			ra := res.Header.Get("Retry-After")
			if ra != tc.want {
				t.Errorf("Retry-After = %q, want %q", ra, tc.want)
			}
			if tc.form == RetryAfterDate {
				at, err := http.ParseTime(ra)
				if err != nil {
					t.Fatalf("Retry-After %q: %v", ra, err)
				}
				if d := at.Sub(now); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
					t.Errorf("Retry-After date is %v after now, want 1.5 s rounded up to a whole second", d)
				}
			} else if n, err := strconv.Atoi(ra); err != nil || n != 2 {
				t.Errorf("Retry-After %q is not delta-seconds 2", ra)
			}
			if n := b.got.Load(); n != 0 {
				t.Errorf("backend got %d requests, want 0", n)
			}
			_ = p.Close()
			if st := p.Stats(); st.Requests != 1 || st.Count(tc.fault) != 1 || st.Forwarded != 0 {
				t.Errorf("Stats = %+v", st)
			}
		})
	}
}

func TestRetryAfterEitherFormIsSeeded(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 55, 0, 0, time.UTC)
	forms := func(seed uint64) []bool {
		b := newBackend(t)
		_, u := start(t, b, Config{Seed: seed, Inject503: 1, Now: func() time.Time { return now }})
		c := freshClient(t, 5*time.Second)
		var dates []bool
		for i := range 32 {
			res, _, err := post(c, u, strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			ra := res.Header.Get("Retry-After")
			if _, err := strconv.Atoi(ra); err == nil {
				dates = append(dates, false)
				continue
			}
			at, err := http.ParseTime(ra)
			if err != nil || !at.Equal(now.Add(time.Second)) {
				t.Fatalf("Retry-After %q: neither delta-seconds nor now + 1 s as a date (%v)", ra, err)
			}
			dates = append(dates, true)
		}
		return dates
	}
	a, again := forms(7), forms(7)
	if !slices.Equal(a, again) {
		t.Errorf("seed 7 gave two form sequences:\n%v\n%v", a, again)
	}
	if !slices.Contains(a, true) || !slices.Contains(a, false) {
		t.Errorf("32 answers all in one form: %v", a)
	}
}

func TestReset(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{Reset: 1})
	res, _, err := post(freshClient(t, 5*time.Second), u, "a")
	if err == nil {
		t.Fatalf("Reset: got a response %d, want a connection error", res.StatusCode)
	}
	if !isReset(err) {
		t.Errorf("Reset: err = %v, want a connection reset", err)
	}
	if n := b.got.Load(); n != 0 {
		t.Errorf("backend got %d requests, want 0", n)
	}
	_ = p.Close()
	want := Stats{Requests: 1, Reset: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// cue replaces the timer of a Delay with a channel the test closes.
func cue() (after func(time.Duration) <-chan time.Time, release func()) {
	ch := make(chan time.Time)
	var once sync.Once
	return func(time.Duration) <-chan time.Time { return ch }, func() { once.Do(func() { close(ch) }) }
}

// within fails the test unless ch delivers within 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestDelayRequest: the sender times out first, and the request still
// reaches the receiver afterwards, body intact; its answer is dropped.
// Shutdown waits for the held request to be forwarded.
func TestDelayRequest(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	clientCtx := make(chan context.Context, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, After: after,
		OnDecision: func(_ uint64, r *http.Request, _ Fault) { clientCtx <- r.Context() },
	})
	_, _, err := post(freshClient(t, 50*time.Millisecond), u, "late")
	if !isTimeout(err) {
		t.Fatalf("err = %v, want the client's timeout", err)
	}
	if n := b.got.Load(); n != 0 {
		t.Fatalf("backend got the request before the delay ended (%d)", n)
	}
	within(t, within(t, clientCtx, "the decision").Done(), "the proxy to see the client go")
	release()
	shutdown(t, p)
	select {
	case body := <-b.bodies:
		if string(body) != "late" {
			t.Errorf("backend got body %q, want %q", body, "late")
		}
	default:
		t.Fatal("Shutdown returned before the delayed request reached the backend")
	}
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1, Dropped: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// TestDelayRequestPatientClient: a client that waits gets the answer, once
// the delay is over.
func TestDelayRequestPatientClient(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	decided := make(chan Fault, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, After: after,
		OnDecision: func(_ uint64, _ *http.Request, f Fault) { decided <- f },
	})
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, body, err := post(freshClient(t, 0), u, "x")
		done <- answer{res, body, err}
	}()
	within(t, decided, "the decision")
	select {
	case a := <-done:
		t.Fatalf("answered before the delay ended: %+v", a)
	default:
	}
	if n := b.got.Load(); n != 0 {
		t.Fatalf("backend got the request before the delay ended (%d)", n)
	}
	release()
	a := within(t, done, "the answer")
	if a.err != nil || a.res.StatusCode != http.StatusCreated || string(a.body) != "echo:x" {
		t.Fatalf("got %+v, want 201 echo:x", a)
	}
	shutdown(t, p)
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

// TestDelayResponse: the receiver does the work at once, the answer is
// held past the sender's timeout and dropped. The sender gives up only once
// the proxy holds the answer (the delay's timer has been asked for): a
// sender giving up earlier, on a wall-clock timeout, would race the forward
// and, on a loaded machine, cancel it (a ForwardError, not a Dropped).
func TestDelayResponse(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	held := make(chan struct{}, 1)
	p, u := start(t, b, Config{
		Delay: 1, DelayFor: time.Hour, DelayMode: DelayResponse,
		After: func(d time.Duration) <-chan time.Time { held <- struct{}{}; return after(d) },
	})
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, _, err := postContext(ctx, freshClient(t, 0), u, "a")
		done <- err
	}()
	within(t, b.bodies, "the request at the backend") // while the client waits
	within(t, held, "the proxy holding the answer")
	giveUp() // the sender's timeout
	if err := within(t, done, "the client"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the client's context.Canceled", err)
	}
	shutdown(t, p) // the held answer is dropped once the proxy sees the client go
	want := Stats{Requests: 1, Delay: 1, Forwarded: 1, Dropped: 1}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

func TestDelayResponsePatientClient(t *testing.T) {
	b := newBackend(t)
	after, release := cue()
	defer release()
	p, u := start(t, b, Config{Delay: 1, DelayFor: time.Hour, After: after, DelayMode: DelayResponse})
	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, body, err := post(freshClient(t, 0), u, "b")
		done <- answer{res, body, err}
	}()
	within(t, b.bodies, "the request at the backend")
	within(t, b.finished, "the backend's answer")
	select {
	case a := <-done:
		t.Fatalf("answered before the delay ended: %+v", a)
	default:
	}
	release()
	a := within(t, done, "the answer")
	if a.err != nil || a.res.StatusCode != http.StatusCreated || string(a.body) != "echo:b" || a.res.Header.Get("X-Backend") != "yes" {
		t.Fatalf("got %+v, want the backend's 201 echo:b", a)
	}
	shutdown(t, p)
	if st := p.Stats(); st.Dropped != 0 || st.Forwarded != 1 || st.Delay != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestShutdownDeadline: a Shutdown whose ctx ends first closes the proxy
// at once; the held request is never forwarded.
func TestShutdownDeadline(t *testing.T) {
	b := newBackend(t)
	held := make(chan struct{})
	p, u := start(t, b, Config{
		Delay:      1,
		DelayFor:   time.Hour,
		OnDecision: func(uint64, *http.Request, Fault) { close(held) },
	})
	done := make(chan error, 1)
	go func() {
		_, _, err := post(freshClient(t, 0), u, "a")
		done <- err
	}()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if err := <-done; err == nil {
		t.Error("the client got an answer from a closed proxy")
	}
	if n := b.got.Load(); n != 0 {
		t.Errorf("backend got %d requests, want 0", n)
	}
}

func shutdown(t *testing.T, p *Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestCloseEndsDelay: Close does not wait out a long delay, and the held
// request is never forwarded.
func TestCloseEndsDelay(t *testing.T) {
	b := newBackend(t)
	held := make(chan struct{})
	p, u := start(t, b, Config{
		Delay:      1,
		DelayFor:   time.Hour,
		OnDecision: func(uint64, *http.Request, Fault) { close(held) },
	})
	done := make(chan error, 1)
	go func() {
		_, _, err := post(freshClient(t, 0), u, "a")
		done <- err
	}()
	<-held
	closed := make(chan struct{})
	go func() { _ = p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close is waiting out the delay")
	}
	if err := <-done; err == nil {
		t.Error("the client got an answer from a closed proxy")
	}
	if n := b.got.Load(); n != 0 {
		t.Errorf("backend got %d requests after Close, want 0", n)
	}
	if st := p.Stats(); st.Forwarded != 0 || st.Delay != 1 {
		t.Errorf("Stats = %+v", st)
	}
	if _, err := p.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// outcome is what a client saw for one request.
func outcome(res *http.Response, err error) string {
	switch {
	case err != nil:
		return "error"
	case res.Header.Get(HeaderFault) != "":
		return res.Header.Get(HeaderFault)
	default:
		return strconv.Itoa(res.StatusCode)
	}
}

// run sends n requests one after another and returns the decided faults
// and what the client saw.
func run(t *testing.T, seed uint64, n int) (faults []Fault, seen []string, st Stats, backendGot int64) {
	t.Helper()
	b := newBackend(t)
	var mu sync.Mutex
	p, u := start(t, b, Config{
		Seed: seed, LostAck: 0.15, Inject503: 0.15, Inject429: 0.15, Reset: 0.15, Delay: 0.1,
		DelayFor: 5 * time.Millisecond,
		OnDecision: func(_ uint64, _ *http.Request, f Fault) {
			mu.Lock()
			faults = append(faults, f)
			mu.Unlock()
		},
	})
	c := freshClient(t, 5*time.Second)
	for i := range n {
		res, _, err := post(c, u, strconv.Itoa(i))
		seen = append(seen, outcome(res, err))
	}
	shutdown(t, p)
	return faults, seen, p.Stats(), b.got.Load()
}

func TestSeedReproducible(t *testing.T) {
	const n = 60
	f1, s1, st1, got1 := run(t, 1, n)
	f2, s2, _, _ := run(t, 1, n)
	f3, s3, _, _ := run(t, 2, n)
	if len(f1) != n {
		t.Fatalf("%d decisions for %d requests", len(f1), n)
	}
	if !slices.Equal(f1, f2) || !slices.Equal(s1, s2) {
		t.Errorf("seed 1 twice gave different runs:\n%v\n%v\n%v\n%v", f1, f2, s1, s2)
	}
	if slices.Equal(f1, f3) || slices.Equal(s1, s3) {
		t.Errorf("seeds 1 and 2 gave the same run: %v", f1)
	}
	for f := None; f <= Delay; f++ {
		if !slices.Contains(f1, f) {
			t.Errorf("no %v in %d requests: %v", f, n, f1)
		}
	}
	// What the client saw matches what was decided.
	for i, f := range f1 {
		want := map[Fault]string{None: "201", Delay: "201", LostAck: "error", Reset: "error",
			Inject503: "inject-503", Inject429: "inject-429"}[f]
		if s1[i] != want {
			t.Errorf("request %d: decided %v, client saw %s, want %s", i+1, f, s1[i], want)
		}
	}
	// Stats add up.
	var sum uint64
	for f := None; f <= Down; f++ {
		sum += st1.Count(f)
		var c uint64
		for _, g := range f1 {
			if g == f {
				c++
			}
		}
		if st1.Count(f) != c {
			t.Errorf("Stats.Count(%v) = %d, decided %d times", f, st1.Count(f), c)
		}
	}
	if st1.Requests != n || sum != n || st1.Injected() != n-st1.None {
		t.Errorf("Stats = %+v: counts sum to %d, want %d", st1, sum, n)
	}
	if want := st1.None + st1.LostAck + st1.Delay; st1.Forwarded != want || uint64(got1) != want {
		t.Errorf("Forwarded = %d, backend got %d, want None+LostAck+Delay = %d", st1.Forwarded, got1, want)
	}
}

func TestPauseResumeDown(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{Reset: 1})
	c := freshClient(t, 5*time.Second)
	expect := func(what, want string) {
		t.Helper()
		res, _, err := post(c, u, what)
		if got := outcome(res, err); got != want {
			t.Errorf("%s: client saw %s, want %s (err %v)", what, got, want, err)
		}
	}
	expect("faulty", "error")
	p.Pause()
	expect("paused", "201")
	p.Resume()
	expect("resumed", "error")
	p.SetDown(true)
	p.Pause()
	expect("down", "error")
	p.SetDown(false)
	expect("up, paused", "201")
	p.Resume()
	if err := p.SetConfig(Config{Inject429: 1}); err != nil {
		t.Fatal(err)
	}
	expect("reconfigured", "inject-429")
	if err := p.SetConfig(Config{Inject429: 2}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("SetConfig(Inject429: 2) = %v, want ErrInvalidConfig", err)
	}
	if cfg := p.Config(); cfg.Inject429 != 1 || cfg.RetryAfter != DefaultRetryAfter {
		t.Errorf("after a failed SetConfig, Config() = %+v", cfg)
	}
	_ = p.Close()
	want := Stats{Requests: 6, None: 2, Reset: 2, Down: 1, Inject429: 1, Forwarded: 2}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if n := b.got.Load(); n != 2 {
		t.Errorf("backend got %d requests, want 2", n)
	}
}

func TestHandlerOnOwnServer(t *testing.T) {
	b := newBackend(t)
	p, err := New(b.url(t), Config{Schedule: map[uint64]Fault{2: Reset}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	defer p.Close()
	c := freshClient(t, 5*time.Second)
	if res, _, err := post(c, srv.URL, "a"); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("request 1: %v %v, want 201", res, err)
	}
	if _, _, err := post(c, srv.URL, "b"); !isReset(err) {
		t.Fatalf("request 2: err %v, want a reset", err)
	}
	_ = p.Close()
	if _, _, err := post(c, srv.URL, "c"); !isReset(err) {
		t.Fatalf("after Close: err %v, want a reset", err)
	}
}

func TestNewRejects(t *testing.T) {
	loop, _ := url.Parse("http://127.0.0.1:1")
	for name, tc := range map[string]struct {
		target string
		cfg    Config
	}{
		"remote target":   {"http://192.0.2.1:80", Config{}},
		"named target":    {"http://example.com", Config{}},
		"https target":    {"https://127.0.0.1:1", Config{}},
		"negative":        {"", Config{Reset: -0.1}},
		"above one":       {"", Config{LostAck: 1.5}},
		"NaN":             {"", Config{Delay: nanValue()}},
		"sum above one":   {"", Config{LostAck: 0.6, Reset: 0.6}},
		"scheduled Down":  {"", Config{Schedule: map[uint64]Fault{3: Down}}},
		"unknown fault":   {"", Config{Schedule: map[uint64]Fault{3: Fault(99)}}},
		"negative delay":  {"", Config{DelayFor: -time.Second}},
		"unknown form":    {"", Config{RetryAfterForm: 7}},
		"unknown mode":    {"", Config{DelayMode: 7}},
		"negative buffer": {"", Config{MaxBufferBytes: -1}},
	} {
		target := loop
		if tc.target != "" {
			target, _ = url.Parse(tc.target)
		}
		if _, err := New(target, tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:1", "http://[::1]:1", "http://localhost:1/base"} {
		target, _ := url.Parse(ok)
		p, err := New(target, Config{LostAck: 0.5, Reset: 0.5})
		if err != nil {
			t.Errorf("New(%s) = %v", ok, err)
			continue
		}
		_ = p.Close()
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(nil) = %v", err)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestFaultString(t *testing.T) {
	if None.String() != "none" || LostAck.String() != "lost-ack" || Down.String() != "down" || Fault(42).String() != "Fault(42)" {
		t.Errorf("String: %v %v %v %v", None, LostAck, Down, Fault(42))
	}
}

// TestNoGoroutinesAfterClose runs every fault concurrently over keep-alive
// connections, leaves a long delay pending, closes the proxy, and checks
// that the goroutine count comes back to where it was, with the backend
// still running (so the proxy must have closed its own connections to it).
func TestNoGoroutinesAfterClose(t *testing.T) {
	b := newBackend(t)
	before := runtime.NumGoroutine()
	p, err := New(b.url(t), Config{
		Seed: 3, LostAck: 0.15, Inject503: 0.15, Inject429: 0.15, Reset: 0.15, Delay: 0.15,
		DelayFor: 20 * time.Millisecond, Schedule: map[uint64]Fault{1: Delay},
	})
	if err != nil {
		t.Fatal(err)
	}
	u, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				_, _, _ = post(c, u, fmt.Sprintf("%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	// One request held for an hour when Close comes.
	held := make(chan struct{})
	if err := p.SetConfig(Config{Delay: 1, DelayFor: time.Hour, OnDecision: func(uint64, *http.Request, Fault) { close(held) }}); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _, _, _ = post(c, u, "held") })
	<-held
	_ = p.Close()
	wg.Wait()
	tr.CloseIdleConnections()

	st := p.Stats()
	if st.Requests < 81 || st.Requests != st.None+st.LostAck+st.Inject503+st.Inject429+st.Reset+st.Delay+st.Down {
		t.Errorf("Stats do not add up: %+v", st)
	}
	if got := uint64(b.got.Load()); st.Forwarded != got {
		t.Errorf("Forwarded = %d, backend got %d", st.Forwarded, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond) // goroutines finishing their last steps
	}
}

// TestCloseWaitsForRequests: Close does not return while a request is
// still being handled.
func TestCloseWaitsForRequests(t *testing.T) {
	b := newBackend(t)
	inside, unblock := make(chan struct{}), make(chan struct{})
	p, u := start(t, b, Config{OnDecision: func(uint64, *http.Request, Fault) {
		close(inside)
		<-unblock
	}})
	go func() { _, _, _ = post(freshClient(t, 0), u, "a") }()
	<-inside
	closed := make(chan struct{})
	go func() { _ = p.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a request was in progress")
	case <-time.After(20 * time.Millisecond):
	}
	close(unblock)
	within(t, closed, "Close")
}

package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

func TestDeliverSuccess(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 201, body: `{"stored":1}`, header: map[string]string{"Idempotent-Replayed": "true"}}}}
	sink := &memSink{}
	s := newSender(t, tr, client.Config{Clock: newFakeClock(), DeadLetter: sink})
	res, err := s.Deliver(context.Background(), delivery())
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if res.Attempts != 1 || res.StatusCode != 201 || !res.Replayed || string(res.Body) != `{"stored":1}` {
		t.Errorf("Result = %+v", res)
	}
	reqs := tr.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.header.Get("Idempotency-Key") != "key-1" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("request: %s, headers %v", r.method, r.header)
	}
	if len(sink.All()) != 0 {
		t.Errorf("a success was dead-lettered: %+v", sink.All())
	}
}

// TestDelaysFollowBackoff checks that the sender sleeps exactly the delays
// its Backoff computes from the same seed, on the fake clock, and that
// they stay within [base, cap].
func TestDelaysFollowBackoff(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, client.Config{Clock: clock, Rand: newSource(seed), Deadline: -1})
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrExhausted) {
			t.Fatalf("err = %v, want ErrExhausted", err)
		}
		if res.Attempts != 6 || len(tr.Requests()) != 6 {
			t.Fatalf("attempts %d, requests %d, want 6", res.Attempts, len(tr.Requests()))
		}
		var want []time.Duration
		rnd := rand.New(newSource(seed))
		for d := range (client.Backoff{}).Delays(rnd) {
			want = append(want, d)
			if len(want) == 5 {
				break
			}
		}
		got := clock.Sleeps()
		if !slices.Equal(got, want) {
			t.Errorf("seed %d: slept %v, want %v", seed, got, want)
		}
		for _, d := range got {
			if d < client.DefaultBase || d > client.DefaultCap {
				t.Errorf("seed %d: delay %v outside [base, cap]", seed, d)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	date := epoch.Add(-time.Hour) // the server's clock is an hour behind ours
	cases := []struct {
		name   string
		header map[string]string
		cfg    client.Config
		want   time.Duration
	}{
		{"delta-seconds", map[string]string{"Retry-After": "7"}, client.Config{}, 7 * time.Second},
		{"zero", map[string]string{"Retry-After": "0"}, client.Config{}, 0},
		{"shorter than the backoff", map[string]string{"Retry-After": "0"}, client.Config{Backoff: client.Backoff{Base: 10 * time.Second, Cap: time.Minute}}, 0},
		{"IMF-fixdate relative to Date", map[string]string{
			"Retry-After": date.Add(12 * time.Second).Format(http.TimeFormat),
			"Date":        date.Format(http.TimeFormat),
		}, client.Config{}, 12 * time.Second},
		{"RFC 850", map[string]string{
			"Retry-After": date.Add(13 * time.Second).Format(time.RFC850),
			"Date":        date.Format(http.TimeFormat),
		}, client.Config{}, 13 * time.Second},
		{"asctime", map[string]string{
			"Retry-After": date.Add(14 * time.Second).Format(time.ANSIC),
			"Date":        date.Format(http.TimeFormat),
		}, client.Config{}, 14 * time.Second},
		{"date without Date header: relative to our clock", map[string]string{
			"Retry-After": epoch.Add(15 * time.Second).Format(http.TimeFormat),
		}, client.Config{}, 15 * time.Second},
		{"date in the past", map[string]string{"Retry-After": epoch.Add(-time.Minute).Format(http.TimeFormat)}, client.Config{}, 0},
		{"86400 clamped to the default", map[string]string{"Retry-After": "86400"}, client.Config{}, client.DefaultMaxRetryAfter},
		{"86400 clamped to MaxRetryAfter", map[string]string{"Retry-After": "86400"}, client.Config{MaxRetryAfter: 5 * time.Second}, 5 * time.Second},
		{"overflowing delta clamped", map[string]string{"Retry-After": "99999999999999999999999"}, client.Config{}, client.DefaultMaxRetryAfter},
		{"far date clamped", map[string]string{"Retry-After": epoch.AddDate(1, 0, 0).Format(http.TimeFormat)}, client.Config{MaxRetryAfter: 9 * time.Second}, 9 * time.Second},
	}
	for _, tc := range cases {
		for _, status := range []int{429, 503} {
			t.Run(fmt.Sprintf("%d %s", status, tc.name), func(t *testing.T) {
				clock := newFakeClock()
				tr := &scriptTransport{steps: []step{{status: status, header: tc.header}, {status: 200}}}
				cfg := tc.cfg
				cfg.Clock, cfg.Deadline = clock, -1
				var hooks []client.Attempt
				cfg.OnAttempt = func(a client.Attempt) { hooks = append(hooks, a) }
				s := newSender(t, tr, cfg)
				if _, err := s.Deliver(context.Background(), delivery()); err != nil {
					t.Fatal(err)
				}
				if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{tc.want}) {
					t.Errorf("slept %v, want [%v]", got, tc.want)
				}
				if len(hooks) != 2 || !hooks[0].FromRetryAfter || hooks[0].Delay != tc.want {
					t.Errorf("hooks = %+v", hooks)
				}
			})
		}
	}
	t.Run("malformed: the computed delay", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "soon"}}, {status: 200}}}
		s := newSender(t, tr, client.Config{Clock: clock, Backoff: client.Backoff{Strategy: client.Exponential, Base: 3 * time.Second}})
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{3 * time.Second}) {
			t.Errorf("slept %v, want [3s]", got)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := epoch
	for _, tc := range []struct {
		value, date string
		want        time.Duration
		ok          bool
	}{
		{"", "", 0, false},
		{"  ", "", 0, false},
		{"-5", "", 0, false},
		{"1.5", "", 0, false},
		{"120", "", 2 * time.Minute, true},
		{" 3 ", "", 3 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:00:30 GMT", "", 30 * time.Second, true},
		{"Sun Mar  1 12:00:30 2026", "", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "Sun, 01 Mar 2026 12:00:20 GMT", 10 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "garbage", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", "", 0, true},
		{"tomorrow", "", 0, false},
	} {
		got, ok := client.ParseRetryAfter(tc.value, tc.date, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q, %q) = %v, %v; want %v, %v", tc.value, tc.date, got, ok, tc.want, tc.ok)
		}
	}
	if d, ok := client.ParseRetryAfter("999999999999999999999999", "", now); !ok || d <= 100*365*24*time.Hour {
		t.Errorf("huge delta = %v, %v; want a huge positive delay", d, ok)
	}
}

func TestRetryableSet(t *testing.T) {
	retryAfter := map[string]string{"Retry-After": "1"}
	retryable := []step{
		{status: 429}, {status: 500}, {status: 502}, {status: 503}, {status: 504},
		{status: 409, header: retryAfter},
		{err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}},
		{err: fmt.Errorf("read: %w", context.DeadlineExceeded)},
	}
	for _, st := range retryable {
		name := strconv.Itoa(st.status)
		if st.err != nil {
			name = st.err.Error()
		}
		t.Run("retried "+name, func(t *testing.T) {
			tr := &scriptTransport{steps: []step{st, {status: 201}}}
			s := newSender(t, tr, client.Config{Clock: newFakeClock()})
			res, err := s.Deliver(context.Background(), delivery())
			if err != nil || res.Attempts != 2 || res.StatusCode != 201 {
				t.Errorf("Deliver = %+v, %v; want success on attempt 2", res, err)
			}
		})
	}
	permanent := []step{
		{status: 400}, {status: 401}, {status: 403}, {status: 404}, {status: 405}, {status: 408},
		{status: 409}, {status: 410}, {status: 412}, {status: 413}, {status: 415}, {status: 422},
		{status: 400, header: retryAfter}, {status: 422, header: retryAfter},
		{status: 304}, {status: 501}, {status: 505}, {status: 511},
	}
	for _, st := range permanent {
		t.Run(fmt.Sprintf("permanent %d %v", st.status, st.header), func(t *testing.T) {
			clock := newFakeClock()
			sink := &memSink{}
			tr := &scriptTransport{steps: []step{st, {status: 201}}}
			s := newSender(t, tr, client.Config{Clock: clock, DeadLetter: sink})
			res, err := s.Deliver(context.Background(), delivery())
			if !errors.Is(err, client.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
			var se *client.StatusError
			if !errors.As(err, &se) || se.StatusCode != st.status {
				t.Errorf("err %v carries no StatusError %d", err, st.status)
			}
			var de *client.DeliveryError
			if !errors.As(err, &de) || de.Attempts != 1 || de.StatusCode != st.status || de.Key != "key-1" {
				t.Errorf("DeliveryError = %+v", de)
			}
			if res.Attempts != 1 || len(tr.Requests()) != 1 || len(clock.Sleeps()) != 0 {
				t.Errorf("attempts %d, requests %d, sleeps %v; want 1, 1, none", res.Attempts, len(tr.Requests()), clock.Sleeps())
			}
			if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "permanent" {
				t.Errorf("dead letters = %+v", dls)
			}
		})
	}
	t.Run("RetryableStatus", func(t *testing.T) {
		for code := 100; code < 600; code++ {
			want := code == 429 || code == 500 || code == 502 || code == 503 || code == 504
			if got := client.RetryableStatus(code, false); got != want {
				t.Errorf("RetryableStatus(%d, false) = %v", code, got)
			}
			if got := client.RetryableStatus(code, true); got != (want || code == 409) {
				t.Errorf("RetryableStatus(%d, true) = %v", code, got)
			}
		}
	})
}

func TestProblemDocument(t *testing.T) {
	body := `{"type":"https://geoidem.dev/problems/invalid-geometry","title":"Invalid geometry",
		"status":422,"detail":"ring not closed","instance":42,
		"errors":[{"pointer":"/geometry/coordinates/0","detail":"not closed"}]}`
	tr := &scriptTransport{steps: []step{{status: 422, body: body, header: map[string]string{"Content-Type": "application/problem+json; charset=utf-8"}}}}
	s := newSender(t, tr, client.Config{Clock: newFakeClock()})
	res, err := s.Deliver(context.Background(), delivery())
	var se *client.StatusError
	if !errors.As(err, &se) || se.Problem == nil {
		t.Fatalf("err = %v, want a StatusError with a problem", err)
	}
	p := se.Problem
	if p.Type != "https://geoidem.dev/problems/invalid-geometry" || p.Title != "Invalid geometry" || p.Status != 422 || p.Detail != "ring not closed" {
		t.Errorf("problem = %+v", p)
	}
	if p.Instance != "" {
		t.Errorf("instance of the wrong type kept: %q", p.Instance)
	}
	if got := string(p.Extensions["errors"]); got != `[{"pointer":"/geometry/coordinates/0","detail":"not closed"}]` {
		t.Errorf("extension errors = %s", got)
	}
	if res.Problem != p || string(res.Body) != body || res.StatusCode != 422 {
		t.Errorf("Result = %+v", res)
	}
	if want := "client: 422 Unprocessable Entity: Invalid geometry: ring not closed"; se.Error() != want {
		t.Errorf("StatusError = %q, want %q", se.Error(), want)
	}
}

func TestProblemJSON(t *testing.T) {
	var p client.Problem
	if err := p.UnmarshalJSON([]byte(`{"title":7,"status":"422","ext":{"a":1}}`)); err != nil {
		t.Fatal(err)
	}
	if p.Type != "about:blank" || p.Title != "" || p.Status != 0 || string(p.Extensions["ext"]) != `{"a":1}` {
		t.Errorf("problem = %+v", p)
	}
	out, err := p.MarshalJSON()
	if err != nil || string(out) != `{"ext":{"a":1},"type":"about:blank"}` {
		t.Errorf("MarshalJSON = %s, %v", out, err)
	}
	if err := p.UnmarshalJSON([]byte(`[1]`)); err == nil {
		t.Error("a JSON array decoded as a problem")
	}
	// Not problem+json: no Problem, whatever the body.
	tr := &scriptTransport{steps: []step{{status: 400, body: `{"title":"x"}`, header: map[string]string{"Content-Type": "application/json"}}}}
	s := newSender(t, tr, client.Config{Clock: newFakeClock()})
	res, _ := s.Deliver(context.Background(), delivery())
	if res.Problem != nil {
		t.Errorf("application/json parsed as a problem: %+v", res.Problem)
	}
}

func TestDeadline(t *testing.T) {
	t.Run("gives up when the next attempt cannot fit", func(t *testing.T) {
		clock := newFakeClock()
		// Each attempt takes 1s; the delay is always 2s; an attempt needs 1s.
		tr := &scriptTransport{clock: clock, steps: []step{{status: 503, took: time.Second}}}
		sink := &memSink{}
		s := newSender(t, tr, client.Config{
			Clock:          clock,
			Backoff:        client.Backoff{Strategy: client.Exponential, Base: 2 * time.Second, Cap: 2 * time.Second},
			MaxAttempts:    100,
			Deadline:       10 * time.Second,
			AttemptTimeout: time.Second,
			DeadLetter:     sink,
		})
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) {
			t.Fatalf("err = %v, want ErrDeadline", err)
		}
		// Attempts run over [0,1] [3,4] [6,7] [9,10]; at 10 s, 2 s of delay
		// and 1 s of attempt no longer fit.
		if res.Attempts != 4 {
			t.Errorf("attempts = %d, want 4", res.Attempts)
		}
		if got := clock.Now().Sub(epoch); got > 10*time.Second {
			t.Errorf("the delivery ran %v, past its 10s deadline", got)
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "deadline" || dls[0].Attempts != 4 || dls[0].LastStatus != 503 {
			t.Errorf("dead letters = %+v", dls)
		}
	})
	t.Run("never sleeps into it for Retry-After", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "30"}}, {status: 201}}}
		s := newSender(t, tr, client.Config{Clock: clock, Deadline: 20 * time.Second, AttemptTimeout: time.Second})
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) || res.Attempts != 1 {
			t.Fatalf("Deliver = %+v, %v; want ErrDeadline after 1 attempt", res, err)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("slept %v before giving up", clock.Sleeps())
		}
	})
	t.Run("the context's deadline counts too", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503, header: map[string]string{"Retry-After": "7200"}}}}
		s := newSender(t, tr, client.Config{Clock: clock, Deadline: -1, MaxRetryAfter: 2 * time.Hour})
		if _, err := s.Deliver(ctx, delivery()); !errors.Is(err, client.ErrDeadline) {
			t.Fatalf("err = %v, want ErrDeadline", err)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("slept %v", clock.Sleeps())
		}
	})
	t.Run("the attempt timeout is cut to the deadline", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 201}}}
		s := newSender(t, tr, client.Config{Clock: newFakeClock(), Deadline: 3 * time.Second, AttemptTimeout: time.Hour})
		before := time.Now()
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		dl, ok := tr.Requests()[0].ctx.Deadline()
		if !ok || dl.Sub(before) > 3*time.Second+time.Second {
			t.Errorf("attempt deadline %v (set %v), want about 3s from now", dl.Sub(before), ok)
		}
	})
	t.Run("with no attempt timeout the longest attempt is the need", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{clock: clock, steps: []step{{status: 503, took: 4 * time.Second}}}
		s := newSender(t, tr, client.Config{
			Clock: clock, Backoff: client.Backoff{Strategy: client.None},
			AttemptTimeout: -1, Deadline: 10 * time.Second, MaxAttempts: 100,
		})
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrDeadline) || res.Attempts != 2 {
			t.Errorf("Deliver = %d attempts, %v; want ErrDeadline after 2 (0-4s, 4-8s; 8+4 > 10)", res.Attempts, err)
		}
		if _, ok := tr.Requests()[0].ctx.Deadline(); !ok {
			t.Error("the attempt is not bounded by the delivery deadline")
		}
	})
}

func TestCancellation(t *testing.T) {
	t.Run("during a wait", func(t *testing.T) {
		clock := &blockingClock{sleeping: make(chan time.Duration)}
		tr := &scriptTransport{steps: []step{{status: 503}}}
		sink := &memSink{}
		s := newSender(t, tr, client.Config{Clock: clock, DeadLetter: sink})
		ctx, cancel := context.WithCancel(context.Background())
		type ret struct {
			res client.Result
			err error
		}
		done := make(chan ret)
		go func() {
			res, err := s.Deliver(ctx, delivery())
			done <- ret{res, err}
		}()
		<-clock.sleeping
		cancel()
		r := <-done
		if !errors.Is(r.err, context.Canceled) || r.res.Attempts != 1 || len(tr.Requests()) != 1 {
			t.Errorf("Deliver = %+v, %v; want context.Canceled after 1 attempt", r.res, r.err)
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Reason != "canceled" {
			t.Errorf("dead letters = %+v", dls)
		}
	})
	t.Run("during an attempt", func(t *testing.T) {
		started := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			close(started)
			<-req.Context().Done()
			return nil, req.Context().Err()
		})
		s := newSender(t, tr, client.Config{Clock: newFakeClock()})
		go func() { <-started; cancel() }()
		res, err := s.Deliver(ctx, delivery())
		var de *client.DeliveryError
		if !errors.As(err, &de) || de.Reason != context.Canceled || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v; want reason context.Canceled after 1 attempt", res, err)
		}
		if errors.Is(err, client.ErrPermanent) {
			t.Errorf("a canceled delivery reported as permanent: %v", err)
		}
	})
	t.Run("context deadline during an attempt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			cancel() // stands in for the deadline passing mid-attempt
			return nil, context.Canceled
		})
		s := newSender(t, tr, client.Config{Clock: newFakeClock()})
		res, err := s.Deliver(ctx, delivery())
		var de *client.DeliveryError
		if !errors.As(err, &de) || de.Reason != context.Canceled || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v; want reason context.Canceled after 1 attempt", res, err)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tr := &scriptTransport{steps: []step{{status: 201}}}
		sink := &memSink{}
		s := newSender(t, tr, client.Config{Clock: newFakeClock(), DeadLetter: sink})
		res, err := s.Deliver(ctx, delivery())
		if !errors.Is(err, context.Canceled) || res.Attempts != 0 || len(tr.Requests()) != 0 {
			t.Errorf("Deliver = %+v, %v, %d requests", res, err, len(tr.Requests()))
		}
		if dls := sink.All(); len(dls) != 1 || dls[0].Attempts != 0 {
			t.Errorf("dead letters = %+v", dls)
		}
	})
	t.Run("SystemClock.Sleep", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var c client.SystemClock
		if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(canceled, 1h) = %v", err)
		}
		if err := c.Sleep(context.Background(), 0); err != nil {
			t.Errorf("Sleep(0) = %v", err)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Sleep(ctx2, time.Hour) }()
		cancel2()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep canceled while waiting = %v", err)
		}
		if d := time.Since(c.Now()); d < 0 || d > time.Minute {
			t.Errorf("SystemClock.Now is %v away from time.Now", d)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSameKeyAndBody runs over loopback HTTP: every attempt carries the same
// Idempotency-Key and the same body bytes, even when the caller changes its
// slice after Deliver started, while PrepareAttempt re-signs each attempt.
func TestSameKeyAndBody(t *testing.T) {
	var (
		mu     sync.Mutex
		keys   []string
		bodies [][]byte
		stamps []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, buf.Bytes())
		stamps = append(stamps, r.Header.Get("Webhook-Timestamp"))
		n := len(keys)
		mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusConflict) // the original is still running
		default:
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":"f1"}`)
		}
	}))
	defer srv.Close()

	clock := newFakeClock()
	d := client.Delivery{URL: srv.URL, Key: `order "42"`, Body: []byte(`{"type":"Feature","geometry":null,"properties":{"a":1}}`)}
	want := bytes.Clone(d.Body)
	s, err := client.New(srv.Client(), client.Config{
		Clock: clock,
		PrepareAttempt: func(req *http.Request, a client.AttemptStart) error {
			if a.Number == 1 {
				d.Body[0] = 'X' // the caller scribbles on its slice
			}
			if a.Key != `order "42"` || !bytes.Equal(a.Body, want) {
				return fmt.Errorf("PrepareAttempt got key %q body %q", a.Key, a.Body)
			}
			req.Header.Set("Webhook-Timestamp", strconv.FormatInt(a.Time.Unix(), 10))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Deliver(context.Background(), d)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if res.Attempts != 3 || !res.Replayed || string(res.Body) != `{"id":"f1"}` {
		t.Errorf("Result = %+v", res)
	}
	for i := range keys {
		if keys[i] != `"order \"42\""` {
			t.Errorf("attempt %d: Idempotency-Key %q", i+1, keys[i])
		}
		if !bytes.Equal(bodies[i], want) {
			t.Errorf("attempt %d: body %q, want %q", i+1, bodies[i], want)
		}
	}
	wantStamps := []string{
		strconv.FormatInt(epoch.Unix(), 10),
		strconv.FormatInt(epoch.Add(3*time.Second).Unix(), 10),
		strconv.FormatInt(epoch.Add(4*time.Second).Unix(), 10),
	}
	if !slices.Equal(stamps, wantStamps) {
		t.Errorf("webhook-timestamp per attempt = %v, want %v (re-signed each attempt)", stamps, wantStamps)
	}
}

func TestPrepareAttemptError(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 201}}}
	boom := errors.New("no signing key")
	s := newSender(t, tr, client.Config{
		Clock:          newFakeClock(),
		PrepareAttempt: func(*http.Request, client.AttemptStart) error { return boom },
	})
	_, err := s.Deliver(context.Background(), delivery())
	if !errors.Is(err, boom) || !errors.Is(err, client.ErrPermanent) {
		t.Errorf("err = %v, want ErrPermanent wrapping the hook's error", err)
	}
	if len(tr.Requests()) != 0 {
		t.Errorf("%d requests sent", len(tr.Requests()))
	}
}

func TestKeyRequired(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 201}}}
	sink := &memSink{}
	s := newSender(t, tr, client.Config{Clock: newFakeClock(), DeadLetter: sink})
	for key, want := range map[string]error{"": client.ErrNoKey, "caf\u00e9": client.ErrInvalidKey, "a\nb": client.ErrInvalidKey} {
		d := delivery()
		d.Key = key
		if _, err := s.Deliver(context.Background(), d); !errors.Is(err, want) {
			t.Errorf("key %q: err = %v, want %v", key, err, want)
		}
	}
	for _, d := range []client.Delivery{
		{URL: "ftp://receiver.test/", Key: "k"},
		{URL: "/relative", Key: "k"},
		{URL: "http://%zz", Key: "k"},
		{URL: "http://receiver.test/", Key: "k", Method: "BAD METHOD"},
	} {
		if _, err := s.Deliver(context.Background(), d); !errors.Is(err, client.ErrInvalidDelivery) {
			t.Errorf("%+v: err = %v, want ErrInvalidDelivery", d, err)
		}
	}
	if n := len(tr.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	if n := len(sink.All()); n != 0 {
		t.Errorf("%d dead letters for invalid deliveries", n)
	}
}

func TestEncodeKey(t *testing.T) {
	for key, want := range map[string]string{
		"abc-123":                              "abc-123",
		"6f1c2a1e-9b4f-4a57-9c55-2c1b7f3c8a10": "6f1c2a1e-9b4f-4a57-9c55-2c1b7f3c8a10",
		"urn:geo/1.2":                          "urn:geo/1.2",
		"a b":                                  `"a b"`,
		`say "hi"`:                             `"say \"hi\""`,
		`back\slash`:                           `"back\\slash"`,
		" lead":                                `" lead"`,
	} {
		got, err := client.EncodeKey(key)
		if err != nil || got != want {
			t.Errorf("EncodeKey(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, key := range []string{"\x00", "tab\there", "\x7f", "ключ"} {
		if _, err := client.EncodeKey(key); !errors.Is(err, client.ErrInvalidKey) {
			t.Errorf("EncodeKey(%q) err = %v, want ErrInvalidKey", key, err)
		}
	}
}

func TestConnectionErrors(t *testing.T) {
	t.Run("reset after the request", func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			first := n == 1
			mu.Unlock()
			if first { // the lost acknowledgement: drop the connection
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		defer srv.Close()
		// Keep-alives off, so the transport cannot replay the request on
		// its own and the retry is ours.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		s, err := client.New(hc, client.Config{Clock: newFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		d := delivery()
		d.URL = srv.URL
		res, err := s.Deliver(context.Background(), d)
		if err != nil || res.Attempts != 2 {
			t.Errorf("Deliver = %+v, %v; want success on attempt 2", res, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		s, err := client.New(nil, client.Config{Clock: newFakeClock(), MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		d := delivery()
		d.URL = "http://" + addr + "/"
		res, err := s.Deliver(context.Background(), d)
		if !errors.Is(err, client.ErrExhausted) || res.Attempts != 3 || res.StatusCode != 0 {
			t.Errorf("Deliver = %+v, %v; want ErrExhausted after 3 attempts", res, err)
		}
	})
	t.Run("untrusted certificate is permanent", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error is expected
		srv.StartTLS()
		defer srv.Close()
		hc := &http.Client{Transport: &http.Transport{}} // does not trust the test CA
		s, err := client.New(hc, client.Config{Clock: newFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		d := delivery()
		d.URL = srv.URL
		res, err := s.Deliver(context.Background(), d)
		if !errors.Is(err, client.ErrPermanent) || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v; want ErrPermanent after 1 attempt", res, err)
		}
	})
}

func TestRetryBudget(t *testing.T) {
	t.Run("token bucket", func(t *testing.T) {
		b, err := client.NewRetryBudget(client.BudgetConfig{Ratio: 0.5, Burst: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := []bool{b.Withdraw(), b.Withdraw(), b.Withdraw()}; !slices.Equal(got, []bool{true, true, false}) {
			t.Fatalf("three withdrawals from a full bucket of 2: %v", got)
		}
		b.Deposit()
		if b.Withdraw() {
			t.Fatal("half a token withdrawn")
		}
		b.Deposit()
		if !b.Withdraw() {
			t.Fatal("two deposits of 0.5 did not make a token")
		}
		for range 10 {
			b.Deposit()
		}
		if got := b.Tokens(); got != 2 {
			t.Errorf("tokens = %v, want the burst 2", got)
		}
		d, _ := client.NewRetryBudget(client.BudgetConfig{Burst: 1})
		d.Withdraw()
		for range 10 {
			d.Deposit() // the default ratio 0.1, ten times: exactly one token
		}
		if !d.Withdraw() {
			t.Errorf("ten deposits of 0.1 gave %v tokens", d.Tokens())
		}
		if _, err := client.NewRetryBudget(client.BudgetConfig{Ratio: -1}); !errors.Is(err, client.ErrInvalidConfig) {
			t.Errorf("negative ratio: %v", err)
		}
	})
	t.Run("caps amplification", func(t *testing.T) {
		budget, err := client.NewRetryBudget(client.BudgetConfig{})
		if err != nil {
			t.Fatal(err)
		}
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, client.Config{Clock: newFakeClock(), Budget: budget, Deadline: -1})
		var wg sync.WaitGroup
		var mu sync.Mutex
		outOfBudget := 0
		const deliveries = 100
		for range deliveries {
			wg.Go(func() {
				_, err := s.Deliver(context.Background(), delivery())
				if errors.Is(err, client.ErrBudgetExhausted) {
					mu.Lock()
					outOfBudget++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		retries := len(tr.Requests()) - deliveries
		// At most Burst + Ratio × deliveries = 10 + 10 retries, instead of
		// the 500 that six attempts each would make.
		if retries > 20 || retries < 10 {
			t.Errorf("%d retries for %d deliveries, want 10 to 20", retries, deliveries)
		}
		if outOfBudget < deliveries-20 {
			t.Errorf("only %d deliveries ran out of budget", outOfBudget)
		}
	})
	t.Run("shared across senders", func(t *testing.T) {
		budget, _ := client.NewRetryBudget(client.BudgetConfig{Burst: 1, Ratio: 1e-6})
		tr := &scriptTransport{steps: []step{{status: 503}}}
		sink := &memSink{}
		a := newSender(t, tr, client.Config{Clock: newFakeClock(), Budget: budget, DeadLetter: sink})
		b := newSender(t, tr, client.Config{Clock: newFakeClock(), Budget: budget, DeadLetter: sink})
		ra, erra := a.Deliver(context.Background(), delivery())
		rb, errb := b.Deliver(context.Background(), delivery())
		if !errors.Is(erra, client.ErrBudgetExhausted) || ra.Attempts != 2 {
			t.Errorf("first: %d attempts, %v; want 2 and ErrBudgetExhausted", ra.Attempts, erra)
		}
		if !errors.Is(errb, client.ErrBudgetExhausted) || rb.Attempts != 1 {
			t.Errorf("second: %d attempts, %v; want 1 and ErrBudgetExhausted", rb.Attempts, errb)
		}
		if dls := sink.All(); len(dls) != 2 || dls[0].Reason != "budget" {
			t.Errorf("dead letters = %+v", dls)
		}
	})
}

func TestOnAttempt(t *testing.T) {
	clock := newFakeClock()
	tr := &scriptTransport{clock: clock, steps: []step{
		{status: 503, took: time.Second},
		{status: 429, header: map[string]string{"Retry-After": "2"}, took: time.Second},
		{err: errors.New("boom: permanent"), took: time.Second},
	}}
	var got []client.Attempt
	s := newSender(t, tr, client.Config{
		Clock:     clock,
		Backoff:   client.Backoff{Strategy: client.Exponential, Base: time.Second},
		OnAttempt: func(a client.Attempt) { got = append(got, a) },
	})
	_, err := s.Deliver(context.Background(), delivery())
	if !errors.Is(err, client.ErrPermanent) {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("%d hook calls, want 3", len(got))
	}
	want := []struct {
		status         int
		retryable      bool
		final          bool
		delay          time.Duration
		fromRetryAfter bool
		start          time.Duration
	}{
		{503, true, false, time.Second, false, 0},
		{429, true, false, 2 * time.Second, true, 2 * time.Second},
		{0, false, true, 0, false, 5 * time.Second},
	}
	for i, w := range want {
		a := got[i]
		if a.Number != i+1 || a.StatusCode != w.status || a.Retryable != w.retryable || a.Final != w.final ||
			a.Delay != w.delay || a.FromRetryAfter != w.fromRetryAfter || a.Start.Sub(epoch) != w.start ||
			a.Duration != time.Second || a.Key != "key-1" || a.Err == nil {
			t.Errorf("attempt %d = %+v, want %+v", i+1, a, w)
		}
	}
	var se *client.StatusError
	if !errors.As(got[0].Err, &se) || se.StatusCode != 503 {
		t.Errorf("attempt 1 Err = %v, want a StatusError", got[0].Err)
	}
}

func TestConfig(t *testing.T) {
	for name, cfg := range map[string]client.Config{
		"negative attempts":      {MaxAttempts: -1},
		"negative retry-after":   {MaxRetryAfter: -time.Second},
		"negative response size": {MaxResponseBytes: -1},
		"bad backoff":            {Backoff: client.Backoff{Base: time.Minute, Cap: time.Second}},
	} {
		if _, err := client.New(nil, cfg); !errors.Is(err, client.ErrInvalidConfig) {
			t.Errorf("%s: New err = %v, want ErrInvalidConfig", name, err)
		}
	}
	t.Run("one attempt", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, client.Config{Clock: newFakeClock(), MaxAttempts: 1})
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrExhausted) || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v", res, err)
		}
	})
	t.Run("response body limit", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 200, body: "0123456789abcdef"}}}
		s := newSender(t, tr, client.Config{Clock: newFakeClock(), MaxResponseBytes: 10})
		res, err := s.Deliver(context.Background(), delivery())
		if err != nil || string(res.Body) != "0123456789" {
			t.Errorf("Deliver = %q, %v", res.Body, err)
		}
	})
	t.Run("method, content type and headers", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 200}}}
		s := newSender(t, tr, client.Config{Clock: newFakeClock()})
		d := delivery()
		d.Method = http.MethodPatch
		d.ContentType = "application/geo+json"
		d.Header = http.Header{"X-Tenant": {"t1"}, "Idempotency-Key": {"other"}}
		if _, err := s.Deliver(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		r := tr.Requests()[0]
		if r.method != http.MethodPatch || r.header.Get("Content-Type") != "application/geo+json" ||
			r.header.Get("X-Tenant") != "t1" || r.header.Values("Idempotency-Key")[0] != "key-1" || len(r.header.Values("Idempotency-Key")) != 1 {
			t.Errorf("request %s %v", r.method, r.header)
		}
	})
}

func TestDeliveryErrorText(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 503}}}
	s := newSender(t, tr, client.Config{Clock: newFakeClock(), MaxAttempts: 2})
	_, err := s.Deliver(context.Background(), delivery())
	want := `client: delivery of key "key-1": attempts exhausted after 2 attempts: client: 503 Service Unavailable`
	if err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

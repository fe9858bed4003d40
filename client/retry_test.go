package client_test

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// TestDelaysFollowBackoff checks that the sender sleeps exactly the delays
// its Backoff computes from the same seed, on the fake clock, and that
// they stay within [base, cap].
func TestDelaysFollowBackoff(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		clock := newFakeClock()
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, withClock(clock, client.Config{Rand: newSource(seed), Deadline: -1}))
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
			if d < 500*time.Millisecond || d > 30*time.Second { // the documented default base and cap
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
		{"86400 clamped to the default, a minute", map[string]string{"Retry-After": "86400"}, client.Config{}, time.Minute},
		{"86400 clamped to MaxRetryAfter", map[string]string{"Retry-After": "86400"}, client.Config{MaxRetryAfter: 5 * time.Second}, 5 * time.Second},
		{"overflowing delta clamped", map[string]string{"Retry-After": "99999999999999999999999"}, client.Config{}, time.Minute},
		{"far date clamped", map[string]string{"Retry-After": epoch.AddDate(1, 0, 0).Format(http.TimeFormat)}, client.Config{MaxRetryAfter: 9 * time.Second}, 9 * time.Second},
	}
	for _, tc := range cases {
		for _, status := range []int{429, 503} {
			t.Run(fmt.Sprintf("%d %s", status, tc.name), func(t *testing.T) {
				clock := newFakeClock()
				tr := &scriptTransport{steps: []step{{status: status, header: tc.header}, {status: 200}}}
				cfg := withClock(clock, tc.cfg)
				cfg.Deadline = -1
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
		s := newSender(t, tr, withClock(clock, client.Config{Backoff: client.Backoff{Strategy: client.Exponential, Base: 3 * time.Second}}))
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{3 * time.Second}) {
			t.Errorf("slept %v, want [3s]", got)
		}
	})
}

func TestRetryableSet(t *testing.T) {
	retryAfter := map[string]string{"Retry-After": "1"}
	retryable := []step{
		{status: 408}, {status: 429}, {status: 500}, {status: 502}, {status: 503}, {status: 504},
		{status: 501}, {status: 505}, {status: 507}, {status: 511},
		{status: 409, header: retryAfter},
		{status: 409, header: map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}},
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
			s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
			res, err := s.Deliver(context.Background(), delivery())
			if err != nil || res.Attempts != 2 || res.StatusCode != 201 {
				t.Errorf("Deliver = %+v, %v; want success on attempt 2", res, err)
			}
		})
	}
	permanent := []step{
		{status: 400}, {status: 401}, {status: 403}, {status: 404}, {status: 405},
		{status: 409}, {status: 410}, {status: 412}, {status: 413}, {status: 415}, {status: 422},
		{status: 400, header: retryAfter}, {status: 422, header: retryAfter},
		{status: 304}, {status: 409, header: map[string]string{"Retry-After": "soon"}},
	}
	for _, st := range permanent {
		t.Run(fmt.Sprintf("permanent %d %v", st.status, st.header), func(t *testing.T) {
			clock := newFakeClock()
			sink := &memSink{}
			tr := &scriptTransport{steps: []step{st, {status: 201}}}
			s := newSender(t, tr, withClock(clock, client.Config{DeadLetter: sink}))
			res, err := s.Deliver(context.Background(), delivery())
			if !errors.Is(err, client.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
			var se *client.StatusError
			if !errors.As(err, &se) || se.StatusCode != st.status {
				t.Errorf("err %v carries no StatusError %d", err, st.status)
			}
			var de *client.DeliveryError
			if !errors.As(err, &de) || de.Key != "key-1" || !strings.Contains(de.Error(), "after 1 attempt:") {
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
			want := code == 408 || code == 429 || code >= 500
			if got := client.RetryableStatus(code, false); got != want {
				t.Errorf("RetryableStatus(%d, false) = %v", code, got)
			}
			if got := client.RetryableStatus(code, true); got != (want || code == 409) {
				t.Errorf("RetryableStatus(%d, true) = %v", code, got)
			}
		}
	})
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
		s, err := client.New(hc, withClock(newFakeClock(), client.Config{}))
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
		s, err := client.New(nil, withClock(newFakeClock(), client.Config{MaxAttempts: 3}))
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
		s, err := client.New(hc, withClock(newFakeClock(), client.Config{}))
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
		b, err := client.NewRetryBudget(0.5, 2)
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
		d, _ := client.NewRetryBudget(0, 1)
		d.Withdraw()
		for range 10 {
			d.Deposit() // the default ratio 0.1, ten times: exactly one token
		}
		if !d.Withdraw() {
			t.Errorf("ten deposits of 0.1 gave %v tokens", d.Tokens())
		}
		e, _ := client.NewRetryBudget(0.1, 2)
		if got := []bool{e.Withdraw(), e.Withdraw(), e.Withdraw()}; !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("three withdrawals from a full bucket of 2: %v", got)
		}
		for range 10 {
			e.Deposit() // one delivery each
		}
		if got := e.Tokens(); got != 1 {
			t.Errorf("ten deposits of 0.1 into an empty bucket: %v tokens, want 1", got)
		}
		if _, err := client.NewRetryBudget(-1, 0); !errors.Is(err, client.ErrInvalidConfig) {
			t.Errorf("negative ratio: %v", err)
		}
	})
	t.Run("caps amplification", func(t *testing.T) {
		budget, err := client.NewRetryBudget(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{Budget: budget, Deadline: -1}))
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
		budget, _ := client.NewRetryBudget(1e-6, 1)
		tr := &scriptTransport{steps: []step{{status: 503}}}
		sink := &memSink{}
		a := newSender(t, tr, withClock(newFakeClock(), client.Config{Budget: budget, DeadLetter: sink}))
		b := newSender(t, tr, withClock(newFakeClock(), client.Config{Budget: budget, DeadLetter: sink}))
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

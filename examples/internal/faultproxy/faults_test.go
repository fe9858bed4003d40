package faultproxy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

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

package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

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
	// The defaults are documented on the fields of Config, and not
	// exported: each is checked here by what the sender does.
	t.Run("zero AttemptTimeout is 15 s", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 200}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
		if _, err := s.Deliver(context.Background(), delivery()); err != nil {
			t.Fatal(err)
		}
		dl, ok := tr.Requests()[0].ctx.Deadline()
		if left := time.Until(dl); !ok || left > 15*time.Second || left < 14*time.Second {
			t.Errorf("attempt deadline %v away (set: %t), want 15 s", left, ok)
		}
	})
	t.Run("zero Deadline is 5 minutes", func(t *testing.T) {
		clock := newFakeClock()
		tr := &scriptTransport{clock: clock, steps: []step{inFlight("1")}}
		s := newSender(t, tr, withClock(clock, client.Config{}))
		_, err := s.Deliver(context.Background(), delivery())
		// The last wait (1 s) and attempt (15 s) must fit before it.
		if took := clock.Now().Sub(epoch); !errors.Is(err, client.ErrDeadline) || took > 5*time.Minute || took <= 5*time.Minute-16*time.Second {
			t.Errorf("Deliver = %v after %v, want ErrDeadline within the last 16 s of 5 minutes", err, took)
		}
	})
	t.Run("one attempt", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 503}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{MaxAttempts: 1}))
		res, err := s.Deliver(context.Background(), delivery())
		if !errors.Is(err, client.ErrExhausted) || res.Attempts != 1 {
			t.Errorf("Deliver = %+v, %v", res, err)
		}
	})
	t.Run("response body limit", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 200, body: "0123456789abcdef"}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{MaxResponseBytes: 10}))
		res, err := s.Deliver(context.Background(), delivery())
		if err != nil || string(res.Body) != "0123456789" {
			t.Errorf("Deliver = %q, %v", res.Body, err)
		}
	})
	t.Run("method, content type and headers", func(t *testing.T) {
		tr := &scriptTransport{steps: []step{{status: 200}}}
		s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
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

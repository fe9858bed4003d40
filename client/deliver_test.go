package client_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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

func TestDeliverSuccess(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 201, body: `{"stored":1}`, header: map[string]string{"Idempotent-Replayed": "true"}}}}
	sink := &memSink{}
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{DeadLetter: sink}))
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
	s, err := client.New(srv.Client(), withClock(clock, client.Config{
		PrepareAttempt: func(req *http.Request, a client.Attempt) error {
			if a.Number == 1 {
				d.Body[0] = 'X' // the caller scribbles on its slice
			}
			if a.Key != `order "42"` || !bytes.Equal(a.Body, want) {
				return fmt.Errorf("PrepareAttempt got key %q body %q", a.Key, a.Body)
			}
			// The delivery as sent, defaults applied; nothing of an answer yet.
			if a.URL != srv.URL || a.Method != http.MethodPost || a.ContentType != "application/json" ||
				a.StatusCode != 0 || a.Err != nil || a.Duration != 0 || a.Final || !a.Start.Equal(clock.Now()) {
				return fmt.Errorf("PrepareAttempt got %+v", a)
			}
			req.Header.Set("Webhook-Timestamp", strconv.FormatInt(a.Start.Unix(), 10))
			return nil
		},
	}))
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
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{
		PrepareAttempt: func(*http.Request, client.Attempt) error { return boom },
	}))
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
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{DeadLetter: sink}))
	for key, want := range map[string]string{"": "empty idempotency key", "caf\u00e9": "outside printable ASCII", "a\nb": "outside printable ASCII"} {
		d := delivery()
		d.Key = key
		if _, err := s.Deliver(context.Background(), d); !errors.Is(err, client.ErrInvalidDelivery) || !strings.Contains(err.Error(), want) {
			t.Errorf("key %q: err = %v, want ErrInvalidDelivery saying %q", key, err, want)
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

func TestOnAttempt(t *testing.T) {
	clock := newFakeClock()
	tr := &scriptTransport{clock: clock, steps: []step{
		{status: 503, took: time.Second},
		{status: 429, header: map[string]string{"Retry-After": "2"}, took: time.Second},
		{err: &tls.CertificateVerificationError{Err: errors.New("boom: permanent")}, took: time.Second},
	}}
	var got []client.Attempt
	s := newSender(t, tr, withClock(clock, client.Config{
		Backoff:   client.Backoff{Strategy: client.Exponential, Base: time.Second},
		OnAttempt: func(a client.Attempt) { got = append(got, a) },
	}))
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

func TestDeliveryErrorText(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 503}}}
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{MaxAttempts: 2}))
	_, err := s.Deliver(context.Background(), delivery())
	want := `client: delivery of key "key-1": attempts exhausted after 2 attempts: client: 503 Service Unavailable`
	if err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

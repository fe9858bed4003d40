package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// A transport error the sender does not know is transient: a stream reset,
// a GOAWAY, a proxy's own failure may all be retried, and the receiver
// answers the retry from its record if the first attempt ran.
func TestUnknownTransportErrorIsRetried(t *testing.T) {
	for _, err := range []error{
		errors.New("stream error: stream ID 1; INTERNAL_ERROR; received from peer"),
		errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=INTERNAL_ERROR"),
		errors.New("something nobody classified"),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			tr := &scriptTransport{steps: []step{{err: err}, {status: 201}}}
			s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
			res, derr := s.Deliver(context.Background(), delivery())
			if derr != nil || res.Attempts != 2 {
				t.Errorf("Deliver = %+v, %v; want success on attempt 2", res, derr)
			}
		})
	}
}

// A redirect the http.Client's policy refuses (its CheckRedirect, or the
// default limit of 10) is permanent: every retry would be refused the same.
func TestRedirectPolicyIsPermanent(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		http.Redirect(w, r, "/again", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for _, hc := range []*http.Client{
		{},
		{CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("no redirects") }},
	} {
		n = 0
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
	}
}

// A request net/http refuses to send (a header value with a newline) is
// permanent: it is malformed, and stays so.
func TestMalformedRequestIsPermanent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	s, err := client.New(nil, withClock(newFakeClock(), client.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	d := delivery()
	d.URL = srv.URL
	d.Header = http.Header{"X-Bad": {"a\nb"}}
	res, err := s.Deliver(context.Background(), d)
	if !errors.Is(err, client.ErrPermanent) || res.Attempts != 1 {
		t.Errorf("Deliver = %+v, %v; want ErrPermanent after 1 attempt", res, err)
	}
}

package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/geoidem/geoidem/client"
)

func TestProblemDocument(t *testing.T) {
	body := `{"type":"https://geoidem.dev/problems/invalid-geometry","title":"Invalid geometry",
		"status":422,"detail":"ring not closed","instance":42,
		"errors":[{"pointer":"/geometry/coordinates/0","detail":"not closed"}]}`
	tr := &scriptTransport{steps: []step{{status: 422, body: body, header: map[string]string{"Content-Type": "application/problem+json; charset=utf-8"}}}}
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
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
	if len(p.Errors) != 1 || p.Errors[0].Pointer != "/geometry/coordinates/0" || p.Errors[0].Detail != "not closed" {
		t.Errorf("errors = %+v", p.Errors)
	}
	if string(res.Body) != body || res.StatusCode != 422 {
		t.Errorf("Result = %+v", res)
	}
	if want := "client: 422 Unprocessable Entity: Invalid geometry: ring not closed"; se.Error() != want {
		t.Errorf("StatusError = %q, want %q", se.Error(), want)
	}
}

// An answer that is not problem+json carries no problem document,
// whatever its body.
func TestProblemOnlyFromProblemJSON(t *testing.T) {
	tr := &scriptTransport{steps: []step{{status: 400, body: `{"title":"x"}`, header: map[string]string{"Content-Type": "application/json"}}}}
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{}))
	_, err := s.Deliver(context.Background(), delivery())
	var se *client.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 {
		t.Fatalf("err = %v, want a StatusError 400", err)
	}
	if se.Problem != nil {
		t.Errorf("application/json parsed as a problem: %+v", se.Problem)
	}
}

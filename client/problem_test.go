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

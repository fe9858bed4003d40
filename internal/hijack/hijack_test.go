package hijack_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoidem/geoidem/internal/hijack"
)

type hijackable struct{ http.ResponseWriter }

func (hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, nil }

type wrapper struct{ http.ResponseWriter }

func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type loop struct{ http.ResponseWriter }

func (l *loop) Unwrap() http.ResponseWriter { return l }

func TestPossible(t *testing.T) {
	rec := httptest.NewRecorder()
	for name, c := range map[string]struct {
		w    http.ResponseWriter
		want bool
	}{
		"recorder":                      {rec, false},
		"hijacker":                      {hijackable{rec}, true},
		"wrapped hijacker":              {wrapper{wrapper{hijackable{rec}}}, true},
		"wrapped recorder":              {wrapper{rec}, false},
		"a writer unwrapping to itself": {&loop{rec}, false},
		"nil":                           {nil, false},
	} {
		if got := hijack.Possible(c.w); got != c.want {
			t.Errorf("%s: Possible = %v, want %v", name, got, c.want)
		}
	}
}

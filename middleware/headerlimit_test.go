package middleware_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// The header limit that SECURITY.md states for examples/ingest is the real
// one: with http.Server.MaxHeaderBytes at 16 KiB, net/http admits a request
// line and header section of up to MaxHeaderBytes + 4096 = 20,480 bytes
// (its read-buffer slack), and refuses 20,481 with 431 before the
// middleware sees anything.
func TestHeaderLimitIsMaxHeaderBytesPlus4096(t *testing.T) {
	var ev events
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Observer: ev.observe, KeyOptional: true})
	srv := httptest.NewUnstartedServer(m.Handler(newCounter()))
	srv.Config.MaxHeaderBytes = 16 << 10
	srv.Start()
	defer srv.Close()
	status := func(n int) int { // a request whose head is exactly n bytes
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		head, tail := "POST /features HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nX-Pad: ", "\r\n\r\n"
		fmt.Fprint(c, head+strings.Repeat("a", n-len(head)-len(tail))+tail)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("head of %d bytes: %v", n, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const limit = 16<<10 + 4096
	if got := status(limit); got == http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a head of %d bytes: 431, want it admitted", limit)
	}
	seen := len(ev.outcomes())
	if got := status(limit + 1); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a head of %d bytes: %d, want 431", limit+1, got)
	}
	if len(ev.outcomes()) != seen {
		t.Fatalf("the middleware saw the refused request")
	}
}

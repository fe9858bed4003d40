package frontdoor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Behind TLS (crypto/tls wraps the Conns' connections), ConnState and Hold
// still find each connection: a request in its handler is neither idle
// nor closable, and its connection is idle again once answered.
func TestConnsBehindTLS(t *testing.T) {
	conns, err := newConns(connsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(conns.Hold(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	})))
	srv.Listener = conns.Listener(srv.Listener)
	srv.Config.ConnState = conns.ConnState
	srv.StartTLS()
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before srv.Close, which waits for the handler
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, 20*time.Second, "the request held in its handler", func() bool {
		st := conns.Stats()
		return st.Held == 1 && st.Idle == 0
	})
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the connection idle again, no longer held", func() bool {
		st := conns.Stats()
		return st.Held == 0 && st.Idle == 1 && st.Open == 1
	})
}

package frontdoor

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// capabilities answers with the optional interfaces its writer shows to
// type assertions.
var capabilities = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, f := w.(http.Flusher)
	_, h := w.(http.Hijacker)
	fmt.Fprintf(w, "flusher=%v hijacker=%v", f, h)
})

// http.Flusher and http.Hijacker stay visible to type assertions behind a
// bodyRate where the server's writer has them (an HTTP/1 server's has
// both), and Hijacker stays hidden where it has not (httptest's recorder),
// as behind the idempotency middleware.
func TestFlusherAndHijackerStayVisible(t *testing.T) {
	rate, err := newBodyRate(bodyRateConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rate.Handler(capabilities))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "flusher=true hijacker=true" {
		t.Errorf("behind a bodyRate on an HTTP/1 server: %s, want flusher=true hijacker=true", b)
	}
	w := httptest.NewRecorder()
	rate.Handler(capabilities).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("body")))
	if w.Body.String() != "flusher=true hijacker=false" {
		t.Errorf("behind a bodyRate on httptest.ResponseRecorder: %s, want flusher=true hijacker=false", w.Body)
	}
}

// A handler behind a bodyRate can take the connection over with a type
// assertion, and the bodyRate writes nothing on it afterwards.
func TestHijackBehindBodyRate(t *testing.T) {
	rate, err := newBodyRate(bodyRateConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rate.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no hijacker", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 299 Hijacked\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		buf.Flush()
	})))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 299 {
		t.Errorf("hijacked through a type assertion behind a bodyRate: %s, want 299 Hijacked", resp.Status)
	}
}

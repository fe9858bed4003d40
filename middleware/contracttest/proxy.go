package contracttest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// action is what the proxy does with one request.
type action int

const (
	forward     action = iota // forward it and pass the answer on
	forwardDrop               // forward it, then drop the answer: hijack and close the connection
	answerSelf                // answer it with the behaviour's own response; the receiver never sees it
)

// exchange is one request the proxy saw and what came of it.
type exchange struct {
	n      int      // 1 for the first request
	keys   []string // the Idempotency-Key field values
	body   []byte
	action action
	// The receiver's answer, when the request was forwarded.
	status int
	header http.Header
	answer []byte
	err    error // forwarding failed
}

func (e exchange) String() string {
	var verb string
	switch e.action {
	case forward:
		verb = "forwarded"
	case forwardDrop:
		verb = "forwarded, answer dropped"
	case answerSelf:
		verb = "answered by the proxy, not forwarded"
	}
	s := fmt.Sprintf("request %d (Idempotency-Key %q, body %d bytes): %s", e.n, e.keys, len(e.body), verb)
	if e.action == answerSelf {
		return s
	}
	if e.err != nil {
		return s + fmt.Sprintf("; forwarding failed: %v", e.err)
	}
	return s + fmt.Sprintf("; the receiver answered %d, Idempotent-Replayed: %q, body %s", e.status, e.header.Get("Idempotent-Replayed"), quote(e.answer))
}

// proxy sits between the sender and the receiver on a loopback port of its
// own. For each request, behave decides what to do; when it answers
// itself, it writes the response.
type proxy struct {
	url      string
	upstream string
	hc       *http.Client
	behave   func(n int, w http.ResponseWriter) action

	mu  sync.Mutex
	log []exchange
}

func newProxy(t tester, seen *seen, upstream string, behave func(n int, w http.ResponseWriter) action) *proxy {
	t.Helper()
	p := &proxy{upstream: upstream, hc: newClient(t, seen), behave: behave}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "contracttest proxy: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	ex := exchange{n: len(p.log) + 1, keys: r.Header.Values("Idempotency-Key"), body: body}
	p.log = append(p.log, ex)
	p.mu.Unlock()

	ex.action = p.behave(ex.n, w)
	if ex.action != answerSelf {
		p.roundTrip(r, &ex)
	}
	p.mu.Lock()
	p.log[ex.n-1] = ex
	p.mu.Unlock()

	switch {
	case ex.action == answerSelf:
		// behave wrote the answer.
	case ex.err != nil:
		http.Error(w, "contracttest proxy: "+ex.err.Error(), http.StatusBadGateway)
	case ex.action == forwardDrop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "contracttest proxy: cannot drop the answer: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_ = conn.Close()
	default:
		h := w.Header()
		for k, vs := range ex.header {
			h[k] = append([]string(nil), vs...)
		}
		w.WriteHeader(ex.status)
		_, _ = w.Write(ex.answer)
	}
}

// roundTrip forwards r, with body, to the receiver and keeps its answer in ex.
func (p *proxy) roundTrip(r *http.Request, ex *exchange) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(ex.body))
	if err != nil {
		ex.err = err
		return
	}
	for k, vs := range r.Header {
		if hopByHop[k] {
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	resp, err := p.hc.Do(out)
	if err != nil {
		ex.err = err
		return
	}
	defer resp.Body.Close()
	ex.answer, ex.err = io.ReadAll(resp.Body)
	ex.status = resp.StatusCode
	ex.header = resp.Header.Clone()
	for k := range ex.header {
		if hopByHop[k] || k == "Content-Length" {
			delete(ex.header, k)
		}
	}
}

var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

func (p *proxy) exchanges() []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]exchange(nil), p.log...)
}

func (p *proxy) String() string {
	var b strings.Builder
	for _, e := range p.exchanges() {
		b.WriteString("\n\t\t")
		b.WriteString(e.String())
	}
	return b.String()
}

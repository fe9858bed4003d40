package contracttest_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// protocols are the two ways the paired sender reaches a receiver.
var protocols = []struct {
	name  string
	proto func() *http.Protocols
}{
	{"HTTP/1.1", func() *http.Protocols { p := new(http.Protocols); p.SetHTTP1(true); return p }},
	{"HTTP/2", func() *http.Protocols { p := new(http.Protocols); p.SetUnencryptedHTTP2(true); return p }},
}

// receiver serves handler behind the middleware on a fresh memstore over
// proto (HTTP/2 without TLS), its errors discarded.
func receiver(t *testing.T, proto *http.Protocols, handler http.Handler) *httptest.Server {
	t.Helper()
	m, err := middleware.New(memstore.New(memstore.Config{}), middleware.Config{RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(m.Handler(handler))
	srv.Config.Protocols = proto
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panics are the test's
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// sender is the paired sender over proto, with a short attempt timeout
// and short waits.
func pairedSender(t *testing.T, proto *http.Protocols) *client.Sender {
	t.Helper()
	tr := &http.Transport{Protocols: proto, DisableKeepAlives: proto.HTTP1()}
	t.Cleanup(tr.CloseIdleConnections)
	s, err := client.New(&http.Client{Transport: tr}, client.Config{
		MaxAttempts:    5,
		AttemptTimeout: time.Second,
		Backoff:        client.Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// firstRun is a handler whose first run does fail, and whose later runs
// answer 201; it counts its runs.
type firstRun struct {
	runs atomic.Int64
	fail func(w http.ResponseWriter, r *http.Request)
}

func (h *firstRun) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if h.runs.Add(1) == 1 {
		h.fail(w, r)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// Every transport error the paired sender meets, over HTTP/1.1 and
// HTTP/2, in both directions, is retried, and the retry is answered as the
// middleware left the key: run again when it was released (the handler
// failed before its answer), replayed when it was recorded (the answer was
// lost on the way back), run for the first time when nothing was claimed
// (the upload was cut). A stream reset is no more final than a reset
// connection.
func TestTransportErrorsAreRetried(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cases := []struct {
				name     string
				fail     func(w http.ResponseWriter, r *http.Request)
				wantRuns int64 // 2: the key was released; 1: recorded
			}{
				{"handler panics before its answer (reset, EOF or stream reset)", func(http.ResponseWriter, *http.Request) { panic("boom") }, 2},
				{"handler aborts before its answer", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, 2},
				{"answer cut after its status (EOF or stream reset)", func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Length", "100")
					w.WriteHeader(http.StatusCreated)
					_, _ = w.Write([]byte("partial"))
					http.NewResponseController(w).Flush()
					panic(http.ErrAbortHandler)
				}, 1},
				{"answer slower than the attempt timeout", func(w http.ResponseWriter, _ *http.Request) {
					time.Sleep(1500 * time.Millisecond)
					w.WriteHeader(http.StatusCreated)
				}, 1},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					h := &firstRun{fail: c.fail}
					srv := receiver(t, p.proto(), h)
					res, err := pairedSender(t, p.proto()).Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: "k", Body: []byte(`{}`)})
					if err != nil || res.StatusCode != http.StatusCreated || res.Attempts < 2 {
						t.Fatalf("Deliver = %d after %d attempts, %v; want 201 after a retry", res.StatusCode, res.Attempts, err)
					}
					if got := h.runs.Load(); got != c.wantRuns {
						t.Errorf("handler runs = %d, want %d", got, c.wantRuns)
					}
				})
			}
		})
	}
}

// A GOAWAY that ends the connection under a request, before its answer,
// is retried.
func TestGoAwayIsRetried(t *testing.T) {
	h := &firstRun{fail: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }}
	p := protocols[1].proto()
	srv := receiver(t, p, h)
	front := goAwayOnce(t, srv.Listener.Addr().String())
	res, err := pairedSender(t, p).Deliver(context.Background(), client.Delivery{URL: "http://" + front + "/", Key: "k", Body: []byte(`{}`)})
	if err != nil || res.StatusCode != http.StatusCreated || res.Attempts != 2 || h.runs.Load() != 1 {
		t.Fatalf("Deliver = %d after %d attempts, %v, %d runs; want 201 after a retry, one run", res.StatusCode, res.Attempts, err, h.runs.Load())
	}
}

// goAwayOnce listens on loopback: its first connection, speaking HTTP/2
// without TLS, is answered GOAWAY (INTERNAL_ERROR, the request's stream
// taken) once the request's headers arrive, and closed; every later
// connection is passed to backend as it is.
func goAwayOnce(t *testing.T, backend string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if first {
				go goAway(c)
				continue
			}
			go pipe(c, backend)
		}
	}()
	return ln.Addr().String()
}

// HTTP/2 framing, as much of RFC 9113 as goAway speaks.
const (
	h2Preface      = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	h2Headers      = 0x1
	h2Settings     = 0x4
	h2GoAway       = 0x7
	h2Ack          = 0x1
	h2InternalErr  = 0x2
	h2FrameHeadLen = 9
)

// h2Frame writes one frame: its 9-byte header (length, type, flags,
// stream) and payload.
func h2Frame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	head := make([]byte, h2FrameHeadLen, h2FrameHeadLen+len(payload))
	head[0], head[1], head[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	head[3], head[4] = typ, flags
	binary.BigEndian.PutUint32(head[5:], stream&0x7fffffff)
	_, err := w.Write(append(head, payload...))
	return err
}

func goAway(c net.Conn) {
	defer c.Close()
	preface := make([]byte, len(h2Preface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != h2Preface {
		return
	}
	if h2Frame(c, h2Settings, 0, 0, nil) != nil {
		return
	}
	head := make([]byte, h2FrameHeadLen)
	for {
		if _, err := io.ReadFull(c, head); err != nil {
			return
		}
		n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		typ, flags, stream := head[3], head[4], binary.BigEndian.Uint32(head[5:])&0x7fffffff
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return
		}
		switch {
		case typ == h2Settings && flags&h2Ack == 0:
			if h2Frame(c, h2Settings, h2Ack, 0, nil) != nil {
				return
			}
		case typ == h2Headers:
			payload := make([]byte, 8)
			binary.BigEndian.PutUint32(payload, stream) // the request's stream taken
			binary.BigEndian.PutUint32(payload[4:], h2InternalErr)
			_ = h2Frame(c, h2GoAway, 0, 0, payload)
			return
		}
	}
}

func pipe(c net.Conn, backend string) {
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(b, c)
		b.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(c, b)
	wg.Wait()
}

// An upload cut on its way (a reset connection, a reset stream) reaches
// the middleware as a body it failed to read: nothing is claimed, and the
// retry runs the handler once.
func TestCutUploadClaimsNothing(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			h := &firstRun{fail: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }}
			read := make(chan struct{})
			var once sync.Once
			srv := receiver(t, p.proto(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
			// The middleware reads the body before the claim: a body that
			// stops half way, then is cut by the sender.
			tr := &http.Transport{Protocols: p.proto()}
			defer tr.CloseIdleConnections()
			ctx, cancel := context.WithCancel(context.Background())
			pr, pw := io.Pipe()
			go func() {
				_, _ = pw.Write([]byte(`{"type":`))
				once.Do(func() { close(read) })
			}()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, pr)
			req.Header.Set("Idempotency-Key", "k")
			req.ContentLength = 20
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			<-read
			cancel() // the sender's side of the cut: RST_STREAM over HTTP/2, a closed connection over HTTP/1.1
			pw.CloseWithError(context.Canceled)
			<-done
			res, err := pairedSender(t, p.proto()).Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: "k", Body: []byte(`{"type":"x"}`)})
			if err != nil || res.StatusCode != http.StatusCreated || h.runs.Load() != 1 || res.Replayed {
				t.Fatalf("retry after a cut upload: %d, %v, %d runs, replayed %v; want 201 from the one run", res.StatusCode, err, h.runs.Load(), res.Replayed)
			}
		})
	}
}

// An upload the server's ReadTimeout cuts (a sender that stalls mid-body)
// is answered 408 body-unreadable with Retry-After, nothing claimed: the
// same bytes, sent whole, succeed.
func TestStalledUploadIsTransient(t *testing.T) {
	h := &firstRun{fail: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }}
	m, err := middleware.New(memstore.New(memstore.Config{}), middleware.Config{RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(m.Handler(h))
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers and 10 bytes of 24, then nothing.
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 24\r\n\r\n{\"type\":\"x\""); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled upload: %v", err)
	}
	resp.Body.Close()
	_, valid := client.ParseRetryAfter(resp.Header.Get("Retry-After"), "", time.Now())
	if resp.StatusCode != http.StatusRequestTimeout || !valid || !client.RetryableStatus(resp.StatusCode, valid) {
		t.Fatalf("stalled upload: %d Retry-After %q; want 408 with Retry-After, retried", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	res, err := pairedSender(t, protocols[0].proto()).Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: "k", Body: []byte(`{"type":"x","id":"a"}`)})
	if err != nil || res.StatusCode != http.StatusCreated || h.runs.Load() != 1 {
		t.Fatalf("the same key, whole: %d, %v, %d runs; want 201 from one run", res.StatusCode, err, h.runs.Load())
	}
}

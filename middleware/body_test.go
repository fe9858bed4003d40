package middleware_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// trickle is a request body that delivers its bytes and then fails, as a
// client does that declares a Content-Length and hangs up (or stalls until
// the server's ReadTimeout) after sending part of it.
type trickle struct {
	data []byte
	off  int
}

func (b *trickle) Read(p []byte) (int, error) {
	if b.off == len(b.data) {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p[:min(len(p), 4096)], b.data[b.off:])
	b.off += n
	return n, nil
}

func (*trickle) Close() error { return nil }

// heapPerRequest returns the bytes allocated per request, averaged over
// runs, for a request declaring declared bytes and sending only sent.
func heapPerRequest(t *testing.T, h http.Handler, declared int64, sent []byte) uint64 {
	t.Helper()
	const runs = 20
	reqs := make([]*http.Request, runs)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodPost, "/features", nil)
		r.Header.Set("Idempotency-Key", "k")
		r.Body, r.ContentLength = &trickle{data: sent}, declared
		reqs[i] = r
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, reqs[0]) // warm up
	if w.Code != http.StatusRequestTimeout {
		t.Fatalf("a body cut short: %d, want 408 body-unreadable", w.Code)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, r := range reqs[1:] {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / (runs - 1)
}

// The body buffer follows the bytes received, not the Content-Length the
// client declares: a request that declares 1 MiB and sends 1 byte must not
// cost 1 MiB of heap, and one that sends 256 KiB costs
// at most about twice that.
func TestBodyMemoryFollowsBytesReceived(t *testing.T) {
	h := newMiddleware(t, new(memstore.Store), middleware.Config{}).Handler(newCounter())
	const declared = 1 << 20
	got := heapPerRequest(t, h, declared, []byte("{"))
	t.Logf("declared 1 MiB, sent 1 byte: %d bytes allocated per request", got)
	if got > 64<<10 {
		t.Errorf("declared 1 MiB, sent 1 byte: %d bytes allocated per request, want at most 64 KiB", got)
	}
	sent := bytes.Repeat([]byte(" "), 256<<10)
	got = heapPerRequest(t, h, declared, sent)
	t.Logf("declared 1 MiB, sent 256 KiB: %d bytes allocated per request", got)
	if got > 2*uint64(len(sent))+64<<10 {
		t.Errorf("declared 1 MiB, sent 256 KiB: %d bytes allocated per request, want at most twice the bytes sent plus 64 KiB", got)
	}
}

// oneByte delivers its data one byte per Read, then io.EOF.
type oneByte struct{ data []byte }

func (b *oneByte) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	p[0] = b.data[0]
	b.data = b.data[1:]
	return 1, nil
}

func (*oneByte) Close() error { return nil }

// Bodies of every size around the buffer's first size, its doublings and
// the limit, declared or not, read in one piece or byte by byte, reach the
// handler whole, or are answered 413 when over the limit.
func TestBodySizesAroundBufferGrowth(t *testing.T) {
	const limit = 100_000
	var got []byte
	h := newMiddleware(t, new(memstore.Store), middleware.Config{MaxBodyBytes: limit}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	for _, size := range []int{0, 1, 511, 512, 513, 16<<10 - 1, 16 << 10, 16<<10 + 1, 32<<10 + 7, 64 << 10, limit - 1, limit, limit + 1, limit + 600} {
		for _, declared := range []bool{true, false} {
			for _, slow := range []bool{false, true} {
				body := bytes.Repeat([]byte("ab"), size/2+1)[:size]
				r := httptest.NewRequest(http.MethodPost, "/features", bytes.NewReader(body))
				r.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d-%v-%v", size, declared, slow))
				if slow {
					r.Body = &oneByte{data: body}
				}
				if !declared {
					r.ContentLength = -1
				}
				got = nil
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				switch {
				case size > limit && w.Code != http.StatusRequestEntityTooLarge:
					t.Errorf("size %d declared=%v slow=%v: %d, want 413", size, declared, slow, w.Code)
				case size <= limit && (w.Code != http.StatusCreated || !bytes.Equal(got, body)):
					t.Errorf("size %d declared=%v slow=%v: %d, handler got %d bytes (equal %v)", size, declared, slow, w.Code, len(got), bytes.Equal(got, body))
				}
			}
		}
	}
}

// A server that wraps request bodies in an http.MaxBytesReader tighter
// than Config.MaxBodyBytes has refused the body as too large: it is
// answered 413 body-too-large, as the middleware's own limit is, not 400
// body-unreadable, and nothing is claimed.
func TestServerMaxBytesReaderIsBodyTooLarge(t *testing.T) {
	store := new(failingStore) // any claim would be answered 503
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 32)
		m.Handler(newCounter()).ServeHTTP(w, r)
	})
	big := strings.Repeat("x", 65)
	for _, declared := range []bool{true, false} {
		r := post("k1", big)
		if !declared {
			r.ContentLength = -1
		}
		wantProblem(t, serve(h, r), http.StatusRequestEntityTooLarge, middleware.ProblemBodyTooLarge)
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("the store was called %d times, want none: nothing may be claimed for a body too large", n)
	}
	if got := ev.outcomes(); len(got) != 2 || got[0] != middleware.Rejected || got[1] != middleware.Rejected {
		t.Errorf("outcomes = %v, want [rejected rejected]", got)
	}
}

// BenchmarkBody1MiB is the cost of a whole 1 MiB body that declares its
// length: the buffer doubles from 16 KiB as the bytes arrive.
func BenchmarkBody1MiB(b *testing.B) {
	body := bytes.Repeat([]byte(" "), 1<<20)
	h := newMiddleware(b, new(memstore.Store), middleware.Config{Validator: middleware.ValidatorFunc(func(*http.Request, []byte) error { return nil })}).
		Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })) // released: the key is free again
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/features", bytes.NewReader(body))
		r.Header.Set("Idempotency-Key", "k")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

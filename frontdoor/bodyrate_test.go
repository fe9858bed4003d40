package frontdoor

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// serveRaw serves h on 127.0.0.1 and returns its address.
func serveRaw(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// A body that falls behind is cut off with 408 body-too-slow, under the
// idempotency middleware (which reads it before the claim): nothing is
// claimed, the handler does not run, the request is no longer in flight, and
// the connection is closed.
func TestSlowBodyAnswered408(t *testing.T) {
	s := startService(t, door{rate: &bodyRateConfig{Grace: 200 * time.Millisecond, MinRate: 100}})
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // far past the body's 1.2 s
	if _, err := io.WriteString(c, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(newReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	d, ok := problem.Parse(resp.Header.Get("Content-Type"), b)
	if resp.StatusCode != http.StatusRequestTimeout || !ok || d.Type != ProblemSlowBody {
		t.Fatalf("answered %d %s, want 408 %s", resp.StatusCode, b, ProblemSlowBody)
	}
	if !resp.Close {
		t.Error("the connection is kept open after a body cut off")
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Error("the 408 carries no Retry-After: a sender cannot tell when to send again")
	}
	if s.runs.Load() != 0 || s.store.Stats().Entries != 0 {
		t.Errorf("the handler ran %d times, the store holds %d entries: want nothing claimed", s.runs.Load(), s.store.Stats().Entries)
	}
	if got := s.flying.Load(); got != 0 {
		t.Errorf("%d requests still in flight after the answer", got)
	}
	if got := s.rate.Stats().Cut; got != 1 {
		t.Errorf("Stats().Cut = %d, want 1", got)
	}
}

// A body that keeps to the rate is read in full, however long it takes
// in all: 1000 bytes, 100 every 100 ms, against 1000 bytes/s after 2 s.
func TestBodyAtTheRatePasses(t *testing.T) {
	s := startService(t, door{rate: &bodyRateConfig{Grace: 2 * time.Second, MinRate: 1000}})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"a":"`))
		for range 10 {
			time.Sleep(100 * time.Millisecond) // the sender's pace
			_, _ = pw.Write([]byte(strings.Repeat("x", 99) + " "))
		}
		_, _ = pw.Write([]byte(`"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/features", pr)
	req.ContentLength = 1008
	req.Header.Set("Idempotency-Key", "k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := clientFrom("127.0.0.1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || s.rate.Stats().Cut != 0 {
		t.Errorf("answered %d with %d cut off, want 201 and none", resp.StatusCode, s.rate.Stats().Cut)
	}
}

// Once the body has ended, its read deadline no longer applies: a read
// failing on it would cancel the request's context while the handler
// still works. (net/http clears the deadline itself when its read in the
// background starts; this pins the outcome, whoever clears it.)
func TestContextLivesAfterTheBody(t *testing.T) {
	rate, err := newBodyRate(bodyRateConfig{Grace: 100 * time.Millisecond, MinRate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveRaw(t, rate.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline := bodyDeadline(r)
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for time.Now().Before(deadline.Add(300 * time.Millisecond)) { // past where the deadline was
			time.Sleep(10 * time.Millisecond)
		}
		if r.Context().Err() != nil {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("answered %d, want 204 (410: the request's context ended after its body)", resp.StatusCode)
	}
}

// bodyDeadline is Grace + length / MinRate after the request began, at
// most Timeout; Timeout for a body of unknown length; zero without a body
// or a bodyRate.
func TestBodyDeadline(t *testing.T) {
	rate, err := newBodyRate(bodyRateConfig{Grace: 5 * time.Second, MinRate: 1000, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	addr := serveRaw(t, rate.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := bodyDeadline(r); !d.IsZero() {
			got[r.URL.Path] = time.Until(d)
		} else {
			got[r.URL.Path] = 0
		}
		_, _ = io.Copy(io.Discard, r.Body)
	})))
	c := clientFrom("127.0.0.1")
	post := func(path string, body io.Reader, n int64) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, body)
		req.ContentLength = n
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/small", strings.NewReader(strings.Repeat("x", 2000)), 2000) // 5 s + 2 s
	post("/large", strings.NewReader(strings.Repeat("x", 100_000)), 100_000)
	post("/chunked", io.MultiReader(strings.NewReader("x")), -1)
	post("/empty", nil, 0)
	for path, want := range map[string]time.Duration{"/small": 7 * time.Second, "/large": 30 * time.Second, "/chunked": 30 * time.Second, "/empty": 0} {
		if d := got[path]; d > want || d < want-time.Second {
			t.Errorf("%s: bodyDeadline %v from the handler's start, want %v", path, d, want)
		}
	}
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
	if d := bodyDeadline(r); !d.IsZero() {
		t.Errorf("bodyDeadline of a request no bodyRate saw: %v, want zero", d)
	}
}

package frontdoor

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// cutBody cuts off a body still arriving, from another goroutine, while
// the handler is blocked reading it: the read fails with errSlowBody at
// once (not at the rate's deadline, 60 s away), the answer is 408 saying
// why, and the connection closes. Once a body has arrived, cutBody cuts
// nothing and the handler's answer stands.
func TestCutBody(t *testing.T) {
	rate, err := newBodyRate(bodyRateConfig{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	reading := make(chan *http.Request, 1)
	readErr := make(chan error, 1)
	addr := serveRaw(t, rate.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reading <- r
		_, err := io.ReadAll(r.Body)
		readErr <- err
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if cutBody(r) {
			t.Error("cutBody cut a body that had arrived")
		}
		w.WriteHeader(http.StatusCreated)
	})))

	t.Run("arriving", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		r := <-reading
		time.Sleep(50 * time.Millisecond) // let the handler block in its read; either way the cut must end it
		began := time.Now()
		if !cutBody(r) {
			t.Fatal("cutBody did not cut a body still arriving")
		}
		if err := <-readErr; !errors.Is(err, errSlowBody) {
			t.Errorf("the handler's read ended with %v, want errSlowBody", err)
		}
		resp, err := http.ReadResponse(newReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		d, ok := problem.Parse(resp.Header.Get("Content-Type"), b)
		if resp.StatusCode != http.StatusRequestTimeout || !ok || d.Type != ProblemSlowBody || !strings.Contains(d.Detail, "another client") || !resp.Close {
			t.Errorf("answered %d (close %t) %s, want 408 %s saying it made room for another client, and the connection closed", resp.StatusCode, resp.Close, b, ProblemSlowBody)
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("the cut took %v to end the read", took)
		}
		if got := rate.Stats().Cut; got != 1 {
			t.Errorf("Stats().Cut = %d, want 1", got)
		}
	})

	t.Run("arrived", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		<-reading
		if err := <-readErr; err != nil || resp.StatusCode != http.StatusCreated {
			t.Errorf("read %v, answered %d; want the body read and 201", err, resp.StatusCode)
		}
	})

	// Without a bodyRate around the request, there is nothing to cut.
	if cutBody(&http.Request{Body: io.NopCloser(strings.NewReader("{}"))}) {
		t.Error("cutBody cut a body no bodyRate guards")
	}
}

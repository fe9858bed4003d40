package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// readDeadLetters decodes a JSON-lines dead-letter file.
func readDeadLetters(t *testing.T, path string) []client.DeadLetter {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []client.DeadLetter
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var dl client.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			t.Fatalf("line %d: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, dl)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeadLetterFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	sink, err := client.OpenJSONLinesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	problem := `{"type":"https://geoidem.dev/problems/key-reuse","title":"Key reused","status":422}`
	tr := &scriptTransport{steps: []step{
		{status: 422, body: problem, header: map[string]string{"Content-Type": "application/problem+json"}},
		{status: 503},
	}}
	s := newSender(t, tr, withClock(clock, client.Config{DeadLetter: sink, MaxAttempts: 3}))

	permanent := delivery()
	permanent.Key = "perm"
	_, errPerm := s.Deliver(context.Background(), permanent)
	exhausted := delivery()
	exhausted.Key = "exh"
	exhausted.Body = []byte("not JSON \x00\xff")
	exhausted.ContentType = "application/octet-stream"
	_, errExh := s.Deliver(context.Background(), exhausted)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}

	dls := readDeadLetters(t, path)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dls))
	}
	p, e := dls[0], dls[1]
	if p.Key != "perm" || p.Reason != "permanent" || p.Attempts != 1 || p.LastStatus != 422 ||
		!bytes.Equal(p.Body, permanent.Body) || p.Error != errPerm.Error() || !p.Time.Equal(epoch) ||
		p.URL != permanent.URL || p.Method != "POST" || p.ContentType != "application/json" ||
		p.Problem == nil || p.Problem.Title != "Key reused" {
		t.Errorf("permanent dead letter = %+v", p)
	}
	if e.Key != "exh" || e.Reason != "exhausted" || e.Attempts != 3 || e.LastStatus != 503 ||
		!bytes.Equal(e.Body, exhausted.Body) || e.Error != errExh.Error() || e.ContentType != "application/octet-stream" {
		t.Errorf("exhausted dead letter = %+v", e)
	}
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if !strings.Contains(lines[0], `"payload":{"type":"Feature"`) {
		t.Errorf("a JSON payload is not embedded as JSON: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"payload_base64":`) {
		t.Errorf("a binary payload is not base64: %s", lines[1])
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("dead-letter file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if err := sink.Put(context.Background(), client.DeadLetter{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Put after Close = %v", err)
	}
}

func TestDeadLetterPayloadRoundTrip(t *testing.T) {
	for _, payload := range []string{
		`{"a":1}`,
		`{"a": 1}`,            // not compact
		`{"html":"<b>&</b>"}`, // escaped by encoders
		"{\"ls\":\"\u2028\"}", // escaped by encoders
		`{"n":1.0000000000000001}`,
		"\x00\x01binary",
		"",
	} {
		dl := client.DeadLetter{Delivery: client.Delivery{Key: "k", Body: []byte(payload)}}
		line, err := json.Marshal(dl)
		if err != nil {
			t.Fatal(err)
		}
		var back client.DeadLetter
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Body, []byte(payload)) {
			t.Errorf("payload %q came back as %q (line %s)", payload, back.Body, line)
		}
	}
}

func TestJSONLinesSinkConcurrent(t *testing.T) {
	var buf exclusiveBuffer
	sink := client.NewJSONLinesSink(&buf)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			body := bytes.Repeat([]byte("x"), 10_000)
			if err := sink.Put(context.Background(), client.DeadLetter{Delivery: client.Delivery{Key: fmt.Sprint(i), Body: body}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var dl client.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			t.Fatalf("interleaved line: %v", err)
		}
		seen[dl.Key] = true
	}
	if len(seen) != 64 {
		t.Errorf("%d distinct dead letters, want 64", len(seen))
	}
}

func TestDeadLetterSinkError(t *testing.T) {
	sinkErr := errors.New("disk full")
	sink := &memSink{fail: sinkErr}
	tr := &scriptTransport{steps: []step{{status: 400}}}
	s := newSender(t, tr, withClock(newFakeClock(), client.Config{DeadLetter: sink}))
	_, err := s.Deliver(context.Background(), delivery())
	if !errors.Is(err, sinkErr) || !errors.Is(err, client.ErrPermanent) {
		t.Errorf("err = %v, want both the sink's error and ErrPermanent", err)
	}
	var de *client.DeliveryError
	if !errors.As(err, &de) {
		t.Errorf("err = %v, no DeliveryError", err)
	}
}

// exclusiveBuffer is a bytes.Buffer that panics when two Writes overlap,
// so the test fails if the sink does not serialize them.
type exclusiveBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *exclusiveBuffer) Write(p []byte) (int, error) {
	if !b.mu.TryLock() {
		panic("concurrent Write: the sink does not serialize its writes")
	}
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *exclusiveBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

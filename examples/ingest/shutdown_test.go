package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// safeBuffer is a bytes.Buffer safe for the service's concurrent logging.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// wroteThen wraps a feature store: once a write has taken effect it calls
// after, then pauses before the handler returns and the middleware writes
// the key's record.
type wroteThen struct {
	service.FeatureStore
	after func()
	pause time.Duration
}

func (w wroteThen) Upsert(ctx context.Context, hold *keystore.Hold, fs []service.Feature, answer func([]newest.Verdict) service.Answer) (service.Answer, error) {
	rec, err := w.FeatureStore.Upsert(ctx, hold, fs, answer)
	if err == nil {
		w.after()
		time.Sleep(w.pause)
	}
	return rec, err
}

// A record the service could not write before it stopped is a delivery
// that may run twice: the service says so, and exits 1. Redis (behind a
// proxy) stalls while a handler runs, so its record is retried in the
// background; the service is stopped then. With the default
// -shutdown-timeout it waits until the record is given up at the end of
// its lease, and with -shutdown-timeout 1s it gives it up at once; either
// way it names the record dropped and exits 1, never "stopped" and 0.
func TestIngestShutdownReportsDroppedRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default timeout", nil, "1 records and 0 releases given up"},
		{"1s timeout", []string{"-shutdown-timeout", "1s"}, "1 of them still pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy, err := testkit.NewCutter(testkit.SharedAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			var b [6]byte
			_, _ = rand.Read(b[:])
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			out := lineWriter{make(chan string, 16)}
			var stderr safeBuffer
			code := make(chan int, 1)
			prefix := "ingest-shutdown-" + hex.EncodeToString(b[:]) + ":"
			dropRedisPrefix(t, prefix)
			args := append([]string{"-addr", "127.0.0.1:0", "-store", "redis://" + proxy.Addr() + "/0", "-redis-volatile",
				"-redis-prefix", prefix, "-lease", "3s"}, tc.args...)
			cfg, usage := parseFlags(args, &stderr)
			if cfg == nil {
				t.Fatalf("%q: exit %d", args, usage)
			}
			// The handler says when its feature write has taken effect (in
			// Redis, where the Redis modes keep the features), and pauses
			// 2 s before it returns and its record is written.
			running := make(chan struct{})
			var once sync.Once
			cfg.service.WrapFeatures = func(fs service.FeatureStore) service.FeatureStore {
				return wroteThen{FeatureStore: fs, after: func() { once.Do(func() { close(running) }) }, pause: 2 * time.Second}
			}
			go func() { code <- serve(ctx, cfg, out, &stderr) }()
			var url string
			select {
			case l := <-out.lines:
				m := servingRE.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("first line %q does not name the URL", l)
				}
				url = m[1]
			case c := <-code:
				t.Fatalf("exited %d before serving: %s", c, stderr.String())
			case <-time.After(20 * time.Second):
				t.Fatal("no URL printed within 20s")
			}
			posted := make(chan int, 1)
			go func() {
				r, _ := do(t, "POST", url+"/features", "k1", collection)
				posted <- r.StatusCode
			}()
			// Once the handler's write has taken effect, the store stalls:
			// its record cannot be written.
			select {
			case <-running:
			case <-time.After(30 * time.Second):
				t.Fatal("the handler did not run within 30s")
			}
			proxy.Stall()
			if c := <-posted; c != 201 {
				t.Fatalf("POST: %d, want 201 (the record is retried in the background)", c)
			}
			stop() // SIGTERM
			var c int
			select {
			case c = <-code:
			case <-time.After(2 * time.Minute):
				t.Fatal("still running 2 minutes after the stop")
			}
			if c != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "ingest: stopped") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and a line saying %q", c, stderr.String(), tc.want)
			}
		})
	}
}

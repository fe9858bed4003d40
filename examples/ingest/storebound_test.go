package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// TestIngestStoreBound runs the service on Redis and on PostgreSQL with a
// bound on what all clients together hold (-redis-max-memory,
// -pg-max-keys) that the store is already past: new keys are answered 503
// store-full with a Retry-After that is when the store's earliest key
// ends (the retention, an hour here; on PostgreSQL plus the janitor's
// minute of grace and its interval), and a delivery stored before is
// still replayed. A store counts a key in flight at its sample as ending
// with its lease: a refusal sampled while one of this test's keys was
// in flight says so, and the next sample, a second later, sees it
// recorded; the Retry-After checked is the one once no key is in flight. Each store has its own prefix or tables, and Redis a
// server of its own (the Retry-After is read from a sample of the store's
// keys, which a scan of a server holding many others' does not reach); a
// first service without the bound stores the delivery.
func TestIngestStoreBound(t *testing.T) {
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	prefix := "geoidem-bound-" + suffix + ":"
	keyTable, featuresTable := "bound_keys_"+suffix, "bound_features_"+suffix
	own, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{})
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(own.Stop)
	t.Cleanup(func() { dropTables(t, keyTable, featuresTable) })
	const retention = time.Hour
	for _, st := range []struct {
		name       string
		args       []string
		bound, off []string
		slack      time.Duration // past the retention, what the store adds to a Retry-After
	}{
		{"redis", []string{"-store", "redis://" + own.Addr() + "/0", "-redis-prefix", prefix, "-redis-volatile"},
			[]string{"-redis-max-memory", "1"}, []string{"-redis-max-memory", "-1"}, 0},
		{"postgres", []string{"-store", postgresURL(), "-pg-key-table", keyTable, "-pg-features-table", featuresTable},
			[]string{"-pg-max-keys", "1"}, []string{"-pg-max-keys", "-1"}, 2 * time.Minute},
	} {
		t.Run(st.name, func(t *testing.T) {
			args := append(st.args, "-retention", retention.String())
			first := start(t, append(args, st.off...)...)
			if resp, body := do(t, http.MethodPost, first+"/features", "stored-1", collection); resp.StatusCode != http.StatusCreated {
				t.Fatalf("without the bound: %d %s", resp.StatusCode, body)
			}
			url := start(t, append(args, st.bound...)...)
			// The store's count may trail (PostgreSQL's statistics): new
			// keys until one is refused, polled for a minute.
			var resp *http.Response
			var body string
			deadline := time.Now().Add(time.Minute)
			for i := 0; ; i++ {
				resp, body = do(t, http.MethodPost, url+"/features", fmt.Sprintf("new-%d", i), collection)
				if resp.StatusCode != http.StatusCreated || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "store-full") {
				t.Fatalf("a new key in a full store: %d %s, want 503 store-full", resp.StatusCode, body)
			}
			firstRA := resp.Header.Get("Retry-After")
			settled := time.Now().Add(30 * time.Second)
			for i := 0; ; i++ {
				ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				if time.Duration(ra)*time.Second >= retention-5*time.Minute || time.Now().After(settled) {
					break
				}
				time.Sleep(200 * time.Millisecond)
				resp, body = do(t, http.MethodPost, url+"/features", fmt.Sprintf("again-%d", i), collection)
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "store-full") {
					t.Fatalf("a new key in a full store, again: %d %s, want 503 store-full", resp.StatusCode, body)
				}
			}
			t.Logf("first refusal's Retry-After %s s, then %s s", firstRA, resp.Header.Get("Retry-After"))
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || time.Duration(ra)*time.Second > retention+st.slack || time.Duration(ra)*time.Second < retention-5*time.Minute {
				t.Errorf("Retry-After %q, want when the earliest key ends: about %v (at most %v more)", resp.Header.Get("Retry-After"), retention, st.slack)
			}
			resp, body = do(t, http.MethodPost, url+"/features", "stored-1", collection)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a replay in a full store: %d replayed=%q %s, want 201 replayed", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), body)
			}
		})
	}
}

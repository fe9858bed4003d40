package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// TestObservationTimeStampedOncePerEvent holds what the package
// documentation promises a receiver: the bytes of a delivery, here a
// Feature whose observation_time is stamped once per event before the
// first attempt, are what every attempt, a re-run that stamps anew and a
// re-drive of the dead letter all send, so all carry that first stamp.
func TestObservationTimeStampedOncePerEvent(t *testing.T) {
	ctx := context.Background()
	var (
		mu     sync.Mutex
		down   = true
		seen   []string // observation_time of every request received
		bodies = map[string]string{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var f struct {
			Properties map[string]string `json:"properties"`
		}
		_ = json.Unmarshal(b, &f)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, f.Properties["observation_time"])
		key := r.Header.Get("Idempotency-Key")
		switch {
		case down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case bodies[key] == "":
			bodies[key] = string(b)
			w.WriteHeader(http.StatusCreated)
		default:
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()
	first := time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "journal")
	sink := &memSink{}

	// The first run: every attempt fails, the event is dead-lettered.
	ob, j := newOutbox(t, srv.URL, path, sink)
	d := stampedFeature(srv.URL+"/features", first)
	if _, err := ob.Deliver(ctx, d); err == nil {
		t.Fatal("delivered while the receiver was down")
	}
	j.Close()
	mu.Lock()
	down = false
	mu.Unlock()

	// A re-run, later, stamps anew; the journal's first bytes are sent.
	ob, _ = newOutbox(t, srv.URL, path, nil)
	d2 := stampedFeature(srv.URL+"/features", first.Add(time.Hour))
	if _, err := ob.Deliver(ctx, d2); err != nil {
		t.Fatal(err)
	}
	// The re-drive of the first run's dead letter.
	dls := sink.All()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	if _, err := ob.Redrive(ctx, dls[0]); err != nil {
		t.Fatal(err)
	}
	want := first.Format(time.RFC3339Nano)
	if len(seen) < 4 { // 2 attempts, the re-run, the re-drive
		t.Fatalf("%d requests, want at least 4", len(seen))
	}
	for i, s := range seen {
		if s != want {
			t.Errorf("request %d carried observation_time %q, want the first stamp %q", i, s, want)
		}
	}
}

// stampedFeature returns the delivery of one Feature, under the same key
// whatever now is, with its observation_time property set to now, as the
// examples' geofeature package builds it.
func stampedFeature(url string, now time.Time) client.Delivery {
	body := fmt.Sprintf(`{"type":"Feature","id":"f","geometry":null,"properties":{"n":"1","observation_time":%q}}`,
		now.UTC().Format(time.RFC3339Nano))
	return client.Delivery{URL: url, Key: "feature-f", Body: []byte(body), ContentType: "application/geo+json"}
}

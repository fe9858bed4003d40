package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// processFeatures is a feature store in process memory: what the Redis
// mode kept before its features moved into Redis. A restart empties it.
type processFeatures struct {
	mu sync.Mutex
	m  map[string]newest.Observation
}

func (s *processFeatures) Upsert(_ context.Context, _ *keystore.Hold, fs []service.Feature, answer func([]newest.Verdict) service.Answer) (service.Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	verdicts := make([]newest.Verdict, len(fs))
	next := map[string]newest.Observation{}
	for i, f := range fs {
		latest, ok := next[f.ID]
		if !ok {
			latest = s.m[f.ID]
		}
		if verdicts[i] = newest.Decide(latest, f.Observation()); verdicts[i] == newest.Replace {
			next[f.ID] = f.Observation()
		}
	}
	rec := answer(verdicts)
	for id, o := range next {
		s.m[id] = o
	}
	return rec, nil
}

func (s *processFeatures) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[id]
	return o.Bytes, ok, nil
}

// TestRedeployCatchesFeaturesInProcessMemory shows that the check after the
// one receiver's redeploy can fail: on Redis keys with the features in the
// receiver's memory, every acknowledged event is replayed from Redis after
// the restart while its feature is gone, and the run must FAIL with every
// acknowledged event's effect missing.
func TestRedeployCatchesFeaturesInProcessMemory(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	o := options{store: testkit.SharedURL(), senders: 4, events: 60, attempts: 4, seed: 1,
		features: func() service.FeatureStore { return &processFeatures{m: map[string]newest.Observation{}} }}
	code := chaos(context.Background(), o, &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1: the features died with the receiver and the harness did not notice\nstderr:\n%s", code, stderr.String())
	}
	rows := table(t, stdout.String())
	if n := count(t, rows, "receiver restarted before the check"); n != 1 {
		t.Errorf("receiver restarted %d times before the check, want 1", n)
	}
	missing, acked := ackedMissing(t, rows)
	if acked == 0 || missing != acked {
		t.Errorf("%d of %d acknowledged events found without their effect, want all", missing, acked)
	}
	if !strings.HasPrefix(rows["result"], "FAIL") {
		t.Errorf("result %q, want FAIL", rows["result"])
	}
}

// ackedMissing reads the row "acknowledged, effect missing": N of M
// acknowledged.
func ackedMissing(t *testing.T, rows map[string]string) (missing, acked int) {
	t.Helper()
	v := rows["acknowledged, effect missing"]
	if _, err := fmt.Sscanf(v, "%d of %d acknowledged", &missing, &acked); err != nil {
		t.Fatalf("acknowledged, effect missing %q: %v", v, err)
	}
	return missing, acked
}

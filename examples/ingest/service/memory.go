package service

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// Bounds of the in-memory feature store (Config.MaxFeatures and
// Config.MaxFeatureBytes).
const (
	DefaultMaxFeatures     = 100_000
	DefaultMaxFeatureBytes = 64 << 20
)

// errTooLarge is a request larger than the whole in-memory store.
var errTooLarge = errors.New("the features are larger than the whole in-memory feature store")

// memoryFeatures keeps features in process: the feature store of the
// memory mode, whose keys die with the process too. Each feature is compared with what is stored
// under its id and set under one lock (newest.Decide), so that concurrent
// updates of an id keep the newest. It copies the bytes it keeps.
//
// It is bounded: at most maxEntries features, and at most maxBytes of ids
// and feature bytes. A write that does not fit is refused whole
// (ErrStoreFull, or a RefusedError when it could never fit); nothing stored
// is ever evicted, since a feature acknowledged with 201 must stay.
//
// It has no idempotency of its own: the key store is the one layer that
// makes a delivery run once. A request whose handler runs again (its
// record lost) writes again;
// the newest rule makes that harmless to the state (the same observation
// is stale, or rewrites the same bytes), and examples/chaos counts it.
type memoryFeatures struct {
	maxEntries int
	maxBytes   int64

	mu    sync.RWMutex
	bytes int64
	m     map[string]newest.Observation // by id: its time (zero: none) and bytes
}

// newMemoryFeatures returns an empty store; zero bounds mean the defaults.
func newMemoryFeatures(maxEntries int, maxBytes int64) *memoryFeatures {
	return &memoryFeatures{maxEntries: orDefault(maxEntries, DefaultMaxFeatures), maxBytes: orDefault(maxBytes, DefaultMaxFeatureBytes),
		m: map[string]newest.Observation{}}
}

func (s *memoryFeatures) Upsert(_ context.Context, _ *keystore.Hold, fs []Feature, answer func([]newest.Verdict) Answer) (Answer, error) {
	verdicts := make([]newest.Verdict, len(fs))
	s.mu.Lock()
	defer s.mu.Unlock()
	// Each feature against what is stored, or what a feature of the same
	// id before it in fs left (latest); size is what each id written will
	// hold.
	var latest map[string]newest.Observation
	if len(fs) > 1 {
		latest = make(map[string]newest.Observation, len(fs))
	}
	size := make(map[string]int, 1)
	for i, f := range fs {
		cur, ok := latest[f.ID]
		if !ok {
			cur = s.m[f.ID]
		}
		if verdicts[i] = newest.Decide(cur, f.Observation()); verdicts[i] == newest.Replace {
			if latest != nil {
				latest[f.ID] = f.Observation()
			}
			size[f.ID] = len(f.Raw)
		}
	}
	// What the write adds to the store (added bytes, new entries), and what
	// it needs on its own.
	var added, need int64
	entries := 0
	for id, n := range size {
		old, stored := s.m[id]
		if !stored {
			entries++
			added += int64(len(id))
		}
		added += int64(n - len(old.Bytes))
		need += int64(len(id) + n)
	}
	switch {
	case len(size) > s.maxEntries || need > s.maxBytes:
		return Answer{}, &RefusedError{Index: -1, Detail: errTooLarge.Error(), Err: errTooLarge}
	case len(s.m)+entries > s.maxEntries || s.bytes+added > s.maxBytes:
		return Answer{}, ErrStoreFull
	}
	for i, f := range fs {
		if verdicts[i] == newest.Replace {
			s.m[f.ID] = newest.Observation{Time: f.Observed, Bytes: bytes.Clone(f.Raw)} // a copy: the body is not kept
		}
	}
	s.bytes += added
	return answer(verdicts), nil
}

func (s *memoryFeatures) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.m[id]
	return o.Bytes, ok, nil
}

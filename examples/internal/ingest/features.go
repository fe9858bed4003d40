package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twpayne/go-geom"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/newest"
)

// repository stores features. upsert writes each feature of fs unless what
// is stored under its id is a newer observation (newest.Supersedes: the
// feature is then stale, and left out), and returns the response to send,
// answer(stale), where stale[i] tells whether fs[i] was left out. A
// repository in the key store's own database records that response as the
// key's inside the transaction of its write, and marks the request's
// keystore.Hold completed. An error is classified by [Transient].
type repository interface {
	upsert(ctx context.Context, fs []feature, answer func(stale []bool) keystore.Record) (keystore.Record, error)
	get(ctx context.Context, id string) ([]byte, bool, error)
	writes(ctx context.Context) (map[string]int, error)
	// effects returns, per feature id, the runs that took effect, and the
	// runs the repository's per-key guard skipped (nil: it has none); see
	// [Runs].
	effects(ctx context.Context) (effects, skipped map[string]int, err error)
}

// feature is one GeoJSON Feature as the ingest service stores it: its id as
// text, its bytes exactly as received (a sub-slice of the request body), its
// geometry as decoded by the validator (nil for a null geometry) and when it
// was observed (the order property; zero when the feature has none).
type feature struct {
	ID       string
	Raw      []byte
	Geometry geom.T
	Observed time.Time
}

// observation is f as package newest compares it.
func (f feature) observation() newest.Observation {
	return newest.Observation{Time: f.Observed, Bytes: f.Raw}
}

// Problems of a valid GeoJSON document that the service still cannot store.
var (
	errNotFeatures = errors.New("the body is a bare geometry: post a Feature or a FeatureCollection")
	errNoID        = errors.New("every feature needs an \"id\" (a non-empty string or a number) to be upserted by")
)

// featuresOf returns the features of a decoded Feature or
// FeatureCollection, without copying their bytes. The id is the string as
// written or the number's text as written ("12.50" stays "12.50"); the
// observation time is the property orderProperty, parsed by newest.Parse (a
// value that does not parse is an *observationTimeError).
func featuresOf(doc *geojson.Document, orderProperty string) ([]feature, error) {
	if doc.Type != "Feature" && doc.Type != "FeatureCollection" {
		return nil, errNotFeatures
	}
	out := make([]feature, len(doc.Features))
	for i, f := range doc.Features {
		var id string
		switch v := f.ID.(type) {
		case string:
			id = v
		case json.Number:
			id = string(v)
		}
		if id == "" {
			return nil, fmt.Errorf("feature %d: %w", i, errNoID)
		}
		observed, err := observedAt(f, orderProperty, doc.Type == "FeatureCollection", i)
		if err != nil {
			return nil, err
		}
		out[i] = feature{ID: id, Raw: f.Raw, Geometry: f.Geometry, Observed: observed}
	}
	return out, nil
}

// Bounds of the in-memory feature store (Config.MaxFeatures and
// Config.MaxFeatureBytes).
const (
	DefaultMaxFeatures     = 100_000
	DefaultMaxFeatureBytes = 64 << 20
)

var (
	// errStoreFull is transient: the in-memory store has no room now; it
	// never evicts a stored feature to make some.
	errStoreFull = errors.New("the in-memory feature store is full")
	// errTooLarge is permanent: the request alone exceeds the store's bound.
	errTooLarge = errors.New("the features are larger than the whole in-memory feature store")
)

// memFeatures keeps features in process: the repository of the memory and
// Redis modes. It keeps the newest observation per id, compared and set
// under its lock (see [repository]). Its writes are idempotent per stored key: a request whose
// key already wrote its features (its record was then lost, say to a Redis
// outage between the write and the record, and a retry ran the handler
// again after the lease) does not write them again. That is the
// "idempotent handler writes" that make a store failure after the work,
// or a Redis failover, harmless to the features; but the handler did run
// again, so every skip is counted (Runs.Skipped, and the onSkip hook).
//
// It is bounded: at most maxEntries features, and at most maxBytes of ids,
// feature bytes and applied keys. A write that does not fit is refused
// whole (errStoreFull, or errTooLarge when it could never fit); nothing
// stored is ever evicted, since a feature acknowledged with 201 must stay.
type memFeatures struct {
	maxEntries int
	maxBytes   int64
	onSkip     func([]feature) // called, under mu, for every skipped write; nil: none

	mu      sync.RWMutex
	bytes   int64
	m       map[string][]byte
	at      map[string]time.Time // observation time per id, for those that have one
	n       map[string]int       // writes per id
	skipped map[string]int       // writes skipped by the per-key guard, per id
	applied map[string][]bool    // stored keys whose features were written -> which were stale (nil: none)
}

// newMemFeatures returns an empty store; zero bounds mean the defaults.
// onSkip, if not nil, is told of every write the per-key guard skips.
func newMemFeatures(maxEntries int, maxBytes int64, onSkip func([]feature)) *memFeatures {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxFeatures
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFeatureBytes
	}
	return &memFeatures{maxEntries: maxEntries, maxBytes: maxBytes, onSkip: onSkip,
		m: map[string][]byte{}, at: map[string]time.Time{}, n: map[string]int{}, skipped: map[string]int{}, applied: map[string][]bool{}}
}

// effects is n plus skipped: a skipped write is a run that would have
// written again without the guard.
func (s *memFeatures) effects(context.Context) (effects, skipped map[string]int, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	effects = maps.Clone(s.n)
	for id, k := range s.skipped {
		effects[id] += k
	}
	return effects, maps.Clone(s.skipped), nil
}

func (s *memFeatures) writes(context.Context) (map[string]int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.n), nil
}

func (s *memFeatures) upsert(ctx context.Context, all []feature, answer func(stale []bool) keystore.Record) (keystore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hold, hasHold := keystore.HoldFromContext(ctx)
	if hasHold {
		if wasStale, done := s.applied[hold.Key]; done {
			// This request's features are already written: an earlier run
			// of the same key wrote them, and this run is a second one. It
			// answers what the first did.
			for _, f := range all {
				s.skipped[f.ID]++
			}
			if s.onSkip != nil {
				s.onSkip(all)
			}
			if wasStale == nil {
				wasStale = make([]bool, len(all))
			}
			return answer(wasStale), nil
		}
	}
	// Which features are stale: each compared with what is stored, or with
	// the feature of the same id written before it in this request.
	stale := make([]bool, len(all))
	anyStale := false
	fs := all
	if len(all) == 1 {
		if old, ok := s.m[all[0].ID]; ok {
			stale[0] = !newest.Supersedes(newest.Observation{Time: s.at[all[0].ID], Bytes: old}, all[0].observation())
		}
	} else {
		latest := map[string]newest.Observation{}
		for i, f := range all {
			cur, ok := latest[f.ID]
			if !ok {
				var old []byte
				if old, ok = s.m[f.ID]; ok {
					cur = newest.Observation{Time: s.at[f.ID], Bytes: old}
				}
			}
			if stale[i] = ok && !newest.Supersedes(cur, f.observation()); !stale[i] {
				latest[f.ID] = f.observation()
			}
		}
	}
	for _, st := range stale {
		anyStale = anyStale || st
	}
	if anyStale {
		fs = make([]feature, 0, len(all))
		for i, f := range all {
			if !stale[i] {
				fs = append(fs, f)
			}
		}
	}
	// What the write adds to the store (added bytes, new entries), and what
	// it needs on its own (need bytes, distinct ids), with an id repeated
	// within the request counted once, at its last size.
	var added, need int64
	entries, distinct := 0, 0
	var seen map[string]int // id -> size of its latest bytes in this request
	if len(fs) > 1 {
		seen = make(map[string]int, len(fs))
	}
	for _, f := range fs {
		old, stored := s.m[f.ID]
		prev, counted := len(old), stored
		if n, again := seen[f.ID]; again {
			prev, counted = n, true
			need -= int64(len(f.ID) + n)
		} else {
			distinct++
		}
		if !counted {
			entries++
			added += int64(len(f.ID))
		}
		added += int64(len(f.Raw) - prev)
		need += int64(len(f.ID) + len(f.Raw))
		if seen != nil {
			seen[f.ID] = len(f.Raw)
		}
	}
	if hasHold {
		added += int64(len(hold.Key))
		need += int64(len(hold.Key))
		if anyStale {
			added += int64(len(stale))
			need += int64(len(stale))
		}
	}
	switch {
	case distinct > s.maxEntries || need > s.maxBytes:
		return keystore.Record{}, errTooLarge
	case len(s.m)+entries > s.maxEntries || s.bytes+added > s.maxBytes:
		return keystore.Record{}, errStoreFull
	}
	if hasHold {
		if anyStale {
			s.applied[hold.Key] = stale
		} else {
			s.applied[hold.Key] = nil
		}
	}
	for _, f := range fs {
		s.m[f.ID] = append([]byte(nil), f.Raw...) // a copy: the body is not kept
		if f.Observed.IsZero() {
			delete(s.at, f.ID)
		} else {
			s.at[f.ID] = f.Observed
		}
		s.n[f.ID]++
	}
	s.bytes += added
	pauseAfterWrite(ctx)
	return answer(stale), nil
}

func (s *memFeatures) get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.m[id]
	return f, ok, nil
}
